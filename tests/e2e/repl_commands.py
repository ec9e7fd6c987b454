#!/usr/bin/env python3
"""repl_commands.py — end-to-end tests of the REPL's ':' commands (repl/commands.c).

Run as `python3 tests/e2e/repl_commands.py path/to/tide`. Each scenario feeds statements and commands
to the real binary on stdin (not a terminal: no prompt, no echo) and checks stdout, stderr and the exit
status with regular expressions. One line is printed per check; the exit status is 1 if any failed.
"""
import os
import re
import subprocess
import sys
import tempfile

from checks import check, crashed, has, lacks, summary

TIDE = None
SCRATCH = None  # the working directory of scenarios that do not choose one
RUNS = []       # exit status of every run
CRASHES = []    # runs that crashed or reported a sanitizer error

# A small graph: a placeholder, an op on it, a variable and a product (names follow the globals).
GRAPH = """x = placeholder(float32, {nil, 3})
y = relu(x)
weights = variable(zeros{3, 2})
z = matmul(y, weights)
"""


def tide(stdin, cwd=None, extra_env=None):
    """Runs tide with stdin in cwd (default: a scratch directory), without a run log, with extra_env
    added to the environment; returns (status, stdout, stderr)."""
    cwd = cwd or SCRATCH
    env = dict(os.environ)
    env["HOME"] = cwd
    env["TIDE_LOG"] = ""
    env.update(extra_env or {})
    p = subprocess.run([TIDE, "--quiet"], input=stdin, capture_output=True, text=True, timeout=120,
                       cwd=cwd, env=env)
    RUNS.append(p.returncode)
    if crashed(p.returncode, p.stderr):
        CRASHES.append("status %d for input:\n%s\nstderr:\n%s" % (p.returncode, stdin, p.stderr))
    return p.returncode, p.stdout, p.stderr


def node_rows(out):
    """The table rows of a :nodes listing (header to count line)."""
    lines = out.splitlines()
    try:
        start = next(i for i, l in enumerate(lines) if re.match(r"^NAME\s+OP\s+DTYPE\s+SHAPE\s+DEVICE", l))
    except StopIteration:
        return []
    rows = []
    for l in lines[start:]:
        if re.match(r"^\d+ (of \d+ )?nodes?", l):
            break
        rows.append(l.rstrip())
    return rows


WRAP_WIDTH = 78  # repl/commands.c wraps help text at this column


def unfilled_lines(help_out):
    """The lines of a command's help (the indented paragraphs after its synopsis) that end before they
    had to: the next line's first word would have fitted on them, as a wrapped paragraph never has."""
    paragraphs = help_out.split("\n\n")
    lines = paragraphs[1].splitlines() if len(paragraphs) > 1 else []  # what follows is a Lua function's or an op's
    bad = []
    for line, following in zip(lines, lines[1:]):
        if line.strip() and following.strip() and following.startswith("  "):
            if len(line) + 1 + len(following.split()[0]) <= WRAP_WIDTH:
                bad.append(line)
    return bad


def test_help():
    st, out, err = tide(":help\n")
    check("help: exit status 0", st == 0, err)
    for name in ["help", "nodes", "info", "graph", "history", "reset", "save", "load", "quit"]:
        has("help lists :%s" % name, r"^\s+:%s\b.*\S" % name, out)
    has("help has a getting-started example", r"placeholder\(float32", out)
    has("help points to docs/repl.md", r"docs/repl\.md", out)
    example = "".join(re.sub(r"\s+--.*", "", l[4:]) + "\n" for l in out.splitlines() if l.startswith("    "))
    st, ex_out, ex_err = tide(example)
    check("help: the getting-started example runs", st == 0 and example.count("\n") >= 4, example + ex_err)
    has("help: the example prints y's value", r"^\[\[2(\.0+)?, 2(\.0+)?\]\]$", ex_out)

    st, out, err = tide(":help nodes\n:h info\n:help :save\n")
    check("help COMMAND: status 0", st == 0, err)
    has("help nodes: synopsis", r"^:nodes \[PATTERN\]", out)
    has("help nodes: long help (glob)", r"shell glob", out)
    has("alias :h works", r"^:info NODE", out)
    has("help of :quit shows its alias", r"^  \(also :q\)$", tide(":help quit\n")[1])
    has("help :save (with colon): long help", r"atomically", out)

    overview = tide(":help\n")[1]
    names = re.findall(r"^  :([a-z-]+)", overview, re.M)
    check("help: the overview lists the commands and the debugger's", len(names) > 30, overview)
    marker = "@@help-done@@"
    helps = tide("".join(":help %s\nprint('%s')\n" % (name, marker) for name in names))[1].split(marker + "\n")
    check("help COMMAND: every command has its help", len(helps) == len(names) + 1 and all(helps[:-1]), helps[-1])
    ragged = []
    for name, help_out in zip(names, helps):
        ragged += ["%s: %r" % (name, line) for line in unfilled_lines(help_out)]
    check("help COMMAND: every paragraph is filled to %d columns (no ragged lines)" % WRAP_WIDTH, not ragged,
          "\n".join(ragged[:10]))

    st, out, err = tide(":help matmul\n")
    check("help matmul: status 0", st == 0, err)
    has("help matmul: signature", r"MatMul\(a: T, b: T\) -> product: T", out)
    lacks("help matmul: no Markdown heading", r"###", out)
    lacks("help matmul: no backticks", r"`", out)
    has("help matmul: kernels line", r"kernels: cpu", out)
    has("help matmul: Lua call form", r"matmul\(a, b\[, \{transpose_a=bool, transpose_b=bool\}\]\)", out)

    st, out, err = tide(":help MatMul\n:help concat\n:help placeholder\n:help cast\n:help sum\n")
    check("help Op/concat/placeholder/cast: status 0", st == 0, err)
    has("help of an op by its registry name", r"MatMul\(a: T, b: T\)", out)
    has("help concat: a list input is a Lua table", r"concat\(\{values\.\.\.\}, axis\)", out)
    has("help cast: the prelude's usage first", r"^cast\(x, dtype", out)
    has("help cast: required attr, optional one bracketed", r"^  tide\.ops\.Cast\(x, \{DstT=dtype, \[Truncate=bool\]\}\)$", out)
    has("help sum: a prelude wrapper is not given the op's call form", r"^sum\(x \[, axis\]", out)
    lacks("help sum: no call form sum(input, ...)", r"^  sum\(input", out)
    has("help placeholder: tide.help usage line", r"^placeholder\(dtype \[, shape\]", out)
    has("help placeholder: then the op it builds on", r"^The op it builds on:\n\nPlaceholder \(op\)", out)

    st, out, err = tide(":help relux\n")
    check("help of an unknown name fails", st == 1)
    has("help relux: suggests relu", r"no help for 'relux'; did you mean .*\brelu\b", err)
    st, out, err = tide(":help hitsory\n")
    has("help of a misspelt command suggests it", r"no help for 'hitsory'; did you mean .*\bhistory\b", err)
    st, out, err = tide(":help zzzzqqqq\n")
    has("help with nothing near: no suggestion", r"^no help for 'zzzzqqqq'$", err)


def test_help_names():
    """:help suggests near names once per function, whatever the case, and shows the call form under
    the name typed."""
    st, out, err = tide(":help matmull\n")
    has(":help of a misspelt function suggests the nearest", r"no help for 'matmull'; did you mean matmul\?$", err)
    st, out, err = tide(":help Matmul\n")
    has(":help suggests regardless of case", r"did you mean matmul", err)
    st, out, err = tide(":help mat_mul\n")
    has(":help shows the call form under the name typed", r"^  mat_mul\(a, b\[", out)
    st, out, err = tide(":help MatMul\n")
    has(":help of an op name shows its preferred Lua name", r"^  matmul\(a, b\[", out)
    st, out, err = tide(":help sparse_softmax_cross_entropy_with_logits\n")
    has(":help of a long snake-case name keeps it", r"^  sparse_softmax_cross_entropy_with_logits\(", out)
    st, out, err = tide(":help next_batch\n")
    has(":help next_batch explains the split method", r"^split:next_batch\(n\)", out)


def test_unknown_and_usage():
    st, out, err = tide(":hlep\n")
    check("unknown command: status 1", st == 1)
    has("unknown command suggests :help", r"^unknown command ':hlep'; did you mean :help((, :keep)? or :step)?\?$", err)
    st, out, err = tide(":nodse\n")
    has("unknown command suggests :nodes", r"unknown command ':nodse'; did you mean :nodes", err)
    st, out, err = tide(":frobnicate\n")
    has("unknown command far from any: points to :help", r"unknown command ':frobnicate'; :help lists", err)
    st, out, err = tide(":he\n")
    has("no prefix matching beyond aliases", r"unknown command ':he'", err)
    st, out, err = tide(":\n")
    has("an empty command is an error", r"empty command", err)
    st, out, err = tide(":info\n")
    has(":info without NODE: usage", r"^usage: :info NODE \(an argument is missing\)", err)
    st, out, err = tide(":info a b\n")
    has(":info with two args: usage naming the extra", r"^usage: :info NODE \(unexpected argument 'b'\)", err)
    st, out, err = tide(":graph now\n:history 3\n:reset all now\n:save\n:load a b\n:quit now\nprint('alive')\n")
    for cmd in ["graph", "history", "reset [all]", "save FILE", "load FILE", "quit"]:
        has(":%s with wrong arguments: usage" % cmd.split()[0], r"^usage: :%s( |$)" % re.escape(cmd), err)
    has("a bad :quit does not quit", r"^alive$", out)
    st, out, err = tide(":save \"unclosed\n")
    has("an unclosed quote is an error", r"unclosed double quote", err)


def test_nodes_info_graph():
    st, out, err = tide(GRAPH + ":nodes\n")
    check("nodes: status 0", st == 0, err)
    rows = node_rows(out)
    has("nodes: header", r"^NAME\s+OP\s+DTYPE\s+SHAPE\s+DEVICE$", out)
    has("nodes: placeholder row", r"^x\s+Placeholder\s+float32\s+\[\?, 3\]\s+-$", out)
    has("nodes: relu row", r"^y\s+Relu\s+float32\s+\[\?, 3\]", out)
    has("nodes: variable row", r"^weights\s+Variable\s+float32\s+\[3, 2\]", out)
    has("nodes: matmul row", r"^z\s+MatMul\s+float32\s+\[\?, 2\]", out)
    m = re.search(r"^(\d+) nodes$", out, re.M)
    check("nodes: count line equals the rows", m is not None and int(m.group(1)) == len(rows) - 1,
          "count %s, rows %d" % (m and m.group(1), len(rows) - 1))
    cols = [r.index("Placeholder") if "Placeholder" in r else None for r in rows if r.startswith("x ")]
    ops_col = rows[0].index("OP") if rows else -1
    check("nodes: columns aligned", cols and cols[0] == ops_col, rows)

    st, out, err = tide(GRAPH + ":nodes weights*\n:nodes nomatch*\n")
    has("nodes PATTERN: matching count", r"^\d+ of \d+ nodes match(es)? 'weights\*'$", out)
    lacks("nodes PATTERN: other nodes left out", r"^y\s+Relu", out)
    has("nodes PATTERN: no match says 0", r"^0 of \d+ nodes match 'nomatch\*'$", out)

    st, out, err = tide(GRAPH + ":info y\n")
    check("info: status 0", st == 0, err)
    has("info: name line", r"^y$", out)
    has("info: op", r"^\s+op\s+Relu$", out)
    has("info: input with dtype and shape", r"^\s+inputs\s+0\s+x:0\s+float32 \[\?, 3\]$", out)
    has("info: consumer", r"^\s+consumers\s+z \(input 0, from output 0\)$", out)
    has("info: output", r"^\s+outputs\s+0\s+float32 \[\?, 3\]$", out)
    has("info: devices", r"^\s+device\s+requested \(any\); assigned \(not placed yet", out)
    has("info: attr T", r"^\s+attrs\s+T = float32$", out)
    has("info: stateless", r"^\s+stateful\s+no$", out)

    st, out, err = tide(GRAPH + ":info weights\n:info z:0\n")
    has("info variable: shape attr", r"shape = \[3, 2\]", out)
    has("info variable: stateful", r"^\s+stateful\s+yes$", out)
    has("info name:index accepted", r"^\s+op\s+MatMul$", out)
    st, out, err = tide(GRAPH + ":info z:3\n")
    has("info of an output a node lacks", r"'z' \(MatMul\) has 1 output", err)

    st, out, err = tide(GRAPH + ":info wieghts\n")
    check("info of an unknown node: status 1", st == 1)
    has("info unknown node suggests the nearest", r"^unknown node 'wieghts'; did you mean weights", err)
    st, out, err = tide(":info x\n")
    has("info on an empty graph says so", r"unknown node 'x' \(the graph is empty\)", err)

    st, out, err = tide(GRAPH + ":graph\n")
    check("graph: status 0", st == 0, err)
    m = re.search(r"^graph: (\d+) nodes, version (\d+)$", out, re.M)
    check("graph: count and version", m is not None and int(m.group(1)) >= 4, out)
    has("graph: ops by count", r"^ops \(\d+\):.*\bRelu 1\b", out, re.M | re.S)
    has("graph: variables with shapes", r"^variables \(1\):\n\s+weights float32 \[3, 2\]", out)
    has("graph: scopes", r"^scopes \(\d+\)", out)
    has("graph: text format of a small graph", r"^y = Relu\(x", out)
    st, out, err = tide(":graph\n")
    has("graph of an empty graph", r"^graph: 0 nodes, version \d+$", out)
    big = "for i = 1, 45 do tide.constant(i) end\n"
    st, out, err = tide(big + ":graph\n")
    lacks("graph: no text for 40+ nodes", r"= Const\(", out)


def test_history_reset_quit():
    st, out, err = tide("a = 1\nb = 2\nfor i = 1, 2 do\n  c = i\nend\n:history\n")
    has("history: first entry numbered 1", r"^\s+1  a = 1$", out)
    has("history: second entry", r"^\s+2  b = 2$", out)
    has("history: a multi-line entry indented", r"^\s+3  for i = 1, 2 do\n\s+  c = i\n\s+end$", out)
    st, out, err = tide(":history\n")
    has("history: empty", r"no entries yet", out)

    st, out, err = tide(GRAPH + ":reset\n:nodes\nprint(relu(y))\n")
    has("reset: says what was dropped", r"^reset: dropped \d+ nodes \(1 variable\)", out)
    has("reset: the graph is empty afterwards", r"^0 nodes$", out)
    check("reset: an old handle is dead (an error, no crash)", st == 1 and "error" in err and "Segmentation" not in err,
          err)
    st, out, err = tide(GRAPH + ":reset\n" + GRAPH + ":nodes\n")
    has("reset: the same names can be used again", r"^x\s+Placeholder", out)

    # A variable redeclared with another shape after :reset never shows the old value, and its
    # initializer works (it failed for ever: "cannot assign a value of shape [5] ... of shape [3, 2]").
    st, out, err = tide("W = variable(ones{3, 2})\nrun(init())\n:reset\nW = variable(zeros{5})\nW\n"
                        "print(pcall(run, W + 1))\nrun(init())\nW\nprint(run(W + 1))\n")
    has("reset: says a value of another shape is initialised again", r"another\s+shape is initialised again", out)
    has("reset: the redeclared variable refuses the old value",
        r"^node W \(Variable\) float32 \[5\].*cannot read its value:.*holds a float32 value of shape \[3, 2\]", out)
    has("reset: reading it in a run fails too", r"^false\s.*shape \[3, 2\]", out)
    has("reset: run(init()) initialises it with the new shape",
        r"^node W \(Variable\) float32 \[5\] on /cpu:0 =\n\[0\.0000, 0\.0000, 0\.0000, 0\.0000, 0\.0000\]$", out)
    has("reset: and it computes with the new value", r"^\[1\.0000, 1\.0000, 1\.0000, 1\.0000, 1\.0000\]$", out)
    lacks("reset: no 'cannot assign' error", r"cannot assign", err)
    st, out, err = tide("W = variable(ones{3, 2})\nrun(init())\n:reset all\nW = variable(ones{3, 2})\nW\n")
    has(":reset all drops the values too", r"Dropped the values of 1 variable too", out)
    has(":reset all: the same declaration starts uninitialised", r"^node W .*\(not initialised: run\(init\(\)\)\)$", out)

    st, out, err = tide("print('before')\n:quit\nprint('after')\n")
    check("quit: status 0", st == 0, err)
    has("quit: earlier lines ran", r"^before$", out)
    lacks("quit: later lines did not run", r"after", out)
    st, out, err = tide(":q\nprint('after')\n")
    lacks("alias :q quits", r"after", out)


def test_save_load(tmp):
    path = os.path.join(tmp, "g.txt")
    st, out, err = tide(GRAPH + ":nodes\n:save g.txt\n", cwd=tmp)
    check("save: status 0", st == 0, err)
    original = node_rows(out)
    has("save: reports the node count", r"^saved \d+ nodes to g\.txt$", out)
    check("save: the file exists", os.path.exists(path))
    text = open(path).read() if os.path.exists(path) else ""
    check("save: graph text format", text.startswith("# tide graph v1") and "Relu(x" in text, text[:300])
    check("save: no temporary file left", [f for f in os.listdir(tmp) if ".tmp." in f] == [], os.listdir(tmp))
    mask = os.umask(0)
    os.umask(mask)
    check("save: a new file gets 0666 less the umask", (os.stat(path).st_mode & 0o777) == (0o666 & ~mask),
          oct(os.stat(path).st_mode))

    st, out, err = tide(":load g.txt\n:nodes\nprint(node('y'):op())\n", cwd=tmp)
    check("load: status 0", st == 0, err)
    has("load: reports nodes added and node()", r"^loaded \d+ nodes from g\.txt \(the graph has \d+\); in Lua: node\(\"", out)
    check("load: :nodes equals the saved process's", node_rows(out) == original and len(original) > 4,
          "\n".join(original + ["---"] + node_rows(out)))
    has("load: nodes reachable as node(name)", r"^Relu$", out)

    st, out, err = tide(":load g.txt\n:load g.txt\n:nodes\n", cwd=tmp)
    check("load twice: status 1", st == 1)
    has("load twice: names the file, nothing added", r"^cannot load g\.txt line \d+: .*(already|twice|used).*\(nothing was added\)$", err)
    check("load twice: graph unchanged", node_rows(out) == original, "\n".join(node_rows(out)))

    with open(os.path.join(tmp, "bad.txt"), "w") as f:
        f.write("a = Placeholder(dtype=float32, shape=[2])\nb = Relu(a, T=float32\nc = Relu(a, T=float32)\n")
    st, out, err = tide(":load bad.txt\n:nodes\n", cwd=tmp)
    has("load bad file: names the file and line 2", r"^cannot load bad\.txt line 2\b", err)
    has("load bad file: all or nothing", r"^0 nodes$", out)
    with open(os.path.join(tmp, "unknown_op.txt"), "w") as f:
        f.write("a = Relux(b)\n")
    st, out, err = tide(":load unknown_op.txt\n", cwd=tmp)
    has("load unknown op: line and suggestion", r"cannot load unknown_op\.txt line 1.*Relu", err)
    st, out, err = tide(":load missing.txt\n", cwd=tmp)
    has("load missing file", r"^cannot load missing\.txt: No such file or directory\b", err)
    with open(os.path.join(tmp, "empty.txt"), "w") as f:
        f.write("# nothing\n")
    st, out, err = tide(":load empty.txt\n", cwd=tmp)
    has("load a file without nodes", r"empty\.txt holds no nodes", out)
    with open(os.path.join(tmp, "nul.txt"), "wb") as f:
        f.write(b"x = Placeholder(dtype=float32)\n\0\n")
    st, out, err = tide(":load nul.txt\n", cwd=tmp)
    has("load a file with NUL bytes", r"^cannot load nul\.txt line 2: a NUL byte", err)
    st, out, err = tide(":load /dev/zero\nprint('alive')\n", cwd=tmp)
    has("load /dev/zero: refused at once", r"^cannot load /dev/zero line 1: a NUL byte", err)
    has("load /dev/zero: carries on", r"^alive$", out)
    st, out, err = tide(":load g.txt\n", cwd=tmp, extra_env={"TIDE_MAX_INPUT_BYTES": "100"})
    has("load over the cap: names it and how to raise it",
        r"^cannot load g\.txt: the graph text file holds more than 100 bytes, the cap .*TIDE_MAX_INPUT_BYTES", err)

    st, out, err = tide(GRAPH + ":save /nonexistent-dir/g.txt\n:save g.txt/sub.txt\n", cwd=tmp)
    check("save unwritable: status 1", st == 1)
    has("save to a missing directory", r"^cannot save to '/nonexistent-dir/g\.txt': No such file or directory$", err)
    has("save under a regular file", r"^cannot save to 'g\.txt/sub\.txt': Not a directory$", err)
    os.mkdir(os.path.join(tmp, "adir"))
    st, out, err = tide(GRAPH + ":save adir\n", cwd=tmp)
    has("save over a directory fails", r"^cannot save to 'adir': Is a directory$", err)
    check("save over a directory: no temporary left", [f for f in os.listdir(tmp) if ".tmp." in f] == [],
          os.listdir(tmp))

    before = open(path).read()
    os.chmod(path, 0o600)
    st, out, err = tide("a = placeholder(float32, {2})\n:save g.txt\n", cwd=tmp)
    after = open(path).read()
    check("save replaces an existing file", after != before and "a = Placeholder" in after, after)
    check("save keeps the mode of the file it replaces", (os.stat(path).st_mode & 0o777) == 0o600,
          oct(os.stat(path).st_mode))

    os.mkdir(os.path.join(tmp, "with space"))
    st, out, err = tide(GRAPH + ":save \"with space/g 2.txt\"\n:reset\n:load 'with space/g 2.txt'\n", cwd=tmp)
    check("quoted paths with spaces", st == 0 and os.path.exists(os.path.join(tmp, "with space", "g 2.txt")), err)
    has("quoted path: loaded back", r"^loaded \d+ nodes from with space/g 2\.txt", out)


def test_info_executions():
    """:info says how often the node ran in the last traced run: inside a while loop once per
    iteration, with the loop and the iterations."""
    st, out, err = tide(GRAPH.splitlines()[0] + "\n:info x\n"
                        "i = while_loop(function(i) return less(i, 5) end, function(i) return i + 1 end, {0}, "
                        "{name='count'})\nv = run(i, nil, {trace=true})\n:info count/add\n:info x\n")
    check("info executions: status 0", st == 0, err)
    has("info before any traced run says so", r"^\s+executions\s+\(no traced run yet", out)
    has("info: a loop body ran once per iteration",
        r"^\s+executions\s+5 in the last traced run, [0-9.]+ us each on average; loop count, iterations 0-4$", out)
    has("info: a node not in the traced run", r"^\s+executions\s+none in the last traced run$", out)


def main():
    global TIDE
    if len(sys.argv) != 2:
        print("usage: repl_commands.py path/to/tide", file=sys.stderr)
        return 2
    TIDE = os.path.abspath(sys.argv[1])
    global SCRATCH
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as tmp:
        SCRATCH = scratch
        test_help()
        test_unknown_and_usage()
        test_nodes_info_graph()
        test_info_executions()
        test_help_names()
        test_history_reset_quit()
        test_save_load(tmp)
        check("no run log written (TIDE_LOG=\"\")", os.listdir(scratch) == [], os.listdir(scratch))
    check("no crash, abort or sanitizer report in %d runs" % len(RUNS), not CRASHES, "\n\n".join(CRASHES))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
