#!/bin/sh
# train_smoke.sh — end-to-end: a short training run of one Fashion-MNIST example. Checks that the loss
# falls and that test accuracy is well above chance (0.10). Skips (77) without the data set.
#   train_smoke.sh PROGRAM STEPS MIN_ACCURACY
set -u
program=$1 steps=$2 min_accuracy=$3
dir=${TIDE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
[ -f "$dir/train-images-idx3-ubyte.gz" ] || { echo "skip: no Fashion-MNIST in $dir"; exit 77; }
out=$("$program" --steps "$steps" --eval 2000 --quiet 2>&1) || { echo "$program failed: $out"; exit 1; }
printf '%s\n' "$out"
printf '%s\n' "$out" | python3 -c '
import re, sys
text = sys.stdin.read()
losses = re.search(r"loss ([0-9.naninf]+) -> ([0-9.naninf]+)", text)
accuracy = re.search(r"test accuracy ([0-9.]+)\s*$", text)
if not losses or not accuracy:
    sys.exit("no loss or accuracy line")
first, last, acc = float(losses.group(1)), float(losses.group(2)), float(accuracy.group(1))
if not last < first:
    sys.exit("loss did not fall: %g -> %g" % (first, last))
if not acc >= float(sys.argv[1]):
    sys.exit("accuracy %.4f below %s" % (acc, sys.argv[1]))
print("smoke ok: loss %.4f -> %.4f, accuracy %.4f" % (first, last, acc))
' "$min_accuracy"
