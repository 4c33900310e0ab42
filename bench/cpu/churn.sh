#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A host full of short-lived processes, as a build host or a CI runner is:
# WORKERS loops (default 2), each compiling a small C file with `cc -O2`
# (cc, cc1, as, collect2, ld: five programs a round), then running
# /bin/true, a shell pipeline and `python3 -c` (when python3 is there), until
# killed or for SECONDS when given. Used by bench-cpu-overhead --churn to
# measure what the CPU sampler costs when nearly every sample lands in a
# process it has never seen.
#
#   bench/cpu/churn.sh [WORKERS] [SECONDS]
#
# The load it makes depends on the machine; the bench reports the rate of
# new processes it saw (status "unwind.processes_seen") next to the cost.
set -eu

workers=${1:-2}
secs=${2:-0}
dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuprof-churn.XXXXXX")
pids=
stop()
{
	trap - INT TERM
	# each worker is a process group of its own (set -m): its compiler
	# goes with it, before the directory does
	for p in $pids; do
		kill -TERM -- "-$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$dir"
	exit 0
}
trap stop INT TERM

cat >"$dir/small.c" <<'EOF'
#include <stdio.h>
#include <string.h>
static int cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}
int main(int argc, char **argv)
{
	qsort(argv, (size_t)argc, sizeof(*argv), cmp);
	for (int i = 0; i < argc; i++)
		printf("%d %s\n", i, argv[i]);
	return 0;
}
EOF
py=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

worker()
{
	n=0
	while :; do
		cc -O2 -o "$dir/small.$1" "$dir/small.c" -include stdlib.h
		"$dir/small.$1" b a >/dev/null
		/bin/true
		echo x | sort | wc -l >/dev/null
		[ -n "$py" ] && "$py" -c 'import json; json.dumps(list(range(1000)))'
		n=$((n + 1))
	done
}

set -m
i=0
while [ "$i" -lt "$workers" ]; do
	worker "$i" &
	pids="$pids $!"
	i=$((i + 1))
done
if [ "$secs" -gt 0 ]; then
	sleep "$secs"
	stop
fi
wait
