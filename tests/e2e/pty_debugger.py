#!/usr/bin/env python3
"""pty_debugger.py — the step debugger at a real terminal (docs/debugger.md), as a person would use
it: a breakpoint on a hidden layer, a run that stops there (the prompt changes), three steps, tensors
printed, one overridden, continue, and the fetched result reflects the override; Ctrl-C at a stop
aborts the run and the prompt comes back; `tide --debug FILE.lua` gives the stop prompt in the
middle of a script.

    python3 tests/e2e/pty_debugger.py path/to/tide

Prints one line per check ("ok N - ..." or "FAIL N - ...") and exits 1 if any fails. The terminal
driving (Session) and the checks' frame (PtyChecks) are pty_repl.py's.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pty_repl import PROMPT, PtyChecks, main_of  # noqa: E402

STOP = r"tide\[step (\d+) at '([^']+)'\]> $"

MODEL = [
    "x = placeholder(float32, {1, 2})",
    "W1 = constant({{1.0, 2.0}, {3.0, 4.0}})",
    "h1 = relu(matmul(x, W1))",
    "W2 = constant({{1.0}, {1.0}})",
    "h2 = h1 * 2.0",
    "h3 = h2 + 1.0",
    "out = matmul(h3, W2)",
]


class Checks(PtyChecks):
    def model(self, s):
        for line in MODEL:
            self.enter(s, line)

    def break_step_print_override(self):
        s = self.start()
        try:
            self.model(s)
            self.enter(s, ":break h1", r"breakpoint 1: h1[\s\S]*" + PROMPT)
            m = self.enter(s, "run(out, {[x] = {{1, 1}}})", STOP)
            assert m.group(2) == "h1", f"stopped at {m.group(2)}, not h1"
            assert "stopped after 'h1' (Relu)" in s.out, s.recent()
            self.enter(s, ":print h1", r"\[\[4\.0+, 6\.0+\]\][\s\S]*" + STOP)
            self.enter(s, ":print h1 -s", r"min 4 max 6 mean 5[\s\S]*" + STOP)
            self.enter(s, ":set h1 {{1, 1}}", r"h1:0 set[\s\S]*" + STOP)
            self.enter(s, ":print h1", r"\[\[1\.0+, 1\.0+\]\][\s\S]*" + STOP)
            seen = []
            for _ in range(3):
                m = self.enter(s, ":step", r"stopped before '([^']+)'[^\n]*: step[\s\S]*" + STOP)
                seen.append(m.group(1))
            assert len(seen) == 3, seen
            self.enter(s, ":where", r"stopped here[\s\S]*node executions so far[\s\S]*" + STOP)
            self.enter(s, "dbg.value('h1')", r"\[\[1\.0+, 1\.0+\]\][\s\S]*" + STOP)
            # h1 overridden to [[1, 1]]: h3 = [[3, 3]], out = 6 (not 9 + 13 = 22)
            self.enter(s, ":continue", r"\[\[6\.0+\]\][\s\S]*" + PROMPT)
            self.enter(s, ":delete 1", r"breakpoint 1 deleted[\s\S]*" + PROMPT)
            self.enter(s, "run(out, {[x] = {{1, 1}}})", r"\[\[22\.0+\]\][\s\S]*" + PROMPT)
        finally:
            s.close()

    def ctrl_c_aborts(self):
        s = self.start()
        try:
            self.model(s)
            self.enter(s, ":break h1", r"breakpoint 1[\s\S]*" + PROMPT)
            self.enter(s, "r = run(out, {[x] = {{1, 1}}})", STOP)
            s.type("\x03")
            s.expect(r"the run is aborted[\s\S]*error: [^\n]*cancelled[\s\S]*" + PROMPT, 10)
            self.enter(s, "print(r)", r"nil[\s\S]*" + PROMPT)
            self.enter(s, ":continue", r"no step is stopped[\s\S]*" + PROMPT)
        finally:
            s.close()

    def script_with_debug(self):
        path = os.path.join(self.home, "train.lua")
        with open(path, "w") as f:
            f.write("\n".join(MODEL) + "\n"
                    "dbg.break_at('h1')\n"
                    "local r = run(out, {[x] = {{1, 1}}})\n"
                    "print('result', r:item())\n")
        s = self.start([self.tide, "--debug", path])
        try:
            s.expect(STOP, 10)
            self.enter(s, ":set h1 {{0, 3}}", r"h1:0 set[\s\S]*" + STOP)
            s.type(":continue\r")
            s.expect(r"result\s+8", 10)
            assert s.wait_exit(10) == 0, f"exit status {s.status}"
        finally:
            s.close()

    def checks(self):
        return [
            ("break on a hidden layer, step three nodes, print, override, continue: the result reflects it",
             self.break_step_print_override),
            ("Ctrl-C at a stop aborts the run and the prompt comes back", self.ctrl_c_aborts),
            ("tide --debug FILE.lua: the stop prompt in the middle of a script", self.script_with_debug),
        ]


def main():
    return main_of(Checks, "pty_debugger.py")


if __name__ == "__main__":
    sys.exit(main())
