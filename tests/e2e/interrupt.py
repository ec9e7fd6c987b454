#!/usr/bin/env python3
"""interrupt.py — Ctrl-C (SIGINT) must always stop a script, wherever it lands, and a second one must
end a script that the first could not stop (docs/repl.md, "Ctrl-C").

    python3 tests/e2e/interrupt.py path/to/tide [TRIALS]

Each scenario starts `tide FILE.lua` (no terminal: the signal is what a shell sends on Ctrl-C), waits
until the script says it is in its loop, sleeps a random time (so the signal lands anywhere: inside a
run, between two runs, inside a pcall), sends SIGINT and waits for the process to end. A press is
honoured when the process ends within HONOUR_S seconds with status 130 and says
"interrupted (Ctrl-C)". Prints one line per scenario with the count honoured ("ok" only when all
are) and exits 1 if any press was lost. TIDE_PTY_TIMEOUT scales the waits (slow sanitizer builds).
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

SCALE = float(os.environ.get("TIDE_PTY_TIMEOUT", "1"))
HONOUR_S = 3.0 * SCALE
READY = "@@in-the-loop@@"

# Each scenario: a Lua script that prints READY once it is inside the loop the signal should stop.
SCENARIOS = {
    "a loop of short runs": """
inc = constant(1.0) + 1
print("%s"); io.stdout:flush()
for i = 1, 1e8 do run(inc) end
""",
    "runs inside pcall": """
inc = constant(1.0) + 1
print("%s"); io.stdout:flush()
for i = 1, 1e8 do pcall(run, inc) end
""",
    "a loop whose body swallows every error": """
inc = constant(1.0) + 1
print("%s"); io.stdout:flush()
while true do
  local ok, err = pcall(function() for i = 1, 50 do run(inc) end end)
  local ok2 = pcall(error, "again")
end
""",
    "a run blocked on an empty queue (the dequeue holds no thread and nothing polls)": """
q = queue({dtypes = {float32}})
d = dequeue(q)
print("%s"); io.stdout:flush()
while true do run(d) end
""",
    "pure Lua code": """
print("%s"); io.stdout:flush()
local x = 0
while true do x = x + 1 end
""",
}


def one_press(tide, script, delay):
    """Runs the script, presses Ctrl-C `delay` seconds after READY; returns (stopped, honoured,
    detail): stopped when the process ended in time, honoured when it also said so with status 130."""
    env = dict(os.environ, TIDE_LOG="")
    p = subprocess.Popen([tide, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline()
        if READY not in line:
            p.kill()
            return False, False, "no ready line: %r %r" % (line, p.stderr.read())
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=HONOUR_S)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            return False, False, "still running %.1f s after Ctrl-C" % HONOUR_S
        if p.returncode != 130 or "interrupted (Ctrl-C)" not in err:
            return True, False, "status %d, stderr %r" % (p.returncode, err[-300:])
        return True, True, ""
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def second_press(tide, directory):
    """A script stuck in a C function that never returns to Lua (a backtracking string.find): the
    first Ctrl-C cannot stop it, the second ends the process with status 130."""
    script = os.path.join(directory, "stuck.lua")
    with open(script, "w") as f:
        f.write('print("%s"); io.stdout:flush()\nprint(("a"):rep(5000):find(".-.-.-.-b"))\n' % READY)
    env = dict(os.environ, TIDE_LOG="")
    p = subprocess.Popen([tide, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        if READY not in p.stdout.readline():
            return False, "no ready line"
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        time.sleep(1.0)
        if p.poll() is not None:
            return False, "the stuck script ended after one Ctrl-C (status %d): the test is moot" % p.returncode
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=HONOUR_S)
        except subprocess.TimeoutExpired:
            return False, "still running after the second Ctrl-C"
        if p.returncode != 130 or "Ctrl-C again" not in err:
            return False, "status %d, stderr %r" % (p.returncode, err[-300:])
        return True, ""
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: interrupt.py path/to/tide [TRIALS]", file=sys.stderr)
        return 2
    tide = os.path.abspath(sys.argv[1])
    trials = int(sys.argv[2]) if len(sys.argv) == 3 else 10
    rng = random.Random(int(os.environ.get("TIDE_TEST_SEED", "0")) or None)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="tide-interrupt-") as directory:
        for name, body in SCENARIOS.items():
            script = os.path.join(directory, "s.lua")
            with open(script, "w") as f:
                f.write(body % READY)
            stopped, honoured, details = 0, 0, []
            for _ in range(trials):
                stop, ok, detail = one_press(tide, script, rng.uniform(0.0, 0.3))
                stopped += stop
                honoured += ok
                if not ok:
                    details.append(detail)
            status = "ok  " if honoured == trials else "FAIL"
            print("%s %s: %d of %d Ctrl-C honoured (%d stopped the script)" % (status, name, honoured, trials,
                                                                             stopped))
            for d in details[:3]:
                print("     | " + d)
            failed += honoured != trials
        ok, detail = second_press(tide, directory)
        print("%s a second Ctrl-C ends a script stuck in C code%s" % ("ok  " if ok else "FAIL",
                                                                      "" if ok else ": " + detail))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
