#!/usr/bin/env python3
"""repl_doc.py — checks that docs/repl.md tells the truth: every `tide> ` entry of the tutorial's
transcripts is run, in order, in one `tide` process (reading a pipe, as the prompt would), and what
it prints must equal the lines the document shows under it. An entry at a debugger stop has the stop's
prompt (`tide[step 4 at 'lv']> `, docs/debugger.md): piped entries are read by the stop as well. Usage: repl_doc.py TIDE DOC [MIN_ENTRIES]
(docs/repl.md and docs/control-flow.md; MIN_ENTRIES, default 20, guards against a document whose
transcripts stopped being found)."""
import os
import re
import subprocess
import sys

MARK = "@@entry-done@@"
PROMPT = re.compile(r"^tide(\[step \d+ at '[^']*'\])?> ")


def transcripts(text):
    """(entry, expected output lines) pairs from the ``` blocks that contain `tide> ` prompts."""
    pairs = []
    for block in re.findall(r"```\n(.*?)```", text, re.S):
        lines = block.splitlines()
        if not any(l.startswith("tide> ") for l in lines):
            continue
        entry, expected = None, []
        for line in lines:
            prompt = PROMPT.match(line)
            if prompt:
                if entry is not None:
                    pairs.append((entry, expected))
                entry, expected = line[prompt.end():], []
            elif line.startswith("...> ") and entry is not None:
                entry += "\n" + line[len("...> "):]
            elif entry is not None:
                expected.append(line)
        if entry is not None and entry.strip():
            pairs.append((entry, expected))
    return pairs


def main():
    tide, doc = sys.argv[1], sys.argv[2]
    pairs = transcripts(open(doc).read())
    if len(pairs) < (int(sys.argv[3]) if len(sys.argv) > 3 else 20):
        print("FAIL: only %d transcript entries found in %s" % (len(pairs), doc))
        return 1
    script = "".join("%s\nprint('%s')\n" % (entry, MARK) for entry, _ in pairs)
    env = dict(os.environ, TIDE_LOG="")
    proc = subprocess.run([tide, "-q"], input=script, capture_output=True, text=True, env=env, timeout=300)
    # errors go to stderr, unbuffered, values to stdout: merge them per entry by running each
    # failing entry's message into the output of the entry it belongs to (errors say "error: ").
    outputs = proc.stdout.split(MARK + "\n")
    errors = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
    failed = 0
    for i, (entry, expected) in enumerate(pairs):
        got = outputs[i].splitlines() if i < len(outputs) else ["<no output>"]
        want = [l for l in expected if not l.startswith("error: ")]
        want_errors = [l for l in expected if l.startswith("error: ")]
        ok = got == want and all(e in errors for e in want_errors)
        print("%s  %s" % ("ok  " if ok else "FAIL", entry.splitlines()[0]))
        if not ok:
            failed += 1
            print("     want: %r\n     got:  %r" % (expected, got))
            if want_errors:
                print("     errors: %r" % errors)
    print("%d entries, %d failed" % (len(pairs), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
