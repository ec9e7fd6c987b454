#!/bin/sh
# check_gpu_carry.sh — a dry run, HERE, of what the GPU machine's build will find: unpacks the carried
# Debian packages (DEBS, default .debs) into a scratch sysroot as .device/sysroot.sh does there, and checks
# that every dependency() and find_program() of the meson build (read from the meson.build files, so the
# list cannot drift) is in that sysroot or is one the machine has (/work/shared/device/README.md: CUDA,
# gcc, pkg-config, meson, ninja, python3; glibc and the C++ runtime) or one the GPU build leaves out
# (Graphviz: -Dgraphviz=disabled; Open MPI: not there, so not built). Then every library the carried
# libraries and programs load must be carried or be a system library the machine has. Exit 1 with the
# missing names, 0 when nothing is missing. Run from the repository root (prepare_gpu_run.sh runs it).
set -eu
debs=${1:-.debs}
ls "$debs"/*.deb >/dev/null 2>&1 || { echo "check_gpu_carry: no .deb files in $debs" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
for f in "$debs"/*.deb; do dpkg -x "$f" "$root"; done
lib=$root/usr/lib/x86_64-linux-gnu
missing=
# pkg-config sees the sysroot only (not this machine's own .pc files), as there.
pc() { PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$root/usr/share/pkgconfig \
       pkg-config "$@"; }
meson_files=$(git ls-files '*meson.build')
for dep in $(grep -ho "dependency('[^']*'" $meson_files | sed "s/dependency('//; s/'//" | sort -u); do
  case $dep in
    threads) status="the compiler's" ;;
    libgvc|libcgraph) status="left out there (-Dgraphviz=disabled)" ;;
    ompi-c) status="left out there (no Open MPI: -Dmpi=auto finds none)" ;;
    libmicrohttpd) # its .pc asks for gnutls's, not carried: meson.build falls back to the library itself
      if [ -e "$lib/libmicrohttpd.so" ]; then status="carried (libmicrohttpd.so, found by find_library)"
      else status=MISSING; fi ;;
    lapack) # optional: Debian names OpenBLAS's LAPACK through alternatives, which dpkg -x does not make
      if pc --exists lapack; then status=carried; else status="optional, not found: the build goes without LAPACK"; fi ;;
    *) if pc --exists "$dep"; then status="carried ($(pc --modversion "$dep"))"; else status=MISSING; fi ;;
  esac
  echo "dependency $dep: $status"
  [ "$status" = MISSING ] && missing="$missing $dep"
done
for prog in $(grep -ho "find_program('[^']*'" $meson_files | sed "s/find_program('//; s/'//" | sort -u); do
  case $prog in
    python3|/usr/bin/python3) status="on the machine" ;;
    nvcc) status="on the machine (CUDA in /usr/local/cuda)" ;;
    node) status="optional: the browser tests skip without it" ;;
    *.sh) status="in the checkout" ;;
    *) if [ -x "$root/usr/bin/$prog" ]; then status="carried (/opt/tide-sysroot/usr/bin/$prog)"; else status=MISSING; fi ;;
  esac
  echo "program $prog: $status"
  [ "$status" = MISSING ] && missing="$missing $prog"
done
# What the carried libraries and programs load: carried too, or the system's (glibc, gcc's runtimes, and
# the libraries an Ubuntu 24.04 with apt and python3 has: gnutls and what it loads, OpenSSL's libcrypto
# (libzip's encryption; python3's ssl module has it there), compression, ncurses).
system='^(libc|libm|libpthread|libdl|librt|libresolv|ld-linux-x86-64|libstdc\+\+|libgcc_s|libquadmath|libgomp|libatomic|libgnutls|libcrypto|libssl|libnettle|libhogweed|libgmp|libp11-kit|libidn2|libunistring|libtasn1|libffi|libbz2|liblzma|libzstd|libz|libtinfo|libncursesw?|libselinux|libpcre2-8|libcrypt)\.so'
needed=$(for f in $(find "$root" -type f \( -name '*.so*' -o -path '*/usr/bin/*' \)); do
           objdump -p "$f" 2>/dev/null | awk '/NEEDED/ {print $2}'; done | sort -u)
for so in $needed; do
  if find "$root" -name "$so" | grep -q .; then continue; fi
  if echo "$so" | grep -Eq "$system"; then echo "loads $so: the machine's"; continue; fi
  echo "loads $so: MISSING"
  missing="$missing $so"
done
if [ -n "$missing" ]; then
  echo "check_gpu_carry: missing on the GPU machine:$missing" >&2
  exit 1
fi
echo "check_gpu_carry: every dependency of the build is carried or on the GPU machine"
