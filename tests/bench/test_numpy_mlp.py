#!/usr/bin/python3
"""test_numpy_mlp.py — checks the hand-written NumPy MLP step that train_compare.py times as a peer
(numpy_mlp.py), so that the peer it measures is a correct training step and not a cheaper one:
  1. its gradients match central finite differences of its loss, on a tiny MLP (5-4-3-3, batch 3) in
     float64, every weight and bias;
  2. on the benchmark's shapes (784-512-256-10, batch 128, float32), 30 steps on one batch lower the
     loss at each of the first 10 steps and by a fifth in all, and the parameters stay float32;
  3. the GEMM list counts the step's products: 0.308 GFLOP per step at batch 128.
Exit status 0 when all hold, 1 on the first failure, 77 (skipped) without numpy."""
import os
import sys

try:
    import numpy as np
except ImportError:
    print("skipped: numpy is not installed (Debian: python3-numpy)")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy_mlp  # noqa: E402


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check_gradients():
    rng = np.random.default_rng(7)
    sizes = (5, 4, 3, 3)
    params = numpy_mlp.init_params(sizes, rng, np.float64)
    for _, b in params:
        b[:] = rng.uniform(-0.5, 0.5, b.shape)
    x = rng.normal(size=(3, sizes[0]))
    labels = np.array([0, 2, 1])
    _, grads = numpy_mlp.loss_and_grads(params, x, labels)
    eps, worst = 1e-6, 0.0
    for layer, (w, b) in enumerate(params):
        for name, tensor, grad in (("W", w, grads[layer][0]), ("b", b, grads[layer][1])):
            for index in np.ndindex(tensor.shape):
                saved = tensor[index]
                tensor[index] = saved + eps
                up, _ = numpy_mlp.loss_and_grads(params, x, labels)
                tensor[index] = saved - eps
                down, _ = numpy_mlp.loss_and_grads(params, x, labels)
                tensor[index] = saved
                numeric = (up - down) / (2 * eps)
                error = abs(numeric - grad[index]) / max(1e-3, abs(numeric) + abs(grad[index]))
                worst = max(worst, error)
                if error > 1e-5:
                    fail("layer %d %s%s: analytic gradient %.8g, finite difference %.8g"
                         % (layer + 1, name, list(index), grad[index], numeric))
    print("gradients match finite differences (worst relative error %.2e)" % worst)


def check_training():
    rng = np.random.default_rng(1)
    params = numpy_mlp.init_params(numpy_mlp.SIZES, rng)
    x = rng.random((128, 784), dtype=np.float32)
    labels = rng.integers(0, 10, 128)
    losses = [numpy_mlp.sgd_step(params, x, labels, 0.05) for _ in range(30)]
    if not losses[-1] < 0.8 * losses[0]:
        fail("30 SGD steps on one batch took the loss from %.4f only to %.4f" % (losses[0], losses[-1]))
    if any(b >= a for a, b in zip(losses[:10], losses[1:10])):
        fail("the loss did not go down at each of the first 10 steps: %s" % ["%.4f" % v for v in losses[:10]])
    for w, b in params:
        if w.dtype != np.float32 or b.dtype != np.float32:
            fail("a parameter left float32: %s / %s" % (w.dtype, b.dtype))
    print("loss %.4f -> %.4f in 30 steps, parameters float32" % (losses[0], losses[-1]))


def check_flops():
    flops = numpy_mlp.step_flops(128)
    if flops != 2 * 128 * (2 * 784 * 512 + 3 * 512 * 256 + 3 * 256 * 10):
        fail("step_flops(128) = %d" % flops)
    ops = numpy_mlp.gemm_operands(128, np.random.default_rng(0))
    if len(ops) != 8 or any(out.dtype != np.float32 for _, _, out in ops):
        fail("expected 8 float32 GEMMs")
    print("8 GEMMs, %.4f GFLOP per step at batch 128" % (flops * 1e-9))


check_gradients()
check_training()
check_flops()
