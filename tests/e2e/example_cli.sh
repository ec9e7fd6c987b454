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
for option in --log; do
  printf '%s\n' "$out" | grep -qF -- "$option" || { echo "--help lacks $option"; exit 1; }
done
fails 1 "cannot open run log /nonexistent-dir/runs.db" --steps 1 --log /nonexistent-dir/runs.db
# --log: every run logged, the loss watched every step, step 100 traced (the default policy; the
# session's step 0 initialised the variables before the log was attached).
dir=${TIDE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
if [ -f "$dir/train-images-idx3-ubyte.gz" ]; then
  db=$(mktemp -d)/runs.db
  "$program" --steps 120 --eval 100 --quiet --log "$db" >/dev/null || { echo "--log run failed"; exit 1; }
  python3 - "$db" <<'PY' || exit 1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs, traced = db.execute("SELECT count(*), sum(traced) FROM runs").fetchone()
losses = db.execute("SELECT count(*) FROM tensors WHERE kind = 'watched' AND node LIKE 'loss/%'").fetchone()[0]
timings = db.execute("SELECT count(*) FROM node_timings").fetchone()[0]
sessions = db.execute("SELECT label FROM sessions").fetchall()
if runs != 121 or traced != 1 or losses != 120 or timings < 50 or sessions != [("mlp",)]:
    sys.exit("run log: runs %d traced %d losses %d timings %d sessions %r" % (runs, traced, losses, timings, sessions))
print("run log: %d runs, %d traced, %d loss values, %d node timings" % (runs, traced, losses, timings))
PY
  rm -rf "$(dirname "$db")"
fi
echo "example command line: ok"
