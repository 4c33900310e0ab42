#!/bin/sh
# SPDX-License-Identifier: MIT
# systemd-analyze verify on the units as installed, with ExecStart pointing
# at the binary just built (verify checks that the executable exists).
set -eu
unit_build_dir=$1
daemon_dir=$2
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|ExecStart=[^ ]*/gpuprofd|ExecStart=$daemon_dir/gpuprofd|" "$unit_build_dir/gpuprofd.service" > "$tmp/gpuprofd.service"
cp "$GPUPROF_SOURCE/systemd/gpuprofd.socket" "$tmp/"
grep -q "^Type=notify" "$tmp/gpuprofd.service"
grep -q "^WatchdogSec=" "$tmp/gpuprofd.service"
grep -q "^SystemCallFilter=@system-service bpf perf_event_open" "$tmp/gpuprofd.service"
grep -q "^SocketMode=0660" "$tmp/gpuprofd.socket"
grep -q "^SocketGroup=gpuprof" "$tmp/gpuprofd.socket"
grep -q "^ListenStream=/run/gpuprof/gpuprofd.sock" "$tmp/gpuprofd.socket"
for forbidden in ProtectKernelTunables= ProcSubset=pid ProtectProc=invisible PrivateTmp=yes; do
	if grep -q "^$forbidden" "$tmp/gpuprofd.service"; then
		echo "unit sets $forbidden, which breaks symbolization"; exit 1
	fi
done
out=$(systemd-analyze verify --man=no "$tmp/gpuprofd.socket" "$tmp/gpuprofd.service" 2>&1) || {
	echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "1 passed, 0 failed"
