#!/usr/bin/env python3
"""help2man.py — the man page tide.1, generated from the program's own help (`tide --help`), so that
the two cannot disagree. Usage: help2man.py TIDE VERSION OUTPUT

The help's layout becomes the page's: the "usage:" lines the SYNOPSIS, the first paragraph after
them the DESCRIPTION, option lines ("  -x, --long ARG   text", continued by deeper-indented lines) an
OPTIONS list, and every later paragraph a paragraph of its own."""
import re
import subprocess
import sys


def escape(text):
    """troff: backslashes and leading dots or quotes would be read as requests; '-' is a hyphen."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text[:1] in (".", "'") else text


def main():
    tide, version, output = sys.argv[1:4]
    help_text = subprocess.run([tide, "--help"], check=True, capture_output=True, text=True).stdout
    paragraphs = [p for p in help_text.strip("\n").split("\n\n") if p.strip()]
    usage = [re.sub(r"^(usage:)?\s*", "", line) for line in paragraphs[0].splitlines()]
    out = ['.TH TIDE 1 "" "tide %s" "User Commands"' % version,
           ".SH NAME", "tide \\- a TensorFlow-style dataflow engine driven from Lua",
           ".SH SYNOPSIS"]
    for line in usage:
        out += [".B " + escape(line), ".br"]
    out += [".SH DESCRIPTION", escape(" ".join(paragraphs[1].split()))]
    for para in paragraphs[2:]:
        lines = para.splitlines()
        if all(line.startswith("  ") for line in lines) and lines[0].lstrip().startswith("-") or \
                re.match(r"^  \S", lines[0]) and re.search(r"\S\s{2,}\S", lines[0]):
            out.append(".SH OPTIONS" if ".SH OPTIONS" not in out else ".PP")
            for line in lines:
                m = re.match(r"^  (\S.*?)\s{2,}(\S.*)$", line)
                if m:
                    out += [".TP", ".B " + escape(m.group(1)), escape(m.group(2))]
                else:
                    out.append(escape(line.strip()))
        else:
            out += [".PP", escape(" ".join(para.split()))]
    out += [".SH SEE ALSO", "The tutorial docs/repl.md, the user guide docs/user-guide.md and the op reference "
            "docs/ops.md in tide's sources; :help at the prompt."]
    with open(output, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
