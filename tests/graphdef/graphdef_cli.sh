#!/bin/sh
# graphdef_cli.sh — end-to-end: TensorFlow GraphDefs from the command line and the prompt, driven as
# a user would: `tide run-graph` (feeds from .npy files, fetches printed, targets, its errors and exit
# statuses), :import and :export, and a round trip through :export/:import that gives back the same
# graph text (:save).   graphdef_cli.sh TIDE DATA_DIR
set -u
tide=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=$(cd "$2" && pwd)
export TIDE_LOG=
fail() { echo "FAIL: $*"; exit 1; }
expect_in() { printf '%s\n' "$2" | grep -qF -- "$1" || { printf 'missing "%s" in:\n%s\n' "$1" "$2"; exit 1; }; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# run-graph: help, a TensorFlow-written MLP with its initializer, feeds and several fetches
out=$("$tide" run-graph --help) || fail "run-graph --help"
expect_in "usage: tide run-graph FILE.pb" "$out"
"$tide" --help | grep -q 'tide run-graph' || fail "tide --help lacks run-graph"
"$tide" -q -e 'save_npy("x.npy", {{1, 2, 3}, {0, 0, 0}})' || fail "save_npy"
out=$("$tide" run-graph "$data/mlp.pbtxt" --target init --feed x=x.npy --fetch y --fetch MatMul:0 2>&1) ||
  fail "run-graph: $out"
expect_in "y = [[0.9994, 0.0006]," "$out"
expect_in " [0.6225, 0.3775]]" "$out"
expect_in "MatMul:0 = [[ 7.0000, -4.0000]," "$out"

# run-graph errors: exit 1 with the message for what went wrong, 2 for bad options
out=$("$tide" run-graph "$data/mlp.pbtxt" --target init --feed x=x.npy --fetch nothere 2>&1); [ $? -eq 1 ] ||
  fail "unknown fetch should exit 1"
expect_in "tide run-graph: " "$out"
expect_in "nothere" "$out"
out=$("$tide" run-graph "$data/mlp.pbtxt" --fetch y 2>&1); [ $? -eq 1 ] || fail "an unfed placeholder should exit 1"
expect_in "x" "$out"
out=$("$tide" run-graph "$data/mlp.pbtxt" --feed x=missing.npy --fetch y 2>&1); [ $? -eq 1 ] || fail "missing npy"
expect_in "missing.npy" "$out"
printf 'node { name: "a" op: "Frobnicate" }\n' >bad.pbtxt
out=$("$tide" run-graph bad.pbtxt --fetch a 2>&1); [ $? -eq 1 ] || fail "an unknown op should exit 1"
expect_in "bad.pbtxt: 1 op that tide does not have: Frobnicate (node 'a')" "$out"
# A device this machine lacks: an error naming it, unless --clear-devices drops the requests.
printf 'node { name: "c" op: "Const" device: "/device:GPU:0" attr { key: "dtype" value { type: DT_FLOAT } }\n  attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2 } } } }\n' >gpu.pbtxt
out=$("$tide" run-graph gpu.pbtxt --fetch c 2>&1); [ $? -eq 1 ] || fail "a GPU request should fail here"
expect_in "node 'c' (Const) requests device '/device:GPU:0', which matches none of this engine's devices" "$out"
out=$("$tide" run-graph gpu.pbtxt --fetch c --clear-devices 2>&1) || fail "--clear-devices: $out"
expect_in "c = 2.0000" "$out"
out=$("$tide" run-graph "$data/mlp.pbtxt" 2>&1); [ $? -eq 2 ] || fail "no --fetch should exit 2"
expect_in "give --fetch NAME" "$out"
out=$("$tide" run-graph "$data/mlp.pbtxt" --feed x --fetch y 2>&1); [ $? -eq 2 ] || fail "--feed x should exit 2"
expect_in "--feed wants NAME=FILE.npy" "$out"

# :export and :import: the graph comes back the same (its text, by :save), under a scope too
out=$("$tide" -q -e 'x = placeholder(float32, {nil, 3})' -e 'W = variable(ones{3, 2})' \
  -e 'y = softmax(matmul(x, W) * 2)' -e 'loss = mean(y)' -e 'train = sgd(0.1):minimize(loss)' \
  -e ':save before.txt' -e ':export g.pb' -e ':export g.txt text' -e ':reset' -e ':import g.pb' \
  -e ':save after.txt' -e ':reset' -e ':import g.txt' -e ':save after_text.txt' -e ':import g.pb copy' 2>&1) ||
  fail "export/import: $out"
expect_in "wrote " "$out"
expect_in "nodes to g.pb (a TensorFlow GraphDef, binary)" "$out"
expect_in "nodes to g.txt (a TensorFlow GraphDef, text)" "$out"
expect_in "in Lua: node(\"copy/x\")" "$out"
cmp -s before.txt after.txt || { diff before.txt after.txt; fail "the graph changed through the binary GraphDef"; }
cmp -s before.txt after_text.txt || fail "the graph changed through the text GraphDef"
grep -q 'op: "VariableV2"' g.txt || fail "g.txt lacks VariableV2"
out=$("$tide" -q -e ':import g.pb' -e ':import g.pb' 2>&1); [ $? -eq 1 ] || fail "importing twice should fail"
expect_in "cannot import: g.pb: node 'x' (Placeholder): node name 'x' is already used" "$out"
expect_in "(nothing was added)" "$out"
out=$("$tide" -q -e ':export g2.pb yaml' 2>&1); [ $? -eq 1 ] || fail ":export with a bad format should fail"
expect_in "usage: :export FILE [text|binary]" "$out"
out=$("$tide" -q -e ':import' 2>&1); [ $? -eq 1 ] || fail ":import without a file should fail"
expect_in "usage: :import FILE [SCOPE]" "$out"
# :info shows imported attrs of every kind, the lists of strings, bools, shapes and tensors too.
out=$("$tide" -q -e ":import $data/attrs.pbtxt" -e ':info marked' 2>&1) || fail ":info: $out"
expect_in '_names = ["a", "été"]' "$out"
expect_in '_bits = [true, false, true]' "$out"
expect_in '_shapes = [[2], <unknown>, []]' "$out"
expect_in '_tensors = [tensor string [] = "x", tensor int64 [3] = [7, 7, 7]]' "$out"
echo "graphdef_cli: all checks passed"
