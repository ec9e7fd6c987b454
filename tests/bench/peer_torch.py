#!/usr/bin/python3
"""peer_torch.py — the same executor benchmark in PyTorch eager mode (the peer a user would pick), run
with 2 threads, printing one JSON line per figure. Needs Debian's python3-torch; without it, says so."""
import json

from torch_peer import THREADS, load_torch, median_seconds

torch = load_torch("torch.chain_us_per_op", "us", passive_omp=False)
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
    med = median_seconds(fn, REPS)
    print(json.dumps({"name": name, "value": round(med / N * 1e6, 4), "unit": "us", "torch": torch.__version__,
                      "threads": THREADS}))

for n in (256, 1024, 2048):
    a = torch.rand(n, n)
    b = torch.rand(n, n)
    med = median_seconds(lambda: a @ b, 11 if n > 256 else 101)
    print(json.dumps({"name": "torch.matmul.%d.gflops" % n, "value": round(2.0 * n ** 3 / med * 1e-9, 1),
                      "unit": "GFLOP/s", "threads": THREADS}))
