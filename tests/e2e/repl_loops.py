#!/usr/bin/env python3
"""repl_loops.py — building nodes inside a training loop must not grow the graph silently.

Run as `python3 tests/e2e/repl_loops.py path/to/tide`. Entries go to the real binary on stdin (as the
other e2e scripts do); the graph's size comes from `:graph`, the warning from stderr. Checks: a loop
that builds a node before every run is warned about once per entry, naming the op; the same summary,
and the same small constants, built again and again are one node; op functions on host tensors
(one_hot of a batch) add nothing; a loop that builds nothing is not warned about.
"""
import os
import re
import subprocess
import sys
import tempfile

from checks import check, has, lacks, summary

TIDE = None


def tide(stdin):
    with tempfile.TemporaryDirectory(prefix="tide-loops-") as cwd:
        env = dict(os.environ, HOME=cwd, TIDE_LOG="")
        p = subprocess.run([TIDE, "--quiet"], input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd,
                           env=env)
    return p.returncode, p.stdout, p.stderr


def nodes(out):
    m = re.findall(r"^graph: (\d+) nodes?", out, re.M)
    return [int(n) for n in m]


def main():
    global TIDE
    TIDE = os.path.abspath(sys.argv[1])
    setup = "labels = placeholder(int32, {-1})\nx = placeholder(float32, {-1, 3})\nloss = sum(x)\n"

    # A node built inside the loop at every step: warned once, naming the op.
    st, out, err = tide(setup + ":graph\nfor i = 1, 40 do run(one_hot(labels, 10), {[labels] = {1, 2}}) end\n:graph\n"
                        "for i = 1, 40 do run(one_hot(labels, 10), {[labels] = {1, 2}}) end\n")
    check("a growing loop still runs", st == 0, err)
    has("a growing loop is warned about", r"^warning: the graph grew before each of the last 10 runs", err)
    has("the warning names the op the loop adds", r"added 1: OneHot\)", err)
    check("the warning comes once per entry (two entries: two warnings)", err.count("warning: the graph grew") == 2,
          err)
    counts = nodes(out)
    check("one OneHot per step, its three constants made once: +43 nodes",
          len(counts) == 2 and counts[1] - counts[0] == 43, counts)

    # The same summary of a loss, asked for at every step: one node, no warning.
    st, out, err = tide(setup + ":graph\nfor i = 1, 50 do run({loss, summary('loss', loss)}, "
                        "{[x] = {{1, 2, 3}}}) end\n:graph\n")
    counts = nodes(out)
    check("summary('loss', loss) in a loop is one node", len(counts) == 2 and counts[1] - counts[0] == 1, counts)
    lacks("a loop that reuses its nodes is not warned about", r"warning", err)

    # one_hot of a host batch: eager, nothing added.
    st, out, err = tide(setup + ":graph\nfor i = 1, 30 do local y = one_hot(tensor({1, 2}), 10); run(loss, "
                        "{[x] = {{1, 2, 3}}}) end\n:graph\n")
    counts = nodes(out)
    check("one_hot of a host tensor adds no node", len(counts) == 2 and counts[1] == counts[0], counts)
    lacks("no warning for it", r"warning", err)

    # Constants typed in a loop (x * 2) are one Const; the products are new nodes (and warned about).
    st, out, err = tide(setup + "for i = 1, 12 do run(x * 2, {[x] = {{1, 2, 3}}}) end\n:nodes const*\n")
    check("x * 2 in a loop makes one float32 Const", len(re.findall(r"Const\s+float32", out)) == 1, out)
    has("the Mul it makes at every step is warned about", r"added 1: Mul\)", err)
    # Constants made inside a cond's branches are tied to their branch: never shared between branches.
    st, out, err = tide("v = placeholder(float32, {-1})\nsafe = cond(greater(size(v), 3), function() return "
                        "sum(reshape(v, {2, 2})) end, function() return sum(v) end)\n"
                        "print(run(safe, {[v] = {1, 2}}):item(), run(safe, {[v] = {1, 2, 3, 4}}):item())\n")
    has("constants of a cond's branches stay in their branch", r"^3\.0\s+10\.0$", out)
    # A constant named after a global stays its own node.
    st, out, err = tide("a = constant(5)\nb = constant(5)\nprint(a:name(), b:name())\n")
    has("constants named after globals are distinct", r"^a\tb$", out)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
