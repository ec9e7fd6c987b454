#!/usr/bin/env python3
"""docs_check.py — the documents point at what exists: every relative link of README.md and docs/*.md
resolves (the file is there, and a #fragment names one of its headings, as GitHub makes the anchors),
every repository path a document names in backticks (`docs/web.md`, `examples/two_towers.lua`,
`tests/harness.h`) is a file or folder of the repository (or a program built from PATH.c), and the REPL reference (docs/repl.md)
mentions every command `:help` lists and every option `tide --help` lists.

Usage: docs_check.py SOURCE_ROOT [TIDE]   (without TIDE, the commands and options are not checked)
One line per check; exit status 1 if any failed."""
import glob
import os
import re
import subprocess
import sys

# Folders of the repository: a backticked path starting with one of them must exist.
REPO_FOLDERS = ("docs", "examples", "tests", "engine", "kernels", "repl", "store", "viz", "web", "scripts",
                "tools")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)

failures = 0


def check(what, ok, detail=""):
    global failures
    if not ok:
        failures += 1
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok or not detail else "\n     | " + detail))


def anchors(path):
    """The anchors GitHub gives the headings of a Markdown file: lower case, punctuation dropped
    except '-' and '_', spaces as '-'; a repeated heading gets -1, -2..."""
    seen, out = {}, set()
    text = FENCE.sub("", open(path, encoding="utf-8").read())
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


def check_links(root, doc):
    text = FENCE.sub("", open(doc, encoding="utf-8").read())
    bad = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
        if not os.path.exists(full):
            bad.append("%s: no file %s" % (target, os.path.relpath(full, root)))
        elif fragment and full.endswith(".md") and fragment not in anchors(full):
            bad.append("%s: no heading with the anchor #%s in %s" % (target, fragment, os.path.relpath(full, root)))
    check("%s: every relative link resolves" % os.path.relpath(doc, root), not bad, "\n     | ".join(bad))


def check_paths(root, doc):
    text = open(doc, encoding="utf-8").read()
    bad = []
    for span in CODE_SPAN.findall(FENCE.sub("", text)):
        for word in span.split():
            word = word.rstrip(".,;:)")
            if not re.match(r"^(%s)/[\w./*-]*$" % "|".join(REPO_FOLDERS), word) or "*" in word:
                continue
            full = os.path.join(root, word)
            if not os.path.exists(full) and not os.path.exists(full + ".c"):  # a program built from PATH.c
                bad.append(word)
    check("%s: every repository path in backticks exists" % os.path.relpath(doc, root), not bad,
          ", ".join(sorted(set(bad))))


def check_reference(root, tide):
    repl_md = open(os.path.join(root, "docs", "repl.md"), encoding="utf-8").read()
    env = dict(os.environ, TIDE_LOG="")
    overview = subprocess.run([tide, "-q"], input=":help\n", capture_output=True, text=True, env=env,
                              timeout=60).stdout
    commands = re.findall(r"^  (:[a-z-]+)", overview, re.M)
    check("`:help` lists the commands", len(commands) > 20, overview)
    missing = [c for c in commands if not re.search(r"`%s\b" % re.escape(c), repl_md)]
    check("docs/repl.md shows every command `:help` lists", not missing, " ".join(missing))
    usage = subprocess.run([tide, "--help"], capture_output=True, text=True, env=env, timeout=60).stdout
    options = sorted(set(re.findall(r"^\s+(-[a-z]|--[a-z-]+)\b", usage, re.M)))
    check("`tide --help` lists the options", len(options) > 10, usage)
    missing = [o for o in options if not re.search(r"`[^`]*(?<![\w-])%s(?![\w-])" % re.escape(o), repl_md)]
    check("docs/repl.md shows every option `tide --help` lists", not missing, " ".join(missing))
    for sub in ("serve", "run-graph"):
        check("docs/repl.md shows `tide %s`" % sub, "tide %s" % sub in repl_md)


def main():
    root = os.path.abspath(sys.argv[1])
    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    check("the documents are found", len(docs) > 10, str(docs))
    for doc in docs:
        check_links(root, doc)
        check_paths(root, doc)
    if len(sys.argv) > 2:
        check_reference(root, sys.argv[2])
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
