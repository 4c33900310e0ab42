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
# The drop-ins docs/operations.md tells operators to add (systemctl edit
# gpuprofd: TCP for the metrics endpoint and the uploads, a runtime
# directory): each ```ini block holding [Service], verified as a drop-in of
# the installed unit (found through the unit path), with no message either.
mkdir "$tmp/gpuprofd.service.d"
awk -v dir="$tmp/gpuprofd.service.d" '
	/^ *```ini/ { inb = 1; buf = ""; next }
	inb && /^ *```/ { inb = 0; if (buf ~ /\[Service\]/) { n++; f = sprintf("%s/doc%02d.conf", dir, n); printf "%s", buf > f; close(f) } next }
	inb { sub(/^   /, ""); buf = buf $0 "\n" }
	END { print n + 0 }' "$GPUPROF_SOURCE/docs/operations.md" > "$tmp/ndropins"
n=$(cat "$tmp/ndropins")
[ "$n" -ge 3 ] || { echo "expected the documented drop-ins in operations.md, found $n"; exit 1; }
out=$(SYSTEMD_UNIT_PATH="$tmp:" systemd-analyze verify --man=no "$tmp/gpuprofd.socket" "$tmp/gpuprofd.service" 2>&1) || {
	echo "$out"; exit 1; }
if [ -n "$out" ]; then echo "the documented drop-ins: $out"; exit 1; fi
# and the unit path really is read: a broken drop-in is reported
printf '[Service]\nNoSuchKey=1\n' > "$tmp/gpuprofd.service.d/zz-broken.conf"
out=$(SYSTEMD_UNIT_PATH="$tmp:" systemd-analyze verify --man=no "$tmp/gpuprofd.service" 2>&1 || true)
case $out in *NoSuchKey*) ;; *) echo "drop-ins in $tmp not read by systemd-analyze: $out"; exit 1 ;; esac
echo "2 passed, 0 failed ($n documented drop-ins)"
