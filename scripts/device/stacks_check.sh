#!/bin/bash
# SPDX-License-Identifier: MIT
# Native stacks on a real AI workload (the device machine: NVIDIA GPU,
# PyTorch): the same PyTorch training loop (scripts/device/torch_cpu.py)
# profiled twice, with CFI unwinding (sampling.stack_bytes = 16384, the
# default) and with frame pointers only (sampling.stack_bytes = 0). For the
# CPU samples and the launch-site stacks: how many are complete (reach
# _start or a thread's clone3), how many end in [truncated], the median
# depth, and the daemon's unwind status.
# Run from the repository root after scripts/device/bundle.sh, as root.
# Results in $OUT (default /tmp/stacks_check).
set -u
OUT=${OUT:-/tmp/stacks_check}
mkdir -p "$OUT"
BUN=$PWD/.devbundle
say() { printf '== %s\n' "$*"; }
say machine
uname -r; nvidia-smi -L 2>&1 | head -1; python3 -c 'import torch; print("torch", torch.__version__)'

run_mode() {
    local sb=$1 W
    W=$(mktemp -d /tmp/gpstk.XXXXXX)
    printf 'sampling.stack_bytes = %s\nsampling.cpu_frequency = 199\ngpu.stack_sample = 1\n' "$sb" >"$W/conf"
    LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofd" -f -s "$W/sock" -d "$W/state" -c "$W/conf" \
        >"$OUT/daemon.$sb.log" 2>&1 &
    local dpid=$!
    for _ in $(seq 100); do [ -S "$W/sock" ] && break; sleep 0.1; done
    ctl() { LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/gpuprofctl" --socket "$W/sock" "$@"; }
    python3 scripts/device/torch_cpu.py "$W/done" >"$OUT/torch.$sb.out" 2>&1 &
    local pid=$!
    for _ in $(seq 900); do [ -f "$W/done" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    sleep 0.6
    ctl --json capture --pid $pid --last 12s --name "torch-$sb" >"$OUT/cap.$sb.json"
    local id
    id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$OUT/cap.$sb.json")
    ctl folded "$id" >"$OUT/cpu.$sb.folded"
    ctl folded "$id" --weight launches >"$OUT/launches.$sb.folded"
    ctl --json status >"$OUT/status.$sb.json"
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    kill $dpid; wait $dpid
    rm -rf "$W"
    say "stack_bytes=$sb: $(cat "$OUT/torch.$sb.out" | tail -1)"
    python3 - "$OUT" "$sb" <<'PY'
import json, statistics, sys
out, sb = sys.argv[1], sys.argv[2]
def stats(path):
    n = comp = trunc = 0; depths = []; py = 0
    for line in open(path):
        st, c = line.rstrip("\n").rsplit(" ", 1); c = int(c); fr = st.split(";")
        n += c; depths += [len(fr)] * min(c, 1000)
        if "[truncated]" in fr or "[unknown]" in fr[1:3]: trunc += c
        elif len(fr) > 1 and fr[1] in ("_start", "clone3", "__clone3", "clone", "__clone"): comp += c
        if any("PyEval_EvalFrame" in f for f in fr): py += c
    return n, comp, trunc, statistics.median(depths) if depths else 0, py
for kind in ("cpu", "launches"):
    n, comp, trunc, med, py = stats("%s/%s.%s.folded" % (out, kind, sb))
    print("%-8s %6d stacks: %5.1f%% reach _start/clone3, %5.1f%% [truncated], median depth %d, %5.1f%% through the interpreter" % (
        kind, n, 100.0 * comp / max(n, 1), 100.0 * trunc / max(n, 1), med, 100.0 * py / max(n, 1)))
u = json.load(open("%s/status.%s.json" % (out, sb))).get("unwind")
if u:
    u.pop("by_process", None)
    print("unwind status:", json.dumps(u))
PY
}
run_mode 16384
run_mode 0
say "heaviest stacks with CFI (and what frame pointers made of the same workload)"
python3 - "$OUT" <<'PY'
import sys
out = sys.argv[1]
for kind in ("cpu", "launches"):
    for sb in ("16384", "0"):
        st = {}
        try:
            for line in open("%s/%s.%s.folded" % (out, kind, sb)):
                s, c = line.rstrip("\n").rsplit(" ", 1)
                st[s] = st.get(s, 0) + int(c)
        except OSError:
            continue
        print("-- %s, stack_bytes=%s" % (kind, sb))
        for s, c in sorted(st.items(), key=lambda kv: -kv[1])[:4]:
            print("%6d %s" % (c, s if len(s) < 700 else s[:350] + " ... " + s[-340:]))
PY
