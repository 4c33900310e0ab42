#!/bin/sh
# SPDX-License-Identifier: MIT
# Added latency per probed GPU launch: gpu_app (tests/gpu) times N
# cuLaunchKernel calls into the fake libcuda.so.1, first with no daemon,
# then with gpuprofd running (the launch uprobe attached, records going to
# the store). Prints ns per launch for both and the difference. Needs root.
# CONFIG: daemon config lines, e.g. "gpu.stack_sample = 1" (walk every
# launch's stack; the default walks 1 in 32 per call site).
#   bench/gpu/run.sh BUILD_DIR [N] [RUNTIME] [CONFIG]
set -eu
build=${1:?usage: run.sh BUILD_DIR [N] [RUNTIME] [CONFIG]}
n=${2:-1000000}
rt=${3:-cuda}
conf=${4:-}
case $rt in
cuda) lib=$build/tests/gpu/cuda/libcuda.so.1 ;;
ze) lib=$build/tests/gpu/ze/libze_loader.so.1 ;;
hip) lib=$build/tests/gpu/hip/libamdhip64.so.6 ;;
*) echo "runtime: cuda, ze or hip" >&2; exit 2 ;;
esac
app=$build/tests/gpu/gpu_app
tmp=$(mktemp -d)
trap 'kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; rm -rf "$tmp"' EXIT
dpid=

# "WALL CPU": ns per launch, wall clock and the launching thread's CPU time
# (the uprobe and its BPF program run on it; steadier on a busy machine).
figures() { sed -n 's/^ns_per_launch //p; s/^cpu_ns_per_launch //p' | tr '\n' ' '; }

set -- $(echo go | "$app" "$rt" "$lib" "$n" --bench | figures)
base=$1 base_cpu=$2
printf '%s\n' "$conf" > "$tmp/conf"
"$build/daemon/gpuprofd" --foreground --socket "$tmp/sock" --state-dir "$tmp/state" \
	--config "$tmp/conf" 2> "$tmp/log" &
dpid=$!
i=0
until "$build/cli/gpuprofctl" --socket "$tmp/sock" status > /dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 100 ] || { cat "$tmp/log"; exit 1; }; sleep 0.1
done
# The probes attach when the library is mapped; gpu_app waits for "go"
# 1 s after start so they are on before the timed loop.
set -- $( (sleep 1; echo go) | "$app" "$rt" "$lib" "$n" --bench | figures)
probed=$1 probed_cpu=$2
state=$("$build/cli/gpuprofctl" --socket "$tmp/sock" --json status |
	python3 -c 'import json,sys; g=[c for c in json.load(sys.stdin)["collectors"] if c["name"]=="gpu"][0]; print(g["state"], g["events"], g["drops"], g.get("lost"), g.get("stack_sample"), g.get("stacks_taken"))')
echo "runtime $rt, $n launches${conf:+, config: $conf}"
echo "without daemon: $base ns/launch (thread CPU $base_cpu)"
echo "with daemon:    $probed ns/launch (thread CPU $probed_cpu; gpu collector: state events drops lost stack_sample stacks_walked = $state)"
python3 -c "print('added:          %.1f ns/launch wall, %.1f ns/launch thread CPU' % ($probed - $base, $probed_cpu - $base_cpu))"
