#!/bin/sh
# data_layering.sh — the file readers stay a library of their own on the engine's public API:
# the engine core library (libtide.a) references no zlib (and no libzip) symbol, and engine/data's sources include
# no header of the engine but the public ones (tide.h and the headers it includes from engine/, and
# tide_op.h, the public API of ops and kernels, for its ReadRecords op);
# their own headers beside them are fine.
# Usage: data_layering.sh LIBTIDE.a SOURCE_ROOT
set -u
lib=$1
root=$2
status=0
zlib_refs=$(nm -u "$lib" | grep -E ' U (gz|inflate|deflate|crc32|adler32|compress|uncompress|zlib)' | sort -u)
if [ -n "$zlib_refs" ]; then
    echo "FAIL: the engine core library $lib references zlib (the readers belong in engine/data):"
    echo "$zlib_refs"
    status=1
fi
zip_refs=$(nm -u "$lib" | grep -E ' U zip_' | sort -u)
if [ -n "$zip_refs" ]; then
    echo "FAIL: the engine core library $lib references libzip (checkpoints belong in engine/checkpoint):"
    echo "$zip_refs"
    status=1
fi
includes() { sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"; }
public=" tide.h tide_op.h $(for h in $(includes "$root/engine/tide.h"); do [ -f "$root/engine/$h" ] && printf '%s ' "$h"; done)"
for f in "$root"/engine/data/*.c "$root"/engine/data/*.h; do
    for inc in $(includes "$f"); do
        case "$public" in *" $inc "*) continue ;; esac
        if [ "${inc#*/}" != "$inc" ] || [ ! -f "$root/engine/data/$inc" ]; then
            echo "FAIL: $f includes \"$inc\": engine/data takes only the public headers ($public) from the engine"
            status=1
        fi
    done
done
[ $status -eq 0 ] && echo "ok: libtide.a has no zlib or libzip reference; engine/data includes only public headers ($public) and its own"
exit $status
