#!/usr/bin/python3
"""runlog_overhead.py — what the run log costs a training loop.

Usage: runlog_overhead.py MLP_PROGRAM [PAIRS]

Runs the MLP example (examples/mlp_fashion_mnist --bench 60: 20 warm-up steps, then five rounds of 60
steps, the median round's rate) without and with `--log FILE` (the run log's default policy: every
run's row, the loss watched every step, per-node timings every 100th step), in PAIRS pairs (default 12)
interleaved as ABBA (off, on, on, off, ...) so that a drift of the machine's speed falls on both sides
alike. Each pair gives a ratio (rate without / rate with - 1); the figure is the median of the pairs'
ratios, which one slow round cannot move much (the earlier version, five long rounds per side and the
ratio of the medians, measured 4.9 % and 7.3 % on two quiet runs). Prints as JSON lines
  runlog.overhead_pct   median over the pairs of (steps/s without the log / steps/s with it - 1) x 100;
                        goal <= 3
  runlog.cpu_overhead_pct  median over the pairs of (CPU time per step with the log / without - 1) x 100,
                        the CPU time of the whole process (every thread, the log's writer included)
                        in the median round. On a loaded machine the wall-clock figure measures the
                        scheduler (a process with the log, the same CPU time, was seen to run 2-5 x
                        faster at a load average of 21: its threads sleep more often and the scheduler
                        favours them); the CPU time is what the log's work costs, and load moves it little
  runlog.bytes_per_step the file's growth per training step: the size after 1,520 logged steps minus
                        the size after 520, divided by 1,000 (so the session and graph rows cancel)"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

STEPS = 60


def bench(program, steps, log=None):
    """The JSON line of one --bench run: its value (steps/s) and cpu_ms_per_step."""
    args = [program, "--bench", str(steps), "--quiet"] + (["--log", log] if log else [])
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    if "run log:" in p.stderr:  # what the log could not record: the figure would not be the log's cost
        raise RuntimeError("the run log lost records: " + p.stderr.strip())
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line from " + " ".join(args))


def main():
    program = sys.argv[1]
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    with tempfile.TemporaryDirectory(prefix="tide-runlog-") as tmp:
        off, on, ratios, cpu_off, cpu_on, cpu_ratios = [], [], [], [], [], []
        for i in range(pairs):
            log = os.path.join(tmp, "overhead-%d.db" % i)
            if i % 2 == 0:
                a = bench(program, STEPS)
                b = bench(program, STEPS, log)
            else:
                b = bench(program, STEPS, log)
                a = bench(program, STEPS)
            off.append(a["value"])
            on.append(b["value"])
            ratios.append((a["value"] / b["value"] - 1) * 100)
            cpu_off.append(a["cpu_ms_per_step"])
            cpu_on.append(b["cpu_ms_per_step"])
            cpu_ratios.append((b["cpu_ms_per_step"] / a["cpu_ms_per_step"] - 1) * 100)
        m_off, m_on = statistics.median(off), statistics.median(on)
        print(json.dumps({"name": "runlog.overhead_pct", "value": round(statistics.median(ratios), 2), "unit": "%",
                          "pairs": pairs, "steps_per_round": STEPS, "pair_ratios_pct": [round(r, 2) for r in ratios],
                          "ratio_of_medians_pct": round((m_off / m_on - 1) * 100, 2),
                          "steps_per_s_without_log": m_off, "steps_per_s_with_log": m_on,
                          "rounds_without": off, "rounds_with": on, "goal": "<= 3"}), flush=True)
        print(json.dumps({"name": "runlog.cpu_overhead_pct", "value": round(statistics.median(cpu_ratios), 2),
                          "unit": "%", "pairs": pairs, "pair_ratios_pct": [round(r, 2) for r in cpu_ratios],
                          "cpu_ms_per_step_without_log": statistics.median(cpu_off),
                          "cpu_ms_per_step_with_log": statistics.median(cpu_on)}), flush=True)
        sizes = {}
        for steps in (100, 300):  # --bench S runs 20 warm-up steps and 5 rounds of S
            path = os.path.join(tmp, "size-%d.db" % steps)
            bench(program, steps, path)
            sizes[steps] = os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal")
                                                    else 0)
        print(json.dumps({"name": "runlog.bytes_per_step", "value": round((sizes[300] - sizes[100]) / 1000.0, 1),
                          "unit": "bytes", "file_bytes_520_steps": sizes[100], "file_bytes_1520_steps": sizes[300]}),
              flush=True)


if __name__ == "__main__":
    main()
