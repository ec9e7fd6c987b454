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
echo "op reference up to date"
