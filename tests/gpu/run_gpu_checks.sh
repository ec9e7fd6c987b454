#!/bin/sh
# run_gpu_checks.sh — the GPU checks, for the device machine (an NVIDIA H200 lent by the `device` tool;
# /work/shared/device/README.md is the recipe this follows). Run from the repository root there, with
# .debs and .device carried:
#     sh tests/gpu/run_gpu_checks.sh            # writes $OUT/gpu-checks.log (or ./gpu-checks.log)
# It builds tide with CUDA (the gpu device type is C over the CUDA runtime, opened with dlopen; there are
# no CUDA kernels yet, so no -arch to pick), prints what the machine has (driver, GPU, where cuDNN is), runs the
# 'gpu' suite (tests/gpu/test_gpu.c: the device interface on /gpu:0) and the simulated-device suites as a
# control, and keeps meson's logs. Nothing in tide has run on a GPU before this script is run.
set -u
out=${OUT:-.}
log=$out/gpu-checks.log
{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -5
  echo "cuDNN: $(find / -name 'libcudnn.so*' 2>/dev/null | head -3 | tr '\n' ' ')"
  echo "== build"
  . .device/sysroot.sh .debs
  meson setup /tmp/b -Dcuda=enabled -Dgraphviz=disabled 2>&1 | tail -5
  ninja -C /tmp/b tests/gpu_test_gpu tests/engine_test_devices 2>&1 | tail -3
  echo "== the GPU suite"
  meson test -C /tmp/b --no-rebuild --print-errorlogs test_gpu test_devices 2>&1 | tail -20
  cp /tmp/b/meson-logs/testlog.txt "$out/gpu-testlog.txt" 2>/dev/null
} > "$log" 2>&1
cat "$log"
