#!/bin/sh
# op_docs.sh — docs/ops.md must be exactly what the registry generates (no drift).
set -u
gen=$1
doc=$2
tmp=$(mktemp)
"$gen" > "$tmp" || { echo "gen_op_docs failed"; rm -f "$tmp"; exit 1; }
if ! cmp -s "$tmp" "$doc"; then
  echo "docs/ops.md is out of date; regenerate it: build/tools/gen_op_docs > docs/ops.md"
  diff "$doc" "$tmp" | head -20
  rm -f "$tmp"
  exit 1
fi
rm -f "$tmp"
# README.md says every op of the reference has a CPU kernel (rather than a count that drifts as ops
# are added): keep that true, or change the README's words.
without=$(grep -c '^- kernels: ' "$doc")
with_cpu=$(grep -c '^- kernels: .*cpu' "$doc")
if [ "$without" != "$with_cpu" ]; then
  echo "docs/ops.md lists $((without - with_cpu)) op(s) without a CPU kernel ('- kernels:' lines without"
  echo "cpu), but README.md says every op of the reference has one: change the README's words"
  exit 1
fi
echo "op reference up to date"
