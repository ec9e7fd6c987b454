#!/usr/bin/python3
"""step_memory.py — what a training step of the examples allocates, in steady state, and its peak memory.

Usage: step_memory.py MALLOC_COUNT_LIBRARY MLP_PROGRAM CNN_PROGRAM

Each example runs twice with `--bench S` (20 warm-up steps, then five rounds of S steps) under the
LD_PRELOAD library malloc_count (tests/bench/malloc_count.c), which counts the process's calls to
malloc, calloc, realloc and the aligned allocators, the bytes they ask for, and its minor page faults
(getrusage). The second run takes 5 x (S2 - S1) steps more than the first: the differences divided by
that are what one steady step costs (data loading, graph building and warm-up cancel). A third run with
`--log FILE` reads the steps' peak memory from the run log (runs.peak_bytes: the most bytes the step's
kernels held at once in the tensors they allocated; docs/benchmarks.md). Prints JSON lines
  step_memory.<model>.allocations_per_step   calls to the system allocator per steady step (tensor
                                             headers, small buffers, kernels' scratch, the batcher's batch)
  step_memory.<model>.malloc_bytes_per_step  the bytes they ask for (large tensors come from the
                                             engine's buffer cache, not from the system)
  step_memory.<model>.minor_faults_per_step  page faults per steady step (fresh memory from the kernel)
  step_memory.<model>.peak_bytes             the median over the logged training steps of runs.peak_bytes"""
import json
import os
import statistics
import sqlite3
import subprocess
import sys
import tempfile

ROUNDS = {"mlp": (10, 30), "cnn": (2, 6)}


def counted(library, program, steps, out):
    """Runs program --bench steps under the counting library; returns its counts and steps/s."""
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ, LD_PRELOAD=library, MALLOC_COUNT_OUT=out, MALLOC_PERTURB_="0")
    p = subprocess.run([program, "--bench", str(steps), "--quiet"], capture_output=True, text=True, check=True,
                       env=env)
    rate = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")][0]
    with open(out) as f:
        return json.loads(f.read().splitlines()[-1]), rate


def peak(program, log):
    subprocess.run([program, "--bench", "2", "--quiet", "--log", log], capture_output=True, text=True, check=True)
    con = sqlite3.connect("file:%s?mode=ro" % log, uri=True)
    try:
        rows = con.execute("SELECT peak_bytes FROM runs WHERE status = 0 AND targets LIKE '%train%' "
                           "AND peak_bytes IS NOT NULL").fetchall()
    finally:
        con.close()
    return statistics.median(r[0] for r in rows) if rows else None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    library = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        for model, program in (("mlp", sys.argv[2]), ("cnn", sys.argv[3])):
            short, long = ROUNDS[model]
            a, _ = counted(library, program, short, os.path.join(tmp, "a.json"))
            b, rate = counted(library, program, long, os.path.join(tmp, "b.json"))
            steps = 5 * (long - short)
            note = ("%d steady steps (two --bench runs under malloc_count, differenced); %s steps/s in the "
                    "longer run" % (steps, rate["value"]))
            for key, name, unit in (("allocations", "allocations_per_step", "calls"),
                                    ("bytes", "malloc_bytes_per_step", "bytes"),
                                    ("minor_faults", "minor_faults_per_step", "faults")):
                print(json.dumps({"name": "step_memory.%s.%s" % (model, name),
                                  "value": round((b[key] - a[key]) / steps, 2), "unit": unit, "note": note}))
            value = peak(program, os.path.join(tmp, model + ".db"))
            print(json.dumps({"name": "step_memory.%s.peak_bytes" % model, "value": value, "unit": "bytes",
                              "note": "median runs.peak_bytes of the logged training steps"}))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
