"""torch_peer.py — what the PyTorch peer benchmarks (peer_torch.py, peer_conv_torch.py,
peer_vecwidth_torch.py) share: loading torch the same way (2 threads; OMP_WAIT_POLICY=PASSIVE where
asked, since an idle OpenMP thread spinning on a 2-core machine steals from the other; without
Debian's python3-torch, one JSON line saying the figure was skipped and exit 0), the median time of a
call, and interleaved rounds against a tide benchmark (PyTorch first in even rounds, tide first in odd
ones), so that a neighbour's burst of load on a shared machine moves one round, not the figure."""
import json
import os
import statistics
import time

THREADS = 2


def load_torch(skipped_name, unit, passive_omp=True):
    """Returns the torch module set to THREADS threads; without it prints a JSON line naming
    `skipped_name` (in `unit`) as skipped and exits 0."""
    if passive_omp:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when torch loads OpenMP
    try:
        import torch
    except ImportError:
        print(json.dumps({"name": skipped_name, "value": None, "unit": unit,
                          "skipped": "python3-torch is not installed (apt-get install python3-torch)"}))
        raise SystemExit(0)
    torch.set_num_threads(THREADS)
    return torch


def median_seconds(fn, reps, warmup=1):
    """The median wall time of `reps` calls of fn, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def interleaved_rounds(rounds, torch_round, tide_round=None):
    """[(torch's figures, tide's figures)] for each round: torch_round() first in even rounds,
    tide_round() first in odd ones; tide's figures are {} when tide_round is None."""
    results = []
    for r in range(rounds):
        if tide_round and r % 2:
            tide = tide_round()
            results.append((torch_round(), tide))
        else:
            torch_figures = torch_round()
            results.append((torch_figures, tide_round() if tide_round else {}))
    return results
