#!/bin/sh
# SPDX-License-Identifier: MIT
# Pack a release build's gpuprofd and gpuprofctl, with the shared libraries
# they need beyond glibc, into .devbundle/ for a machine that has none of
# the Debian packages (the device machine of scripts/device/cuda_check.sh).
# Usage: scripts/device/bundle.sh [BUILD]   (default build-rel)
set -eu
B=${1:-build-rel}
cd "$(dirname "$0")/../.."
grep -qx '/.devbundle/' .git/info/exclude 2>/dev/null || echo '/.devbundle/' >>.git/info/exclude
rm -rf .devbundle
mkdir -p .devbundle/bin .devbundle/lib
cp "$B/daemon/gpuprofd" "$B/cli/gpuprofctl" .devbundle/bin/
# the CUPTI injection library, where the build found the CUPTI headers
if [ -f "$B/inject/libgpuprof-cupti.so" ]; then
    cp "$B/inject/libgpuprof-cupti.so" .devbundle/lib/
fi
for bin in "$B/daemon/gpuprofd" "$B/cli/gpuprofctl"; do
    ldd "$bin" | awk '$3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" .devbundle/lib/ ;;
    esac
done
du -sh .devbundle
