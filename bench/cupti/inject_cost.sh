#!/bin/sh
# SPDX-License-Identifier: MIT
# What libgpuprof-cupti.so costs the launching thread, without a GPU:
# tests/cupti/cuda_app makes N launches on one thread through the fake
# driver and the stand-in libcupti, with the library off
# (GPUPROF_CUPTI=0), at its default features, with the launch-API
# callbacks only and with kernel activity only; no daemon listens, so the
# sender drops every batch (as when the daemon is down). Prints the median
# over ROUNDS of the thread's CPU ns per launch. The stand-in's own work
# (its callbacks, building records) is included: an upper bound on the
# library's share; bench/gpu/real_cuda.sh measures the real driver. No
# gpuprofd may run meanwhile: its launch probes would attach to the fake
# driver and add their own microseconds to every launch.
# Usage: bench/cupti/inject_cost.sh BUILD [N] [ROUNDS]
set -eu
B=${1:?usage: inject_cost.sh BUILD [N] [ROUNDS]}
N=${2:-200000}
ROUNDS=${3:-5}
APP=$B/tests/cupti/cuda_app
[ -x "$APP" ] || { echo "no $APP (a build without the CUPTI headers?)"; exit 1; }
if pgrep -x gpuprofd >/dev/null; then echo "a gpuprofd is running: its probes would be measured too"; exit 1; fi
W=$(mktemp -d /tmp/gpinject.XXXXXX)
trap 'rm -rf "$W"' EXIT
run() { # FEATURES-or-off
    if [ "$1" = off ]; then set -- GPUPROF_CUPTI=0; else set -- GPUPROF_CUPTI_FEATURES="$1"; fi
    env "$@" CUDA_INJECTION64_PATH="$B/inject/libgpuprof-cupti.so" \
        GPUPROF_CUPTI_LIB="$B/tests/cupti/libcupti.so.13" GPUPROF_CUPTI_SOCKET="$W/none.sock" \
        FAKE_CUPTI_BUFFER_MS=20 "$APP" --cuda "$B/tests/gpu/cuda/libcuda.so.1" \
        --launches "$N" --kernel k:1000 | awk '/^cpu_ns_per_iteration/ { print $2 }'
}
echo "cuda_app, $N launches on one thread, median of $ROUNDS rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
for mode in off default api kernel; do
    for r in $(seq "$ROUNDS"); do run "$mode"; done | sort -n |
        awk -v m="$mode" '{ v[NR] = $1 } END { printf "%-8s %8.0f ns per launch (min %.0f, max %.0f)\n", m, v[int((NR + 1) / 2)], v[1], v[NR] }'
done
