#!/bin/sh
# install.sh — `meson install` gives a C user what they need: it installs the build into a temporary
# prefix (--destdir), then builds tests/e2e/installed_program.c through pkg-config only (no path into
# the source or build tree), runs it against the installed shared library, and checks the installed
# headers, the `tide` program and its man page.
# Usage: install.sh BUILD_DIR PROGRAM.c CC
set -u
build=$1 program=$2 cc=$3
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest/install.log" 2>&1 ||
  { cat "$dest/install.log"; fail "meson install failed"; }
pc=$(find "$dest" -name tide.pc | head -n 1)
[ -n "$pc" ] || fail "no tide.pc installed"
# pkg-config reads the installed tide.pc; the sysroot maps its /usr/local/... paths into $dest.
export PKG_CONFIG_LIBDIR="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$dest"
flags=$(pkg-config --cflags --libs tide) || fail "pkg-config --cflags --libs tide failed"
echo "pkg-config --cflags --libs tide: $flags"
$cc -std=c11 -o "$dest/program" "$program" $flags || fail "building against the installed tide failed"
libdir=$(pkg-config --libs-only-L tide | sed 's/^ *-L//; s/ *$//')
LD_LIBRARY_PATH="$libdir" "$dest/program" || fail "the program failed"
for header in tide.h tide_core.h tide_train.h tide_data.h tide_registry.h tide_op.h; do
  [ -f "$(find "$dest" -path "*/include/tide/$header" | head -n 1)" ] || fail "header $header not installed"
done
man=$(find "$dest" -name tide.1 | head -n 1)
[ -n "$man" ] || fail "no man page tide.1"
grep -q '^\.TH TIDE 1' "$man" && grep -q 'devices N' "$man" || fail "tide.1 is not the program's help"
[ -x "$(find "$dest" -path '*/bin/tide' | head -n 1)" ] || fail "the tide program is not installed"
echo "install: ok"
