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

`tide run-graph` (repl/run_graph.c, stop_signals.c) is driven the same way on a TensorFlow graph of
quick targets and then a dequeue from an empty queue (a run that only a cancel ends): once its
signal handling is in place (seen in /proc: it catches SIGINT and SIGTERM), a SIGINT at a random
moment (while importing, between two runs, in one, in the blocked one) must end it with status 130
and a message saying what it interrupted; a SIGTERM with 143; a SIGINT it was started ignoring (a
background job of a script) must leave it running, and a SIGTERM then ends it.

`tide serve` must end with status 0 on SIGINT and on SIGTERM, every time: it takes them with sigwait
on its main thread, and one delivered to a thread that does not block them (OpenBLAS's, started before
main) used to end it by the signal's default action (status -15, about 1 time in 6 on a loaded
machine).
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


# A TensorFlow graph for `tide run-graph`: a queue and a dequeue from it; nothing ever enqueues.
BLOCKING_GRAPH = """
node { name: "q" op: "FIFOQueueV2" attr { key: "component_types" value { list { type: DT_FLOAT } } } }
node { name: "d" op: "QueueDequeueV2" input: "q"
       attr { key: "component_types" value { list { type: DT_FLOAT } } } }
"""
QUICK_TARGETS = 60  # runs of the queue op before the blocking one: more gaps between runs to land in


def catches(pid, signals):
    """Whether the process has handlers for all of signals (the SigCgt mask of /proc/PID/status)."""
    mask = sum(1 << (sig - 1) for sig in signals)
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16) & mask == mask
    except OSError:
        pass
    return False


def run_graph_signal(tide, graph, sig, delay, ignore_sigint=False):
    """Starts `tide run-graph` on the blocking graph, waits until it handles the stop signals, sleeps
    `delay`, sends sig; returns (ok, detail: what it said it interrupted, or what went wrong). With
    ignore_sigint, the process starts with SIGINT ignored (it handles only SIGTERM then), a SIGINT
    must not stop it, and sig (SIGTERM) then must."""
    args = [tide, "run-graph", graph] + ["--target", "q"] * QUICK_TARGETS + ["--fetch", "d"]
    preexec = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
    try:
        handled = [signal.SIGTERM] if ignore_sigint else [signal.SIGINT, signal.SIGTERM]
        deadline = time.monotonic() + 10 * SCALE
        while not catches(p.pid, handled) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if not catches(p.pid, handled):
            return False, "never handled %s (status %r)" % (handled, p.poll())
        time.sleep(delay)
        if ignore_sigint:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=0.5)
                return False, "a SIGINT the process was started ignoring ended it (status %d)" % p.returncode
            except subprocess.TimeoutExpired:
                pass
        p.send_signal(sig)
        try:
            out, err = p.communicate(timeout=HONOUR_S)
        except subprocess.TimeoutExpired:
            return False, "still running %.1f s after %s" % (HONOUR_S, signal.Signals(sig).name)
        want_status = 128 + sig
        name = "Ctrl-C (SIGINT)" if sig == signal.SIGINT else "SIGTERM"
        said = "tide run-graph: interrupted by %s while " % name
        doing = ("importing", "running --target q", "running --fetch d")
        landed = [d for d in doing if said + d in err]
        if p.returncode != want_status or not landed or out:
            return False, "status %d, stdout %r, stderr %r" % (p.returncode, out[-200:], err[-300:])
        return True, landed[0]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def run_graph_checks(tide, directory, trials, rng):
    """The run-graph scenarios; returns how many failed."""
    graph = os.path.join(directory, "blocking.pbtxt")
    with open(graph, "w") as f:
        f.write(BLOCKING_GRAPH)
    failed = 0
    cases = [("a SIGINT at any moment of `tide run-graph` ends it: status 130, saying what it interrupted",
              signal.SIGINT, trials, False),
             ("a SIGTERM ends `tide run-graph` with status 143", signal.SIGTERM, 2, False),
             ("a SIGINT `tide run-graph` was started ignoring leaves it running; a SIGTERM ends it",
              signal.SIGTERM, 1, True)]
    for title, sig, n, ignore in cases:
        honoured, details, landed = 0, [], {}
        for _ in range(n):
            delay = rng.uniform(0.0, 0.3 if rng.random() < 0.5 else 0.01)  # half early: import, targets
            ok, detail = run_graph_signal(tide, graph, sig, delay, ignore)
            honoured += ok
            if ok:
                landed[detail] = landed.get(detail, 0) + 1
            else:
                details.append(detail)
        where = ", ".join("%d while %s" % (count, d) for d, count in sorted(landed.items()))
        print("%s %s: %d of %d (%s)" % ("ok  " if honoured == n else "FAIL", title, honoured, n, where))
        for d in details[:3]:
            print("     | " + d)
        failed += honoured != n
    return failed


def serve_stops(tide, directory, n):
    """`tide serve` on a run log, stopped n times by SIGINT and n times by SIGTERM once it says it
    serves; returns (ok, detail)."""
    log = os.path.join(directory, "served.db")
    made = subprocess.run([tide, "--log", log, "-e", "x = 1"], capture_output=True, text=True,
                          env=dict(os.environ, TIDE_LOG=log))
    if made.returncode != 0:
        return False, "could not make a run log: %r" % made.stderr
    bad = []
    for sig in [signal.SIGINT, signal.SIGTERM] * n:
        p = subprocess.Popen([tide, "serve", log, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            line = p.stdout.readline()
            if "serving" not in line:
                bad.append("no serving line: %r" % line)
                continue
            p.send_signal(sig)
            try:
                p.wait(timeout=HONOUR_S * 3)
            except subprocess.TimeoutExpired:
                bad.append("still serving after %s" % signal.Signals(sig).name)
                continue
            if p.returncode != 0:
                bad.append("%s: status %d %r" % (signal.Signals(sig).name, p.returncode, p.stderr.read()[-200:]))
        finally:
            if p.poll() is None:
                p.kill()
            p.communicate()
    return not bad, "%d of %d: %s" % (len(bad), 2 * n, "; ".join(bad[:3]))


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
        failed += run_graph_checks(tide, directory, trials, rng)
        serves = 2 * trials
        ok, detail = serve_stops(tide, directory, serves)
        print("%s `tide serve` ends with status 0 on SIGINT and on SIGTERM, %d times each%s"
              % ("ok  " if ok else "FAIL", serves, "" if ok else ": " + detail))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
