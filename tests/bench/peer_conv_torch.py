#!/usr/bin/python3
"""peer_conv_torch.py — the convolutions of bench_conv.c in PyTorch (oneDNN), the peer a user would
pick: TensorFlow's layers-tutorial CNN at batch 100, both convolutions, forward, backprop-input and
backprop-filter, 2 threads, channels_last tensors, OMP_WAIT_POLICY=PASSIVE (an idle OpenMP thread
spinning on a 2-core machine steals from the other). Prints one JSON line per figure, in GFLOP/s
(a multiply-add counts 2). Given the path of bench_conv, also runs it and prints tide's figures as
ratios to PyTorch's (> 1: tide is faster). Needs Debian's python3-torch; without it, says so."""
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when torch loads OpenMP
try:
    import torch
except ImportError:
    print(json.dumps({"name": "torch.conv2d.gflops", "value": None, "unit": "GFLOP/s",
                      "skipped": "python3-torch is not installed (apt-get install python3-torch)"}))
    raise SystemExit(0)

torch.set_num_threads(2)
BATCH, REPS = 100, 21
LAYERS = (("conv2d", 14, 32, 64), ("conv2d_1", 28, 1, 32))  # name, size, in, out; 5x5 SAME


def median_seconds(fn):
    for _ in range(2):
        fn()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


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
            figures[name + suffix + ".gflops"] = flops / median_seconds(fn) * 1e-9
    return figures


torch_figures = {}
for layer in LAYERS:
    torch_figures.update(layer_figures(*layer))
for name, value in torch_figures.items():
    print(json.dumps({"name": "torch." + name, "value": round(value, 1), "unit": "GFLOP/s",
                      "torch": torch.__version__, "threads": 2, "channels_last": True}))

if len(sys.argv) > 1:
    out = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        figure = json.loads(line)
        peer = torch_figures.get(figure["name"])
        if peer:
            ratio_name = figure["name"].replace(".gflops", ".ratio_vs_torch")
            print(json.dumps({"name": ratio_name, "value": round(figure["value"] / peer, 3),
                              "unit": "ratio", "tide_gflops": figure["value"],
                              "torch_gflops": round(peer, 1)}))
