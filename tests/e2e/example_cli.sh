#!/bin/sh
# example_cli.sh — end-to-end: a Fashion-MNIST example's command line. Bad options and a missing data
# set are clear errors with a non-zero status; --help documents every option and exits 0.
set -u
program=$1
fails() { # expected status, expected text, arguments...
  want=$1 text=$2
  shift 2
  out=$("$program" "$@" 2>&1)
  status=$?
  [ "$status" -eq "$want" ] || { echo "'$*': status $status, expected $want: $out"; exit 1; }
  printf '%s\n' "$out" | grep -qF -- "$text" || { echo "'$*': no '$text' in: $out"; exit 1; }
}
fails 2 "unknown or incomplete option '--bogus'" --bogus
fails 2 "--epochs needs a non-negative integer, got 'x'" --epochs x
fails 2 "--lr needs a positive number, got '-1'" --lr -1
fails 2 "--optimizer takes sgd, momentum, adagrad, rmsprop or adam, not 'foo'" --optimizer foo
fails 2 "unknown or incomplete option '--steps'" --steps
TIDE_FASHION_MNIST=/nonexistent-dir fails 1 "install the Debian package dataset-fashion-mnist" --steps 1
out=$("$program" --help) || { echo "--help failed"; exit 1; }
for option in --epochs --steps --batch --optimizer --lr --seed --eval --bench --profile --quiet; do
  printf '%s\n' "$out" | grep -qF -- "$option" || { echo "--help lacks $option"; exit 1; }
done
echo "example command line: ok"
