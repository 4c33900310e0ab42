#!/bin/sh
# SPDX-License-Identifier: MIT
# Pack a release build's gpuprofd and gpuprofctl, with the shared libraries
# they need beyond glibc, into .devbundle/ for a machine that has none of
# the Debian packages (the device machine, one NVIDIA GPU), where the
# scripts of this directory run from the repository root as root:
#   gpu_checks.sh    every NVIDIA target (CUPTI records, Kineto parity,
#                    Python frames above cuBLAS launches, costs) in one run
#                    of about five minutes, ending in a SUMMARY; its
#                    judgements are gpu_compare.py's
#   cuda_check.sh    the launch probes: exact counts and names
#   cupti_check.sh   the CUPTI library alone, against a receiver
#                    (cupti_recv.py), and torch.profiler beside it
#   stacks_check.sh, cfi_check.sh, cpu_cost.sh   native stacks, CPU cost
# with the programs cupti_real.cu, launch_real.cu, torch_parity.py,
# torch_rate.py, torch_loop.py, torch_cpu.py, torch_trace.py.
# Usage: scripts/device/bundle.sh [BUILD]   (default build-rel)
set -eu
B=${1:-build-rel}
cd "$(dirname "$0")/../.."
# ignored (so a device run must carry it); a worktree's .git is a file
EX=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$EX")"
grep -qx '/.devbundle/' "$EX" 2>/dev/null || echo '/.devbundle/' >>"$EX"
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
