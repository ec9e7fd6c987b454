#!/usr/bin/env python3
"""debugger_hunts.py — the step debugger on planted faults (docs/debugger.md), through the real binary
with entries on stdin (a stop reads its commands from the same stream):

  - a variable that training drives to 0, read by a log: has_inf_or_nan stops at the step where the
    log first makes -inf and names it, a forward node, with its input's summary;
  - sqrt at 0 (finite forward, infinite gradient): the stop names the gradient node (SqrtGrad, of sqrt);
  - --ignore: a log expected to be non-finite (clipped by maximum afterwards) does not stop; a node
    that makes non-finite values from it does;
  - the same hunt with the log on the second of two devices (--devices 2);
  - a breakpoint inside a while_loop stops at each iteration and says which;
  - a Lua condition breakpoint, :until, breakpoints kept across runs, disabled, deleted; one set at
    a stop fires later in the same step;
  - :dump writes the stopped step's tensors into the run log, and :tensor reads one back;
  - keep mode: :dump after a run writes all of it (read back with :tensor and SQL), under the value cap
    (what it left out is named); :print at a stop shows values consumed before the first stop;
  - a script whose stdin is not a terminal: dbg.on_bad(fn) is called at the stop; without a function
    the run is aborted, saying why; --debug reads the stop's commands from stdin.

    python3 tests/e2e/debugger_hunts.py path/to/tide
"""
import os
import re
import subprocess
import sys
import tempfile

from checks import check, crashed, has, lacks, summary

TIDE = None


def tide(stdin, *args, script=None):
    with tempfile.TemporaryDirectory(prefix="tide-hunt-") as cwd:
        argv = [TIDE, "--quiet", "--no-log", *args]
        if script is not None:
            path = os.path.join(cwd, "script.lua")
            with open(path, "w") as f:
                f.write(script)
            argv.append(path)
        env = dict(os.environ, HOME=cwd)
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd, env=env)
    check("no crash (%s)" % " ".join(args + (("script",) if script else ())), not crashed(p.returncode, p.stderr),
          p.stderr)
    return p.returncode, p.stdout, p.stderr


LOG_TO_ZERO = """v = variable(tensor({3.0, 2.0}))
lv = log(v)
train = sgd(1.0):minimize(sum(v))
run(init())
:break if has_inf_or_nan
for i = 1, 5 do run(train); print("lv", run(lv)) end
:print lv -s
:abort
print("after", v)
"""


def log_to_zero(*args):
    st, out, err = tide(LOG_TO_ZERO, *args)
    tag = " ".join(args) or "one device"
    has("log: runs before the fault go on (%s)" % tag, r"^lv\s+\[0\.6931, 0\.0000\]", out)
    # run(init()) is step 0, then train 1, lv 2, train 3, lv 4: v is [1, 0] after two updates
    has("log: stops at the step where the log reaches 0 (%s)" % tag,
        r"stopped after 'lv' \(Log\) in step 4: has_inf_or_nan", out)
    has("log: names the first bad node, forward (%s)" % tag,
        r"first bad node: 'lv' \(Log\), a forward node, made non-finite values from finite inputs", out)
    has("log: shows its input's summary (%s)" % tag, r"input 0 'v:0': float32\[2\]: 2 elements; finite: min 0 max 1",
        out)
    has("log: :print -s at the stop (%s)" % tag, r"^lv: float32\[2\]: 2 elements, 0 nan, 1 -inf", out)
    has("log: :abort fails the run (%s)" % tag, r"aborted in the debugger", err)
    lacks("log: only one stop (%s)" % tag, r"stopped after[\s\S]*stopped after", out)


def gradient_fault():
    st, out, err = tide("""w = variable(tensor({0.0, 1.0}))
loss = sum(sqrt(w))
g = gradients(loss, w)
run(init())
:break if has_inf_or_nan
run(loss)
run(g)
:continue
""")
    has("gradient: the forward run does not stop", r"^1\.0+$", out)
    has("gradient: the stop names the gradient node",
        r"first bad node: 'gradients/sqrt_grad/[^']+' \(SqrtGrad\), a gradient node \(backward pass, of 'sqrt'\)", out)
    has("gradient: the run goes on after :continue", r"^\[\s*inf, 0\.5000\]", out)


def ignore():
    setup = """w = variable(tensor({0.0, 1.0}))
lw = log(w)
safe = maximum(lw, -100.0)
bad = lw * 0.0
run(init())
"""
    st, out, err = tide(setup + ":break if has_inf_or_nan --ignore lw\nrun(sum(safe))\n")
    lacks("ignore: an ignored node that is non-finite does not stop", r"stopped", out)
    has("ignore: the run finishes", r"^-100\.0+$", out)
    st, out, err = tide(setup + ":break if has_inf_or_nan\nrun(sum(safe))\n:continue\n")
    has("ignore: without --ignore it stops there", r"first bad node: 'lw' \(Log\)", out)
    st, out, err = tide(setup + ":break if has_inf_or_nan --ignore lw\nrun(bad)\n:continue\n")
    has("ignore: a node making NaN from the ignored value stops", r"first bad node: 'bad' \(Mul\)", out)
    # Neg is never an origin (its outputs are not even scanned) unless it reads an ignored node, whose
    # non-finite values count as finite: then it makes the first bad value the breakpoint sees.
    st, out, err = tide(setup + "flipped = -lw\n:break if has_inf_or_nan --ignore lw\nrun(flipped)\n:continue\n")
    has("ignore: a Neg of the ignored value is the first bad node", r"first bad node: 'flipped' \(Neg\)", out)
    st, out, err = tide(setup + "flipped = -lw\nrelu_of = relu(flipped)\n:break if has_inf_or_nan\nrun(relu_of)\n:continue\n")
    has("ignore: without --ignore the Log is, not the Neg or the Relu after it", r"first bad node: 'lw' \(Log\)", out)
    lacks("ignore: only the Log stops", r"first bad node: '(flipped|relu_of)'", out)


def two_devices():
    st, out, err = tide("""v = variable(tensor({3.0, 2.0}))
device("/cpu:1", function() lv = log(v) end)
train = sgd(1.0):minimize(sum(v))
run(init())
:break if has_inf_or_nan
for i = 1, 5 do run(train); print("lv", run(lv)) end
:where
:abort
print("lv device", lv:device())
""", "--devices", "2")
    has("devices 2: stops at the log on the second device", r"stopped after 'lv' \(Log\) in step 4: has_inf_or_nan", out)
    has("devices 2: names it", r"first bad node: 'lv' \(Log\), a forward node", out)
    has("devices 2: the log ran on cpu:1", r"lv device\s+\S*cpu:1", out)
    lacks("devices 2: the transfer is not an origin", r"_Recv|_Send", out.split(":where")[0])


def while_loop_iterations():
    st, out, err = tide("""i, total = while_loop(function(i, s) return less(i, 3) end, function(i, s) return i + 1, s + i end, {0, 0})
:nodes *add*
:break while/add
run(total)
:print while/add
:continue
:print while/add
:continue
:continue
:breaks
""")
    names = re.findall(r"stopped after '([^']+)' \(Add\) in step 0, iteration (\d+) of loop '[^']*'", out)
    check("while: a breakpoint inside the loop stops at each iteration, saying which",
          [n for _, n in names] == ["0", "1", "2"], out + err)
    has("while: the loop's result", r"^3$", out)
    has("while: hits counted", r"^1\s+yes\s+3\s+while/add$", out)


def conditions_and_lifetime():
    st, out, err = tide("""x = placeholder(float32, {2})
a = x * 2.0
b = a + 1.0
c = b * b
:break if health.max > 10
run(c, {[x] = {1, 2}})
:continue
:delete 1
:break a
:break c
:disable 3
run(c, {[x] = {1, 2}})
:until b
:continue
:enable 3
run(c, {[x] = {0, 0}})
:step
:continue
:continue
:delete 2
:delete 3
run(c, {[x] = {0, 0}})
:breaks
""")
    has("condition: stops where the Lua condition is true (c's max is 25)",
        r"stopped after 'c' \(Mul\) in step 0: breakpoint 1", out)
    lacks("condition: not where it is false", r"stopped after '[ab]' \(\w+\) in step 0", out)
    has("a breakpoint on a node: a stops in step 1", r"stopped after 'a' \(Mul\) in step 1: breakpoint 2", out)
    has(":until b stops once b ran (before the next node)", r"stopped before '\w+' \(\w+\) in step 1: until 'b' ran", out)
    lacks("disabled: breakpoint 3 on c is off in step 1", r"stopped after 'c' \(Mul\) in step 1", out)
    has("kept across runs: a stops again in step 2", r"stopped after 'a' \(Mul\) in step 2: breakpoint 2", out)
    has("step: stops before the next node", r"stopped before '\w+' \(\w+\) in step 2: step", out)
    has("enabled again: c stops in step 2", r"stopped after 'c' \(Mul\) in step 2: breakpoint 3", out)
    has("no breakpoints left: the last run does not stop", r"no breakpoints", out)
    lacks("no breakpoints left", r"in step 3", out)


def break_at_stop():
    st, out, err = tide("""x = placeholder(float32, {2})
a = x * 2.0
c = a * a
:break a
run(c, {[x] = {1, 2}})
:break c
:continue
:continue
""")
    has("a breakpoint set at a stop fires later in the same step",
        r"stopped after 'a' \(Mul\) in step 0: breakpoint 1[\s\S]*stopped after 'c' \(Mul\) in step 0: breakpoint 2", out)
    has("and the run finishes", r"^\[ 4\.0+, 16\.0+\]$", out)


def scripts():
    script = """x = placeholder(float32, {2})
y = log(x)
dbg.on_bad(function(stop)
  print("on_bad", stop.node, stop.kind, dbg.summary(stop.node).neg_inf)
  dbg.continue()
end)
print(run(y, {[x] = {0, 1}}))
"""
    st, out, err = tide("", script=script)
    has("script: on_bad's function is called at the stop", r"^on_bad\s+y\s+forward\s+1$", out)
    has("script: it continued the run", r"^\[\s*-inf, 0\.0+\]$", out)
    check("script: exit status 0", st == 0, err)
    st, out, err = tide("", script="x = placeholder(float32, {2})\ny = log(x)\ndbg.on_bad()\nrun(y, {[x] = {0, 1}})\n")
    has("script without a terminal: the stop is told", r"stopped after 'y' \(Log\)", err)
    has("script without a terminal: the run is aborted, saying why", r"no terminal to debug at: the run is aborted", err)
    check("script without a terminal: exit status 1", st == 1, err)
    st, out, err = tide(":print y\n:set y {5, 5}\n:continue\n", "--debug",
                        script="x = placeholder(float32, {2})\ny = log(x)\ndbg.break_at('y')\nprint(run(y, {[x] = {1, 1}}))\n")
    has("--debug: stop commands from stdin", r"^\[5\.0+, 5\.0+\]$", out)


def dump():
    with tempfile.TemporaryDirectory(prefix="tide-dump-") as cwd:
        db = os.path.join(cwd, "runs.db")
        p = subprocess.run([TIDE, "--quiet", "--log", db], capture_output=True, text=True, timeout=120, cwd=cwd,
                           env=dict(os.environ, HOME=cwd),
                           input="x = placeholder(float32, {2})\nh = x * 2.0\ny = sum(h)\n:break y\n"
                                 "run(y, {[x] = {1, 2}})\n:dump\n:continue\n:tensor h 0\n:dump\n")
        out = p.stdout
    has("dump: every tensor of the stopped step into the log", r"^dumped \d+ tensors of step 0 into the run log", out)
    has("dump: :tensor reads an intermediate tensor back", r"^h:0 at step 0[^\n]*\n\[2\.0+, 4\.0+\]", out)
    has("dump: without a stop it says so", r":dump: no step is stopped", p.stderr)
    # :log cap at a stop applies at once, and says so: the :dump after it stores no values
    with tempfile.TemporaryDirectory(prefix="tide-dump-") as cwd:
        p = subprocess.run([TIDE, "--quiet", "--log", os.path.join(cwd, "runs.db")], capture_output=True, text=True,
                           timeout=120, cwd=cwd, env=dict(os.environ, HOME=cwd),
                           input="x = placeholder(float32, {2})\nh = x * 2.0\ny = sum(h)\n:break y\n"
                                 "run(y, {[x] = {1, 2}})\n:log cap 0\n:dump\n:continue\n")
        out = p.stdout
    has("dump: :log cap at a stop says it applies from now on", r"^values: none stored from now on", out)
    has("dump: ... and the :dump after it stores no values", r"^dumped \d+ tensors of step 0 [^\n]*; 0 with their values", out)


KEEP_SCRIPT = """x = placeholder(float32, {4})
h = x * 2.0
r = relu(h)
y = sum(r * 3.0)
:dump
:break y
run(y, {[x] = {1, 2, 3, 4}})
:print h
:continue
:delete 1
:keep on
:break y
run(y, {[x] = {1, 2, 3, 4}})
:print h
:continue
:delete 2
:dump
:tensor h 1
:tensor r 1
:log cap 8
run(y, {[x] = {-1, 2, -3, 4}})
:dump
:keep off
:dump
"""


def keep_and_dump():
    """Keep mode: :dump after a run writes every value of it (read back with :tensor and SQL, values
    checked); the log's value cap is respected and the values left out are named; :print at a stop shows
    a value consumed before the first stop; without keep mode, :dump outside a stop says what to do."""
    import sqlite3
    import struct
    with tempfile.TemporaryDirectory(prefix="tide-keep-") as cwd:
        db = os.path.join(cwd, "runs.db")
        p = subprocess.run([TIDE, "--quiet", "--log", db], capture_output=True, text=True, timeout=120, cwd=cwd,
                           env=dict(os.environ, HOME=cwd), input=KEEP_SCRIPT)
        check("keep: no crash", not crashed(p.returncode, p.stderr), p.stderr)
        out, err = p.stdout, p.stderr
        con = sqlite3.connect(db)
        rows = con.execute("SELECT step, node, output, dtype, shape, value, min, max FROM tensors "
                           "WHERE kind = 'dumped' ORDER BY rowid").fetchall()
        con.close()
    has("keep: without it, :dump outside a stop says what to do", r"^:dump: no step is stopped, and the last run's "
        r"values are gone .*`:keep on`, run the step again, then :dump", err)
    has("keep: without it, a value consumed before the stop is gone, and the message names :keep on",
        r"'h:0' is gone: .*`:keep on` keeps every value", err)
    has("keep: :keep on says its cost", r"^keep mode on: .*memory", out)
    has("keep: in keep mode :print at a stop shows a value consumed before the first stop",
        r"^h float32\[4\] =\n\[2\.0+, 4\.0+, 6\.0+, 8\.0+\]", out)
    has("keep: :dump after the run writes the finished run", r"^dumped \d+ tensors of step 1 into the run log "
        r"\(the last finished run, kept by keep mode\); \d+ with their values", out)
    has("keep: :tensor reads an intermediate back", r"^h:0 at step 1[^\n]*\n\[2\.0+, 4\.0+, 6\.0+, 8\.0+\]", out)
    has("keep: :tensor reads another back", r"^r:0 at step 1[^\n]*\n\[2\.0+, 4\.0+, 6\.0+, 8\.0+\]", out)
    has("keep: a dump over the value cap names what it left out",
        r"^left out: the values of \d+ tensors larger than the log's value cap \(8 bytes\), logged as statistics "
        r"only: .*'h:0' \(16 bytes\)", out)
    has("keep: :keep off says what it released", r"^keep mode off: the \d+ values of step 2 released", out)
    lacks("keep: after :keep off, nothing to dump", r"dumped \d+ tensors of step 2[^\n]*\n(?:.*\n)*dumped \d+ "
          r"tensors of step 2", out)
    has("keep: after :keep off, :dump says what to do (again)", r"(?s)values are gone.*values are gone", err)

    def floats(blob):
        return list(struct.unpack("<%df" % (len(blob) // 4), blob)) if blob is not None else None
    dumped = {(step, node): (value, mn, mx) for step, node, output, dtype, shape, value, mn, mx in rows}
    check("keep: SQL: step 1's h dumped with its value", floats(dumped.get((1, "h"), (None,))[0]) == [2, 4, 6, 8],
          repr(dumped.get((1, "h"))))
    check("keep: SQL: step 1's r and y dumped with their values",
          floats(dumped.get((1, "r"), (None,))[0]) == [2, 4, 6, 8] and
          floats(dumped.get((1, "y"), (None,))[0]) == [60], repr(rows))
    check("keep: SQL: step 1's fed x dumped", floats(dumped.get((1, "x"), (None,))[0]) == [1, 2, 3, 4], repr(rows))
    h2 = dumped.get((2, "h"))
    check("keep: SQL: over the cap, step 2's h has statistics but no value",
          h2 is not None and h2[0] is None and h2[1] == -6 and h2[2] == 8, repr(h2))
    y2 = dumped.get((2, "y"))
    check("keep: SQL: under the cap, step 2's y has its value", y2 is not None and floats(y2[0]) == [36], repr(y2))


def main():
    global TIDE
    TIDE = os.path.abspath(sys.argv[1])
    log_to_zero()
    gradient_fault()
    ignore()
    two_devices()
    while_loop_iterations()
    conditions_and_lifetime()
    break_at_stop()
    scripts()
    dump()
    keep_and_dump()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
