#!/usr/bin/python3
"""runlog_concurrency.py — several processes logging to one run log at once (issue 18's repro: three
`tide` processes each running a tiny graph 20,000 times as fast as they can, one file).

Usage: runlog_concurrency.py TIDE [WRITERS [RUNS]]

Starts WRITERS (default 3) processes of `tide --log FILE -e 'x = constant({1.5, 2}) * 2; for i = 1, RUNS
do run(x) end'` (RUNS default 20,000) together, waits for them, and counts in the file the runs of each
session that landed with their status. Prints as JSON lines
  runlog.concurrent_writers_lost_runs  WRITERS x RUNS minus the runs in the file with status 0; goal 0
  runlog.concurrent_writers_runs_per_s the runs of all writers over the wall time (the log's pace: runs
                                       wait for the writer when it falls behind)
and, for comparison, the same loop with one writer (runlog.single_writer_runs_per_s)."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

LOOP = "x = constant({1.5, 2}) * 2; for i = 1, %d do run(x) end"


def writers(tide, log, n, runs):
    env = dict(os.environ)
    env.pop("TIDE_LOG", None)
    t0 = time.monotonic()
    procs = [subprocess.Popen([tide, "--quiet", "--log", log, "-e", LOOP % runs], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(n)]
    results = [p.communicate() + (p.returncode,) for p in procs]
    wall = time.monotonic() - t0
    db = sqlite3.connect("file:%s?mode=ro" % log, uri=True)
    landed = db.execute("SELECT count(*) FROM runs WHERE status = 0").fetchone()[0]
    unfinished = db.execute("SELECT count(*) FROM runs WHERE status IS NULL").fetchone()[0]
    db.close()
    statuses = [r[2] for r in results]
    warnings = sum(r[1].count("warning") for r in results)
    return landed, unfinished, wall, statuses, warnings


def main():
    tide = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    with tempfile.TemporaryDirectory(prefix="tide-runlog-concurrency-") as tmp:
        landed, unfinished, wall, statuses, warnings = writers(tide, os.path.join(tmp, "one.db"), 1, runs)
        print(json.dumps({"name": "runlog.single_writer_runs_per_s", "value": round(landed / wall, 1),
                          "unit": "runs/s", "runs": runs, "landed": landed, "wall_s": round(wall, 2)}), flush=True)
        landed, unfinished, wall, statuses, warnings = writers(tide, os.path.join(tmp, "many.db"), n, runs)
        print(json.dumps({"name": "runlog.concurrent_writers_lost_runs", "value": n * runs - landed, "unit": "runs",
                          "writers": n, "runs_each": runs, "landed": landed, "unfinished": unfinished,
                          "exit_statuses": statuses, "warnings": warnings, "goal": 0}), flush=True)
        print(json.dumps({"name": "runlog.concurrent_writers_runs_per_s", "value": round(landed / wall, 1),
                          "unit": "runs/s", "writers": n, "wall_s": round(wall, 2)}), flush=True)


if __name__ == "__main__":
    main()
