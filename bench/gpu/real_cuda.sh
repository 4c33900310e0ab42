#!/bin/bash
# SPDX-License-Identifier: MIT
# Launch overhead of the GPU launch probes on a real NVIDIA driver: times N
# launches of an empty kernel (scripts/device/launch_real.cu --bench)
# through cudaLaunchKernel and cuLaunchKernel without the daemon and with
# it, alternating ROUNDS times. Wall and thread-CPU ns per launch; the
# thread CPU is where the uprobe trap and the BPF program are paid. When
# the bundle has the CUPTI injection library (libgpuprof-cupti.so, sending
# to the daemon's cupti.socket), four more runs per round with the daemon:
# "cupti-off" (loaded, GPUPROF_CUPTI=0), "cupti" (its defaults: default
# features and duty cycle), "cupti-full" (default features, collecting all
# the time: GPUPROF_CUPTI_DUTY=100) and "cupti-kernel" (kernel activity
# only, all the time): the added cost of activity collection beyond the
# probes is each of them minus "with".
# scripts/device/gpu_checks.sh runs this and judges the medians
# (scripts/device/gpu_compare.py cost reads the per-run lines).
# Run from the repository root after scripts/device/bundle.sh, as root.
# Usage: bench/gpu/real_cuda.sh [N] [ROUNDS] [CONFIG]   (BUN= another bundle)
set -u
N=${1:-200000}
ROUNDS=${2:-3}
CONF=${3:-}
W=$(mktemp -d /tmp/gpbench.XXXXXX)
BUN=${BUN:-$PWD/.devbundle}
DPID=
trap '[ -n "$DPID" ] && kill $DPID 2>/dev/null' EXIT
nvcc -O2 -o "$W/launch_real" scripts/device/launch_real.cu -lcuda || exit 1
start_daemon() {
    printf '%s\ncupti.socket = %s\n' "$CONF" "$W/cupti.sock" >"$W/conf"
    LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofd" -f -s "$W/sock" -d "$W/state" -c "$W/conf" \
        2>>"$W/daemon.log" &
    DPID=$!
    for _ in $(seq 100); do [ -S "$W/sock" ] && return; sleep 0.1; done
    echo "daemon did not start"; cat "$W/daemon.log"; exit 1
}
stop_daemon() { kill $DPID; wait $DPID 2>/dev/null; DPID=; rm -f "$W/sock"; }
for r in $(seq "$ROUNDS"); do
    "$W/launch_real" "$N" --bench | sed "s/^/without $r /"
    start_daemon
    "$W/launch_real" "$N" --bench | sed "s/^/with    $r /"
    if [ -f "$BUN/lib/libgpuprof-cupti.so" ]; then
        for m in cupti-off cupti cupti-full cupti-kernel; do
            case $m in
            cupti-off) set -- GPUPROF_CUPTI=0 ;;
            cupti) set -- GPUPROF_CUPTI_FEATURES=default ;;
            cupti-full) set -- GPUPROF_CUPTI_FEATURES=default GPUPROF_CUPTI_DUTY=100 ;;
            cupti-kernel) set -- GPUPROF_CUPTI_FEATURES=kernel GPUPROF_CUPTI_DUTY=100 ;;
            esac
            env "$@" CUDA_INJECTION64_PATH="$BUN/lib/libgpuprof-cupti.so" \
                GPUPROF_CUPTI_SOCKET="$W/cupti.sock" "$W/launch_real" "$N" --bench |
                sed "s/^/$m $r /"
        done
    fi
    LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofctl" --socket "$W/sock" --json status |
        python3 -c 'import json,sys; g=[c for c in json.load(sys.stdin)["collectors"] if c["name"]=="gpu"][0]; print("  gpu collector: events", g["events"], "drops", g["drops"], "lost", g.get("lost"), "stacks_taken", g.get("stacks_taken"), "unnamed", g.get("unnamed_launches"))'
    stop_daemon
done | tee "$W/out"
# medians per (mode, api)
python3 - "$W/out" "$N" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 7 and f[3] == "ns_per_launch":
        rows.setdefault((f[0], f[2]), []).append((float(f[4]), float(f[6])))
print("N =", sys.argv[2], "launches per API per run; medians over rounds")
def med(rs):
    return statistics.median(x[0] for x in rs), statistics.median(x[1] for x in rs)
for api in ("rt", "drv"):
    a, b = rows.get(("without", api)), rows.get(("with", api))
    if not a or not b:
        continue
    (wa, ca), (wb, cb) = med(a), med(b)
    print("%-4s without %6.0f ns wall %6.0f ns cpu | with %6.0f ns wall %6.0f ns cpu | added %6.0f ns wall %6.0f ns cpu"
          % (api, wa, ca, wb, cb, wb - wa, cb - ca))
    for mode in ("cupti-off", "cupti", "cupti-full", "cupti-kernel"):
        c = rows.get((mode, api))
        if c:
            wc, cc = med(c)
            print("%-4s %-12s %6.0f ns wall %6.0f ns cpu | added beyond the probes %6.0f ns wall %6.0f ns cpu (target <= 1000)"
                  % (api, mode, wc, cc, wc - wb, cc - cb))
PY
