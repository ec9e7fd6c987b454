#!/usr/bin/python3
"""runlog_overhead.py — what the run log costs a training loop, measured in one run.

Usage: runlog_overhead.py MLP_PROGRAM

Runs the MLP example (examples/mlp_fashion_mnist --bench) alternately without and with
`--log FILE` (the run log's default policy: every run's row, the loss watched every step, per-node
timings every 100th step), five times each, and prints
  runlog.overhead_pct   (median steps/s without the log / median with it - 1) x 100; goal <= 3
  runlog.bytes_per_step the file's growth per training step: the size after 1,520 logged steps minus
                        the size after 520, divided by 1,000 (so the session and graph rows cancel)
as JSON lines."""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def bench(program, steps, log=None):
    args = [program, "--bench", str(steps), "--quiet"] + (["--log", log] if log else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)["value"]
    raise RuntimeError("no JSON line from " + " ".join(args))


def main():
    program = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="tide-runlog-") as tmp:
        off, on = [], []
        for i in range(5):
            off.append(bench(program, 200))
            on.append(bench(program, 200, os.path.join(tmp, "overhead-%d.db" % i)))
        m_off, m_on = statistics.median(off), statistics.median(on)
        print(json.dumps({"name": "runlog.overhead_pct", "value": round((m_off / m_on - 1) * 100, 2), "unit": "%",
                          "steps_per_s_without_log": m_off, "steps_per_s_with_log": m_on,
                          "rounds_without": off, "rounds_with": on, "goal": "<= 3"}), flush=True)
        sizes = {}
        for steps in (100, 300):  # --bench S runs 20 warm-up steps and 5 rounds of S
            path = os.path.join(tmp, "size-%d.db" % steps)
            bench(program, steps, path)
            sizes[steps] = os.path.getsize(path)
        print(json.dumps({"name": "runlog.bytes_per_step", "value": round((sizes[300] - sizes[100]) / 1000.0, 1),
                          "unit": "bytes", "file_bytes_520_steps": sizes[100], "file_bytes_1520_steps": sizes[300]}),
              flush=True)


if __name__ == "__main__":
    main()
