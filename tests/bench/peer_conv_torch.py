#!/usr/bin/python3
"""peer_conv_torch.py — the convolutions of bench_conv.c in PyTorch (oneDNN), the peer a user would
pick: TensorFlow's layers-tutorial CNN at batch 100, both convolutions, forward, backprop-input and
backprop-filter, 2 threads, channels_last tensors, OMP_WAIT_POLICY=PASSIVE (an idle OpenMP thread
spinning on a 2-core machine steals from the other). Prints one JSON line per figure, in GFLOP/s
(a multiply-add counts 2). Given the path of bench_conv, also runs it and prints tide's figures as
ratios to PyTorch's (> 1: tide is faster), in interleaved rounds: each round times PyTorch (median
of REPS calls per op) and runs bench_conv (REPS runs per op), the order alternating; a ratio is the
median of the rounds' ratios, so a neighbour's burst of load on a shared machine moves one round, not
the figure. Needs Debian's python3-torch; without it, says so.

The figures are real: on this Zen 5 VM (two 512-bit FMA pipes per core, bench_fma_peak) oneDNN's
AVX-512 kernels (ONEDNN_VERBOSE=1: brgconv:avx512_core forward, jit:avx512_core backward data and
weights) run at close to the 2-core AVX-512 peak; the timed call is the whole op (oneDNN's own
reorders of the weights included)."""
import json
import statistics
import subprocess
import sys

from torch_peer import THREADS, interleaved_rounds, load_torch, median_seconds

torch = load_torch("torch.conv2d.gflops", "GFLOP/s")
BATCH, REPS, ROUNDS = 100, 9, 5
LAYERS = (("conv2d", 14, 32, 64), ("conv2d_1", 28, 1, 32))  # name, size, in, out; 5x5 SAME


def layer_figures(name, size, cin, cout):
    cl = torch.channels_last
    x = torch.rand(BATCH, cin, size, size).to(memory_format=cl)
    w = torch.rand(cout, cin, 5, 5).to(memory_format=cl)
    dy = torch.rand(BATCH, cout, size, size).to(memory_format=cl)
    flops = 2.0 * BATCH * size * size * cout * 25 * cin
    conv_backward = torch.ops.aten.convolution_backward
    ops = {
        "": lambda: torch.nn.functional.conv2d(x, w, padding=2),
        ".backprop_input": lambda: conv_backward(dy, x, w, None, [1, 1], [2, 2], [1, 1], False,
                                                 [0, 0], 1, [True, False, False]),
        ".backprop_filter": lambda: conv_backward(dy, x, w, None, [1, 1], [2, 2], [1, 1], False,
                                                  [0, 0], 1, [False, True, False]),
    }
    figures = {}
    with torch.no_grad():
        for suffix, fn in ops.items():
            figures[name + suffix + ".gflops"] = flops / median_seconds(fn, REPS) * 1e-9
    return figures


def torch_round():
    figures = {}
    for layer in LAYERS:
        figures.update(layer_figures(*layer))
    return figures


def tide_round(bench):
    out = subprocess.run([bench, str(REPS)], capture_output=True, text=True, check=True).stdout
    return {f["name"]: f["value"] for f in map(json.loads, out.splitlines())}


bench = sys.argv[1] if len(sys.argv) > 1 else None
rounds = interleaved_rounds(ROUNDS, torch_round, (lambda: tide_round(bench)) if bench else None)

for name in rounds[0][0]:
    value = statistics.median(t[name] for t, _ in rounds)
    print(json.dumps({"name": "torch." + name, "value": round(value, 1), "unit": "GFLOP/s",
                      "torch": torch.__version__, "threads": THREADS, "channels_last": True,
                      "rounds": ROUNDS, "reps_per_round": REPS}))
for name in rounds[0][0]:
    if not bench or name not in rounds[0][1]:
        continue
    ratio = statistics.median(tide[name] / t[name] for t, tide in rounds)
    print(json.dumps({"name": name.replace(".gflops", ".ratio_vs_torch"), "value": round(ratio, 3),
                      "unit": "ratio", "tide_gflops": round(statistics.median(tide[name] for _, tide in rounds), 1),
                      "torch_gflops": round(statistics.median(t[name] for t, _ in rounds), 1),
                      "rounds": ROUNDS, "round_ratios": [round(tide[name] / t[name], 3) for t, tide in rounds]}))
