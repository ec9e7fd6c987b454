#!/usr/bin/env python3
"""runlog_failures.py — the `tide` program when its run log cannot record (docs/run-log.md, "What is
reported"): every loss reaches the user at once (a warning on stderr while the script runs, a summary
at the end), a script whose log lost records exits with status 3 unless --log-best-effort, `:log`
shows the counts; a file that is not a tide run log is refused and left alone, and the status line
says why the log is off; a script's graph is in the log before its first run; three processes
logging to one file as fast as they can lose no run.

Usage: runlog_failures.py TIDE            the checks above
       runlog_failures.py TIDE full-disk  the issue's full-disk repro on a 512 KiB tmpfs this test
                                          mounts (exit 77, skipped, when it may not mount one;
                                          tests/store/test_faults.c plays the full disk with an
                                          SQLite VFS shim then)
One line per check; the exit status is 1 if any failed."""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

from checks import check, crashed, has, lacks, summary

TIDE = None
LOOP = "x = constant({1.5, 2}) * 2; for i = 1, %d do run(x) end"


def tide(args, cwd, stdin=None, timeout=300):
    env = dict(os.environ)
    env.pop("TIDE_LOG", None)
    p = subprocess.run([TIDE, "--quiet"] + args, input=stdin, capture_output=True, text=True, cwd=cwd, env=env,
                       timeout=timeout)
    check("tide %s: no crash" % " ".join(args)[:60], not crashed(p.returncode, p.stderr),
          "status %d\n%s" % (p.returncode, p.stderr))
    return p


def rows(path, sql):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def trigger_refuses_runs(tmp):
    log = os.path.join(tmp, "trigger.db")
    tide(["--log", log, "-e", "1"], tmp)  # a log with the schema
    db = sqlite3.connect(log)
    db.execute("CREATE TRIGGER no_runs BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'runs are not welcome'); END")
    db.commit()
    db.close()
    p = tide(["--log", log, "-e", LOOP % 100], tmp)
    check("a trigger refuses runs: exit status 3", p.returncode == 3, "status %d\n%s" % (p.returncode, p.stderr))
    has("... a warning names the trigger's message", r"^warning: run log .*trigger\.db: inserting a run: runs are not "
        r"welcome", p.stderr)
    has("... and counts what was lost", r"so far \d+ records lost \(runs \d+", p.stderr)
    has("... a summary at the end", r"^tide: the run log .*trigger\.db is incomplete: \d+ records lost", p.stderr)
    has("... and why the status is 3", r"^tide: exit status 3: the run log is incomplete \(--log-best-effort", p.stderr)
    p = tide(["--log", log, "--log-best-effort", "-e", LOOP % 10], tmp)
    check("--log-best-effort: exit status 0", p.returncode == 0, "status %d\n%s" % (p.returncode, p.stderr))
    has("... the losses are still told", r"^warning: run log .*runs are not welcome", p.stderr)
    p = tide(["--log", log], tmp, stdin=LOOP % 5 + "\n:log\n")
    check("piped statements: exit status 3 too", p.returncode == 3, "status %d\n%s" % (p.returncode, p.stderr))
    has(":log: what was lost", r"^  lost: \d+ records lost \(runs \d+", p.stdout)
    has(":log: the first problem", r"^  first problem: run log .*runs are not welcome", p.stdout)
    db = sqlite3.connect(log)
    db.execute("DROP TRIGGER no_runs")
    db.commit()
    db.close()
    p = tide(["--log", log], tmp, stdin=LOOP % 5 + "\n:log\n")
    check("without the trigger: exit status 0", p.returncode == 0, "status %d\n%s" % (p.returncode, p.stderr))
    has(":log: nothing lost", r"^  lost: nothing", p.stdout)
    lacks("... and no warning", r"warning", p.stderr)


def at_the_prompt(tmp):
    """At the prompt (a pseudo-terminal), the warning comes before the next prompt."""
    from pty_repl import PROMPT, Session, Timeout
    log = os.path.join(tmp, "prompt.db")
    tide(["--log", log, "-e", "1"], tmp)
    db = sqlite3.connect(log)
    db.execute("CREATE TRIGGER no_runs BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'runs are not welcome'); END")
    db.commit()
    db.close()
    s = Session([TIDE, "--quiet", "--log", log], tmp)
    try:
        s.expect(PROMPT)
        s.type("x = constant(1) + 1\n")
        s.expect(PROMPT)
        mark = s.pos
        s.type("run(x)\n")
        warning = s.expect(r"^warning: run log .*runs are not welcome.*$")
        s.expect(PROMPT)
        check("at the prompt: the warning comes before the next prompt", "tide> " not in s.out[mark:warning.start()],
              s.out[mark:s.pos])
        s.type(":log\n")
        s.expect(r"^  lost: \d+ records lost \(runs \d+")
        s.expect(PROMPT)
        check("at the prompt: :log shows what was lost", True)
        s.type("\x04")
        status = s.wait_exit()
        check("at the prompt: leaving exits 0 (the user was told)", status == 0, "status %s" % status)
    except Timeout as e:
        check("at the prompt: the warning comes before the next prompt", False, str(e))
    finally:
        s.close()


def unrelated_database(tmp):
    other = os.path.join(tmp, "contacts.db")
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE contacts(name TEXT)")
    db.execute("INSERT INTO contacts VALUES ('ann')")
    db.commit()
    db.close()
    p = tide(["--log", other, "-e", "print('ran')"], tmp)
    check("--log on another database: exit status 1", p.returncode == 1, "status %d\n%s" % (p.returncode, p.stderr))
    has("... refused, saying why", r"contacts\.db is an SQLite database but not a tide run log \(its tables: "
        r"contacts\)", p.stderr)
    lacks("... nothing ran", r"ran", p.stdout)
    tables = [r[0] for r in rows(other, "SELECT name FROM sqlite_master ORDER BY name")]
    check("... and its tables are untouched", tables == ["contacts"], tables)
    p = tide(["--log", other, "--log-best-effort", "-e", "print('ran')", "-e", ":runs"], tmp)
    has("--log-best-effort: runs without the log", r"^ran$", p.stdout)
    has("... the status line says why the log is off",
        r"^the run log is off \(.*contacts\.db is an SQLite database but not a tide run log", p.stderr)
    lacks("... not 'started with --no-log'", r"started with --no-log", p.stderr)
    p = tide(["--log", other], tmp, stdin="print('ran')\n")
    check("piped statements are refused too: exit status 1", p.returncode == 1 and "ran" not in p.stdout,
          "status %d\n%s" % (p.returncode, p.stderr))
    p = tide(["--no-log", "-e", ":runs"], tmp)
    has("--no-log: the status line says so", r"^the run log is off \(started with --no-log\)", p.stderr)
    tables = [r[0] for r in rows(other, "SELECT name FROM sqlite_master ORDER BY name")]
    check("the other database is still untouched", tables == ["contacts"], tables)


def graph_before_first_run(tmp):
    log = os.path.join(tmp, "graph.db")
    script = os.path.join(tmp, "train.lua")
    with open(script, "w") as f:
        f.write("x = constant({1.5, 2})\ny = x * 2\nrun(y)\nio.read()\nz = y + 1\nrun(z)\nio.read()\n")
    env = dict(os.environ)
    env.pop("TIDE_LOG", None)
    p = subprocess.Popen([TIDE, "--quiet", "--log", log, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=tmp, env=env)

    def wait_for(sql, want):
        got = None
        for _ in range(200):
            try:
                got = rows(log, sql)
                if got == want:
                    break
            except sqlite3.Error as e:
                got = str(e)
            time.sleep(0.05)
        return got

    got = wait_for("SELECT group_concat(name) FROM (SELECT name FROM nodes WHERE graph_id = (SELECT max(id) FROM "
                   "graphs) ORDER BY rowid)", [("x,const,y",)])
    check("a script's graph is in the log before its first run, while the script runs", got == [("x,const,y",)], got)
    p.stdin.write("\n")
    p.stdin.flush()
    got = wait_for("SELECT group_concat(name) FROM (SELECT name FROM nodes WHERE graph_id = (SELECT max(id) FROM "
                   "graphs) ORDER BY rowid)", [("x,const,y,const_1,z",)])
    check("... and its next version before the run that uses it", got == [("x,const,y,const_1,z",)], got)
    got = rows(log, "SELECT count(*) FROM graph_nodes")
    check("... which adds only the new nodes' rows", got == [(5,)], got)
    out, err = p.communicate("\n", timeout=60)
    check("... the script ends well", p.returncode == 0, "status %d\n%s" % (p.returncode, err))


def three_writers(tmp):
    log = os.path.join(tmp, "three.db")
    env = dict(os.environ)
    env.pop("TIDE_LOG", None)
    runs = 5000
    procs = [subprocess.Popen([TIDE, "--quiet", "--log", log, "-e", LOOP % runs], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=tmp, env=env) for _ in range(3)]
    results = [p.communicate(timeout=300) + (p.returncode,) for p in procs]
    for i, (out, err, status) in enumerate(results):
        check("three writers on one file: writer %d exits 0 and warns of nothing" % i,
              status == 0 and "warning" not in err, "status %d\n%s" % (status, err))
    got = rows(log, "SELECT session_id, count(*), sum(status = 0) FROM runs GROUP BY session_id ORDER BY 1")
    check("... every run of each lands, with its status", got == [(1, runs, runs), (2, runs, runs), (3, runs, runs)],
          got)


def full_disk():
    with tempfile.TemporaryDirectory(prefix="tide-full-disk-") as tmp:
        disk = os.path.join(tmp, "disk")
        os.mkdir(disk)
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", disk], capture_output=True, text=True)
        if m.returncode != 0:
            print("skip: cannot mount a 512 KiB tmpfs (%s); tests/store/test_faults.c plays the full disk with "
                  "an SQLite VFS shim" % (m.stderr.strip() or "mount failed"))
            return 77
        try:
            print("full disk: a 512 KiB tmpfs mounted on %s" % disk)
            log = os.path.join(disk, "x.db")
            p = tide(["--log", log, "-e", LOOP % 20000], tmp)
            check("the issue's full disk: exit status 3", p.returncode == 3, "status %d\n%s" % (p.returncode, p.stderr))
            has("... a warning says the disk is full", r"^warning: run log .*x\.db: .*database or disk is full", p.stderr)
            has("... the summary counts the lost runs", r"^tide: the run log .*incomplete: \d+ records lost \(runs "
                r"\d+", p.stderr)
            got = rows(log, "PRAGMA integrity_check")
            check("... the file is intact", got == [("ok",)], got)
            # A run whose start is in the file gets its status at the latest when the log closes; when the
            # disk stays full even that cannot be written (a status needs room too), and the summary must
            # then name that very run: no run may read as unfinished without the user being told which.
            unfinished = rows(log, "SELECT id, step FROM runs WHERE status IS NULL")
            untold = [(i, step) for i, step in unfinished if not re.search(
                r"^tide: the run log .*read as unfinished in the file though .*\bid %d \(step %d\)" % (i, step),
                p.stderr, re.M)]
            check("... and no logged run passes for unfinished without the user being told which", untold == [],
                  "untold %s (of %d unfinished)\n%s" % (untold[:5], len(unfinished), p.stderr[-2000:]))
            if unfinished:
                print("     (%d run%s unfinished in the file, each named in the summary)" %
                      (len(unfinished), "" if len(unfinished) == 1 else "s"))
            p = tide(["--log", log, "--log-best-effort", "-e", LOOP % 2000], tmp)
            check("... --log-best-effort: exit status 0", p.returncode == 0, "status %d\n%s" % (p.returncode, p.stderr))
            # (told as a warning, or, when not even the session's row fits, as a log that cannot open)
            has("... still told", r"^(warning: run log|tide: no run log: run log) .*full", p.stderr)
            disk_fills_during_a_run(tmp, disk)
        finally:
            subprocess.run(["umount", disk])
    return summary()


def disk_fills_during_a_run(tmp, disk):
    """The disk fills while a run is in flight (its start is in the file, it waits on an empty queue):
    neither its end nor, at the close, its status UNKNOWN can be written, so the file shows it as
    unfinished, and the summary must name that very run (the CI flake of "no logged run passes for
    unfinished": a run whose start and end fell in two transactions as the disk filled)."""
    for name in os.listdir(disk):
        os.remove(os.path.join(disk, name))
    log = os.path.join(disk, "inflight.db")
    env = dict(os.environ)
    env.pop("TIDE_LOG", None)
    script = ("x = constant(1) + 1; for i = 1, 5 do run(x) end; q = queue({dtypes = {int32}}); d = dequeue(q); "
              "print('waiting'); io.stdout:flush(); print(pcall(run, d, {}, {timeout = 3}))")
    p = subprocess.Popen([TIDE, "--quiet", "--log", log, "-e", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=tmp, env=env)
    try:
        waiting = p.stdout.readline()
        in_flight = []
        for _ in range(100):  # the run's start is committed while it waits (the writer lingers 50 ms at most)
            try:
                in_flight = rows(log, "SELECT id, step FROM runs WHERE status IS NULL")
            except sqlite3.Error:
                in_flight = []
            if in_flight:
                break
            time.sleep(0.02)
        filled = 0
        fd = os.open(os.path.join(disk, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                filled += os.write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)
        out, err = p.communicate(timeout=120)
    except BaseException:
        p.kill()
        p.wait()
        raise
    check("the disk fills during a run: the run was in flight in the file", waiting == "waiting\n" and
          len(in_flight) == 1, (waiting, in_flight, filled))
    check("... the run ended (its timeout)", "exceeded its timeout" in out, out)
    os.remove(os.path.join(disk, "filler"))
    got = rows(log, "SELECT id, step FROM runs WHERE status IS NULL")
    check("... its status could not be written: the file shows it as unfinished", got == in_flight, (got, in_flight))
    check("... exit status 3", p.returncode == 3, "status %d\n%s" % (p.returncode, err))
    has("... and the summary names that very run", r"^tide: the run log .*inflight\.db is incomplete: .*1 run read as "
        r"unfinished in the file though it ended \(id %d \(step %d\)\)" % in_flight[0] if in_flight else "^$", err)


def main():
    global TIDE
    TIDE = os.path.abspath(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "full-disk":
        return full_disk()
    p = subprocess.run([TIDE, "--help"], capture_output=True, text=True)
    has("--help explains --log-best-effort", r"--log-best-effort .*\n.*exits 0", p.stdout)
    has("--help gives the exit statuses", r"3 when the run log lost", p.stdout)
    with tempfile.TemporaryDirectory(prefix="tide-runlog-failures-") as tmp:
        trigger_refuses_runs(tmp)
        at_the_prompt(tmp)
        unrelated_database(tmp)
        graph_before_first_run(tmp)
        three_writers(tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
