#!/bin/bash
# SPDX-License-Identifier: MIT
# Every NVIDIA check of the CUPTI path and of Python frames at GPU launches
# in one run of about five minutes, for the device machine (one NVIDIA GPU,
# CUDA with nvcc and CUPTI 13, PyTorch, no network, none of our Debian
# packages), which is lent for a few minutes at a time: one script that
# works the first time and ends with a SUMMARY line per target.
#
# A gpuprofd from the bundle (scripts/device/bundle.sh build-rel) runs on a
# private socket and state directory with the CPU sampler and Python
# frames, the launch probes and the cupti collector on a private socket;
# the CUDA programs load libgpuprof-cupti.so (CUDA_INJECTION64_PATH).
# Steps, in order of priority:
#  cuda      cupti_real.cu (nvcc -arch=native), known kernels, copies, a
#            memset, syncs, NVTX ranges routed to CUPTI, a CUDA graph and
#            CUDA events (a second stream waiting on the first's record, an
#            event synchronize), every feature on: kernel counts equal to
#            the launches, folded --weight gpu-time per kernel equal to the
#            kernels analysis, kernel time on launching stacks, all nine
#            analyses on the live capture; the CUDA event records, each wait
#            linked to its cudaEventRecord (Chrome export), sync edges in the
#            critical path; GRAPH_TRACE against per-node records (a behaviour).
#  parity    torch_parity.py, one process: phase A (STEPS training steps)
#            captured live, then `gpuprofctl cupti release PID` (it returns
#            once the library no longer holds the CUPTI subscription; status
#            must show it: state conflict, subscribed false), then phase B
#            (the same STEPS)
#            under torch.profiler, whose Kineto trace is imported: kernel
#            counts per step, per-kernel mean GPU time (within 2 %, the trace's
#            own durations: the importer rounds to whole us as HTA does),
#            temporal and idle (within 2 points of the span), sync-dependency
#            edges of the two critical-path graphs per step (equal; the
#            loop's side stream is joined by wait_stream, and it synchronizes).
#            Caveat: CUPTI allows one subscriber per process, so the two
#            windows are consecutive phases of the same loop, not the same
#            kernels; phase B also carries the profiler's own host cost.
#  pyframes  phase A's folded --weight launches: the model's Python function
#            (Block.forward) above the cuBLAS GEMM kernel frames.
#  cost      with our daemon stopped: bench/gpu/real_cuda.sh (daemons of its
#            own): cost per launch beyond the launch probes of each
#            configuration of scripts/device/cupti_variants.txt marked
#            "cost" (<= 1 us at the defaults; the others, library off (the
#            noise floor) and the anatomy of the cost, shown), in rotated
#            rounds, the median of the per-round differences; and what the
#            library adds to a cudaEventRecord + cudaStreamWaitEvent pair
#            (its event and sync callbacks), shown.
#  pc        PC sampling (default,pc): samples through the daemon, and whether
#            pcOffset is relative to the function (the daemon finds
#            nvdisasm's instruction at that offset: >= 95 % of the samples);
#            the slowdown of a GEMM loop (cupti_real 2000 --gemm) at the
#            default duty cycle (<= 2 %), rounds of interleaved runs (up to
#            3 as the step's limit allows), medians; beside it, shown
#            (INFO), in the same rounds, the variants that tell where the
#            cost comes from: enabled but never started
#            (GPUPROF_CUPTI_PC_FIRST_MS), enabled per window
#            (GPUPROF_CUPTI_PC_ENABLE=window), the longer sampling periods
#            of PC_PERIODS; per-round ratios and each run's PC counters
#            (pc_variants.py), and the cost split between them.
#  rate      torch_rate.py --plan (launch-heavy inference) without the
#            library and with it in each configuration of
#            cupti_variants.txt marked "rate", rotated rounds (3 or more as
#            time allows) of forked runs, each run the median of 0.5 s
#            sub-intervals after a warm-up: the median of the per-round
#            ratios (>= 98 % at the defaults; the others shown).
#  nccl      whether NCCL is there; if so a one-rank all_reduce captured live
#            (NCCL kernels, analyze comm), a behaviour.
# Steps run under `timeout` each, one failing does not stop the others, and
# optional ones are skipped past the wall budget (GPU_CHECKS_BUDGET_S, 390 s).
# Details go to $OUT/res (default OUT=/tmp/gpu_checks); stdout stays short
# (step lines, the daemon's status, CUPTI BEHAVIOURS and SUMMARY, also in
# $OUT/summary.txt). Exit status 0 when no target failed.
#
# --stand-in BUILD runs the same flow without a GPU on a build of this tree
# (the integration test tests/integration/test_gpu_checks.py does): BUILD's
# gpuprofd and gpuprofctl, the fake driver (tests/gpu), the stand-in
# libcupti (tests/cupti/fake_cupti.c) and tests/cupti/cuda_app instead of
# cupti_real, tests/device/fake_parity.py (ctypes on the fake driver, the
# same handshake and phases) instead of torch_parity.py, whose "Kineto
# trace" is the Chrome export of its own phase A capture (its CUDA calls
# widened to 2 us: HTA's time grid makes the fake driver's sub-us calls
# zero-length, and the critical path then has no edges), and a stand-in
# nvdisasm listing every offset of the stand-in's PC kernel; the PyTorch
# throughput and NCCL steps are SKIPped, and timings are shown but not
# judged (SKIP).
# Usage: scripts/device/gpu_checks.sh [--stand-in BUILD]   (as root, from the
#        repository root; STEPS= training steps per phase, default 60)
# On a lent device machine: build-rel and scripts/device/bundle.sh here,
# carry .devbundle, run this one command with a limit of about 480 s (the
# budget ends the steps by 390 s; nvcc and the daemon's stops come on top).
# shellcheck disable=SC2317  # the steps are called as step_$NAME
set -u

# ---- configuration, shared with the steps (run as this script --step NAME)
if [ "${1:-}" != --step ]; then
    cd "$(dirname "$0")/../.." || exit 2
    export SRC=$PWD MODE=device SB=
    if [ "${1:-}" = --stand-in ]; then
        MODE=stand-in
        SB=$(cd "${2:?usage: gpu_checks.sh --stand-in BUILD}" && pwd) || exit 2
    fi
    export OUT=${OUT:-/tmp/gpu_checks}
    export R=$OUT/res RES=$OUT/results.tsv
    W=$(mktemp -d /tmp/gpchecks.XXXXXX)
    T0=$(date +%s)
    export W T0 BUDGET_S=${GPU_CHECKS_BUDGET_S:-390} STEPS=${STEPS:-60}
    if [ $MODE = device ]; then
        export BUN=$SRC/.devbundle
        export GPD=$BUN/bin/gpuprofd CTL=$BUN/bin/gpuprofctl LIBDIR=$BUN/lib
        export LIB=$BUN/lib/libgpuprof-cupti.so
    else
        export GPD=$SB/daemon/gpuprofd CTL=$SB/cli/gpuprofctl LIBDIR=
        export LIB=$SB/inject/libgpuprof-cupti.so FAKE_CUPTI=$SB/tests/cupti/libcupti.so.13
        export FAKE_CUDA=$SB/tests/gpu/cuda/libcuda.so.1 APP=$SB/tests/cupti/cuda_app
        export PC_CUBIN=$SB/tests/cupti/pc_kernel.cubin
    fi
    export SOCK=$W/sock CSOCK=$W/cupti.sock
    # the interpreter itself, not a version manager's shim: each start of a
    # shim costs a second on a loaded machine
    PY=$(python3 -c 'import sys; print(sys.executable)') || exit 2
    export PY CMP="$PY $SRC/scripts/device/gpu_compare.py"
fi

say() { printf '== %s\n' "$*"; }
elapsed() { echo $(($(date +%s) - T0)); }
ctl() { LD_LIBRARY_PATH=$LIBDIR timeout 120 "$CTL" --socket "$SOCK" "$@"; }
result() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RES"; } # NAME VALUE TARGET VERDICT
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

# CENV_LIB: the environment of a CUDA process under the library at its
# defaults (the duty cycle included); CENV: collecting all the time
# (GPUPROF_CUPTI_DUTY=100), for the checks that count and compare every
# record
CENV_LIB=(CUDA_INJECTION64_PATH="$LIB" GPUPROF_CUPTI_SOCKET="$CSOCK" GPUPROF_CUPTI_FLUSH_MS=100)
[ "$MODE" = stand-in ] && CENV_LIB+=(GPUPROF_CUPTI_LIB="$FAKE_CUPTI")
CENV=("${CENV_LIB[@]}" GPUPROF_CUPTI_DUTY=100)
# PC_PERIODS: the sampling periods (GPUPROF_CUPTI_PC_PERIOD, log2 cycles)
# whose GEMM slowdown the pc step shows beside the default's
PC_PERIODS=(20 24)
# PYENV: CENV for a Python process; a sanitized stand-in build's library
# needs its runtimes first in the process (and Python's leaks ignored)
PYENV=("${CENV[@]}")
if [ "$MODE" = stand-in ]; then
    SAN=$(ldd "$LIB" | awk '/lib(asan|ubsan)\.so/ { printf "%s ", $3 }')
    [ -n "$SAN" ] && PYENV+=(LD_PRELOAD="$SAN" ASAN_OPTIONS=detect_leaks=0)
fi

# status_json FILE
status_json() { ctl --json status >"$1" 2>/dev/null; }

# wait_probes: the launch probes attached to every GPU library mapped now
wait_probes() {
    for _ in $(seq 100); do
        status_json "$W/st.json"
        "$PY" - "$W/st.json" <<'PY' && return 0
import json, sys
g = [c for c in json.load(open(sys.argv[1]))["collectors"] if c["name"] == "gpu"][0]
libs = g.get("libraries", [])
ok = any(l["processes"] >= 1 and l["probes"] >= 1 for l in libs) and not any(l.get("attaching") for l in libs)
sys.exit(0 if ok else 1)
PY
        sleep 0.2
    done
    echo "launch probes not attached after 20 s"
    return 1
}

# settle: wait until the cupti collector's activity record counts stop
# moving (the library's last flush arrived; its stats come every second)
settle() {
    local a b
    a=-1
    for _ in $(seq 25); do
        status_json "$W/st.json"
        b=$(jget "$W/st.json" 'sum(v for k, v in d["cupti"]["records"].items() if k not in ("stats", "string"))' 2>/dev/null)
        [ "$a" = "$b" ] && return 0
        a=$b
        sleep 0.3
    done
}

# cap PID LAST_MS NAME: a live capture of the pid's last LAST_MS ms; its id
cap() {
    ctl --json capture --pid "$1" --last "${2}ms" --name "$3" >"$R/$3.cap.json" &&
        jget "$R/$3.cap.json" 'd["id"]'
}

# cap_from PID T0 NAME: a capture from 1 s before T0 (CLOCK_MONOTONIC
# seconds; the process keeps 2 s quiet before it) to now: an absolute
# window (--since takes the daemon's monotonic ns), so however long a
# loaded machine makes the daemon take the request, it starts there
cap_from() {
    local since
    since=$(awk -v t="$2" 'BEGIN { printf "%.0f", t * 1e9 - 1e9 }')
    ctl --json capture --pid "$1" --since "$since" --name "$3" >"$R/$3.cap.json" &&
        jget "$R/$3.cap.json" 'd["id"]'
}

# analyze_three ID PREFIX: kernels (all of them), temporal, idle as JSON
analyze_three() {
    ctl --json analyze kernels "$1" --num-kernels 100000 --duration-ratio 1 >"$R/$2.kernels.json"
    ctl --json analyze temporal "$1" >"$R/$2.temporal.json"
    ctl --json analyze idle "$1" >"$R/$2.idle.json"
}

# start_prog NAME ENV... -- CMD...: CMD (stdin a fifo) in the background with
# ENV; PROG_PID, PROG_IN (fd 7 open on its stdin)
start_prog() {
    local name=$1 e=()
    shift
    while [ "$1" != -- ]; do e+=("$1"); shift; done
    shift
    rm -f "$W/$name.in"
    mkfifo "$W/$name.in"
    env "${e[@]}" "$@" <"$W/$name.in" >"$R/$name.out" 2>"$R/$name.err" &
    PROG_PID=$!
    exec 7>"$W/$name.in"
}

# wait_line FILE ERE SECONDS
wait_line() {
    for _ in $(seq $(($3 * 10))); do
        grep -qE "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# release_check PID NAME: gpuprofctl cupti release, which returns once the
# library says it no longer holds the CUPTI subscription (a profiler that
# subscribes before then gets no GPU activity for the process's life:
# Kineto never retries); status must then show the peer in state conflict
# with subscribed false
release_check() {
    local t0 ms peer
    t0=$(date +%s%N)
    if ! ctl cupti release --wait 10s "$1" >"$R/release.out" 2>&1; then
        result "cupti release ($2)" "gpuprofctl cupti release failed: $(head -c 300 "$R/release.out")" \
            "the subscription gone" FAIL
        return 1
    fi
    ms=$((($(date +%s%N) - t0) / 1000000))
    status_json "$W/st.json"
    peer=$(jget "$W/st.json" \
        '[(p["state"], p.get("subscribed"), p.get("conflict")) for p in d["cupti"]["peer_list"] if p["pid"] == '"$1"']')
    if [[ $peer == "[('conflict', False, "* ]]; then
        result "cupti release ($2)" "subscription gone after $ms ms (state, subscribed, reason: $peer)" \
            "the subscription gone" PASS
        return 0
    fi
    result "cupti release ($2)" "gpuprofctl returned after $ms ms but status says $peer" \
        "the subscription gone" FAIL
    return 1
}

skip_results() { # VALUE NAME...: SKIP lines for targets a step did not reach
    local v=$1 n
    shift
    for n in "$@"; do result "$n" "$v" "-" SKIP; done
}

# ---- step 1: a CUDA program with known kernels
# cuda_prog NVTX: the known program (NVTX yes: its ranges routed to
# CUPTI), from "ready" to its exit; its exit status
cuda_prog() {
    local nvtx=()
    if [ $MODE = device ]; then
        [ "$1" = yes ] && nvtx=(NVTX_INJECTION64_PATH="$CUPTI")
        start_prog cuda "${CENV[@]}" GPUPROF_CUPTI_FEATURES=all "${nvtx[@]}" \
            LD_LIBRARY_PATH="$(dirname "$CUPTI")" -- "$W/cupti_real" 2000 --wait
    else
        start_prog cuda "${CENV[@]}" GPUPROF_CUPTI_FEATURES=all -- "$APP" --cuda "$FAKE_CUDA" \
            --wait --launches 200 --kernel gpuprof_k_a:20000 --kernel _Z11gpuprof_k_bPfi:5000 \
            --memcpy 4096:3000 --memset 1024:1000 --graph 7000 --sync --nvtx \
            --events gpuprof_k_c:200000
    fi
    wait_line "$R/cuda.out" '^ready' 30 || { echo "no ready line"; return 1; }
    wait_probes
    echo go >&7
    exec 7>&-
    wait $PROG_PID
}

step_cuda() {
    local id a args rc
    cuda_prog yes
    rc=$?
    echo "exit $rc" >>"$R/cuda.out"
    if [ $rc != 0 ] && [ $MODE = device ]; then
        # NVTX routed to CUPTI 13.0 has been seen to crash (NVIDIA/NVTX#125):
        # say so, and keep the other targets by running without it
        result "NVTX through CUPTI" "cupti_real exited $rc with NVTX routed to CUPTI; run again without" \
            "observed" INFO
        mv "$R/cuda.out" "$R/cuda.nvtx.out"
        cuda_prog no
        echo "exit $?" >>"$R/cuda.out"
    fi
    settle
    id=$(cap $PROG_PID 120000 cuda) || return 1
    echo "$id" >"$W/cuda.id"
    echo "$PROG_PID" >"$W/cuda.pid"
    jget "$R/cuda.cap.json" 'd["by_type"]'
    analyze_three "$id" cuda
    ctl folded "$id" --weight gpu-time >"$R/cuda.gputime.folded"
    ctl --json folded "$id" --weight gpu-time --out /dev/null >"$R/cuda.join.json"
    $CMP kernels --results "$RES" --tag "CUDA program" --program "$R/cuda.out" \
        --kernels "$R/cuda.kernels.json" --folded "$R/cuda.gputime.folded" --join "$R/cuda.join.json"
    mkdir -p "$R/an"
    for a in temporal idle kernels overlap launch queue sequences critical-path comm; do
        case $a in
        sequences) args=(--operator iteration) ;;
        critical-path) args=(--annotation iteration) ;;
        *) args=() ;;
        esac
        ctl --json analyze "$a" "$id" "${args[@]}" >"$R/an/$a.out" 2>"$R/an/$a.err"
        echo $? >"$R/an/$a.rc"
    done
    $CMP analyses --results "$RES" --tag "CUDA program" --dir "$R/an"
    # CUDA events: records, the waits' links (as Kineto writes them), and
    # sync edges on the critical path of the whole capture
    ctl export "$id" --format chrome --out "$R/cuda.chrome.json" >/dev/null
    ctl --json analyze critical-path "$id" --max-edges 1000000 >"$R/cuda.critpath.json"
    $CMP events --results "$RES" --tag "CUDA events" --program "$R/cuda.out" \
        --records "$(jget "$R/cuda.cap.json" 'd["by_type"].get("gpu_event", 0)')" \
        --chrome "$R/cuda.chrome.json" --critpath "$R/cuda.critpath.json"
    $CMP graph --results "$RES" --tag "CUDA graph (all features)" --program "$R/cuda.out" \
        --kernels "$R/cuda.kernels.json"
    # NVTX through CUPTI: the ranges and the mark the program made
    local want got
    want=$(awk '$1 == "nvtx" { print $3 + $5 }' "$R/cuda.out")
    got=$(jget "$R/cuda.cap.json" 'd["by_type"].get("mark", 0)')
    [ -f "$R/cuda.nvtx.out" ] ||
        result "NVTX through CUPTI (ranges + marks)" "$got of ${want:-?}" "observed" INFO
}

# ---- step 2: Kineto parity. The stand-in runs the same flow with
# tests/device/fake_parity.py, whose "Kineto trace" is the Chrome export
# of its own phase A capture
step_parity() {
    local D=$W/torch t0 id id2 pid tag sync
    mkdir -p "$D"
    if [ $MODE = device ]; then
        tag="Kineto parity"
        env "${CENV[@]}" "$PY" "$SRC/scripts/device/torch_parity.py" "$D" "$STEPS" \
            >"$R/torch.out" 2>&1 &
    else
        tag="Kineto parity (stand-in: phase A's own Chrome export)"
        env "${PYENV[@]}" "$PY" "$SRC/tests/device/fake_parity.py" "$D" "$STEPS" "$FAKE_CUDA" \
            >"$R/torch.out" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 900); do [ -f "$D/ready" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
    [ -f "$D/ready" ] || { echo "the training process did not get ready"; tail -5 "$R/torch.out"; return 1; }
    wait_probes
    touch "$D/go_a"
    for _ in $(seq 1200); do [ -f "$D/a_done" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
    [ -f "$D/a_done" ] || { echo "phase A did not end"; tail -5 "$R/torch.out"; return 1; }
    settle
    read -r t0 _ <"$D/a_done"
    id=$(cap_from $pid "$t0" torch_a) || return 1
    jget "$R/torch_a.cap.json" 'd["by_type"]'
    grep -o '/[^ ]*libcupti[^ ]*' /proc/$pid/maps | sort -u >"$R/torch.libcupti"
    analyze_three "$id" torch_a
    ctl folded "$id" --weight launches >"$R/torch.launches.folded"
    ctl folded "$id" --weight gpu-time >"$R/torch.gputime.folded"
    [ $MODE = stand-in ] && ctl export "$id" --format chrome --out "$D/kineto_src.json"
    release_check $pid "$([ $MODE = device ] && echo "PyTorch process" || echo "stand-in process"), before the profiler"
    touch "$D/go_b"
    for _ in $(seq 1200); do [ -f "$D/b_done" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
    wait $pid
    echo "exit $?" >>"$R/torch.out"
    [ -f "$D/b_done" ] || { echo "phase B did not end"; tail -5 "$R/torch.out"; return 1; }
    if [ $MODE = stand-in ]; then # the window held exactly phase A's steps
        $CMP kernels --results "$RES" --tag "stand-in training window" --program "$R/torch.out" \
            --kernels "$R/torch_a.kernels.json" --folded "$R/torch.gputime.folded"
    fi
    ctl --json import "$D/kineto.json" --name kineto_b >"$R/kineto_b.imp.json" || return 1
    id2=$(jget "$R/kineto_b.imp.json" 'd["id"]')
    analyze_three "$id2" kineto_b
    # a trace without GPU events: the profiler could not use CUPTI, and
    # says why in its own warnings (Kineto: "CUPTI initialization failed")
    if ! jget "$R/kineto_b.kernels.json" 'len(d["kernels"])' >/dev/null 2>&1; then
        result "Kineto parity: GPU events in the profiler's trace" \
            "none; the profiler said: $(grep -iE 'cupti|subscri' "$R/torch.out" | head -3 | cut -c1-200 | tr '\n' ' ')" \
            "> 0" FAIL
    fi
    # the critical paths of both windows: their sync-dependency edges per
    # step (Kineto writes sync rows only where torch_parity.py could ask)
    ctl --json analyze critical-path "$id" --max-edges 100000 >"$R/torch_a.critpath.json"
    ctl --json analyze critical-path "$id2" --max-edges 100000 >"$R/kineto_b.critpath.json"
    sync=yes
    grep -q 'kineto_sync 0' "$R/torch.out" && sync=no
    $CMP parity --results "$RES" --tag "$tag" --trace "$D/kineto.json" \
        --live-critpath "$R/torch_a.critpath.json" --import-critpath "$R/kineto_b.critpath.json" \
        --sync-expected $sync \
        --steps-live "$STEPS" --steps-import "$STEPS" \
        --live-kernels "$R/torch_a.kernels.json" --live-temporal "$R/torch_a.temporal.json" \
        --live-idle "$R/torch_a.idle.json" --import-kernels "$R/kineto_b.kernels.json" \
        --import-temporal "$R/kineto_b.temporal.json" --import-idle "$R/kineto_b.idle.json"
    gzip -c "$D/kineto.json" >"$R/kineto_b.json.gz"
}

# ---- step 3: Python frames above the GEMM launches of phase A
step_pyframes() {
    [ -s "$R/torch.launches.folded" ] || { echo "no capture of the training process"; return 1; }
    if [ $MODE = device ]; then
        $CMP pyframes --results "$RES" --tag "Python frames" --what "cuBLAS GEMM" \
            --folded "$R/torch.launches.folded" --kernel-regex '(?i)gemm|nvjet|cutlass|xmma' \
            --python-regex 'forward \(.*torch_parity\.py' --min $((2 * STEPS))
    else
        $CMP pyframes --results "$RES" --tag "Python frames (stand-in)" --what "fake GEMM" \
            --folded "$R/torch.launches.folded" --kernel-regex 'sgemm' \
            --python-regex 'forward \(.*fake_parity\.py' --min $((2 * STEPS))
    fi
}

# ---- step 4: PC sampling
step_pc() {
    local id s p dis=no
    PC_T0=$(date +%s)
    find_nvdisasm
    [ $MODE = stand-in ] && NVDISASM=$W/nvdisasm
    [ -n "$NVDISASM" ] && dis=yes
    if [ $MODE = device ]; then
        start_prog pc "${CENV[@]}" GPUPROF_CUPTI_FEATURES=default,pc GPUPROF_CUPTI_PC_DUTY=100 -- \
            "$W/cupti_real" 1500 --gemm --wait
    else
        if [ ! -f "$PC_CUBIN" ]; then
            skip_results "no $PC_CUBIN (no nvcc at build time)" \
                "PC sampling: PC samples through the daemon" "PC sampling slowdown"
            for p in pc-idle pc-window "${PC_PERIODS[@]/#/pc}"; do
                skip_results "no $PC_CUBIN" "$(pc_variant_name "$p")"
            done
            return 0
        fi
        start_prog pc "${CENV[@]}" GPUPROF_CUPTI_FEATURES=default,pc GPUPROF_CUPTI_PC_DUTY=100 -- \
            "$APP" --cuda "$FAKE_CUDA" --wait --launches 30 --kernel gpuprof_pc_kernel:20000 \
            --pc "$PC_CUBIN"
    fi
    wait_line "$R/pc.out" '^ready' 30 || { echo "no ready line"; return 1; }
    wait_probes
    echo go >&7
    exec 7>&-
    wait $PROG_PID
    echo "exit $?" >>"$R/pc.out"
    settle
    # the library's PC counters for this run (its connection is gone:
    # status keeps them in pc_closed): why no samples, if none
    status_json "$R/pc.status.json"
    "$PY" - "$R/pc.status.json" "$PROG_PID" >"$R/pc.library.json" <<'PY'
import json, sys
st, pid = json.load(open(sys.argv[1])).get("cupti", {}), int(sys.argv[2])
for e in st.get("peer_list", []) + st.get("pc_closed", []):
    if e.get("pid") == pid and "pc_library" in e:
        print(json.dumps(e["pc_library"], indent=1))
        break
else:
    print("{}")
PY
    # the rates are measured even when the capture fails: they do not need it
    if id=$(cap $PROG_PID 60000 pc); then
        ctl folded "$id" --weight stalls >"$R/pc.stalls.folded"
        s=$(awk '$1 == "pc" && $2 == "samples" { print $3 }' "$R/pc.out")
        $CMP pc --results "$RES" --tag "PC sampling" --folded "$R/pc.stalls.folded" \
            --kernel-regex 'sgemm|pc_kernel' --sass $dis ${s:+--program-samples $s} \
            --library "$R/pc.library.json"
    fi
    pc_rates
    [ -n "$id" ]
}

# The GEMM loop's slowdown under PC sampling at the default duty cycle
# (judged), and beside it, shown, variants that tell apart where the cost
# comes from (docs/collectors.md, "PC sampling", "What PC sampling costs"):
#  pc-idle    enabled and configured, never started
#             (GPUPROF_CUPTI_PC_FIRST_MS past the run): the cost of a
#             context that only has sampling enabled
#  pc-window  enabled only while a window is open (GPUPROF_CUPTI_PC_ENABLE)
#  pcN        the default duty at a longer sampling period (PC_PERIODS):
#             what the samples' volume costs while a window is open
# Rounds of one run of each label, rotated each round, as many as the
# step's time allows (up to 3); after each round the library's PC
# counters of its runs (status keeps the last closed ones) go to
# res/pc_rate.lib.jsonl, and pc_variants.py reports per-round ratios
# against that round's off run, with the counters.
pc_rates() {
    local round t0 t_round=0 left labels=(off pc pc-idle pc-window) i n l p
    for p in "${PC_PERIODS[@]}"; do labels+=("pc$p"); done
    n=${#labels[@]}
    : >"$R/pc_rate.out"
    : >"$R/pc_rate.lib.jsonl"
    for round in 1 2 3; do
        left=$((${STEP_LIMIT_S:-90} - $(date +%s) + PC_T0))
        if [ $round -gt 1 ] && [ $left -lt $((t_round + 15)) ]; then
            echo "round $round not started: ${left}s of the step left, a round takes ${t_round}s"
            break
        fi
        t0=$(date +%s)
        for i in $(seq 0 $((n - 1))); do
            l=${labels[$(((i + round - 1) % n))]}
            # shellcheck disable=SC2046  # the variant's words
            pc_rate_run "$l" "$round" $(pc_variant_env "$l")
        done >>"$R/pc_rate.out"
        pc_round_libs "$round"
        t_round=$(($(date +%s) - t0))
    done
    local judge=no info=no stand_in=--stand-in
    [ $MODE = device ] && judge=yes info=info stand_in=
    $CMP ratio --results "$RES" --file "$R/pc_rate.out" --metric gemm_per_s --base off --test pc \
        --min-pct 98 --as slowdown --name "PC sampling slowdown of a GEMM loop (default duty)" \
        --judge $judge
    for l in pc-idle pc-window "${PC_PERIODS[@]/#/pc}"; do
        $CMP ratio --results "$RES" --file "$R/pc_rate.out" --metric gemm_per_s --base off \
            --test "$l" --min-pct 98 --as slowdown --name "$(pc_variant_name "$l")" --judge $info
    done
    "$PY" "$SRC/scripts/device/pc_variants.py" --results "$RES" --file "$R/pc_rate.out" \
        --libs "$R/pc_rate.lib.jsonl" --base off --labels "${labels[@]}" ${stand_in:+"$stand_in"}
}

# pc_variant_env LABEL: the library's environment of a variant
pc_variant_env() {
    case $1 in
    off) echo GPUPROF_CUPTI_FEATURES=default ;;
    pc) echo GPUPROF_CUPTI_FEATURES=default,pc ;;
    pc-idle) echo GPUPROF_CUPTI_FEATURES=default,pc GPUPROF_CUPTI_PC_FIRST_MS=3600000 ;;
    pc-window) echo GPUPROF_CUPTI_FEATURES=default,pc GPUPROF_CUPTI_PC_ENABLE=window ;;
    pc*) echo GPUPROF_CUPTI_FEATURES=default,pc GPUPROF_CUPTI_PC_PERIOD="${1#pc}" ;;
    esac
}

pc_variant_name() {
    case $1 in
    pc-idle) echo "PC sampling enabled but never started (diagnostic: GPUPROF_CUPTI_PC_FIRST_MS past the run): slowdown of a GEMM loop" ;;
    pc-window) echo "PC sampling enabled per window (GPUPROF_CUPTI_PC_ENABLE=window, default duty): slowdown of a GEMM loop" ;;
    *) pc_period_name "${1#pc}" ;;
    esac
}

pc_period_name() { echo "PC sampling at GPUPROF_CUPTI_PC_PERIOD=$1 (2^$1 cycles, default duty): slowdown of a GEMM loop"; }

# pc_round_libs ROUND: the library's PC counters of that round's runs
# (lines "LABEL pid PID ROUND" of pc_rate.out), from status's pc_closed,
# as JSON lines into pc_rate.lib.jsonl
pc_round_libs() {
    settle
    status_json "$W/pcr.status.json"
    "$PY" - "$W/pcr.status.json" "$R/pc_rate.out" "$1" >>"$R/pc_rate.lib.jsonl" <<'PY'
import json, sys
st = json.load(open(sys.argv[1])).get("cupti", {})
libs = {e.get("pid"): e["pc_library"] for e in st.get("peer_list", []) + st.get("pc_closed", [])
        if "pc_library" in e}
for line in open(sys.argv[2]):
    w = line.split()
    if len(w) == 4 and w[1] == "pid" and w[3] == sys.argv[3] and int(w[2]) in libs:
        print(json.dumps({"label": w[0], "round": int(w[3]), "pid": int(w[2]),
                          "lib": libs[int(w[2])]}))
PY
}

# pc_rate_run LABEL ROUND ENV...: one run of the GEMM loop (the stand-in's
# PC kernel without a GPU) with ENV, as "LABEL gemm_per_s X" (and the
# batches' figures) and "LABEL pid PID ROUND"; a run that dies (one did:
# a double free) says so on a LABEL_exit line. 2 s timed: two windows'
# periods at the defaults (cupti_real --gemm)
pc_rate_run() {
    local label=$1 round=$2 rc pid
    shift 2
    if [ $MODE = device ]; then
        env "${CENV[@]}" "$@" "$W/cupti_real" 2000 --gemm >"$W/pcr.out" 2>"$W/pcr.err" &
        pid=$!
        wait $pid
        rc=$?
        awk -v l="$label" '/^gemm_(per_s|batch_median_per_s|batch_slow_pct) / { print l, $0 }' "$W/pcr.out"
    else
        env "${CENV[@]}" "$@" "$APP" --cuda "$FAKE_CUDA" --launches 300 \
            --kernel gpuprof_pc_kernel:20000 --pc "$PC_CUBIN" >"$W/pcr.out" 2>"$W/pcr.err" &
        pid=$!
        wait $pid
        rc=$?
        awk -v l="$label" '/^cpu_ns_per_iteration/ { print l, "gemm_per_s", 1e9 / $2 }' "$W/pcr.out"
    fi
    echo "$label pid $pid $round"
    [ $rc = 0 ] || echo "${label}_exit $rc $(tail -c 160 "$W/pcr.err" | tr '\n\t' '  ')"
}

# ---- step 5: a launch-heavy PyTorch loop with and without the library
# The target is the library at its defaults (cupti: the duty cycle); the
# other configurations of scripts/device/cupti_variants.txt marked "rate"
# are shown: collecting all the time (the figure the default's arithmetic
# starts from, docs/collectors.md, "What it costs"), each part of the
# library alone, and cupti-off (loaded but off), the noise floor printed
# on every line. Processes differ by 10 % and more, so the figure is the
# median over rounds of each round's ratio to "without" (torch_rate.py
# --plan: one run per configuration a round, rotated; each run a fork of
# one Python with torch imported, so a run costs CUDA's start and its 1.5
# s of warm-up and measurement, about 3 s on an H200). At least 3 rounds,
# more while RATE_S (85 s) allows (the first 3 within the step's limit);
# should forking fail, one process a run.
step_rate() {
    local label env v limit hard t0 left
    : >"$W/rate.plan"
    echo without >>"$W/rate.plan"
    while read -r label env; do
        read -r -a v <<<"$env"
        (IFS=$'\t'; echo "$label"$'\t'"${CENV_LIB[*]}"$'\t'"${v[*]}") >>"$W/rate.plan"
    done < <(cupti_variants rate)
    hard=$((${STEP_LIMIT_S:-130} - 20))
    limit=${RATE_S:-85}
    [ "$limit" -gt $hard ] && limit=$hard
    t0=$(date +%s)
    "$PY" "$SRC/scripts/device/torch_rate.py" --plan "$W/rate.plan" --rounds 3 8 --limit "$limit" \
        --hard $hard >"$R/rate.out" 2>"$R/rate.err"
    if ! grep -q '^without steps_per_s' "$R/rate.out"; then
        left=$((hard - ($(date +%s) - t0)))
        echo "no run by fork (res/rate.err): one process a run, ${left}s left"
        mv "$R/rate.out" "$R/rate.fork.out"
        [ $left -gt 20 ] && "$PY" "$SRC/scripts/device/torch_rate.py" --plan "$W/rate.plan" --spawn \
            --rounds 3 3 --limit $left --hard $left >"$R/rate.out" 2>>"$R/rate.err"
    fi
    $CMP ratio --results "$RES" --file "$R/rate.out" --metric steps_per_s --base without --test cupti \
        --floor cupti-off --min-pct 98 \
        --name "PyTorch inference loop throughput with the library (default duty cycle)"
    while read -r label env; do
        [ "$label" = cupti ] && continue
        $CMP ratio --results "$RES" --file "$R/rate.out" --metric steps_per_s --base without \
            --test "$label" --floor cupti-off --min-pct 98 --judge info \
            --name "{what}: PyTorch inference loop throughput"
    done < <(cupti_variants rate)
}

# ---- step 6: NCCL
step_nccl() {
    local v id pid rc
    v=$("$PY" -c 'import torch, torch.distributed as d; assert d.is_nccl_available(); v = torch.cuda.nccl.version(); print(".".join(map(str, v)) if isinstance(v, tuple) else v)' 2>/dev/null)
    if [ -z "$v" ]; then
        result "NCCL" "not present (torch.distributed without NCCL, or no torch)" "observed" INFO
        return 0
    fi
    cat >"$W/nccl1.py" <<'PY'
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("nccl", init_method="file://" + sys.argv[1], rank=0, world_size=1)
x = torch.ones(4 << 20, device="cuda")
for _ in range(50):
    dist.all_reduce(x)
torch.cuda.synchronize()
time.sleep(0.6)
print("all_reduce 50", flush=True)
open(sys.argv[2], "w").close()
time.sleep(30)
PY
    rm -f "$W/nccl.done"
    env "${CENV[@]}" "$PY" "$W/nccl1.py" "$W/nccl.rdv" "$W/nccl.done" >"$R/nccl.out" 2>&1 &
    pid=$!
    for _ in $(seq 600); do [ -f "$W/nccl.done" ] || ! kill -0 $pid 2>/dev/null && break; sleep 0.1; done
    settle
    id=$(cap $pid 60000 nccl)
    kill $pid 2>/dev/null
    wait $pid
    ctl --json analyze kernels "$id" --num-kernels 100000 --duration-ratio 1 >"$R/nccl.kernels.json"
    ctl --json analyze comm "$id" >"$R/nccl.comm.json" 2>"$R/nccl.comm.err"
    rc=$?
    result "NCCL $v, one rank" "$(jget "$R/nccl.kernels.json" \
        'sum(k["count"] for k in d["kernels"] if "nccl" in k["name"].lower())') NCCL kernels captured for 50 all_reduce; analyze comm rc $rc $(head -c 120 "$R/nccl.comm.err")" \
        "observed" INFO
}

# ---- step 7: cost per launch beyond the probes
# ev_cost: what the library (default features: its event and sync
# callbacks, CUDA_EVENT and sync activity) adds to cudaEventRecord +
# cudaStreamWaitEvent, against the library loaded but off, at its default
# duty cycle (on) and collecting all the time (full); no daemon listens
# (its batches are built and dropped), 3 rounds rotated, paired by round
ev_cost() {
    local r m e
    for r in 1 2 3; do
        echo "round $r order $(rotated $r off on full)"
        for m in $(rotated $r off on full); do
            e=("${CENV_LIB[@]}" GPUPROF_CUPTI_SOCKET="$W/none.sock")
            [ $m = off ] && e+=(GPUPROF_CUPTI=0)
            [ $m = full ] && e+=(GPUPROF_CUPTI_DUTY=100)
            if [ $MODE = device ]; then
                timeout 8 env "${e[@]}" "$W/cupti_real" 20000 --evbench | awk -v m=$m '/^ns_per_event_pair/ { print m, $0 }'
            else # a launch, two records, a wait and an event synchronize per iteration
                env "${e[@]}" "$APP" --cuda "$FAKE_CUDA" --launches 1000 --kernel k:1000 \
                    --events k_c:1000 | awk -v m=$m '/^cpu_ns_per_iteration/ { print m, $0 }'
            fi
        done
    done >"$R/ev_cost.out"
    $CMP added --results "$RES" --file "$R/ev_cost.out" --base off --test on \
        --metric "$([ $MODE = device ] && echo ns_per_event_pair || echo cpu_ns_per_iteration)" \
        --name "launch cost: cudaEventRecord + cudaStreamWaitEvent with the library (default) vs off" \
        --judge "$([ $MODE = device ] && echo yes || echo no)"
    $CMP added --results "$RES" --file "$R/ev_cost.out" --base off --test full \
        --metric "$([ $MODE = device ] && echo ns_per_event_pair || echo cpu_ns_per_iteration)" \
        --name "launch cost: cudaEventRecord + cudaStreamWaitEvent with the library (duty 100) vs off" \
        --judge "$([ $MODE = device ] && echo yes || echo no)"
}

# the cost per launch: bench/gpu/real_cuda.sh's rounds (the daemon's
# probes alone, then the library in each configuration of
# scripts/device/cupti_variants.txt marked "cost", rotated), judged on
# the median of the per-round differences; 3 rounds and more while COST_S
# (90 s) allows, each run 2 x 100000 launches (about one period of the
# default duty cycle per API)
step_cost() {
    local t0 lim ls
    t0=$(date +%s)
    if [ $MODE = device ]; then
        [ -x "$W/cupti_real" ] && ev_cost
        # the bench's own limit leaves time for its last round's figures
        lim=$((${STEP_LIMIT_S:-200} - ($(date +%s) - t0) - 15))
        [ $lim -lt 30 ] && lim=30
        ls=${COST_S:-90}
        [ "$ls" -gt $((lim - 10)) ] && ls=$((lim - 10))
        BUN=$BUN LIMIT_S=$ls MAX_ROUNDS=8 timeout $lim "$SRC/bench/gpu/real_cuda.sh" 100000 3 \
            >"$R/real_cuda.out" 2>&1
        $CMP cost --results "$RES" --file "$R/real_cuda.out"
        return
    fi
    ev_cost
    # stand-in: cuda_app's thread CPU per launch with the daemon's probes on
    # the fake driver, in real_cuda.sh's per-run format
    local r m label env v
    declare -A venv
    local configs=(with)
    while read -r label env; do
        configs+=("$label")
        venv[$label]=$env
    done < <(cupti_variants cost)
    for r in 1 2 3; do
        echo "round $r order $(rotated $r "${configs[@]}")"
        for m in $(rotated $r "${configs[@]}"); do
            v=()
            [ $m = with ] || read -r -a v <<<"${venv[$m]} ${CENV_LIB[*]}"
            env "${v[@]}" "$APP" --cuda "$FAKE_CUDA" --launches 3000 --kernel k:1000 |
                awk -v m=$m -v r=$r '/^cpu_ns_per_iteration/ { print m, r, "drv ns_per_launch", $2, "cpu_ns_per_launch", $2 }'
        done
    done >"$R/real_cuda.out"
    $CMP cost --results "$RES" --file "$R/real_cuda.out" --judge no
}

if [ "${1:-}" = --step ]; then
    # whatever a step leaves running when it ends or fails goes with it
    kill_jobs() {
        local j
        j=$(jobs -p)
        [ -z "$j" ] || kill $j 2>/dev/null
    }
    trap kill_jobs EXIT
    . "$SRC/scripts/device/common.sh"
    [ $MODE = device ] && find_cupti
    "step_$2"
    exit $?
fi

# ---- main
. scripts/device/common.sh
TORCH=
rm -rf "$R"
mkdir -p "$R"
: >"$RES"
chmod 755 "$W"
DPID=
trap '[ -n "$DPID" ] && kill $DPID 2>/dev/null; rm -rf "$W"' EXIT
say "gpu_checks ($MODE), results in $OUT"
for f in "$GPD" "$CTL" "$LIB" ${SB:+"$FAKE_CUPTI" "$FAKE_CUDA" "$APP"}; do
    [ -e "$f" ] || { echo "missing $f (bundle.sh build-rel with the CUPTI headers; --stand-in: build with them)"; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "run as root (the launch probes, PC sampling)"; exit 2; }
if [ $MODE = device ]; then
    find_cupti
    export CUPTI
    {
        uname -r
        nvidia-smi -L 2>&1 | head -2
        nvidia-smi --query-gpu=driver_version,compute_cap --format=csv,noheader 2>&1 | head -1
        echo "libcupti: ${CUPTI:-none}"
        "$PY" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tail -1
    } | tee "$R/machine.txt"
    grep -q 'available True' "$R/machine.txt" && TORCH=cuda
    grep -q '^python .* torch ' "$R/machine.txt" && [ -z "$TORCH" ] && TORCH=nocuda
    [ -n "$CUPTI" ] || { echo "no libcupti.so.13"; exit 2; }
    # -arch=native, else the compute capability nvidia-smi names
    sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
    for arch in native ${sm:+sm_$sm}; do
        timeout 120 nvcc -O2 -arch=$arch -o "$W/cupti_real" scripts/device/cupti_real.cu \
            >>"$R/nvcc.log" 2>&1 && break
    done
    [ -x "$W/cupti_real" ] || echo "nvcc failed (res/nvcc.log)"
    # the SASS of the PC sampling kernel, for reading its offsets by hand
    command -v cuobjdump >/dev/null && [ -x "$W/cupti_real" ] &&
        cuobjdump -sass -fun gpuprof_cupti_sgemm "$W/cupti_real" >"$R/sgemm.sass" 2>&1
fi
printf 'sampling.cpu = true\nsampling.python = true\nsymbols.lines = false\ncupti.socket = %s\n' \
    "$CSOCK" >"$W/gpuprofd.conf"
if [ $MODE = stand-in ]; then
    # nvdisasm -c's shape: every 16-byte offset of the stand-in's PC kernel
    {
        echo '#!/bin/sh'
        echo '[ "$1" = -c ] || exit 3'
        echo 'echo ".text.gpuprof_pc_kernel:"'
        echo 'i=0; while [ $i -lt 4096 ]; do printf "        /*%04x*/                   FAKE.OP R%d ;\n" $i $((i / 16)); i=$((i + 16)); done'
    } >"$W/nvdisasm"
    chmod 755 "$W/nvdisasm"
    echo "cupti.nvdisasm = $W/nvdisasm" >>"$W/gpuprofd.conf"
fi
# start_daemon N: gpuprofd in the background, its log res/daemon.N.log
start_daemon() {
    LD_LIBRARY_PATH=$LIBDIR "$GPD" -f -v -s "$SOCK" -d "$W/state" -c "$W/gpuprofd.conf" \
        >"$R/daemon.$1.log" 2>&1 &
    DPID=$!
    for _ in $(seq 150); do ctl version >/dev/null 2>&1 && break; sleep 0.1; done
    ctl --json status >"$R/status.$1.json" || { echo "daemon did not start"; tail -20 "$R/daemon.$1.log"; exit 1; }
    "$PY" -c 'import json,sys; st=json.load(open(sys.argv[1])); print("collectors:", ", ".join("%s %s" % (c["name"], c["state"]) for c in st["collectors"]), "| cupti", st["cupti"]["state"])' "$R/status.$1.json"
}

# stop_daemon N: its account (status), then stop it
stop_daemon() {
    ctl --json status >"$R/status.$1.end.json"
    "$PY" - "$R/status.$1.end.json" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
cu = st["cupti"]
print("cupti: records", {k: v for k, v in cu["records"].items() if v},
      "drops", {k: v for k, v in cu["drops"].items() if v} or 0,
      "library_drops", {k: v for k, v in cu["library_drops"].items() if v} or 0,
      "closed", {k: v for k, v in cu["closed"].items() if v}, "seq_gaps", cu["seq_gaps"])
if any(cu.get("library_idle", {}).values()):
    print("cupti: idle subscription (GPUPROF_CUPTI_IDLE=unsubscribe)", cu["library_idle"])
for c in st["collectors"]:
    if c["name"] in ("cpu", "gpu"):
        print("%s: %s events %s drops %s lost %s" % (c["name"], c["state"], c.get("events"),
                                                    c.get("drops"), c.get("lost", "-")))
PY
    kill $DPID
    wait $DPID
    echo "daemon exit $? ($(grep -c '^<[0-3]>' "$R/daemon.$1.log") error lines in res/daemon.$1.log)"
    DPID=
}

start_daemon 1

# run NAME LIMIT_S MIN_S TARGETS...: step NAME under timeout, unless fewer
# than MIN_S seconds of the budget are left (its TARGETS then SKIP); the
# step sees its limit as STEP_LIMIT_S
run() {
    local name=$1 limit=$2 min=$3 left rc t x
    shift 3
    left=$((BUDGET_S - $(elapsed)))
    if [ $left -lt "$min" ]; then
        say "$name: skipped, ${left}s of the budget left"
        skip_results "out of the wall budget" "$@"
        return
    fi
    [ "$limit" -gt $left ] && limit=$left
    t=$(date +%s)
    STEP_LIMIT_S=$limit timeout -k 5 "$limit" "$SRC/scripts/device/gpu_checks.sh" --step "$name" \
        >"$R/step_$name.log" 2>&1
    rc=$?
    say "$name: exit $rc in $(($(date +%s) - t))s (res/step_$name.log)"
    [ $rc = 124 ] && result "step $name" "timed out after ${limit}s" "finishes" FAIL
    [ $rc != 0 ] && [ $rc != 124 ] && tail -3 "$R/step_$name.log" | cut -c1-200
    # a target the step did not reach is a failure, not a silence
    for x in "$@"; do
        cut -f1 "$RES" | grep -qF -- "$x" ||
            result "$x" "not reached: step $name exit $rc: $(tail -1 "$R/step_$name.log" | cut -c1-120)" "-" FAIL
    done
    return 0
}

# the targets of each step (name prefixes of its result lines)
T_CUDA=("CUDA program: kernel counts" "CUDA program: folded gpu-time" "CUDA program: kernel GPU time"
    "CUDA program: analyses")
T_PARITY=("Kineto parity" "cupti release")
T_PYF=("Python frames")
T_PC=("PC sampling: PC samples" "PC sampling: pcOffset" "PC sampling slowdown")
T_RATE=("PyTorch inference loop throughput")
T_COST=("launch cost beyond the probes")
if [ $MODE = device ] && [ ! -x "$W/cupti_real" ]; then
    skip_results "cupti_real did not build (res/nvcc.log)" "${T_CUDA[@]}" "${T_PC[@]}"
else
    run cuda 90 30 "${T_CUDA[@]}"
fi
if [ $MODE = device ] && [ "$TORCH" != cuda ]; then
    skip_results "no PyTorch with CUDA" "${T_PARITY[@]}" "${T_PYF[@]}"
else
    run parity 150 60 "${T_PARITY[@]}"
    run pyframes 60 10 "${T_PYF[@]}"
    # the heaviest GEMM launch stacks: Python frames, then the kernel
    grep -E '^ +[0-9]+ ' "$R/step_pyframes.log" | head -3 | cut -c1-300
fi
# the cost per launch needs the machine to itself: real_cuda.sh starts
# daemons of its own
if [ $MODE = device ]; then
    stop_daemon 1
    run cost 200 60 "${T_COST[@]}"
    start_daemon 2
fi
if [ $MODE = stand-in ] || [ -x "$W/cupti_real" ]; then
    run pc 90 40 "${T_PC[@]}"
fi
if [ $MODE = device ] && [ "$TORCH" = cuda ]; then
    run rate 130 60 "${T_RATE[@]}"
else
    skip_results "no PyTorch" "${T_RATE[@]}"
fi
if [ $MODE = device ]; then
    run nccl 45 45
    stop_daemon 2
else
    run cost 60 20 "${T_COST[@]}"
    stop_daemon 1
fi

$CMP summary --results "$RES" | tee "$OUT/summary.txt"
rc=${PIPESTATUS[0]}
echo "wall $(elapsed)s"
exit "$rc"
