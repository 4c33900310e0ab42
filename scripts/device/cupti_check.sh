#!/bin/bash
# SPDX-License-Identifier: MIT
# libgpuprof-cupti.so on a machine with an NVIDIA GPU, the real driver,
# CUPTI 13 and nvcc (the device machine): a CUDA program with known work
# (cupti_real.cu) runs with the library injected (CUDA_INJECTION64_PATH)
# and NVTX routed to CUPTI (NVTX_INJECTION64_PATH), a receiver decodes
# what arrives (cupti_recv.py); then the cost per launch with the library
# off, at its defaults, and with kernels only; then a PyTorch loop's
# throughput without and with the library (torch_rate.py), and the
# PyTorch profiler in a process the library already holds, under each
# GPUPROF_CUPTI_YIELD policy.
# Run from the repository root after scripts/device/bundle.sh on a build
# that has inject/ (CUPTI headers found). Results go to $OUT (default
# /tmp/cupti_check); a summary on stdout.
# Usage: scripts/device/cupti_check.sh [N]   (iterations of cupti_real)
set -u
N=${1:-2000}
OUT=${OUT:-/tmp/cupti_check}
R=$OUT/res
mkdir -p "$R"
W=$(mktemp -d /tmp/gpcupti.XXXXXX)
BUN=$PWD/.devbundle
LIB=$BUN/lib/libgpuprof-cupti.so
say() { printf '== %s\n' "$*"; }

say machine
nvidia-smi -L 2>&1 | head -2
[ -f "$LIB" ] || { echo "no $LIB: bundle a build with CUPTI (scripts/device/bundle.sh)"; exit 1; }
nm -D --defined-only "$LIB" | awk '{print $3}'
# the libcupti the dynamic linker finds; NVTX must be routed to the same one
. scripts/device/common.sh
find_cupti
echo "libcupti: ${CUPTI:-none}"
[ -n "$CUPTI" ] || exit 1
LD_LIBRARY_PATH=$(dirname "$CUPTI")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

say build
nvcc -O2 -arch=native -o "$W/cupti_real" scripts/device/cupti_real.cu || exit 1

# inject ENV... CMD...: run with the library and a receiver; summary in $R/$name.json
inject() {
    local name=$1; shift
    python3 scripts/device/cupti_recv.py "$W/cupti.sock" "$R/$name.json" &
    local rpid=$!
    for _ in $(seq 50); do [ -S "$W/cupti.sock" ] && break; sleep 0.1; done
    # every record counted: collecting all the time
    env CUDA_INJECTION64_PATH="$LIB" GPUPROF_CUPTI_SOCKET="$W/cupti.sock" GPUPROF_CUPTI_DUTY=100 \
        "$@" >"$R/$name.out" 2>&1
    echo "exit $?" >>"$R/$name.out"
    sleep 0.5
    kill -TERM $rpid
    wait $rpid
}

say "records (N=$N, all features, NVTX through CUPTI)"
inject real NVTX_INJECTION64_PATH="$CUPTI" GPUPROF_CUPTI_FEATURES=all "$W/cupti_real" "$N"
cat "$R/real.out"
python3 - "$R/real.out" "$R/real.json" <<'PY'
import json, sys
want = {}
for line in open(sys.argv[1]):
    w = line.split()
    if w and w[0] == "kernel":
        want[w[1]] = int(w[3])
conns = json.load(open(sys.argv[2]))
print("connections", len(conns))
c = conns[-1]
print("hello", c["hello"])
for name, n in want.items():
    got = c["kernels"].get(name, {"count": 0, "total_ns": 0})
    print("%-40s want %6d got %6d  mean %.0f ns" % (name, n, got["count"],
          got["total_ns"] / max(got["count"], 1)))
others = {k: v for k, v in c["kernels"].items() if k not in want}
print("other kernels", others)
for k in ("kernels_joined_to_api", "kernels_starting_before_their_api_enter", "api",
          "memcpy", "memset", "sync", "sync_by_type", "cuda_event", "graph", "markers", "seq_gaps",
          "stats"):
    print(k, c[k])
PY

say "cost per launch (ns, empty kernel, 200000 launches, 3 runs each)"
for mode in off default kernel; do
    for _ in 1 2 3; do
        case $mode in
        off) env GPUPROF_CUPTI=0 CUDA_INJECTION64_PATH="$LIB" "$W/cupti_real" 200000 --bench ;;
        default) env CUDA_INJECTION64_PATH="$LIB" GPUPROF_CUPTI_SOCKET="$W/none.sock" \
            "$W/cupti_real" 200000 --bench ;;
        kernel) env CUDA_INJECTION64_PATH="$LIB" GPUPROF_CUPTI_SOCKET="$W/none.sock" \
            GPUPROF_CUPTI_FEATURES=kernel "$W/cupti_real" 200000 --bench ;;
        esac | sed "s/^/$mode /"
    done
done
echo "(no daemon listens on none.sock: batches are built and dropped, as on a host whose daemon is down)"

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    say "PyTorch inference loop (torch_rate.py): steps in 3 s, without and with the library (3 runs each)"
    for _ in 1 2 3; do
        python3 scripts/device/torch_rate.py 3 | sed 's/^/without /'
        env CUDA_INJECTION64_PATH="$LIB" GPUPROF_CUPTI_SOCKET="$W/none.sock" \
            python3 scripts/device/torch_rate.py 3 | sed 's/^/with /'
    done
    say "PyTorch profiler in a process the library holds, per GPUPROF_CUPTI_YIELD"
    # Two profiler windows with 4 s of plain work between (the library's
    # quiet time set to 2 s): expect Kineto's GPU events in both windows
    # under every policy, the library in state conflict afterwards (auto,
    # never: "activity callbacks replaced"; torch: "libtorch_cuda loaded",
    # no kernels: torch is imported before CUDA starts). Not checkable on
    # the stand-in: whether CUPTI hands a buffer in flight to the new
    # callback, and whether it refuses Kineto's timestamp callback.
    cat >"$W/kineto2.py" <<'PY'
import time, torch
from torch.profiler import profile, ProfilerActivity
a = torch.randn(256, 256, device="cuda")
def work(seconds):
    global a
    t0 = time.time()
    while time.time() - t0 < seconds:
        a = torch.relu(a @ a) * 0.001
    torch.cuda.synchronize()
work(1)
for window in (1, 2):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        work(0.5)
    print("window", window, "kineto_gpu_events",
          sum(1 for e in p.events() if e.device_type.name == "CUDA"))
    work(4)
print("done")
PY
    for y in auto torch never; do
        inject "kineto_$y" GPUPROF_CUPTI_YIELD=$y GPUPROF_CUPTI_YIELD_QUIET_MS=2000 \
            python3 "$W/kineto2.py"
        echo "-- yield=$y"
        grep -E "window|done|exit|CUPTI|39" "$R/kineto_$y.out" | head -12
        python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))[-1]; s=c["stats"] or {}; print("library state", s.get("state"), "conflict", s.get("conflict"), "kernels", sum(v["count"] for v in c["kernels"].values()))' "$R/kineto_$y.json"
    done
fi
rm -rf "$W"
