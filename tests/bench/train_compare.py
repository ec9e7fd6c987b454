#!/usr/bin/python3
"""train_compare.py — training speed of tide against PyTorch and NumPy, side by side in one run.

Usage: train_compare.py MLP_PROGRAM CNN_PROGRAM [--steps N] [--rounds R] [--sgd-only]

Adam (the examples' optimizer): for each model (the MLP 784-512-256-10 and the layers-tutorial CNN,
batch 100, Adam 1e-3, the same graphs as examples/mlp_fashion_mnist and examples/cnn_fashion_mnist),
PyTorch's configuration is chosen first: one process of the same model in PyTorch (Debian's
python3-torch, CPU, 2 threads) under each configuration a careful user would try on these 2 cores —
the defaults; OMP_WAIT_POLICY=PASSIVE; OPENBLAS_NUM_THREADS=1 (one thread pool, PyTorch's); and for the
CNN also channels_last memory format with OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4, or with
OPENBLAS_NUM_THREADS=1 (torch.{mlp,cnn}.steps_per_s, "role": "choice"). Then tide's example and PyTorch
in the fastest of them run in R interleaved rounds, as the SGD part below does, and
train.{mlp,cnn}.ratio_vs_torch is the ratio of the medians over the rounds (the median of the rounds'
own ratios beside it); train.{mlp,cnn}.steps_per_s is tide's median.

Plain SGD (issue 19; learning rate 0.01): the CNN at batch 100 and the MLP at batch 128, in R
interleaved rounds (default 5; odd rounds run the peers in reverse order): each round runs one process of each peer in turn — tide's example
(--optimizer sgd), PyTorch in its best configuration from the issue (2 threads, OMP_WAIT_POLICY=PASSIVE,
OPENBLAS_THREAD_TIMEOUT=4, channels_last for the CNN) and, for the MLP, a NumPy step written by hand
(numpy_mlp.py, OPENBLAS_NUM_THREADS=2) that also times the step's eight GEMMs alone through
numpy.matmul. Each process's figure is the median of its own 5 sub-rounds of N steps after a warm-up;
the lines give the median over the rounds, and each ratio is the ratio of those medians (the median of
the rounds' own ratios beside it). train.mlp.sgd.pct_of_gemm_ceiling is tide's MLP steps/s over the
GEMM ceiling (1 / the time of the eight GEMMs), in percent. Prints one JSON object per line; without
torch or numpy their lines say skipped. --sgd-only leaves out the Adam part."""
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
optimizer, batch = sys.argv[4], int(sys.argv[5])

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
x = torch.rand(batch, 1, 28, 28)
y = torch.randint(0, 10, (batch,))
if channels_last:
    model = model.to(memory_format=torch.channels_last)
    x = x.to(memory_format=torch.channels_last)
if optimizer == "adam":
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
else:
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

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


# Plain SGD (issue 19): the learning rate, each model's batch, PyTorch's best configuration from the
# issue for each model, and the NumPy peer's OpenBLAS threads.
SGD_LR = 0.01
SGD_BATCH = {"mlp": 128, "cnn": 100}
TORCH_BEST = {
    "mlp": ("OMP_WAIT_POLICY=PASSIVE+OPENBLAS_THREAD_TIMEOUT=4",
            {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}, False),
    "cnn": ("channels_last+OMP_WAIT_POLICY=PASSIVE+OPENBLAS_THREAD_TIMEOUT=4",
            {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}, True),
}
NUMPY_ENV = {"OPENBLAS_NUM_THREADS": "2"}
NUMPY_MLP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_mlp.py")


def run_tide(program, steps, extra_args=()):
    out = subprocess.run([program, "--bench", str(steps), "--quiet", *extra_args], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line from " + program)


def run_torch(model, steps, env_extra, channels_last, optimizer="adam", batch=100):
    env = dict(os.environ, **env_extra)
    out = subprocess.run(["/usr/bin/python3", "-c", PEER, model, str(steps), "1" if channels_last else "0",
                          optimizer, str(batch)],
                         capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["failed"]
    return json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"], None


def run_numpy(steps, batch):
    """The hand-written NumPy MLP step and its GEMMs alone (numpy_mlp.py): its JSON object, or None and why."""
    out = subprocess.run(["/usr/bin/python3", NUMPY_MLP, "--steps", str(steps), "--batch", str(batch),
                          "--lr", str(SGD_LR)], capture_output=True, text=True, env=dict(os.environ, **NUMPY_ENV),
                         timeout=900)
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1:] or ["failed"]
    return json.loads(out.stdout.strip().splitlines()[-1]), None


ADAM_CONFIGS = [("defaults", {}, False), ("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"}, False),
                ("OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"}, False)]
ADAM_CNN_CONFIGS = [("channels_last+PASSIVE+OPENBLAS_THREAD_TIMEOUT=4",
                     {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}, True),
                    ("channels_last+OPENBLAS_NUM_THREADS=1", {"OPENBLAS_NUM_THREADS": "1"}, True)]


def choose_torch_adam_config(model, steps):
    """One PyTorch process per configuration (Adam, batch 100); the fastest as (name, env, channels_last)."""
    configs = ADAM_CONFIGS + (ADAM_CNN_CONFIGS if model == "cnn" else [])
    best, best_rate = None, 0
    for config in configs:
        rate, error = run_torch(model, steps, config[1], config[2])
        print(json.dumps({"name": "torch.%s.steps_per_s" % model, "config": config[0], "value": rate,
                          "unit": "steps/s", "role": "choice of PyTorch's configuration (one process)",
                          "optimizer": "adam", "batch": 100, "steps_per_sub_round": steps, "torch_threads": 2,
                          **({"error": error} if error else {})}), flush=True)
        if rate and rate > best_rate:
            best, best_rate = config, rate
    return best


def compare_adam(programs, steps, rounds, have_torch):
    """The examples as they are (Adam, batch 100) against PyTorch's fastest configuration, interleaved."""
    for model in ("mlp", "cnn"):
        torch_config = choose_torch_adam_config(model, steps[model]) if have_torch else None
        results, errors = interleaved_rounds(model, programs[model], steps[model], rounds, "adam", 100,
                                             torch_config, False)
        tide_rates = [r["tide"]["value"] for r in results]
        config = {"optimizer": "adam", "lr": 0.001, "batch": 100, "rounds": rounds,
                  "steps_per_sub_round": steps[model], "tide_threads": results[0]["tide"].get("threads"),
                  "torch_threads": 2}
        print(json.dumps({"name": "train.%s.steps_per_s" % model, "value": median_of(tide_rates),
                          "unit": "steps/s", "round_values": tide_rates,
                          "cpu_ms_per_step": median_of([r["tide"].get("cpu_ms_per_step") for r in results]),
                          **config}), flush=True)
        if not torch_config:
            print(json.dumps({"name": "train.%s.ratio_vs_torch" % model, "value": None, "unit": "ratio",
                              "skipped": "python3-torch is not installed" if not have_torch
                              else "PyTorch failed in every configuration", **config}))
            continue
        torch_rates = [r.get("torch") for r in results]
        print(json.dumps({"name": "torch.%s.adam.steps_per_s" % model, "value": median_of(torch_rates),
                          "unit": "steps/s", "config": torch_config[0], "round_values": torch_rates, **config,
                          **({"error": errors["torch"]} if "torch" in errors else {})}), flush=True)
        print(json.dumps(ratio_line("train.%s.ratio_vs_torch" % model, tide_rates, torch_rates, config,
                                    torch_steps_per_s=median_of(torch_rates), torch_config=torch_config[0])),
              flush=True)


def interleaved_rounds(model, program, steps, rounds, optimizer, batch, torch_config, with_numpy):
    """Runs R interleaved rounds of one model: a list per round of {peer: figures} (None when it failed),
    and the peers' last errors. torch_config: (name, env, channels_last), or None to leave PyTorch out."""
    peers = ["tide"] + (["torch"] if torch_config else []) + (["numpy"] if with_numpy else [])
    tide_args = ["--optimizer", optimizer, "--batch", str(batch)] + (
        ["--lr", str(SGD_LR)] if optimizer == "sgd" else [])
    results, errors = [], {}
    for r in range(rounds):
        round_result = {}
        for peer in (peers if r % 2 == 0 else peers[::-1]):
            if peer == "tide":
                round_result["tide"] = run_tide(program, steps, tide_args)
            elif peer == "torch":
                rate, errors["torch"] = run_torch(model, steps, torch_config[1], torch_config[2], optimizer, batch)
                round_result["torch"] = rate
            else:
                round_result["numpy"], errors["numpy"] = run_numpy(steps, batch)
        results.append(round_result)
    return results, {k: v for k, v in errors.items() if v}


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio_line(name, tide_rates, peer_rates, config, **fields):
    """The ratio of the medians over the rounds, and the median of the rounds' own ratios beside it."""
    pairs = [(t, p) for t, p in zip(tide_rates, peer_rates) if t and p]
    if not pairs:
        return {"name": name, "value": None, "unit": "ratio", "skipped": "the peer did not run", **config}
    tide, peer = median_of([t for t, _ in pairs]), median_of([p for _, p in pairs])
    return {"name": name, "value": round(tide / peer, 3), "unit": "ratio",
            "median_of_round_ratios": round(median_of([t / p for t, p in pairs]), 3),
            "tide_steps_per_s": round(tide, 2), **fields, **config}


def compare_sgd(programs, steps, rounds, have_torch, have_numpy):
    """Plain SGD: tide, PyTorch's best configuration and (MLP) the NumPy step, in interleaved rounds."""
    for model in ("cnn", "mlp"):
        torch_config = TORCH_BEST[model][0]
        results, errors = interleaved_rounds(model, programs[model], steps[model], rounds, "sgd",
                                             SGD_BATCH[model], TORCH_BEST[model] if have_torch else None,
                                             have_numpy and model == "mlp")
        tide_rates = [r["tide"]["value"] for r in results]
        config = {"optimizer": "sgd", "lr": SGD_LR, "batch": SGD_BATCH[model], "rounds": rounds,
                  "steps_per_sub_round": steps[model], "tide_threads": results[0]["tide"].get("threads"),
                  "torch_threads": 2}
        print(json.dumps({"name": "train.%s.sgd.steps_per_s" % model, "value": median_of(tide_rates),
                          "unit": "steps/s", "round_values": tide_rates,
                          "cpu_ms_per_step": median_of([r["tide"].get("cpu_ms_per_step") for r in results]),
                          **config}), flush=True)
        torch_rates = [r.get("torch") for r in results]
        if have_torch:
            print(json.dumps({"name": "torch.%s.sgd.steps_per_s" % model, "value": median_of(torch_rates),
                              "unit": "steps/s", "config": torch_config, "round_values": torch_rates, **config,
                              **({"error": errors["torch"]} if "torch" in errors else {})}), flush=True)
            line = ratio_line("train.%s.sgd.ratio_vs_torch" % model, tide_rates, torch_rates, config,
                              torch_steps_per_s=median_of(torch_rates), torch_config=torch_config)
        else:
            line = {"name": "train.%s.sgd.ratio_vs_torch" % model, "value": None, "unit": "ratio",
                    "skipped": "python3-torch is not installed", **config}
        print(json.dumps(line), flush=True)
        if model == "mlp":
            print_numpy_lines(results, errors, tide_rates, have_numpy, config)


def print_numpy_lines(results, errors, tide_rates, have_numpy, config):
    """The MLP against the NumPy step, and against the GEMM ceiling measured in the NumPy peer's process."""
    config = dict(config, numpy_openblas_threads=int(NUMPY_ENV["OPENBLAS_NUM_THREADS"]))
    if not have_numpy:
        for name, unit in (("train.mlp.sgd.ratio_vs_numpy", "ratio"), ("train.mlp.sgd.pct_of_gemm_ceiling", "%")):
            print(json.dumps({"name": name, "value": None, "unit": unit,
                              "skipped": "numpy is not installed (Debian: python3-numpy)", **config}))
        return
    numpy_runs = [r.get("numpy") for r in results]
    numpy_rates = [n and n["steps_per_s"] for n in numpy_runs]
    gemm_rates = [n and n["gemm_steps_per_s"] for n in numpy_runs]
    flops = next((n["flops_per_step"] for n in numpy_runs if n), None)
    print(json.dumps({"name": "numpy.mlp.sgd.steps_per_s", "value": median_of(numpy_rates), "unit": "steps/s",
                      "round_values": numpy_rates, **config,
                      **({"error": errors["numpy"]} if "numpy" in errors else {})}), flush=True)
    ceiling = median_of(gemm_rates)
    print(json.dumps({"name": "numpy.mlp.gemm_ceiling_steps_per_s", "value": ceiling, "unit": "steps/s",
                      "gflops": ceiling and round(ceiling * flops * 1e-9, 1), "flops_per_step": flops,
                      "round_values": gemm_rates, **config}), flush=True)
    print(json.dumps(ratio_line("train.mlp.sgd.ratio_vs_numpy", tide_rates, numpy_rates, config,
                                numpy_steps_per_s=median_of(numpy_rates))), flush=True)
    line = ratio_line("train.mlp.sgd.pct_of_gemm_ceiling", tide_rates, gemm_rates, config,
                      gemm_ceiling_steps_per_s=ceiling, flops_per_step=flops,
                      method="tide's steps/s (median of the rounds) over the GEMM ceiling: 1 / the time of the "
                             "step's 8 float32 GEMMs (3 forward, 3 weight gradients, 2 input gradients, the "
                             "step's shapes and transposes) through numpy.matmul into preallocated outputs, "
                             "OpenBLAS %s threads, timed in the NumPy peer's process in sub-rounds alternating "
                             "with its step (median of the rounds); x 100" % NUMPY_ENV["OPENBLAS_NUM_THREADS"])
    if line["value"] is not None:
        line.update(value=round(line["value"] * 100, 1), unit="%",
                    median_of_round_ratios=round(line["median_of_round_ratios"] * 100, 1),
                    tide_gflops=round(line["tide_steps_per_s"] * flops * 1e-9, 1),
                    numpy_step_pct=round(100 * median_of(numpy_rates) / ceiling, 1))
    else:
        line["unit"] = "%"
    print(json.dumps(line), flush=True)


def main():
    args = sys.argv[1:]
    steps = {"mlp": 200, "cnn": 20}
    rounds = 5
    if "--steps" in args:
        i = args.index("--steps")
        steps = {"mlp": int(args[i + 1]), "cnn": max(1, int(args[i + 1]) // 10)}
        del args[i:i + 2]
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = max(1, int(args[i + 1]))
        del args[i:i + 2]
    sgd_only = "--sgd-only" in args
    args = [a for a in args if a != "--sgd-only"]
    if len(args) != 2:
        sys.exit("usage: train_compare.py MLP_PROGRAM CNN_PROGRAM [--steps N] [--rounds R] [--sgd-only]")
    programs = {"mlp": args[0], "cnn": args[1]}
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    try:
        import numpy  # noqa: F401
        have_numpy = True
    except ImportError:
        have_numpy = False
    if not sgd_only:
        compare_adam(programs, steps, rounds, have_torch)
    compare_sgd(programs, steps, rounds, have_torch, have_numpy)


if __name__ == "__main__":
    main()
