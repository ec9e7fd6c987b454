#!/usr/bin/python3
"""train_compare.py — training speed of tide against PyTorch, side by side in one run.

Usage: train_compare.py MLP_PROGRAM CNN_PROGRAM [--steps N]

For each model (the MLP 784-512-256-10 and the layers-tutorial CNN, batch 100, Adam 1e-3, the same
graphs as examples/mlp_fashion_mnist and examples/cnn_fashion_mnist) it runs tide's example in
--bench mode, then the same model in PyTorch (Debian's python3-torch, CPU, 2 threads) under each
configuration a careful user would try on these 2 cores — the defaults; OMP_WAIT_POLICY=PASSIVE;
OPENBLAS_NUM_THREADS=1 (one thread pool, PyTorch's); and for the CNN also channels_last memory format
with OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4, or with OPENBLAS_NUM_THREADS=1 — and
divides tide's steps/s by the fastest. Prints one JSON object per line. Without torch the ratios are skipped."""
import json
import os
import statistics
import subprocess
import sys
import time

PEER = r'''
import json, os, statistics, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.set_num_threads(2)
torch.manual_seed(1)
model_name, steps, channels_last = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.d1, self.d2, self.d3 = nn.Linear(784, 512), nn.Linear(512, 256), nn.Linear(256, 10)
    def forward(self, x):
        x = x.reshape(-1, 784)
        return self.d3(F.relu(self.d2(F.relu(self.d1(x)))))

class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 5, padding=2)
        self.c2 = nn.Conv2d(32, 64, 5, padding=2)
        self.d1, self.d2 = nn.Linear(7 * 7 * 64, 1024), nn.Linear(1024, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.dropout(F.relu(self.d1(x.reshape(x.shape[0], -1))), 0.4, self.training)
        return self.d2(x)

model = MLP() if model_name == "mlp" else CNN()
x = torch.rand(100, 1, 28, 28)
y = torch.randint(0, 10, (100,))
if channels_last:
    model = model.to(memory_format=torch.channels_last)
    x = x.to(memory_format=torch.channels_last)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

def step():
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss

for _ in range(10):
    step()
rates = []
for _ in range(5):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    rates.append(steps / (time.perf_counter() - t0))
print(json.dumps({"steps_per_s": statistics.median(rates), "rounds": rates}))
'''


def run_tide(program, steps):
    out = subprocess.run([program, "--bench", str(steps), "--quiet"], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line from " + program)


def run_torch(model, steps, env_extra, channels_last):
    env = dict(os.environ, **env_extra)
    out = subprocess.run(["/usr/bin/python3", "-c", PEER, model, str(steps), "1" if channels_last else "0"],
                         capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["failed"]
    return json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"], None


def main():
    args = sys.argv[1:]
    steps = {"mlp": 200, "cnn": 20}
    if "--steps" in args:
        i = args.index("--steps")
        steps = {"mlp": int(args[i + 1]), "cnn": max(1, int(args[i + 1]) // 10)}
        del args[i:i + 2]
    programs = {"mlp": args[0], "cnn": args[1]}
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    for model in ("mlp", "cnn"):
        tide = run_tide(programs[model], steps[model])
        print(json.dumps(tide), flush=True)
        if not have_torch:
            print(json.dumps({"name": "train.%s.ratio_vs_torch" % model, "value": None, "unit": "ratio",
                              "skipped": "python3-torch is not installed"}))
            continue
        configs = [("defaults", {}, False), ("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"}, False),
                   ("OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"}, False)]
        if model == "cnn":
            configs += [("channels_last+PASSIVE+OPENBLAS_THREAD_TIMEOUT=4",
                         {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}, True),
                        ("channels_last+OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"}, True)]
        results = {}
        for name, env, cl in configs:
            rate, error = run_torch(model, steps[model], env, cl)
            results[name] = rate
            print(json.dumps({"name": "torch.%s.steps_per_s" % model, "config": name, "value": rate,
                              "unit": "steps/s", **({"error": error} if error else {})}), flush=True)
        best_name = max((k for k in results if results[k]), key=lambda k: results[k], default=None)
        if best_name is None:
            continue
        print(json.dumps({"name": "train.%s.ratio_vs_torch" % model,
                          "value": round(tide["value"] / results[best_name], 3), "unit": "ratio",
                          "tide_steps_per_s": tide["value"], "torch_steps_per_s": round(results[best_name], 2),
                          "torch_config": best_name}), flush=True)


if __name__ == "__main__":
    main()
