#!/usr/bin/env python3
"""peer_gpu_torch.py — PyTorch's figures for tests/gpu/bench_gpu.c, measured the same way on the same GPU
(run_gpu_checks.sh runs both): a chain of 200 scalar adds (eager, the host waiting at the end of each
chain), one 8192^3 float32 matmul (cuBLAS under torch.mm; TF32 off unless TIDE_GPU_TF32=1), and the
784-512-256-10 ReLU MLP step (batch 128, softmax cross-entropy, SGD) eager and replayed as a CUDA graph, and
the TF tutorial's CNN step (5x5 conv 32, 2x2 max pool, 5x5 conv 64, 2x2 max pool, dense 1024, dense 10;
batch 100 of 28x28x1, SGD) eager, as bench_gpu.c's gpu.cnn builds it.
One JSON line per figure; medians of rounds after warm-up. Without torch or a GPU, says so."""
import json
import os
import statistics
import time

try:
    import torch
except ImportError:
    print(json.dumps({"name": "torch.gpu", "value": None, "skipped": "torch is not importable"}))
    raise SystemExit(0)
if not torch.cuda.is_available():
    print(json.dumps({"name": "torch.gpu", "value": None, "skipped": "torch sees no GPU"}))
    raise SystemExit(0)

dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = os.environ.get("TIDE_GPU_TF32") == "1"
torch.backends.cudnn.allow_tf32 = os.environ.get("TIDE_GPU_TF32") == "1"


def median_time(fn, warm, rounds, runs):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / runs)
    return statistics.median(times)


def emit(name, value, unit, **extra):
    print(json.dumps(dict(name=name, value=value, unit=unit, torch=torch.__version__, **extra)), flush=True)


CHAIN = 200
v = torch.full((), 1e-3, device=dev)


def chain():
    y = v
    for _ in range(CHAIN):
        y = y + v
    return y.item()  # the host waits for the chain, as a tide run fetching y does


t = median_time(chain, 20, 9, 50)
emit("torch.gpu.op_us", t * 1e6 / CHAIN, "us", chain=CHAIN)

n = 8192
a = torch.rand(n, n, device=dev) * 2 - 1
b = torch.rand(n, n, device=dev) * 2 - 1
t = median_time(lambda: torch.mm(a, b), 2, 9, 1)
emit("torch.gpu.matmul8192_ms", t * 1e3, "ms", tflops=2 * n ** 3 / t * 1e-12)
del a, b

batch = 128
model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.rand(batch, 784, device=dev)
labels = torch.full((batch, 10), 0.1, device=dev)


def step():
    opt.zero_grad(set_to_none=False)
    loss = torch.nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    opt.step()


t = median_time(step, 20, 9, 30)
emit("torch.gpu.mlp_eager_steps_per_s", 1 / t, "steps/s", batch=batch)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(s)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    step()
t = median_time(graph.replay, 20, 9, 100)
emit("torch.gpu.mlp_cudagraph_steps_per_s", 1 / t, "steps/s", batch=batch)


batch = 100
cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                          torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                          torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 1024), torch.nn.ReLU(),
                          torch.nn.Linear(1024, 10)).to(dev)
cnn_opt = torch.optim.SGD(cnn.parameters(), lr=0.01)
images = torch.rand(batch, 1, 28, 28, device=dev)
cnn_labels = torch.full((batch, 10), 0.1, device=dev)


def cnn_step():
    cnn_opt.zero_grad(set_to_none=False)
    loss = torch.nn.functional.cross_entropy(cnn(images), cnn_labels)
    loss.backward()
    cnn_opt.step()


t = median_time(cnn_step, 10, 9, 20)
emit("torch.gpu.cnn_steps_per_s", 1 / t, "steps/s", batch=batch)
