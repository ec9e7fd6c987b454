#!/usr/bin/python3
"""peer_torch.py — the same executor benchmark in PyTorch eager mode (the peer a user would pick), run
with 2 threads, printing one JSON line per figure. Needs Debian's python3-torch; without it, says so."""
import json
import statistics
import time

try:
    import torch
except ImportError:
    print(json.dumps({"name": "torch.chain_us_per_op", "value": None, "unit": "us",
                      "skipped": "python3-torch is not installed (apt-get install python3-torch)"}))
    raise SystemExit(0)

torch.set_num_threads(2)
N, REPS = 10000, 15


def chain():
    one = torch.ones((), dtype=torch.float32)
    x = one
    for _ in range(N):
        x = x + one
    return x


def wide():
    one = torch.ones((), dtype=torch.float32)
    return [one + one for _ in range(N)]


for name, fn in (("torch.chain_us_per_op", chain), ("torch.wide_us_per_op", wide)):
    fn()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({"name": name, "value": round(med / N * 1e6, 4), "unit": "us", "torch": torch.__version__,
                      "threads": 2}))

for n in (256, 1024, 2048):
    a = torch.rand(n, n)
    b = torch.rand(n, n)
    a @ b
    times = []
    for _ in range(11 if n > 256 else 101):
        t0 = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({"name": "torch.matmul.%d.gflops" % n, "value": round(2.0 * n ** 3 / med * 1e-9, 1),
                      "unit": "GFLOP/s", "threads": 2}))
