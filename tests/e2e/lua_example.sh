#!/bin/sh
# lua_example.sh — end-to-end: `tide examples/softmax_fashion_mnist.lua [EPOCHS]` (or another example) trains on the real
# Fashion-MNIST data and its last line, "test accuracy A", must show A >= MIN.
# Usage: lua_example.sh TIDE SCRIPT EPOCHS MIN [STEPS] (STEPS: the script's second argument, steps per epoch)
set -u
tide=$1 script=$2 epochs=$3 min=$4 steps=${5:-}
out=$(TIDE_LOG= "$tide" "$script" "$epochs" $steps 2>&1) || { echo "exit $?: $out"; exit 1; }
printf '%s\n' "$out"
last=$(printf '%s\n' "$out" | tail -n 1)
acc=$(printf '%s\n' "$last" | sed -n 's/^test accuracy \([0-9.]*\)$/\1/p')
[ -n "$acc" ] || { echo "FAIL: the last line is not 'test accuracy A': $last"; exit 1; }
awk -v a="$acc" -v m="$min" 'BEGIN { exit !(a >= m) }' || { echo "FAIL: accuracy $acc < $min"; exit 1; }
echo "e2e lua example: accuracy $acc >= $min"
