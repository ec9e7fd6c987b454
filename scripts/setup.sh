#!/bin/sh
# setup.sh — one-step set-up for a Debian 12 machine (run as root, from the repository root):
#   scripts/setup.sh run    install what is missing, build, run the `tide` program
#   scripts/setup.sh test   install what is missing, build (plain, ASan+UBSan, TSan), run every test
# Idempotent: packages already there are not reinstalled, builds are incremental.
set -eu
mode=${1:-run}
cd "$(dirname "$0")/.."

packages="gcc g++ libc6-dev pkg-config meson ninja-build python3 \
  libedit-dev libsqlite3-dev libgraphviz-dev libopenblas-dev libmicrohttpd-dev libcunit1-dev liblua5.4-dev \
  zlib1g-dev libzip-dev dataset-fashion-mnist protobuf-c-compiler libprotobuf-c-dev protobuf-compiler libprotobuf-dev \
  python3-numpy"

# Installs the Debian packages of $1 that are not installed yet ($2: why, for the message).
install_missing() {
  missing=""
  for p in $1; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    echo "setup: installing$missing$2"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
}
install_missing "$packages" ""

# Runs one step of the build with its output kept aside; if it fails, shows the end of that output and
# stops (a failed build must say why: CI keeps only what this script prints).
step_log=$(mktemp "${TMPDIR:-/tmp}/tide-setup.XXXXXX")
trap 'rm -f "$step_log"' EXIT
quietly() {
  if ! "$@" >"$step_log" 2>&1; then
    tail -n 100 "$step_log" >&2
    echo "setup: failed: $*" >&2
    exit 1
  fi
}

# The tests also drive the pages in a headless browser: Debian's Chromium, and playwright-core from
# npm (pinned in tests/browser/package-lock.json). Node.js and npm come from Debian unless present.
# python3-protobuf reads the GraphDefs tide exports (tests/graphdef).
if [ "$mode" = test ]; then
  test_packages="chromium python3-protobuf"
  command -v npm >/dev/null 2>&1 || test_packages="$test_packages nodejs npm"
  install_missing "$test_packages" " (for the browser and GraphDef tests)"
  [ -d tests/browser/node_modules/playwright-core ] ||
    quietly npm ci --prefix tests/browser --no-audit --no-fund --loglevel=error
fi

jobs=$(nproc 2>/dev/null || echo 2)
[ -f build/build.ninja ] || quietly meson setup build
quietly ninja -C build -j "$jobs"

case "$mode" in
run)
  shift || true
  rm -f "$step_log"
  exec build/repl/tide "$@"
  ;;
test)
  [ -f build-asan/build.ninja ] || quietly meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
  quietly ninja -C build-asan -j "$jobs"
  status=0
  echo "== tests (build/)"
  meson test -C build --print-errorlogs --no-rebuild || status=1
  echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
  ASAN_OPTIONS=detect_leaks=1 meson test -C build-asan --print-errorlogs --no-rebuild --timeout-multiplier 3 || status=1
  # The multi-threaded suites once more under ThreadSanitizer.
  [ -f build-tsan/build.ninja ] || quietly meson setup build-tsan -Db_sanitize=thread -Db_lundef=false
  quietly ninja -C build-tsan -j "$jobs" tests/engine_test_concurrency tests/engine_test_async tests/engine_test_queue tests/engine_test_readers tests/engine_test_session tests/engine_test_checkpoint \
    tests/engine_test_debugger tests/engine_test_devices tests/engine_test_fusion tests/engine_test_memory tests/store_test_store tests/repl_test_debugger_web \
    tests/engine_test_capture tests/engine_test_stream_memory
  echo "== threaded tests under ThreadSanitizer (build-tsan/)"
  TSAN_OPTIONS=halt_on_error=1 meson test -C build-tsan --print-errorlogs --no-rebuild --timeout-multiplier 5 \
    test_concurrency test_async test_queue test_readers test_session test_checkpoint test_debugger test_devices test_fusion \
    test_memory test_store debugger_web test_capture test_stream_memory || status=1
  # One closing line over the three builds, counted from meson's own logs. A suite that passed with
  # some of its tests skipped (the harness prints "skipped N of M tests: ...") counts those too.
  python3 - build/meson-logs/testlog.json build-asan/meson-logs/testlog.json build-tsan/meson-logs/testlog.json <<'PY'
import json, re, sys
passed = failed = skipped = inner = 0
names = []
for path in sys.argv[1:]:
    for line in open(path):
        test = json.loads(line)
        r = test.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
            m = re.search(r"^skipped (\d+) of \d+ tests: (.*)$", test.get("stdout") or "", re.M)
            if m:
                inner += int(m.group(1))
                names.append("%s: %s" % (test["name"], m.group(2)))
        elif r == "SKIP":
            skipped += 1
            names.append(test["name"])
        else:
            failed += 1
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped) +
      (" (and %d tests skipped inside passing suites)" % inner if inner else "") +
      ("; skipped: " + "; ".join(names) if names else ""))
PY
  exit $status
  ;;
*)
  echo "usage: scripts/setup.sh run|test" >&2
  exit 2
  ;;
esac
