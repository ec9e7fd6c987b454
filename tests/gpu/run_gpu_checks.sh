#!/bin/sh
# run_gpu_checks.sh — every GPU check and benchmark in one run, for the device machine (an NVIDIA H200 lent by
# the `device` tool; /work/shared/device/README.md is the recipe this follows). Prepare here first with
# tests/gpu/prepare_gpu_run.sh, then run there from the repository root with the prepared folders carried:
#     run(command="sh tests/gpu/run_gpu_checks.sh",
#         carry=[".debs", ".device", ".fashion-mnist", ".cudnn-include"], timeout_s=600)
# It prints and writes to $OUT (or ./gpu-out): gpu-checks.log (everything), gpu-testlog.txt (meson's log),
# gpu-bench.jsonl (tide's and PyTorch's figures, and the ratios). Steps, each under a time limit so that
# the whole stays under about 8 minutes:
#   1. the machine: GPU, driver, where cuDNN is (PyTorch's wheel: nvidia/cudnn), PyTorch's version;
#   2. the build: -Dcuda=enabled, cuDNN through -Dcudnn_dir, ninja -j16 (nvcc for sm_90 + PTX);
#   3. the suites 'cuda' and 'gpu': the device interface on /gpu:0 (test_gpu), every GPU kernel against
#      the CPU's with the gradients on the GPU (test_gpu_kernels: float16/bfloat16 MatMul, BatchMatMul and
#      convolutions (test_half_products), pooling where cuDNN cannot pad evenly (test_pool), Assign of
#      every dtype with AssignAdd/AssignSub (test_state_updates), Dropout (test_dropout; its rate a host-memory input, uncopied: test_dropout_rate_on_host) among them), the
#      host-side checks; and the random-graph partition test and device-interface suites as a control;
#      then each test of test_gpu_kernels on its own, so that a failing one is named with its time;
#   4. compute-sanitizer (memcheck) over the kernel checks, where the toolkit has it;
#   5. the MLP example trained on /gpu:0 and on the CPU: test accuracies within 0.02;
#   6. timelines on /gpu:0: a traced step's kernels on the compute lane, its copies (the feed's and the
#      fetch's _Recvs, a watched tensor's host copy for the run log) on the copy lanes, read from the run log;
#   7. the benchmarks (bench_gpu: op chain, matmul 8192, MLP, TF-tutorial CNN) and PyTorch's peer figures
#      (peer_gpu_torch.py), and their ratios (gpu.cnn.ratio_vs_torch among them).
# Nothing in tide had run on a GPU before this script is first run.
set -u
out=${OUT:-gpu-out}
mkdir -p "$out"
log=$out/gpu-checks.log
bench=$out/gpu-bench.jsonl
: > "$bench"
b=/tmp/b
step() { echo; echo "== $* ($(date -u +%T))"; }
{
  step "machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -5
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1 | tail -1
  cudnn_lib=$(find / -name 'libcudnn.so.9' -not -path '*/proc/*' 2>/dev/null | head -1)
  echo "cuDNN library: ${cudnn_lib:-none found}"
  cudnn_dir=
  if [ -n "$cudnn_lib" ]; then
    root=$(dirname "$(dirname "$cudnn_lib")")
    cudnn_dir=/tmp/cudnn
    mkdir -p $cudnn_dir
    ln -sfn "$(dirname "$cudnn_lib")" $cudnn_dir/lib
    if [ -f "$root/include/cudnn.h" ]; then ln -sfn "$root/include" $cudnn_dir/include
    else ln -sfn "$PWD/.cudnn-include" $cudnn_dir/include; fi
    echo "cuDNN for the build: $cudnn_dir (headers from $(readlink $cudnn_dir/include))"
    export LD_LIBRARY_PATH="$(dirname "$cudnn_lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi

  step "build"
  . .device/sysroot.sh .debs
  export PATH=/opt/tide-sysroot/usr/bin:$PATH  # protoc and protoc-c from the carried packages
  timeout 120 meson setup $b -Dcuda=enabled -Dgraphviz=disabled -Dcudnn_dir=$cudnn_dir 2>&1 | tail -12
  timeout 300 ninja -C $b -j16 2>&1 | tail -5
  ls -la $b/kernels/libtide_cuda_kernels.so 2>&1

  step "the suites cuda and gpu, and the device-interface suites"
  timeout 240 meson test -C $b --no-rebuild --print-errorlogs --suite cuda --suite gpu test_devices test_partition \
    test_transfers 2>&1 | tail -40
  cp $b/meson-logs/testlog.txt "$out/gpu-testlog.txt" 2>/dev/null
  for t in test_half_products test_pool test_state_updates test_dropout test_dropout_rate_on_host; do
    start=$(date +%s)
    TIDE_TEST_ONLY=$t timeout 60 $b/tests/gpu_test_gpu_kernels > "$out/gpu-$t.log" 2>&1
    echo "test_gpu_kernels.$t: exit status $? in $(( $(date +%s) - start )) s (0: passed; $out/gpu-$t.log)"
  done

  step "compute-sanitizer"
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  if [ -n "$cs" ]; then
    (TIDE_TEST_ONLY=test_binary,test_reductions,test_matmul,test_softmax,test_data,test_optimizers,test_half_products,test_pool,test_state_updates,test_dropout,test_dropout_rate_on_host \
      timeout 180 "$cs" --tool memcheck --error-exitcode 9 $b/tests/gpu_test_gpu_kernels 2>&1
     echo "compute-sanitizer exit status: $? (9: errors found, 124: out of time)") | tail -16
  else
    echo "compute-sanitizer: not on this machine"
  fi

  step "the MLP trained on /gpu:0 and on the CPU"
  if [ -f .fashion-mnist/train-images-idx3-ubyte.gz ]; then
    export TIDE_FASHION_MNIST=$PWD/.fashion-mnist
    cpu=$(timeout 150 $b/examples/mlp_fashion_mnist --steps 300 --eval 2000 --quiet 2>&1 | tail -3)
    gpu=$(timeout 150 $b/examples/mlp_fashion_mnist --steps 300 --eval 2000 --quiet --device /gpu:0 2>&1 | tail -5)
    printf 'CPU:\n%s\nGPU:\n%s\n' "$cpu" "$gpu"
    python3 - "$cpu" "$gpu" <<'PY'
import re, sys
acc = [re.search(r"test accuracy ([0-9.]+)\s*$", t) for t in sys.argv[1:3]]
if not all(acc):
    print("MLP: FAILED (no accuracy line)")
else:
    a, b = (float(m.group(1)) for m in acc)
    print("MLP: %s (accuracy %.4f on the CPU, %.4f on the GPU)" % ("OK" if abs(a - b) <= 0.02 else "FAILED", a, b))
PY
  else
    echo "MLP: skipped (no .fashion-mnist carried)"
  fi

  step "timelines on /gpu:0: kernels and copies in their streams' lanes"
  # a traced step on /gpu:0 with x fed, y fetched and relu watched: its kernels in the "/gpu:0 compute" lane,
  # the feed's and the fetch's _Recv copies and relu's host copy for the run log (_CopyToHost) in the
  # copy lanes, each with start <= end inside its launch (docs/devices.md, Timelines of device work)
  rm -f /tmp/tide-timeline.db
  printf '%s\n' 'x = placeholder(float32, {64, 64})' \
    'device("/gpu:0", function() y = sum(matmul(relu(matmul(x, x)), x)) end)' ':watch relu' \
    'xv = run(random_uniform({64, 64}))' 'for i = 1, 3 do run(y, {[x] = xv}, {trace = true}) end' ':run' |
    timeout 60 $b/repl/tide --log /tmp/tide-timeline.db -q 2>&1 | tail -14
  timeout 30 python3 - /tmp/tide-timeline.db <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
run = db.execute("SELECT max(run_id) FROM node_timings").fetchone()[0]
rows = db.execute("SELECT node, op, lane, start_ns, end_ns, launch_start_ns, launch_end_ns FROM node_timings "
                  "WHERE run_id = ?", (run,)).fetchall()
lanes = {}
for r in rows:
    lanes.setdefault(r[2], []).append(r)
for lane in sorted(k for k in lanes if k):
    print("%-18s %s" % (lane, ", ".join(sorted(set(r[1] for r in lanes[lane])))))
problems = [l for l in ("/gpu:0 compute", "/gpu:0 copy h2d", "/gpu:0 copy d2h") if l not in lanes]
problems += ["no _CopyToHost relu:0 on /gpu:0 copy d2h"] if not any(
    r[0] == "relu:0" and r[1] == "_CopyToHost" for r in lanes.get("/gpu:0 copy d2h", [])) else []
problems += ["%s (%s) in %s: start %s end %s" % (r[0], r[1], r[2], r[3], r[4]) for r in rows
             if r[2] and not (r[3] <= r[4])]
print("timelines: " + ("OK" if not problems else "FAILED: " + "; ".join(problems)))
PY

  step "benchmarks"
  timeout 150 $b/tests/gpu_bench_gpu 2>&1 | tee -a "$bench"
  # gpu.op_us once more with a synchronisation after every kernel (the way before stream-ordered memory)
  TIDE_GPU_SYNC_EACH_KERNEL=1 timeout 60 $b/tests/gpu_bench_gpu op 2>&1 | tee -a "$bench"
  timeout 150 python3 tests/gpu/peer_gpu_torch.py 2>&1 | tee -a "$bench"
  python3 - "$bench" <<'PY' | tee -a "$bench"
import json, sys
f = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
        f[d["name"]] = d
    except (ValueError, KeyError):
        pass
def emit(name, value, **extra):
    print(json.dumps(dict(name=name, value=value, unit="ratio", **extra)))
if "gpu.op_us" in f and f.get("torch.gpu.op_us", {}).get("value"):
    emit("gpu.op_us.ratio_vs_torch_eager", f["torch.gpu.op_us"]["value"] / f["gpu.op_us"]["value"],
         note="torch us / tide us; >= 1 means tide is as fast")
if "gpu.op_us_sync_each_kernel" in f and f.get("torch.gpu.op_us", {}).get("value"):
    emit("gpu.op_us_sync_each_kernel.ratio_vs_torch_eager",
         f["torch.gpu.op_us"]["value"] / f["gpu.op_us_sync_each_kernel"]["value"],
         note="the same chain when the device waits for every kernel (before stream-ordered memory)")
if "gpu.matmul8192.ratio_vs_cublas" in f and f.get("torch.gpu.matmul8192_ms", {}).get("value"):
    emit("gpu.matmul8192.ratio_vs_torch", f["torch.gpu.matmul8192_ms"]["value"] / f["gpu.matmul8192.ratio_vs_cublas"]["tide_ms"])
# tide eager (capture off) against PyTorch eager, tide with whole-step capture (the engine's default
# since capture2: no $TIDE_CAPTURE needed) against PyTorch's CUDA graph
for peer, mine in (("eager", "gpu.mlp.eager_steps_per_s"), ("cudagraph", "gpu.mlp.steps_per_s")):
    mlp = f.get(mine, {}).get("value")
    p = f.get("torch.gpu.mlp_%s_steps_per_s" % peer, {}).get("value")
    if mlp and p:
        emit("gpu.mlp.ratio_vs_torch_" + peer, mlp / p, replayed=f[mine].get("replayed"))
    if peer == "cudagraph" and mine in f and not f[mine].get("replayed"):
        print("gpu.mlp: the captured session's timed steps were NOT replayed (%s): its figure is eager"
              % f[mine].get("why"), file=sys.stderr)
cnn, p = f.get("gpu.cnn.steps_per_s", {}).get("value"), f.get("torch.gpu.cnn_steps_per_s", {}).get("value")
if cnn and p:
    emit("gpu.cnn.ratio_vs_torch", cnn / p, note="tide steps/s / PyTorch eager steps/s, TF-tutorial CNN, batch 100")
PY
  step "done"
} 2>&1 | tee "$log"
