#!/usr/bin/env python3
"""model_parallel.py — the model-parallel acceptance figures of the multi-device issue: the two-tower
example (examples/two_towers.lua) on two virtual CPU devices with one thread each, under each placement
strategy (greedy: the cost model's; naive: all on one device; round robin), interleaved over rounds, in
two sizes: wide layers (1024 wide, batch 256: compute dominates) and narrow ones (256 wide, batch 64:
the hand-over between devices counts). Prints, per size and strategy, the simulated step time the
placement predicted, the median measured step time and the transfers, then greedy's ratios to the
others (below 1: greedy is faster).

usage: model_parallel.py TIDE EXAMPLE [ROUNDS]"""
import json
import os
import re
import statistics
import subprocess
import sys

tide, example = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
strategies = ["greedy", "naive", "round_robin"]
sizes = [("wide", ["20", "1024", "256"]), ("narrow", ["200", "256", "64"])]

for size, args in sizes:
    simulated = {s: [] for s in strategies}
    measured = {s: [] for s in strategies}
    transfers = {}
    for _ in range(rounds):
        for s in strategies:
            env = dict(os.environ, TIDE_PLACEMENT=s)
            out = subprocess.run([tide, "--no-log", "--devices", "2", "--threads", "2", example] + args,
                                 env=env, capture_output=True, text=True, timeout=600)
            if out.returncode != 0:
                sys.exit("%s %s failed (%s): %s" % (size, s, out.returncode, out.stderr))
            simulated[s].append(float(re.search(r"simulated step: ([0-9.]+) ms", out.stdout).group(1)))
            measured[s].append(float(re.search(r"measured step: ([0-9.]+) ms", out.stdout).group(1)))
            transfers[s] = int(re.search(r"(\d+) transfers:", out.stdout).group(1))
    for s in strategies:
        print(json.dumps({"name": "model_parallel.%s.%s.simulated_ms" % (size, s),
                          "value": statistics.median(simulated[s]), "unit": "ms", "transfers": transfers[s]}))
        print(json.dumps({"name": "model_parallel.%s.%s.measured_ms" % (size, s),
                          "value": statistics.median(measured[s]), "unit": "ms", "runs": measured[s],
                          "width": int(args[1]), "batch": int(args[2]), "steps": int(args[0])}))
    for other in ["naive", "round_robin"]:
        for kind, table in (("simulated", simulated), ("measured", measured)):
            ratio = statistics.median(table["greedy"]) / statistics.median(table[other])
            print(json.dumps({"name": "model_parallel.%s.greedy_vs_%s.%s_ratio" % (size, other, kind),
                              "value": round(ratio, 3), "unit": "ratio"}))
