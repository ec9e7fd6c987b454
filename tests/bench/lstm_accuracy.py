#!/usr/bin/python3
"""lstm_accuracy.py — the LSTM example (examples/lstm_fashion_mnist.lua: a while_loop over the 28 rows of
each image, trained through the loop's gradient) run in full: 2 epochs of 600 steps, batch 100. Prints
lstm.test_accuracy (goal >= 0.85) and lstm.steps_per_s as JSON lines."""
import json
import os
import re
import subprocess
import sys
import time

tide, script = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
run = subprocess.run([tide, script], capture_output=True, text=True, env={**os.environ, "TIDE_LOG": ""})
wall = time.perf_counter() - t0
lines = run.stdout.strip().splitlines()
match = re.match(r"test accuracy ([0-9.]+)$", lines[-1]) if lines else None
if run.returncode != 0 or not match:
    print(json.dumps({"name": "lstm.test_accuracy", "value": None, "unit": "",
                      "error": (run.stderr or run.stdout)[-400:]}))
    raise SystemExit(1)
rates = [float(r) for r in re.findall(r"\(([0-9.]+) steps/s\)", run.stdout)]
print(json.dumps({"name": "lstm.test_accuracy", "value": float(match.group(1)), "unit": "", "goal": 0.85,
                  "epochs": 2, "steps": 1200, "batch": 100, "hidden": 128, "wall_s": round(wall, 1)}))
print(json.dumps({"name": "lstm.steps_per_s", "value": rates[-1] if rates else None, "unit": "steps/s",
                  "what": "training steps per second over the whole run (28 loop iterations forward and back "
                          "per step)"}))
