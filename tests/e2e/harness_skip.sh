#!/bin/sh
# harness_skip.sh — the CUnit harness reports skips truthfully (tests/harness_selftest.c): a suite
# whose every test skipped exits 77 (meson's SKIP), one where some skipped exits 0 and lists them, a
# failure wins over a skip, and a test name that does not exist is an error.
# Usage: harness_skip.sh SELFTEST
set -u
selftest=$1
expect() { # status, text, TIDE_TEST_ONLY
  out=$(TIDE_TEST_ONLY=$3 "$selftest" 2>&1)
  status=$?
  [ "$status" -eq "$1" ] || { echo "TIDE_TEST_ONLY=$3: exit $status, expected $1: $out"; exit 1; }
  printf '%s\n' "$out" | grep -qF -- "$2" || { echo "TIDE_TEST_ONLY=$3: no '$2' in: $out"; exit 1; }
}
expect 77 "skipped 1 of 1 tests: test_skips (the selftest's pretend data set is absent)" test_skips
expect 0 "skipped 1 of 2 tests: test_skips" test_passes,test_skips
expect 1 "skipped 1 of 2 tests: test_skips" test_skips,test_fails
expect 0 "tests      1      1      1      0" test_passes
expect 1 "names 'nope', which is not a test of this suite" test_passes,nope
out=$(TIDE_TEST_EXCEPT=test_fails "$selftest" 2>&1); status=$?
[ "$status" -eq 0 ] || { echo "TIDE_TEST_EXCEPT=test_fails: exit $status: $out"; exit 1; }
echo "harness skips: ok"
