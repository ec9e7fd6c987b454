#!/usr/bin/env python3
"""debugger_fuzz.py — random debugger commands at stopped steps: nothing may crash, hang or leak a
sanitizer report (docs/debugger.md).

    python3 tests/e2e/debugger_fuzz.py path/to/tide [ROUNDS] [SEED]

Each round starts one `tide` with its entries on stdin: a small graph (two devices, a while_loop, a
gradient), a few breakpoints, then runs interleaved with random commands; at a stop the commands are
read as the stop's entries (any command, valid or not: slices out of range, unknown nodes, :set with
wrong dtypes and shapes, breakpoints added and deleted at the stop, Lua errors, dbg calls, :step N,
:until, :continue, :abort). A round passes when the process ends by itself within its time limit,
with status 0 or 1 and no sanitizer report. The seed is printed so a failure can be repeated.
"""
import os
import random
import subprocess
import sys
import tempfile

SETUP = """x = placeholder(float32, {2, 3})
w = variable(tensor({{1.0, -1.0}, {0.5, 2.0}, {0.0, 1.0}}))
device("/cpu:1", function() h = relu(matmul(x, w)) end)
lg = log(h)
loss = sum(h * h)
g = gradients(loss, w)
i, total = while_loop(function(i, s) return less(i, 3) end, function(i, s) return i + 1, s + i end, {0, 0})
run(init())
"""
NODES = ["x", "w", "h", "lg", "loss", "total", "while/add", "nope", "h:1", "gradients/mul_grad/mul", "", "*"]
SLICES = ["", "[0]", "[0:1, :]", "[-1]", "[::2, 1]", "[5]", "[0:, ::-1]", "[", "[a:b]", "[0, 0, 0]", "[::0]"]
VALUES = ["{{1, 2}, {3, 4}}", "0", "{1, 2, 3}", "'str'", "nil", "tensor({{1.0, 1.0}, {1.0, 1.0}})", "{{",
          "int32", "1e40"]
RUNS = ["run(loss, {[x] = {{1, 2, 3}, {4, 5, 6}}})", "run(g, {[x] = {{1, 0, 0}, {0, 0, 0}}})", "run(total)",
        "run({lg, loss}, {[x] = {{0, 0, 0}, {-1, 1, 2}}})", "run(w)"]


def command(rng):
    n = rng.choice(NODES)
    k = rng.randrange(14)
    if k == 0:
        return ":break " + rng.choice([n, "op:Relu", "op:Nope", "if has_inf_or_nan", "if has_inf_or_nan --ignore lg",
                                       "if health and health.max > 1", "h if error('boom')", "if", "a b c"])
    if k == 1:
        return rng.choice([":delete", ":disable", ":enable"]) + " " + rng.choice(["1", "2", "3", "0", "x", "99"])
    if k == 2:
        return ":print " + n + " " + rng.choice(SLICES) + rng.choice(["", " -s"])
    if k == 3:
        return ":set " + n + " " + rng.choice(VALUES)
    if k == 4:
        return rng.choice([":ni ", ":li ", ":lo ", ":li -r -d 2 ", ":lo -r "]) + n
    if k == 5:
        return rng.choice([":step", ":step 2", ":step 0", ":step x", ":continue", ":abort", ":until " + n])
    if k == 6:
        return rng.choice([":where", ":breaks", ":help step", ":print", ":set", ":until", ":keep on", ":keep off",
                           ":keep", ":keep maybe", ":dump", "dbg.keep(true)", "dbg.keep(false)", "dbg.dump()"])
    if k == 7:
        return rng.choice(["dbg.value('%s')" % n, "dbg.summary('%s')" % n, "dbg.stopped()", "dbg.breaks()",
                           "dbg.step()", "dbg.continue()", "dbg.abort()", "dbg.delete(1)", "dbg.break_at('h')",
                           "dbg.value(h, 0)", "dbg.summary(dbg.value('h'))"])
    if k == 8:
        return rng.choice(RUNS)
    if k == 9:
        return rng.choice(["1 +", "error('x')", "y = relu(h)", ":nodes", "print(dbg.stopped())"])
    return rng.choice(RUNS) if k < 12 else ":continue"


def round_passes(tide, rng, timeout):
    lines = [":break h", ":break while/add", ":break if has_inf_or_nan"]
    lines += [command(rng) for _ in range(60)]
    lines += [":delete %d" % i for i in range(1, 12)] + [":continue"] * 4 + ["run(loss, {[x] = {{1,1,1},{1,1,1}}})"]
    stdin = SETUP + "\n".join(lines) + "\n"
    with tempfile.TemporaryDirectory(prefix="tide-dbgfuzz-") as cwd:
        try:
            p = subprocess.run([tide, "--quiet", "--no-log", "--devices", "2"], input=stdin, capture_output=True,
                               text=True, timeout=timeout, cwd=cwd, env=dict(os.environ, HOME=cwd))
        except subprocess.TimeoutExpired:
            return False, "hung (no exit within %d s); input:\n%s" % (timeout, stdin)
    bad = p.returncode not in (0, 1) or any(s in p.stderr for s in ("Sanitizer", "runtime error:", "Assertion"))
    return not bad, "status %d; stderr tail:\n%s\ninput:\n%s" % (p.returncode, p.stderr[-3000:], stdin)


def main():
    tide = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else random.randrange(1 << 30)
    print("seed %d, %d rounds" % (seed, rounds))
    rng = random.Random(seed)
    failed = 0
    for r in range(rounds):
        ok, detail = round_passes(tide, rng, 120)
        if not ok:
            failed += 1
            print("FAIL round %d: %s" % (r, detail))
            break
    print("%d rounds, %d failed" % (rounds, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
