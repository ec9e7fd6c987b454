#!/bin/sh
# prepare_gpu_run.sh — run HERE (a Debian 12 machine with the package registry), from the repository root,
# before the one `run` call on the GPU machine: puts into ignored folders of the checkout what that
# machine lacks (/work/shared/device/README.md): .device (the shared sysroot scripts), .debs (tide's
# Debian build dependencies: the shared list plus libzip and protobuf, which the project has needed
# since), .fashion-mnist (the data set, for the MLP trained on the GPU against the CPU) and
# .cudnn-include (cuDNN's headers, in case the machine's cuDNN, PyTorch's wheel, comes without them);
# then checks, as a dry run here, that every dependency of the meson build is carried or on that machine
# (tests/gpu/check_gpu_carry.sh). Works in the main checkout and in a git worktree.
# Then, with the `device` tool:
#   run(command="sh tests/gpu/run_gpu_checks.sh", carry=[".debs", ".device", ".fashion-mnist", ".cudnn-include"])
set -eu
shared=${TIDE_SHARED:-../shared}
[ -d "$shared/device" ] || shared=/work/shared
mkdir -p .device .fashion-mnist .cudnn-include
cp "$shared"/device/*.sh .device/
exclude=$(git rev-parse --git-common-dir)/info/exclude
mkdir -p "$(dirname "$exclude")" "$(git rev-parse --git-dir)/info" # the shared fetch-debs.sh writes there
for d in .device .debs .fashion-mnist .cudnn-include; do
  grep -qxF "/$d/" "$exclude" 2>/dev/null || echo "/$d/" >> "$exclude"
done
.device/fetch-debs.sh .debs
(cd .debs && apt-get download libzip-dev libzip4 libprotobuf-c-dev libprotobuf-c1 protobuf-c-compiler \
  libprotobuf-dev libprotobuf32 libprotoc32 protobuf-compiler >/dev/null 2>&1) || { echo "apt-get download failed" >&2; exit 1; }
cp /usr/share/datasets/fashion-mnist/*.gz .fashion-mnist/ 2>/dev/null || echo "no Fashion-MNIST here: the MLP check will skip"
cp /usr/local/cuda/include/cudnn*.h .cudnn-include/ 2>/dev/null || echo "no cuDNN headers here"
du -shc .debs .device .fashion-mnist .cudnn-include | tail -1
# The dry run: what the GPU machine's meson build needs is carried or there (exit 1 names what is not).
check=0
report=$(sh tests/gpu/check_gpu_carry.sh .debs 2>&1) || check=1
printf '%s\n' "$report" | grep -v ': carried\|in the checkout' || true
exit $check
