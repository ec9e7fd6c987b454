#!/usr/bin/python3
"""while_compare.py — while.us_per_iteration beside the peer: tide's bench_while (a while_loop of 10,000
iterations, body x = x * 0.999 + 0.001, i = i + 1, run by the executor) and the same loop written in
Python over PyTorch scalars (2 threads), interleaved over several rounds; medians, and the ratio
torch / tide (above 1: tide is faster). Without python3-torch the peer and the ratio say skipped."""
import json
import statistics
import subprocess
import sys
import time

bench = sys.argv[1]
ROUNDS, N = 5, 10000

try:
    import torch
    torch.set_num_threads(2)
except ImportError:
    torch = None


def tide_round():
    out = subprocess.run([bench, "7"], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def torch_round():
    a, b = torch.tensor(0.999), torch.tensor(0.001)
    best = []
    for _ in range(7):
        i, x = torch.tensor(0, dtype=torch.int32), torch.tensor(1.0)
        t0 = time.perf_counter()
        while i < N:
            i = i + 1
            x = x * a + b
        best.append(time.perf_counter() - t0)
    return statistics.median(best) / N * 1e6


ours, theirs, last = [], [], None
for _ in range(ROUNDS):
    last = tide_round()
    ours.append(last["value"])
    if torch:
        theirs.append(torch_round())
tide_us = statistics.median(ours)
print(json.dumps({**last, "value": round(tide_us, 4), "rounds": ROUNDS, "all": ours}))
if torch:
    torch_us = statistics.median(theirs)
    print(json.dumps({"name": "torch.while.us_per_iteration", "value": round(torch_us, 4), "unit": "us",
                      "what": "a Python while loop of torch scalar ops, same body", "torch": torch.__version__,
                      "threads": 2, "rounds": ROUNDS}))
    print(json.dumps({"name": "while.ratio_vs_torch", "value": round(torch_us / tide_us, 3), "unit": "x",
                      "what": "torch us per iteration / tide us per iteration"}))
else:
    for name in ("torch.while.us_per_iteration", "while.ratio_vs_torch"):
        print(json.dumps({"name": name, "value": None, "unit": "us",
                          "skipped": "python3-torch is not installed (apt-get install python3-torch)"}))
