#!/bin/sh
# demo.sh — end-to-end: runs the real `tide` binary and checks what it prints.
set -u
tide=$1
out=$("$tide" --quiet 2>&1) || { echo "tide exited with $?: $out"; exit 1; }
expect() {
  printf '%s\n' "$out" | grep -qF -- "$1" || { echo "missing: $1"; printf '%s\n' "$out"; exit 1; }
}
expect "[[ 4.5000,  4.5000],"
expect " [10.5000, 10.5000]]"
expect "[[ 5.1000,  5.1000],"
expect " [12.0000, 12.0000]]"
"$tide" --version | grep -q '^tide [0-9]' || { echo "--version"; exit 1; }
"$tide" --threads 0 >/dev/null 2>&1 && { echo "--threads 0 accepted"; exit 1; }
"$tide" --bogus >/dev/null 2>&1 && { echo "--bogus accepted"; exit 1; }
echo "e2e demo: ok"
