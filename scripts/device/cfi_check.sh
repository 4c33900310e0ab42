#!/bin/bash
# SPDX-License-Identifier: MIT
# Launch-site stacks by CFI on the device machine (a real GPU, the real
# driver's libcuda.so.1, PyTorch): bench/gpu/stacks.py on the fake libcuda
# (the launch cost per configuration, on a quiet 16-core machine), then a
# CUDA program built -O2 without frame pointers and a PyTorch loop, each
# profiled with stack copying on (the default) and off (sampling.stack_bytes
# = 0: frame pointers only), every launch taking a stack. Prints, per
# workload and mode, how many launch stacks reach main and how many end
# [truncated], and the most frequent stacks.
# Run from the repository root, as root, after scripts/device/bundle.sh
# BUILD has packed a release build into .devbundle (bpftool in
# .devbundle/bin too, for the BPF run-time column; optional), carrying
# .devbundle and BUILD/tests/gpu (gpu_app and the fake libcuda.so.1).
# Results under $OUT (default /tmp/cfi_check).
# Usage: scripts/device/cfi_check.sh BUILD [BENCH_N] [BENCH_ROUNDS]
set -u
BUILD=${1:?usage: cfi_check.sh BUILD [BENCH_N] [BENCH_ROUNDS]}
N=${2:-200000}
ROUNDS=${3:-3}
BUN=$PWD/.devbundle
OUT=${OUT:-/tmp/cfi_check}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/gpcfi.XXXXXX)
# The layout bench/gpu/stacks.py reads, over the bundle's binaries (its
# libraries for them alone: the workloads keep the machine's own).
B=$W/build
mkdir -p "$B/daemon" "$B/cli" "$B/bin" "$B/tests"
ln -s "$PWD/$BUILD/tests/gpu" "$B/tests/gpu"
for t in daemon/gpuprofd cli/gpuprofctl bin/bpftool; do
    [ -x "$BUN/bin/${t#*/}" ] || continue
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s/lib exec %s/bin/%s "$@"\n' "$BUN" "$BUN" "${t#*/}" >"$B/$t"
    chmod +x "$B/$t"
done
export PATH=$B/bin:$PATH
ctl() { "$B/cli/gpuprofctl" --socket "$W/sock" "$@"; }
say() { printf '== %s\n' "$*"; }

say machine
uname -r; nvidia-smi -L 2>&1 | head -1; nproc; python3 -c 'import sys; print(sys.executable)'

say "bench/gpu/stacks.py $N 32 $ROUNDS (fake libcuda)"
python3 bench/gpu/stacks.py "$B" "$N" 32 "$ROUNDS" 2>&1 | tee "$OUT/bench.txt"

say "build launch_real: nvcc -O2, no frame pointers"
nvcc -O2 -o "$W/launch_real" scripts/device/launch_real.cu -lcuda 2>&1 | tail -3

# profile NAME MODE CMD...: CMD gets a done-file last; once it exists, the
# process's launches are captured and folded
profile() {
    local name=$1 mode=$2
    shift 2
    rm -f "$W/done"
    "$@" "$W/done" >"$OUT/$name.$mode.out" 2>&1 &
    local pid=$!
    for _ in $(seq 600); do
        [ -f "$W/done" ] && break
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    sleep 0.6 # the collector drains every 200 ms
    local id
    id=$(ctl --json capture --pid $pid --last 60s |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    ctl folded "$id" --weight launches >"$OUT/$name.$mode.folded"
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
}

for mode in cfi fp; do
    say "daemon: $mode"
    conf="gpu.stack_sample = 1"
    [ $mode = fp ] && conf="$conf
sampling.stack_bytes = 0"
    printf '%s\n' "$conf" >"$W/conf"
    "$B/daemon/gpuprofd" -f -s "$W/sock" -d "$W/state.$mode" -c "$W/conf" \
        >"$OUT/daemon.$mode.log" 2>&1 &
    dpid=$!
    for _ in $(seq 100); do ctl status >/dev/null 2>&1 && break; sleep 0.1; done
    [ -x "$W/launch_real" ] && profile launch_real $mode "$W/launch_real" 500
    profile torch $mode python3 scripts/device/torch_loop.py
    ctl --json status >"$OUT/status.$mode.json"
    kill $dpid
    wait $dpid
done

say "launch stacks reaching main"
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
for name in ("launch_real", "torch"):
    for mode in ("cfi", "fp"):
        p = os.path.join(out, "%s.%s.folded" % (name, mode))
        if not os.path.exists(p):
            print("%-12s %-4s no capture" % (name, mode))
            continue
        stacks = {}
        for line in open(p):
            frames, _, n = line.rstrip("\n").rpartition(" ")
            if n.isdigit():
                stacks[frames] = stacks.get(frames, 0) + int(n)
        total = sum(stacks.values()) or 1
        main = sum(n for k, n in stacks.items() if "main" in k.split(";"))
        trunc = sum(n for k, n in stacks.items() if "[truncated]" in k.split(";"))
        print("%-12s %-4s %7d launches, %5.1f %% reach main, %5.1f %% [truncated]" %
              (name, mode, total, 100.0 * main / total, 100.0 * trunc / total))
        for k, n in sorted(stacks.items(), key=lambda kv: -kv[1])[:3]:
            print("    %6d %s" % (n, k[-400:]))
for mode in ("cfi", "fp"):
    st = json.load(open(os.path.join(out, "status.%s.json" % mode)))
    g = [c for c in st["collectors"] if c["name"] == "gpu"][0]
    print(mode, {k: g.get(k) for k in ("events", "lost", "stack_bytes", "stacks_taken",
                                       "stacks_fp_fallback", "callers_inserted")})
    if "unwind" in st:
        u = st["unwind"]
        print("   unwind", {k: u.get(k) for k in ("samples", "complete", "truncated",
                                                   "truncated_by", "frames_cfi", "frames_fp",
                                                   "stack_bytes_per_sample", "unwind_ns_mean",
                                                   "unwind_ns_median_bucket")})
PY
rm -rf "$W"
