#!/bin/bash
# SPDX-License-Identifier: MIT
# Launch overhead of the GPU launch probes on a real NVIDIA driver: times N
# launches of an empty kernel (scripts/device/launch_real.cu --bench)
# through cudaLaunchKernel and cuLaunchKernel without the daemon
# ("without") and with it ("with"), and, when the bundle has the CUPTI
# injection library (libgpuprof-cupti.so, sending to the daemon's
# cupti.socket), with the daemon and the library in each configuration of
# scripts/device/cupti_variants.txt whose steps name "cost" ("cupti-off":
# loaded but off, the noise floor; "cupti": its defaults, the target;
# more: what each part of it costs). Wall and thread-CPU ns per launch; the
# thread CPU is where the uprobe trap and the BPF program are paid.
#
# Runs differ by a few hundred ns from one process to the next, as much as
# the effects measured, and drift over a round: so a figure is the median
# over ROUNDS rounds of the per-round difference (configuration - "with"
# of the same round, scripts/device/gpu_compare.py cost), and each round
# runs its configurations rotated by one place (a "round R order ..."
# line says the order) so that none always runs first or after the same
# neighbour. "without" needs the daemon stopped: it runs before the
# daemon's configurations in odd rounds and after them in even ones.
# While the daemon runs, a process holding libcuda.so.1 mapped keeps its
# launch probes attached, so each run waits 0.2 s after CUDA's start
# instead of 2 s and a round costs little more than its launches.
#
# Per-run lines: "LABEL ROUND rt|drv ns_per_launch WALL cpu_ns_per_launch CPU".
# scripts/device/gpu_checks.sh runs this and judges the paired medians.
# Run from the repository root after scripts/device/bundle.sh, as root.
# Usage: bench/gpu/real_cuda.sh [N] [ROUNDS] [CONFIG]   (BUN= another bundle;
#        LIMIT_S=S: after ROUNDS rounds, more (up to MAX_ROUNDS, 12) while
#        the next should end within S s of the start)
set -u
N=${1:-200000}
ROUNDS=${2:-3}
CONF=${3:-}
LIMIT_S=${LIMIT_S:-0}
MAX_ROUNDS=${MAX_ROUNDS:-12}
W=$(mktemp -d /tmp/gpbench.XXXXXX)
BUN=${BUN:-$PWD/.devbundle}
LIB=$BUN/lib/libgpuprof-cupti.so
. scripts/device/common.sh
nvcc -O2 -o "$W/launch_real" scripts/device/launch_real.cu -lcuda || exit 1

# the configurations with the daemon: "with" (the probes alone), then the
# library's (their environment in VENV)
declare -A VENV
CONFIGS=(with)
if [ -f "$LIB" ]; then
    while read -r label env; do
        CONFIGS+=("$label")
        VENV[$label]=$env
    done < <(cupti_variants cost)
fi

DPID=''
KPID=''
cleanup() {
    [ -n "$KPID" ] && kill "$KPID" 2>/dev/null
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null
}
start_daemon() {
    printf '%s\ncupti.socket = %s\n' "$CONF" "$W/cupti.sock" >"$W/conf"
    LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofd" -f -s "$W/sock" -d "$W/state" -c "$W/conf" \
        2>>"$W/daemon.log" &
    DPID=$!
    for _ in $(seq 100); do [ -S "$W/sock" ] && return; sleep 0.1; done
    echo "daemon did not start"
    cat "$W/daemon.log"
    exit 1
}
stop_daemon() { kill $DPID; wait $DPID 2>/dev/null; DPID=; rm -f "$W/sock"; }
status() { LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofctl" --socket "$W/sock" --json status; }

# hold_probes: a process keeping libcuda.so.1 mapped (the probes sit on
# the file while any process maps it) and the probes attached to it; the
# runs' wait after CUDA's start (SETTLE ms), short where that worked
hold_probes() {
    python3 -c 'import ctypes, time; ctypes.CDLL("libcuda.so.1"); time.sleep(3600)' &
    KPID=$!
    SETTLE=2000
    for _ in $(seq 50); do
        if status 2>/dev/null | python3 -c '
import json, sys
g = [c for c in json.load(sys.stdin)["collectors"] if c["name"] == "gpu"][0]
libs = g.get("libraries", [])
sys.exit(0 if any(l["processes"] >= 1 and l["probes"] >= 1 for l in libs)
         and not any(l.get("attaching") for l in libs) else 1)' 2>/dev/null; then
            SETTLE=200
            return
        fi
        sleep 0.2
    done
    echo "  launch probes not seen attached: each run waits 2 s"
}
release_probes() { kill "$KPID" 2>/dev/null; wait "$KPID" 2>/dev/null; KPID=; }

# one LABEL ROUND: a run of launch_real in configuration LABEL
one() {
    local e=()
    if [ "$1" != with ] && [ "$1" != without ]; then
        read -r -a e <<<"${VENV[$1]}"
        e+=(CUDA_INJECTION64_PATH="$LIB" GPUPROF_CUPTI_SOCKET="$W/cupti.sock")
    fi
    env "${e[@]}" "$W/launch_real" "$N" --bench "$SETTLE" | sed "s/^/$1 $2 /"
}

rounds() {
    local r=0 t0 t last=0 order
    trap cleanup EXIT
    t0=$(date +%s)
    SETTLE=200
    while :; do
        r=$((r + 1))
        if [ $r -gt "$ROUNDS" ]; then
            [ $r -gt "$MAX_ROUNDS" ] && break
            if [ "$LIMIT_S" -le 0 ] || [ $(($(date +%s) - t0 + last)) -gt "$LIMIT_S" ]; then
                break
            fi
        fi
        t=$(date +%s)
        order=$(rotated $r "${CONFIGS[@]}")
        if [ $((r % 2)) = 1 ]; then
            echo "round $r order without $order"
            SETTLE=200
            one without $r
        else
            echo "round $r order $order without"
        fi
        start_daemon
        hold_probes
        for m in $order; do one "$m" $r; done
        # the round's account; "cupti idle" says whether the library really
        # let its subscription go between windows (GPUPROF_CUPTI_IDLE)
        status | python3 -c 'import json,sys; st=json.load(sys.stdin); g=[c for c in st["collectors"] if c["name"]=="gpu"][0]; print("  gpu collector: events", g["events"], "drops", g["drops"], "lost", g.get("lost"), "stacks_taken", g.get("stacks_taken"), "unnamed", g.get("unnamed_launches")); i=st.get("cupti", {}).get("library_idle"); i is None or print("  cupti idle: unsubscribes", i["unsubscribes"], "resubscribes", i["resubscribes"], "failures", i["resubscribe_failures"])'
        release_probes
        stop_daemon
        if [ $((r % 2)) = 0 ]; then
            SETTLE=200
            one without $r
        fi
        last=$(($(date +%s) - t))
    done
}
rounds | tee "$W/out"
echo "N = $N launches per API per run"
python3 scripts/device/gpu_compare.py cost --results "$W/results.tsv" --file "$W/out"
