#!/usr/bin/env python3
"""repl_runlog.py — end-to-end tests of the REPL's run-log commands (repl/commands.c over
store/query.c): :runs, :run, :tensor, :sql, :trace, :watch, :unwatch, :prune and :log.

Run as `python3 tests/e2e/repl_runlog.py path/to/tide`. The real binary reads statements and commands
from a pipe (no prompt, no echo) with `--log FILE` in a temporary directory: a short training loop (a
variable and sgd, 30 steps with `:watch loss` and `:trace every 10`), then every command, whose output
is checked with regular expressions and against the log file itself (read with Python's sqlite3). A
second process queries the first one's log while the first is still running; Ctrl-C stops a long
:sql. Also: every command without a log (--no-log). One line is printed per check; the exit status is 1 if any failed.
"""
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from checks import check, crashed, has, lacks, summary

TIDE = None
MARK = "@@section@@"

# A variable trained by gradient descent; every run() of the loop fetches loss (steps 1..30; step 0
# is run(init())). Each step prints its loss as the REPL prints a tensor.
TRAIN = """W = variable(ones{2, 2})
x = constant({{1, 2}, {3, 4}}, float32)
loss = mean(square(matmul(x, W)))
train = sgd(0.01):minimize(loss)
run(init())
"""
LOOP = """for i = 1, %d do local v = run({train, loss}); print("step " .. (%d + i) .. " loss " .. tostring(v[2])) end
"""


def sane(name, status, err):
    check(name + ": no crash or sanitizer report",
          not crashed(status, err), "status %d\n%s" % (status, err))


def env_for(home):
    env = dict(os.environ)
    env["HOME"] = home
    env.pop("TIDE_LOG", None)
    return env


def sections(parts, log, cwd):
    """Runs one tide process on the concatenated parts [(name, text)], each followed by a marker on
    stdout and stderr; returns {name: (stdout, stderr)} and the exit status."""
    text = ""
    for name, part in parts:
        text += part
        if not part.endswith("\n"):
            text += "\n"
        text += 'do print("%s %s"); io.stderr:write("%s %s\\n") end\n' % (MARK, name, MARK, name)
    args = [TIDE, "--quiet"] + (["--log", log] if log else ["--no-log"])
    p = subprocess.run(args, input=text, capture_output=True, text=True, timeout=300, cwd=cwd, env=env_for(cwd))
    out = split(p.stdout, [n for n, _ in parts])
    err = split(p.stderr, [n for n, _ in parts])
    return {n: (out.get(n, ""), err.get(n, "")) for n, _ in parts}, p.returncode, p.stderr


def split(stream, names):
    result, current = {}, []
    for line in stream.splitlines(keepends=True):
        m = re.match(re.escape(MARK) + r" (\S+)$", line.rstrip("\n"))
        if m:
            result[m.group(1)] = "".join(current)
            current = []
        else:
            current.append(line)
    return result


def db_rows(log, sql, args=()):
    con = sqlite3.connect("file:%s?mode=ro" % log, uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


# ---------------------------------------------------------------------------- the main session


def test_session(tmp):
    log = os.path.join(tmp, "runs.db")
    parts = [
        ("setup", TRAIN + ":watch loss\n:trace every 10\n"),
        ("train", LOOP % (30, 0)),
        ("runs", ":runs 5\n"),
        ("runs_all", ":runs\n"),
        ("runs_bad", ":runs 0\n"),
        ("run_traced", ":run 11\n"),   # step 10
        ("run_plain", ":run 12\n"),    # step 11
        ("run_latest", ":run\n"),
        ("run_missing", ":run 9999\n"),
        ("run_bad", ":run abc\n"),
        ("tensor5", ":tensor loss 5\n"),
        ("tensor_latest", ":tensor loss\n"),
        ("tensor_after", ":tensor loss 1000\n"),
        ("tensor_unknown", ":tensor nothing\n"),
        ("tensor_bad_step", ":tensor loss soon\n"),
        ("tensor_bad_output", ":tensor loss:x\n"),
        ("sql", ":sql SELECT step, round(mean, 6) AS mean FROM tensors WHERE node = 'loss' AND kind = 'watched' "
                "AND step IN (5, 6) ORDER BY step\n"),
        ("sql_quotes", ":sql SELECT 'it''s' AS \"a b\", \"step\" FROM runs WHERE step = 0\n"),
        ("sql_many", ":sql WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150) "
                     "SELECT i, 'a long text, more than forty characters in one cell' AS t FROM n\n"),
        ("sql_delete", ":sql DELETE FROM runs\n"),
        ("sql_drop", ":sql DROP TABLE tensors\n"),
        ("sql_insert", ":sql INSERT INTO runs(step, run_id) VALUES (1, 1)\n"),
        ("sql_attach", ":sql ATTACH 'other.db' AS other\n"),
        ("sql_pragma", ":sql PRAGMA user_version = 99\n"),
        ("sql_two", ":sql SELECT 1; SELECT 2\n"),
        ("sql_bad", ":sql SELECT nope FROM runs\n"),
        ("sql_empty", ":sql\n"),
        ("sql_wide", ":sql -w 0 SELECT 'a long text, more than forty characters in one cell' AS t\n"),
        ("sql_narrow", ":sql -w 8 SELECT 'a long text' AS t, 7 AS n\n"),
        ("sql_bad_width", ":sql -w many SELECT 1\n"),
        ("watch_list", ":watch W\n:watch\n"),
        ("watch_missing", ":watch nosuch\n"),
        ("watch_output", ":watch loss:0\n"),
        ("unwatch_not", ":unwatch nothing_here\n"),
        ("unwatch", ":unwatch nosuch\n:unwatch\n"),
        ("trace_show", ":trace\n"),
        ("trace_on", ":trace on\n"),
        ("train_on", LOOP % (3, 30)),       # steps 31..33: all traced
        ("trace_off", ":trace off\n"),
        ("train_off", LOOP % (5, 33)),      # steps 34..38: none traced
        ("trace_bad", ":trace sometimes\n:trace every -2\n"),
        ("unwatch_loss", ":unwatch loss\n"),
        ("train_unwatched", LOOP % (2, 38)),  # steps 39, 40: loss not logged; W is
        ("cap", ":log cap 0\n"),
        ("train_capped", LOOP % (1, 40)),   # step 41: W's statistics only
        ("tensor_capped", ":tensor W\n"),
        ("cap_bad", ":log cap lots\n"),
        ("log", ":log\n"),
        ("prune", ":prune 3\n"),
        ("prune_again", ":prune 3\n"),
        ("prune_bad", ":prune -1\n"),
        ("help", ":help\n"),
        ("help_sql", ":help sql\n"),
    ]
    res, status, all_err = sections(parts, log, tmp)
    sane("session", status, all_err)
    out = lambda n: res[n][0]
    err = lambda n: res[n][1]

    # the loop's values, as printed by Lua
    losses = dict((int(a), b) for a, b in re.findall(r"^step (\d+) loss (\S+)$", out("train"), re.M))
    check("training ran 30 steps", len(losses) == 30, out("train") + err("train"))
    lacks("setup: no error", r"error", err("setup") + err("train"))

    # :runs
    rows = re.findall(r"^\s*(\d+)\s+1\s+(\d+)\s+OK\s+[\d.]+\s+([01])\s+\S+", out("runs"), re.M)
    check(":runs 5 lists 5 runs", len(rows) == 5, out("runs"))
    check(":runs: newest last, steps 26..30", [int(s) for _, s, _ in rows] == [26, 27, 28, 29, 30], out("runs"))
    check(":runs: step 30 traced, 29 not", rows and rows[-1][2] == "1" and rows[-2][2] == "0", out("runs"))
    has(":runs: header", r"^id\s+session\s+step\s+status\s+wall_ms\s+traced\s+fetches\s+started$", out("runs"))
    has(":runs: fetches shown", r'\["loss:0"\]', out("runs"))
    has(":runs: footer counts all runs", r"^\(the last 5 of 31 runs; ", out("runs"))
    has(":runs: default lists 20", r"^\(the last 20 of 31 runs; ", out("runs_all"))
    has(":runs 0: explains N", r"^:runs N: N is how many runs to list \(1 or more\), not '0'", err("runs_bad"))

    # :run
    has(":run of a traced run: header", r"^run 11: step 10 of session 1, OK, [\d.]+ ms, started ", out("run_traced"))
    has(":run shows the step's peak memory", r"^  peak memory: [1-9][\d.]* (bytes|KiB|MiB) \(tensors its kernels allocated",
        out("run_plain"))
    has(":run of a traced run: the slowest nodes", r"traced: \d+ nodes timed; the slowest:\n"
        r"node\s+op\s+device\s+thread\s+time_us\s+pct_of_wall\n", out("run_traced"))
    slow = re.findall(r"^(\S+)\s+(\w+)\s+/cpu:0\s+-?\d+\s+([\d.]+)\s+([\d.]+)$", out("run_traced"), re.M)
    check(":run: 10 slowest nodes listed, slowest first",
          len(slow) == 10 and all(float(slow[i][2]) >= float(slow[i + 1][2]) for i in range(9)), out("run_traced"))
    check(":run: MatMul among the timed ops", any(op == "MatMul" for _, op, _, _ in slow), out("run_traced"))
    has(":run of an untraced run says so", r"^  not traced: no node timings", out("run_plain"))
    lacks(":run of an untraced run: no table", r"^node\s+op", out("run_plain"))
    has(":run without ID: the latest", r"^run 31: step 30 ", out("run_latest"))
    has(":run 9999: no such run", r"^:run: run log .*runs\.db has no run 9999$", err("run_missing"))
    has(":run abc: explains ID", r":run ID: ID is a run's id", err("run_bad"))

    # :tensor (time travel)
    has(":tensor loss 5: the step", r"^loss:0 at step 5, run 6 of session 1: float32 \[\]$", out("tensor5"))
    value5 = re.search(r"^loss:0 at step 5.*\n(\S+)\n", out("tensor5"))
    check(":tensor loss 5: the value printed at step 5", value5 and value5.group(1) == losses.get(5),
          "printed %r, step 5 was %r" % (value5 and value5.group(1), losses.get(5)))
    has(":tensor: statistics", r"^  min \S+  max \S+  mean \S+  std 0$", out("tensor5"))
    has(":tensor: NaN and Inf counts", r"^  NaN 0  Inf 0$", out("tensor5"))
    has(":tensor: a text histogram", r"^  histogram  \S+ \|█ {29}\| \S+  \(30 bins; the fullest holds 1\)$",
        out("tensor5"))
    mean5 = db_rows(log, "SELECT mean FROM tensors WHERE node = 'loss' AND step = 5 AND kind = 'watched'")
    m = re.search(r"mean (\S+)", out("tensor5"))
    check(":tensor: the mean is the logged one", mean5 and m and abs(float(m.group(1)) - mean5[0][0]) <=
          1e-5 * abs(mean5[0][0]), "%r vs %r" % (m and m.group(1), mean5))
    has(":tensor without STEP: the latest (step 30)", r"^loss:0 at step 30, ", out("tensor_latest"))
    has(":tensor loss 1000: the latest at or before", r"^loss:0 at step 30 \(the latest logged at or before step "
        r"1000\)", out("tensor_after"))
    has(":tensor of a node never logged", r"holds no value of nothing:0; :watch nothing logs it", err("tensor_unknown"))
    has(":tensor with a bad step", r"STEP is a step number", err("tensor_bad_step"))
    has(":tensor with a bad output", r"is not a node name or NAME:OUTPUT", err("tensor_bad_output"))

    # :sql
    has(":sql: a table with a header", r"^step\s+mean\n\s*5\s+[\d.]+\n\s*6\s+[\d.]+\n\(2 rows\)$", out("sql"))
    has(":sql: the rest of the line, quotes and all", r"^a b\s+step\nit's\s+0\n\(1 row\)$", out("sql_quotes"))
    many = out("sql_many").splitlines()
    check(":sql: at most 100 rows", len(many) == 102 and many[-1] == "(first 100 of more rows)", many[-3:])
    check(":sql: cells clipped at 40 characters",
          len(many) > 1 and many[1].endswith("a long text, more than forty characte..."), many[:3])
    for name in ["sql_delete", "sql_drop", "sql_insert", "sql_pragma"]:
        has(":sql refuses %s" % name[4:].upper(), r"^sql: only statements that read are allowed", err(name))
    has(":sql refuses ATTACH", r"^sql: ATTACH is not allowed", err("sql_attach"))
    has(":sql refuses two statements", r"^sql: one statement at a time", err("sql_two"))
    has(":sql: SQLite's message", r"^sql: no such column: nope$", err("sql_bad"))
    has(":sql without a query: usage", r"^usage: :sql \[-w N\] QUERY", err("sql_empty"))
    has(":sql -w 0: whole cells", r"^a long text, more than forty characters in one cell$", out("sql_wide"))
    has(":sql -w 8: cells clipped at 8", r"^a lon\.\.\.  7$", out("sql_narrow"))
    has(":sql -w with a bad width: usage", r"^usage: :sql \[-w N\] QUERY", err("sql_bad_width"))
    check("the refused writes changed nothing", not os.path.exists(os.path.join(tmp, "other.db")) and
          db_rows(log, "PRAGMA user_version")[0][0] == 10, "")  # schema version 10 (store/store.h)

    # :watch, :unwatch
    has(":watch W", r"^watching W: ", out("watch_list"))
    has(":watch lists the watched", r"^watched \(2\): loss W$", out("watch_list"))
    has(":watch of a missing node warns", r"^warning: there is no node 'nosuch' yet; it is watched anyway",
        err("watch_missing"))
    has(":watch of a missing node still watches", r"^watching nosuch", out("watch_missing"))
    has(":watch NAME:0 is refused", r":watch takes a node name", err("watch_output"))
    has(":unwatch of a name not watched", r"^'nothing_here' is not watched; watched \(3\): loss W nosuch$",
        err("unwatch_not"))
    has(":unwatch", r"^stopped watching nosuch", out("unwatch"))
    has(":unwatch without a name lists", r"^watched \(2\): loss W$", out("unwatch"))

    # :trace
    has(":trace shows the policy", r"^trace: steps that are multiples of 10 \(0, 10, \.\.\.\)", out("trace_show"))
    has(":trace on", r"^trace: every run records per-node timings", out("trace_on"))
    has(":trace off", r"^trace: only the runs traced by the caller", out("trace_off"))
    check(":trace bad arguments: usage twice", len(re.findall(r"^usage: :trace", err("trace_bad"), re.M)) == 2,
          err("trace_bad"))
    traced = db_rows(log, "SELECT step, traced, (SELECT count(*) FROM node_timings t WHERE t.run_id = r.id) "
                          "FROM runs r WHERE session_id = 1 ORDER BY step")
    by_step = dict((s, (t, n)) for s, t, n in traced)
    check("every 10: steps 0, 10, 20, 30 traced, with timings",
          all(by_step[s][0] == 1 and by_step[s][1] > 0 for s in (0, 10, 20, 30)), traced)
    check("every 10: steps 1-9, 11-19, 21-29 not traced, no timings",
          all(by_step[s] == (0, 0) for s in range(1, 30) if s % 10), traced)
    check(":trace on: steps 31-33 traced", all(by_step[s][0] == 1 and by_step[s][1] > 0 for s in (31, 32, 33)),
          traced)
    check(":trace off: steps 34-38 have no node_timings", all(by_step[s] == (0, 0) for s in range(34, 39)), traced)

    # :unwatch stopped logging loss; the cap keeps W's statistics only
    logged = dict(db_rows(log, "SELECT step, group_concat(node) FROM tensors WHERE kind = 'watched' GROUP BY step"))
    check(":unwatch loss: steps 39, 40 log W only", logged.get(39) == "W" and logged.get(40) == "W", logged)
    check("steps 31..38 logged loss", all("loss" in (logged.get(s) or "") for s in range(31, 39)), logged)
    has(":log cap 0", r"^values: none stored from now on", out("cap"))
    check(":log cap 0: step 41's W has statistics, no value",
          db_rows(log, "SELECT value IS NULL, mean IS NOT NULL FROM tensors WHERE step = 41 AND node = 'W'") == [(1, 1)],
          db_rows(log, "SELECT step, node, value IS NULL FROM tensors WHERE step >= 40"))
    has(":tensor of a value not stored says so", r"^\(value not stored: larger than the value cap", out("tensor_capped"))
    has(":tensor of a value not stored: statistics", r"^  min \S+  max \S+  mean", out("tensor_capped"))
    has(":log cap with a bad size: usage", r"^usage: :log \[cap BYTES\]", err("cap_bad"))

    # :log
    has(":log: the file", r"^run log: %s \(\d+(\.\d)? (bytes|KiB|MiB) with its WAL\)$" % re.escape(os.path.realpath(log)),
        out("log"))
    has(":log: counts", r"^  sessions 1, runs 42 \(\d+ traced, 0 failed\), node timings \d+$", out("log"))
    has(":log: the policy", r"^  trace: only the runs traced by the caller", out("log"))
    has(":log: the cap", r"^  values: none stored", out("log"))
    has(":log: nothing lost", r"^  lost: nothing \(every record so far is in the file\)$", out("log"))

    # :prune
    before = db_rows(log, "SELECT count(*) FROM tensors WHERE value IS NOT NULL")[0][0]
    m = re.search(r"^cleared (\d+) stored values?: the last 3 runs keep theirs; statistics stay$", out("prune"), re.M)
    check(":prune 3: says how many it cleared", m is not None, out("prune") + err("prune"))
    kept = db_rows(log, "SELECT count(*) FROM tensors t WHERE value IS NOT NULL AND run_id NOT IN "
                        "(SELECT id FROM runs ORDER BY id DESC LIMIT 3)")[0][0]
    check(":prune 3: only the last 3 runs keep values", kept == 0 and before > 0, (kept, before))
    check(":prune: statistics stay", db_rows(log, "SELECT count(*) FROM tensors WHERE mean IS NULL")[0][0] == 0, "")
    has(":prune again: nothing to clear", r"^cleared 0 stored values", out("prune_again"))
    has(":prune -1: explains KEEP", r":prune KEEP: KEEP is how many", err("prune_bad"))

    # :help
    for name in ["runs", "run", "tensor", "sql", "trace", "watch", "unwatch", "prune", "log"]:
        has(":help lists :%s" % name, r"^\s+:%s\b.*\S" % name, out("help"))
    has(":help sql: the long help", r"^:sql \[-w N\] QUERY — .*\n\n  Runs one SQL statement", out("help_sql"))
    return log


def test_watch_globs(tmp):
    """:watch takes a shell glob: every node it matches is logged, until :unwatch of the same glob."""
    log = os.path.join(tmp, "globs.db")
    parts = [
        ("setup", TRAIN),
        ("watch", ":watch gradients/*\n:watch\n"),
        ("train", LOOP % (2, 0)),
        ("unwatch", ":unwatch gradients/*\n"),
        ("train_after", LOOP % (1, 2)),
        ("watch_none", ":watch nothing*\n"),
    ]
    res, status, all_err = sections(parts, log, tmp)
    sane(":watch GLOB", status, all_err)
    has(":watch GLOB says how many nodes match now", r"^'gradients/\*' matches \d+ nodes now", res["watch"][0])
    has(":watch lists the glob", r"^watched \(1\): gradients/\*$", res["watch"][0])
    has(":unwatch GLOB", r"^stopped watching gradients/\*", res["unwatch"][0])
    has(":watch GLOB that matches nothing warns", r"^warning: no node matches 'nothing\*' yet", res["watch_none"][1])
    logged = dict(db_rows(log, "SELECT step, count(DISTINCT node) FROM tensors WHERE kind = 'watched' AND "
                               "node LIKE 'gradients/%' GROUP BY step"))
    check(":watch GLOB logs the nodes it matches (steps 1, 2)", logged.get(1, 0) > 1 and logged.get(2, 0) > 1, logged)
    check(":unwatch GLOB stops them (step 3)", 3 not in logged, logged)


# ---------------------------------------------------------------------------- two processes


def test_second_process(tmp):
    """A second tide queries the log of a first one that is still running."""
    log = os.path.join(tmp, "shared.db")
    first = subprocess.Popen([TIDE, "--quiet", "--log", log], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=tmp, env=env_for(tmp))
    try:
        first.stdin.write(TRAIN + ":watch loss\n" + LOOP % (12, 0) + ":runs 1\nprint('@@ready')\n")
        first.stdin.flush()
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = first.stdout.readline()
            if not line or line.strip() == "@@ready":
                break
            lines.append(line)
        check("first process: trained and listed its runs", any(re.match(r"^\(1 run;|^\(the last 1 of 13 runs", l)
                                                                   for l in lines), "".join(lines))
        res, status, all_err = sections([("q", ":sql SELECT count(*) AS n, max(step) AS last FROM runs WHERE "
                                                "session_id = 1\n"),
                                         ("t", ":sql SELECT count(*) AS n FROM tensors WHERE node = 'loss' AND "
                                               "kind = 'watched'\n")],
                                        log, tmp)
        sane("second process", status, all_err)
        has("second process: sees the first one's 13 runs while it runs", r"^ n\s+last\n13\s+12\n\(1 row\)$",
            res["q"][0])
        has("second process: sees its logged tensors", r"^ n\n12\n\(1 row\)$", res["t"][0])
        check("first process still running", first.poll() is None, "")
        out, err = first.communicate(":sql SELECT count(*) AS sessions FROM sessions\n", timeout=120)
        has("first process: sees the second one's session", r"^sessions\n\s*2\n\(1 row\)$", out)
        sane("first process", first.returncode, err)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


# ---------------------------------------------------------------------------- Ctrl-C


def test_cancel(tmp):
    """Ctrl-C (SIGINT) stops a long :sql; the REPL carries on."""
    log = os.path.join(tmp, "cancel.db")
    p = subprocess.Popen([TIDE, "--quiet", "--log", log], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp, env=env_for(tmp))
    try:
        p.stdin.write("print('@@ready')\n")
        p.stdin.flush()
        ready = p.stdout.readline().strip() == "@@ready"
        started = time.monotonic()
        p.stdin.write(":sql WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n\n")
        p.stdin.flush()
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate("print('after')\n", timeout=60)
        took = time.monotonic() - started
        check("Ctrl-C: tide was ready", ready, "")
        has("Ctrl-C cancels a long :sql", r"^sql: the query was cancelled$", err)
        has("Ctrl-C: the REPL carries on", r"^after$", out)
        check("Ctrl-C: stopped soon (%.1f s)" % took, took < 30, "")
        sane("Ctrl-C", p.returncode, err)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# ---------------------------------------------------------------------------- no log


def test_no_log(tmp):
    commands = [":runs", ":runs 3", ":run", ":run 1", ":tensor loss", ":tensor loss 5", ":sql SELECT 1", ":trace",
                ":trace on", ":watch", ":watch loss", ":unwatch", ":unwatch loss", ":prune", ":prune 3", ":log",
                ":log cap 1M"]
    res, status, all_err = sections([(str(i), c + "\n") for i, c in enumerate(commands)], None, tmp)
    sane("--no-log", status, all_err)
    check("--no-log: the commands fail (status 1)", status == 1, all_err)
    for i, c in enumerate(commands):
        out, err = res[str(i)]
        check("--no-log: %s says the log is off" % c,
              err == "the run log is off (started with --no-log); restart with --log FILE\n" and out == "", err + out)
    check("--no-log: no file written", not os.path.exists(os.path.join(tmp, "tide-runs.db")), os.listdir(tmp))


def main():
    global TIDE
    if len(sys.argv) != 2 or not os.access(sys.argv[1], os.X_OK):
        print("usage: repl_runlog.py path/to/tide", file=sys.stderr)
        return 2
    TIDE = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="tide-runlog-") as tmp:
        for test in (test_session, test_watch_globs, test_second_process, test_cancel, test_no_log):
            sub = os.path.join(tmp, test.__name__)
            os.mkdir(sub)
            test(sub)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
