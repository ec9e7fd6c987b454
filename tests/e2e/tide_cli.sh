#!/bin/sh
# tide_cli.sh — end-to-end: the `tide` program's modes and options, driven as a user would: -e
# statements, scripts with arguments, statements on a pipe, exit statuses and error messages.
set -u
tide=$1
export TIDE_LOG=
fail() { echo "FAIL: $*"; exit 1; }
expect_in() { printf '%s\n' "$2" | grep -qF -- "$1" || { printf 'missing "%s" in:\n%s\n' "$1" "$2"; exit 1; }; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

"$tide" --version | grep -q '^tide [0-9]' || fail "--version"
"$tide" --help | grep -q 'usage: tide' || fail "--help"
"$tide" --bogus >/dev/null 2>&1; [ $? -eq 2 ] || fail "--bogus should exit 2"
"$tide" --threads 0 -e '1' >/dev/null 2>&1; [ $? -eq 2 ] || fail "--threads 0 should exit 2"

# -e: an expression prints its value; an error exits 1 with the location and the engine's message
out=$("$tide" -e 'x = constant({{1, 2}, {3, 4}})' -e 'run(matmul(x, x))' 2>&1) || fail "-e run: $out"
expect_in "[[ 7, 10]," "$out"
out=$("$tide" -e 'matmul(constant({1, 2}), constant({{1}}))' 2>&1); [ $? -eq 1 ] || fail "bad matmul should exit 1"
expect_in "(command line):1:" "$out"
expect_in "MatMul" "$out"
out=$("$tide" -e 'y = matmull(1, 2)' 2>&1); [ $? -eq 1 ] || fail "unknown op should exit 1"
expect_in "did you mean matmul?" "$out"
out=$("$tide" -e 'constant(1):shap()' 2>&1); expect_in "did you mean shape?" "$out"
# an expression that calls a function written in Lua (the prelude) still names the user's line
out=$("$tide" -e 'zeros({2}, {bogus = 1})' 2>&1); [ $? -eq 1 ] || fail "an unknown option should exit 1"
expect_in "(command line):1: zeros: unknown option 'bogus'" "$out"
out=$("$tide" -e 'for i = 1, 2 do' 2>&1); [ $? -eq 1 ] || fail "unfinished -e should exit 1"
expect_in "unfinished" "$out"

# scripts: arg table, exit status, quit(n), errors name the file and line
cat >"$tmp/ok.lua" <<'LUA'
assert(arg[0]:find("ok.lua$") and arg[1] == "alpha" and arg[2] == "7")
local y = relu(constant({-1.0, 2.0}))
print("sum", run(sum(y)):item())
LUA
out=$("$tide" "$tmp/ok.lua" alpha 7 2>&1) || fail "script: $out"
expect_in "sum	2.0" "$out"
printf 'print("a")\nlocal z = constant(1) + "q"\nprint("never")\n' >"$tmp/bad.lua"
out=$("$tide" "$tmp/bad.lua" 2>&1); [ $? -eq 1 ] || fail "failing script should exit 1"
expect_in "bad.lua:2:" "$out"
printf 'quit(3)\nprint("never")\n' >"$tmp/quit.lua"
"$tide" "$tmp/quit.lua" >/dev/null 2>&1; [ $? -eq 3 ] || fail "quit(3) should exit 3"
out=$("$tide" "$tmp/missing.lua" 2>&1); [ $? -eq 1 ] || fail "missing script should exit 1"
expect_in "missing.lua" "$out"

# statements on a pipe: multi-line entries, errors do not stop the stream, exit 1 if any failed
out=$(printf 'for i = 1, 2 do\n  print(i * 10)\nend\nnot valid lua\nprint("still here")\n' | "$tide" 2>&1)
[ $? -eq 1 ] || fail "a failed entry on a pipe should exit 1"
expect_in "10" "$out"; expect_in "20" "$out"; expect_in "still here" "$out"
out=$(printf 'x = 1 +\n' | "$tide" 2>&1); expect_in "unfinished statement" "$out"

# the run log: --log writes the runs; a script whose log cannot open does not run (exit 1), unless
# --log-best-effort makes that a warning
out=$("$tide" --log "$tmp/runs.db" -e 'run(constant(1) + 1)' 2>&1) || fail "--log: $out"
[ -s "$tmp/runs.db" ] || fail "--log wrote no file"
if out=$("$tide" --log /nonexistent/dir/runs.db -e 'print("ran")' 2>&1); then fail "unopenable log ran: $out"; fi
expect_in "cannot open run log /nonexistent/dir/runs.db" "$out"; expect_in "nothing was run" "$out"
! printf '%s\n' "$out" | grep -qx ran || fail "unopenable log: the statement ran: $out"
out=$("$tide" --log /nonexistent/dir/runs.db --log-best-effort -e 'print("ran")' 2>&1) ||
  fail "unopenable log with --log-best-effort: $out"
expect_in "no run log" "$out"; expect_in "ran" "$out"
echo "e2e tide_cli: ok"
