#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job, end to end on a bundled default: install what is missing,
# build, start gpuprofd on a private socket, profile a demo workload with
# the always-on CPU sampler, and show what came out.
# Usage: scripts/demo.sh [SECONDS]   (as root: BPF sampling needs it)
set -eu
cd "$(dirname "$0")/.."
secs=${1:-3}
sh scripts/deps.sh
BUILD=${GPUPROF_DEMO_BUILD:-build}
[ -f "$BUILD/build.ninja" ] || meson setup "$BUILD" -Dbuildtype=release >/dev/null
ninja -C "$BUILD" daemon/gpuprofd cli/gpuprofctl tests/workloads/demo_workload \
	bench/import/gen_kineto >/dev/null

work=$(mktemp -d /tmp/gpuprof-demo.XXXXXX)
sock="$work/gpuprofd.sock"
ctl="$BUILD/cli/gpuprofctl --socket $sock"
daemon_pid=""
workload_pid=""
cleanup() {
	[ -n "$workload_pid" ] && kill "$workload_pid" 2>/dev/null || true
	if [ -n "$daemon_pid" ]; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Starting gpuprofd on a private socket ($sock)"
"$BUILD/daemon/gpuprofd" --foreground --socket "$sock" --state-dir "$work/state" \
	--config /dev/null 2>"$work/gpuprofd.log" &
daemon_pid=$!
i=0
until $ctl version >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then cat "$work/gpuprofd.log"; exit 1; fi
	sleep 0.1
done
$ctl status

step "Running a demo workload (tests/workloads/demo_workload)"
"$BUILD/tests/workloads/demo_workload" 0 &
workload_pid=$!
echo "workload pid $workload_pid"

step "Flight recorder: the last second, cut from the always-on ring (no restart, no env vars)"
sleep 1.5
$ctl capture --pid "$workload_pid" --last 1s

step "Recording forward for ${secs}s: gpuprofctl capture --pid $workload_pid --duration ${secs}s --out folded.txt"
$ctl capture --pid "$workload_pid" --duration "${secs}s" --out "$work/folded.txt"
kill "$workload_pid" 2>/dev/null || true
wait "$workload_pid" 2>/dev/null || true
workload_pid=""

step "Hottest stacks (folded format, as flamegraph.pl and speedscope read it)"
if [ -s "$work/folded.txt" ]; then
	sort -t' ' -k2 -nr "$work/folded.txt" 2>/dev/null | awk '{ n = $NF; $NF = ""; printf "%8d  %s\n", n, $0 }' | sort -nr | head -8
	total=$(awk '{ s += $NF } END { print s + 0 }' "$work/folded.txt")
	echo "($total samples in $(wc -l <"$work/folded.txt") unique stacks)"
else
	echo "(no samples: is the CPU collector attached? see the status above)"
fi

step "Distributed training trace: 4 ranks of PyTorch-profiler (Kineto) JSON from bench/import/gen_kineto"
"$BUILD/bench/import/gen_kineto" --iters 20 --ranks 4 -o "$work/rank" >/dev/null
ls "$work"/rank*
$ctl import "$work"/rank* --name demo-4-ranks
trace_id=$($ctl --json list | awk -F': ' '/"id"/ { gsub(",", "", $2); id = $2 } END { print id }')

step "Temporal breakdown (HTA semantics): gpuprofctl analyze temporal $trace_id"
$ctl analyze temporal "$trace_id"

step "Idle time per stream: gpuprofctl analyze idle $trace_id"
$ctl analyze idle "$trace_id" | head -30

step "Captures held by the daemon"
$ctl list
