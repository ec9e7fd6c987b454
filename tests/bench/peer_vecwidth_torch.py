#!/usr/bin/python3
"""peer_vecwidth_torch.py — the ops of bench_vecwidth.c in PyTorch (eager, CPU, 2 threads), the peer
a user would pick: the same float32 sizes (N elements, the softmaxes and reductions as rows of 1,000),
ns per element, median of REPS calls per round. Given the path of bench_vecwidth, also runs it in
alternating rounds (torch first in even rounds, tide first in odd ones) and prints, per op,
vecwidth.<op>.ratio_vs_torch = torch's ns / tide's ns at the CPU's best ISA (> 1: tide is faster),
the median over the rounds. Optimizer steps: torch.optim.Adam and SGD (foreach) on one parameter of
N elements. Needs Debian's python3-torch; without it, says so and exits 0."""
import json
import statistics
import subprocess
import sys

from torch_peer import THREADS, interleaved_rounds, load_torch, median_seconds

torch = load_torch("torch.vecwidth.exp.ns_per_element", "ns")
N, ROUNDS, REPS = 262000, 5, 15


def median_ns(fn):
    return median_seconds(fn, REPS, warmup=2) * 1e9 / N


def optimizer_op(kind):
    p = torch.nn.Parameter(torch.rand(N) * 8)
    p.grad = torch.rand(N) * 8
    opt = torch.optim.Adam([p], lr=1e-3) if kind == "adam" else torch.optim.SGD([p], lr=1e-3)
    return opt.step


def torch_ops():
    """bench_vecwidth's op names -> a call doing the same in PyTorch."""
    g = torch.Generator().manual_seed(1)
    x = torch.rand(N, generator=g) * 16 - 8
    pos = 8 * (1 - torch.rand(N, generator=g))
    rows = x.reshape(-1, 1000)
    out = torch.empty(N)
    return {
        "exp": lambda: torch.exp(x),
        "sigmoid": lambda: torch.sigmoid(x),
        "tanh": lambda: torch.tanh(x),
        "sqrt": lambda: torch.sqrt(pos),
        "rsqrt": lambda: torch.rsqrt(pos),
        "softmax": lambda: torch.softmax(rows, -1),
        "log_softmax": lambda: torch.log_softmax(rows, -1),
        "sum_last_axis": lambda: rows.sum(1),
        "sum_first_axis": lambda: rows.sum(0),
        "sum_all": lambda: rows.sum(),
        "mean_last_axis": lambda: rows.mean(1),
        "max_last_axis": lambda: rows.amax(1),
        "max_all": lambda: rows.amax(),
        "min_first_axis": lambda: rows.amin(0),
        "random_uniform": lambda: out.uniform_(),
        "random_normal": lambda: out.normal_(),
        "truncated_normal": lambda: torch.nn.init.trunc_normal_(out, std=1.0, a=-2.0, b=2.0),
        "apply_adam": optimizer_op("adam"),
        "apply_gradient_descent": optimizer_op("sgd"),
    }


def torch_round(ops):
    with torch.no_grad():
        return {name: median_ns(fn) for name, fn in ops.items()}


def tide_round(bench):
    out = subprocess.run([bench, str(REPS), str(N)], capture_output=True, text=True, check=True).stdout
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    best = next(line["isa"] for line in lines if line["name"] == "vecwidth.isa")
    suffix = "." + best + ".ns_per_element"
    return {line["name"][len("vecwidth."):-len(suffix)]: line["value"] for line in lines
            if line["name"].endswith(suffix)}, best


def main():
    bench = sys.argv[1] if len(sys.argv) > 1 else None
    ops = torch_ops()
    isa = None

    def tide_figures():
        nonlocal isa
        figures, isa = tide_round(bench)
        return figures

    rounds = interleaved_rounds(ROUNDS, lambda: torch_round(ops), tide_figures if bench else None)
    config = {"torch": torch.__version__, "threads": THREADS, "elements": N, "rounds": ROUNDS, "reps_per_round": REPS}
    for name in ops:
        value = statistics.median(t[name] for t, _ in rounds)
        print(json.dumps({"name": "torch.vecwidth.%s.ns_per_element" % name, "value": round(value, 4), "unit": "ns",
                          **config}), flush=True)
    for name in ops:
        pairs = [(t[name], tide[name]) for t, tide in rounds if name in tide]
        if not pairs:
            continue
        print(json.dumps({"name": "vecwidth.%s.ratio_vs_torch" % name,
                          "value": round(statistics.median(t / d for t, d in pairs), 3), "unit": "ratio",
                          "tide_isa": isa, "tide_ns": round(statistics.median(d for _, d in pairs), 4),
                          "torch_ns": round(statistics.median(t for t, _ in pairs), 4),
                          "round_ratios": [round(t / d, 3) for t, d in pairs], **config}), flush=True)


main()
