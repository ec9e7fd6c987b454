#!/usr/bin/python3
"""numpy_mlp.py — the MLP 784-512-256-10's plain SGD step written by hand in NumPy: the peer a careful
user would write instead of a framework (issue 19), and the GEMM ceiling of the same step.

The step is forward (dense + ReLU, dense + ReLU, dense), softmax cross-entropy averaged over the batch,
backward by hand, and the update W -= lr * dW, all in float32 in place. Its products are eight GEMMs:
three forward, three weight gradients and two input gradients (the input's gradient is not needed).
The ceiling is those eight GEMMs alone, with the same shapes and transposes, through numpy.matmul into
preallocated outputs (OpenBLAS, no allocation), so 1 / its time is the most steps per second any
implementation calling the same GEMMs could reach.

As a program: numpy_mlp.py [--steps N] [--batch B] [--lr X] prints one JSON line with the step's median
rate and the GEMMs' median rate over 5 alternating sub-rounds (after a warm-up). OpenBLAS's thread count
is what the environment gives it (train_compare.py sets OPENBLAS_NUM_THREADS). As a module it gives the
step to tests/bench/test_numpy_mlp.py, which checks it against finite differences."""
import json
import statistics
import sys
import time

import numpy as np

SIZES = (784, 512, 256, 10)


def init_params(sizes, rng, dtype=np.float32):
    """Glorot-uniform weights and zero biases, as [(W [in, out], b [out]), ...]."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append((rng.uniform(-limit, limit, (fan_in, fan_out)).astype(dtype), np.zeros(fan_out, dtype)))
    return params


def loss_and_grads(params, x, labels):
    """Mean softmax cross-entropy of the MLP on (x, labels) and its gradients [(dW, db), ...]."""
    acts = [x]
    for i, (w, b) in enumerate(params):
        z = acts[-1] @ w
        z += b
        if i + 1 < len(params):
            np.maximum(z, 0, out=z)
        acts.append(z)
    logits = acts[-1]
    logits -= logits.max(axis=1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(axis=1, keepdims=True)
    rows = np.arange(x.shape[0])
    loss = -np.log(probs[rows, labels]).mean()
    delta = probs
    delta[rows, labels] -= 1
    delta /= x.shape[0]
    grads = [None] * len(params)
    for i in range(len(params) - 1, -1, -1):
        grads[i] = (acts[i].T @ delta, delta.sum(axis=0))
        if i > 0:
            upstream = delta @ params[i][0].T
            upstream *= acts[i] > 0
            delta = upstream
    return float(loss), grads


def sgd_step(params, x, labels, lr):
    """One training step: updates params in place, returns the loss before the update."""
    loss, grads = loss_and_grads(params, x, labels)
    for (w, b), (dw, db) in zip(params, grads):
        w -= lr * dw
        b -= lr * db
    return loss


def gemm_shapes(batch, sizes=SIZES):
    """The step's GEMMs as (m, k, n, what): forward x[m,k] @ W[k,n], dW = act.T @ delta, dX = delta @ W.T."""
    shapes = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        shapes.append((batch, fan_in, fan_out, "forward"))
        shapes.append((fan_in, batch, fan_out, "weight gradient"))
    for fan_in, fan_out in list(zip(sizes[:-1], sizes[1:]))[1:]:
        shapes.append((batch, fan_out, fan_in, "input gradient"))
    return shapes


def step_flops(batch, sizes=SIZES):
    """Multiply-adds of the step's GEMMs, times two (the element-wise work is not counted)."""
    return sum(2 * m * k * n for m, k, n, _ in gemm_shapes(batch, sizes))


def gemm_operands(batch, rng, sizes=SIZES):
    """Operands for the step's GEMMs with the step's layouts: the weight gradient multiplies a transposed
    view of the [batch, in] activations, the input gradient a transposed view of W [in, out]."""
    ops = []
    for m, k, n, what in gemm_shapes(batch, sizes):
        if what == "weight gradient":
            a = rng.random((k, m), dtype=np.float32).T
            b = rng.random((k, n), dtype=np.float32)
        elif what == "input gradient":
            a = rng.random((m, k), dtype=np.float32)
            b = rng.random((n, k), dtype=np.float32).T
        else:
            a = rng.random((m, k), dtype=np.float32)
            b = rng.random((k, n), dtype=np.float32)
        ops.append((a, b, np.empty((m, n), np.float32)))
    return ops


def run_gemms(ops):
    for a, b, out in ops:
        np.matmul(a, b, out=out)


def main():
    args = sys.argv[1:]
    opts = {"--steps": 200, "--batch": 128, "--lr": 0.01}
    for i in range(0, len(args), 2):
        if args[i] not in opts or i + 1 >= len(args):
            sys.exit("usage: numpy_mlp.py [--steps N] [--batch B] [--lr X]")
        opts[args[i]] = type(opts[args[i]])(args[i + 1])
    steps, batch, lr = opts["--steps"], opts["--batch"], opts["--lr"]
    rng = np.random.default_rng(1)
    params = init_params(SIZES, rng)
    x = rng.random((batch, SIZES[0]), dtype=np.float32)
    labels = rng.integers(0, SIZES[-1], batch)
    ops = gemm_operands(batch, rng)
    step_rates, gemm_rates, losses = [], [], []
    for sub_round in range(-1, 5):
        n = 10 if sub_round < 0 else steps
        t0 = time.perf_counter()
        for _ in range(n):
            losses.append(sgd_step(params, x, labels, lr))
        t1 = time.perf_counter()
        for _ in range(n):
            run_gemms(ops)
        t2 = time.perf_counter()
        if sub_round >= 0:
            step_rates.append(n / (t1 - t0))
            gemm_rates.append(n / (t2 - t1))
    print(json.dumps({"steps_per_s": statistics.median(step_rates), "sub_rounds": step_rates,
                      "gemm_steps_per_s": statistics.median(gemm_rates), "gemm_sub_rounds": gemm_rates,
                      "flops_per_step": step_flops(batch), "first_loss": losses[0], "last_loss": losses[-1],
                      "numpy": np.__version__}))


if __name__ == "__main__":
    main()
