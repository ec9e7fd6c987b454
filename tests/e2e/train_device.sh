#!/bin/sh
# train_device.sh — end-to-end: one Fashion-MNIST example trained on a device (--device SPEC, e.g. the
# simulated accelerator /sim:0, whose memory the host cannot read) computes exactly what it computes on
# the CPU: the same loss curve and the same test accuracy, digit for digit (the device runs the same
# kernels; every feed, fetch and variable goes through the device's copies). Also checks that the
# model really lived there (the device's peak memory is reported and above zero) and that soft
# placement moved nothing off it. Skips (77) without the data set.
#   train_device.sh PROGRAM STEPS DEVICE
set -u
program=$1 steps=$2 device=$3
dir=${TIDE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
[ -f "$dir/train-images-idx3-ubyte.gz" ] || { echo "skip: no Fashion-MNIST in $dir"; exit 77; }
host=$("$program" --steps "$steps" --eval 1000 --quiet 2>&1) || { echo "$program failed: $host"; exit 1; }
dev=$("$program" --steps "$steps" --eval 1000 --quiet --device "$device" 2>&1) || {
    echo "$program --device $device failed: $dev"; exit 1; }
printf 'on the host:\n%s\non %s:\n%s\n' "$host" "$device" "$dev"
python3 - "$host" "$dev" "$device" <<'PY'
import re, sys
host, dev, device = sys.argv[1:4]
def figures(text):
    loss = re.search(r"loss ([0-9.]+) -> ([0-9.]+)", text)
    acc = re.search(r"test accuracy ([0-9.]+)\s*$", text)
    if not loss or not acc:
        sys.exit("no loss or accuracy line in:\n" + text)
    return loss.group(1), loss.group(2), acc.group(1)
if figures(host) != figures(dev):
    sys.exit("the device computed something else: %s on the host, %s on %s" % (figures(host), figures(dev), device))
m = re.search(r"device (\S+): peak ([0-9.]+) MiB held by tensors.*; ([0-9]+) placement warnings", dev)
if not m or m.group(1) != device:
    sys.exit("no report of %s's memory" % device)
if not float(m.group(2)) > 0:
    sys.exit("%s held nothing: the model did not run there" % device)
if int(m.group(3)) != 0:
    sys.exit("soft placement moved %s nodes off %s" % (m.group(3), device))
print("same on %s: loss %s -> %s, accuracy %s; peak %s MiB there" % ((device,) + figures(dev) + (m.group(2),)))
PY
