#!/bin/sh
# SPDX-License-Identifier: MIT
# Always-on cost of the GPU collector's library watcher on every syscall:
# bench_syscall times N getppid() calls with no daemon, with gpuprofd on
# the narrow mmap hook (gpu.watcher = auto) and with it on the sys_exit
# fallback (gpu.watcher = sys_exit). CPU sampling is off in both daemon
# runs so only the watchers differ. Needs root.
#   bench/gpu/watcher.sh BUILD_DIR [N]
set -eu
build=${1:?usage: watcher.sh BUILD_DIR [N]}
n=${2:-10000000}
bench=$build/bench/gpu/bench_syscall
tmp=$(mktemp -d)
dpid=
trap 'kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; rm -rf "$tmp"' EXIT

# "WALL CPU": ns per syscall, wall clock and the calling thread's CPU time
one() { "$bench" "$n" | sed -n 's/^ns_per_syscall //p; s/^cpu_ns_per_syscall //p' | tr '\n' ' '; }

# with WATCHER: starts the daemon, prints "WALL CPU HOOK", stops it
with() {
	printf 'sampling.cpu = off\ngpu.watcher = %s\n' "$1" > "$tmp/conf"
	rm -rf "$tmp/state"
	"$build/daemon/gpuprofd" --foreground --socket "$tmp/sock" --state-dir "$tmp/state" \
		--config "$tmp/conf" 2> "$tmp/log" &
	dpid=$!
	i=0
	until "$build/cli/gpuprofctl" --socket "$tmp/sock" status > /dev/null 2>&1; do
		i=$((i + 1)); [ $i -lt 100 ] || { cat "$tmp/log"; exit 1; }; sleep 0.1
	done
	hook=$("$build/cli/gpuprofctl" --socket "$tmp/sock" --json status |
		python3 -c 'import json,sys; g=[c for c in json.load(sys.stdin)["collectors"] if c["name"]=="gpu"][0]; print(g["state"] + "," + g.get("mmap_hook", "?"))')
	echo "$(one) $hook"
	kill "$dpid"; wait "$dpid" 2>/dev/null || true; dpid=
}

set -- $(one); base=$1 base_cpu=$2
set -- $(with auto); narrow=$1 narrow_cpu=$2 narrow_hook=$3
set -- $(with sys_exit); wide=$1 wide_cpu=$2 wide_hook=$3
echo "getppid() x $n, best of 3 rounds each; ns/syscall wall (thread CPU)"
echo "without daemon:               $base ($base_cpu)"
echo "daemon, gpu.watcher=auto:     $narrow ($narrow_cpu) gpu: $narrow_hook"
echo "daemon, gpu.watcher=sys_exit: $wide ($wide_cpu) gpu: $wide_hook"
python3 -c "print('added, auto:     %.1f (%.1f) ns/syscall' % ($narrow - $base, $narrow_cpu - $base_cpu)); print('added, sys_exit: %.1f (%.1f) ns/syscall' % ($wide - $base, $wide_cpu - $base_cpu))"
