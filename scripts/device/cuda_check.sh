#!/bin/bash
# SPDX-License-Identifier: MIT
# End-to-end check of the GPU launch probes on a machine with an NVIDIA GPU,
# the real driver's libcuda.so.1, nvcc and PyTorch (the device machine).
# Run from the repository root after scripts/device/bundle.sh, as root.
# Results go to $OUT (default /tmp/cuda_check): daemon log, status, captures'
# folded stacks; a summary on stdout.
# Usage: scripts/device/cuda_check.sh [N]   (runtime-API launches per site)
set -u
N=${1:-500}
OUT=${OUT:-/tmp/cuda_check}
R=$OUT/res
mkdir -p "$R"
W=$(mktemp -d /tmp/gpdev.XXXXXX)
BUN=$PWD/.devbundle
ctl() { LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofctl" --socket "$W/sock" "$@"; }
say() { printf '== %s\n' "$*"; }

say machine
uname -r; nvidia-smi -L 2>&1 | head -2
ls -l /sys/kernel/btf/vmlinux 2>&1
ldconfig -p | grep -E 'libcuda\.so\.1 ' | head -2
LD_LIBRARY_PATH=$BUN/lib ldd "$BUN/bin/gpuprofd" | grep 'not found'

say daemon
LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofd" -f -s "$W/sock" -d "$W/state" -v \
    >"$R/daemon.log" 2>&1 &
DPID=$!
trap 'kill $DPID 2>/dev/null' EXIT
for _ in $(seq 100); do [ -S "$W/sock" ] && break; sleep 0.1; done
ctl --json status >"$R/status0.json" || { tail -30 "$R/daemon.log"; exit 1; }
python3 - "$R/status0.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
for c in st["collectors"]:
    print("%-8s %-10s %s" % (c["name"], c["state"], c.get("reason", "")))
PY

# run_wl NAME CMD...: CMD gets a done-file as its last argument; once it
# exists, capture the process's last 30 s and write its folded stacks
run_wl() {
    local name=$1; shift
    rm -f "$W/done"
    "$@" "$W/done" >"$R/$name.out" 2>&1 &
    local pid=$!
    for _ in $(seq 600); do
        [ -f "$W/done" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    sleep 0.6 # the collector drains every 200 ms
    say "$name (pid $pid)"
    cat "$R/$name.out"
    ctl --json capture --pid $pid --last 30s --name "$name" >"$R/$name.cap.json"
    local id
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$R/$name.cap.json")
    python3 -c 'import json,sys; print("by_type", json.load(open(sys.argv[1]))["by_type"])' "$R/$name.cap.json"
    ctl folded "$id" --weight launches >"$R/$name.launches.folded"
    ctl folded "$id" >"$R/$name.cpu.folded"
    ctl --json top --pid $pid --window 30s >"$R/$name.top.json" 2>&1 || true
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    # a folded line is "frame;frame;... COUNT"; C++ frames hold spaces:
    # $name.tsv is "COUNT<tab>STACK"
    sed -E 's/^(.*) ([0-9]+)$/\2\t\1/' "$R/$name.launches.folded" >"$R/$name.tsv"
    echo "launches per GPU kernel frame:"
    awk -F'\t' '{ n = split($2, f, ";"); k[f[n]] += $1 } END { for (x in k) print k[x] "\t" x }' \
        "$R/$name.tsv" |
        sort -rn | cut -c1-200 | tee "$R/$name.kernels"
    echo "launches per (caller, kernel):"
    awk -F'\t' '{ n = split($2, f, ";"); k[f[n-1] ";" f[n]] += $1 }
         END { for (x in k) print k[x] "\t" x }' "$R/$name.tsv" | sort -rn | head -12 | cut -c1-200
    echo "cpu samples: $(awk '{ s += $2 } END { print s + 0 }' "$R/$name.cpu.folded")"
}

say build launch_real
nvcc -O2 -g -Xcompiler -fno-omit-frame-pointer -o "$W/launch_real" \
    scripts/device/launch_real.cu -lcuda 2>&1 | tail -5
[ -x "$W/launch_real" ] && run_wl launch_real "$W/launch_real" "$N"
# verdict: exact counts per call site, and every kernel named
expect() { if [ "$2" = "$3" ]; then echo "PASS $1: $2"; else echo "FAIL $1: $2, want $3"; fi; }
# sum FILE ERE: launches on lines (COUNT<tab>FRAMES) whose frames match ERE
sum() { awk -F'\t' -v re="$2" '$2 ~ re { n += $1 } END { print n + 0 }' "$R/$1"; }
if [ -f "$R/launch_real.tsv" ]; then
    expect "launch_real: gpuprof_real_saxpy from rt_call_site_one" \
        "$(sum launch_real.tsv ';rt_call_site_one[(].*;gpuprof_real_saxpy_\[G\]$')" "$N"
    expect "launch_real: gpuprof_real_scale from rt_call_site_two" \
        "$(sum launch_real.tsv ';rt_call_site_two[(].*;gpuprof_real_scale[(]float[*], int[)]_\[G\]$')" $((2 * N))
    expect "launch_real: gpuprof_real_scale from drv_call_site_three (cuLaunchKernel)" \
        "$(sum launch_real.tsv ';drv_call_site_three[(].*;gpuprof_real_scale[(]float[*], int[)]_\[G\]$')" $((3 * N))
fi

run_wl torch python3 scripts/device/torch_loop.py
steps=$(awk '/^steps/ { print $2 }' "$R/torch.out")
expect "torch: launches of unnamed kernels" "$(sum torch.kernels '^0x[0-9a-f]+_\[G\]$')" 0
expect "torch: cuBLAS GEMM launches (one per step)" "$(sum torch.kernels 'gemm|nvjet|cutlass')" "$steps"
expect "torch: launches beside randn's (three per step)" \
    $(($(sum torch.kernels .) - $(sum torch.kernels 'normal|distribution'))) $((3 * steps))

say status after
ctl --json status >"$R/status1.json"
python3 - "$R/status1.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
g = [c for c in st["collectors"] if c["name"] == "gpu"][0]
print(json.dumps({k: v for k, v in g.items() if k not in ("watching",)}, indent=1)[:5000])
PY
kill $DPID; wait $DPID
echo "daemon exit $?"
grep -v -E '^\s*$' "$R/daemon.log" | tail -15
tar -C "$OUT" -czf "$OUT/res.tar.gz" res && rm -rf "$R"
