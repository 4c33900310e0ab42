#!/bin/sh
# SPDX-License-Identifier: MIT
# gpuprofctl argument handling that needs no daemon: exit statuses and
# messages. Usage: cli_args.sh PATH/TO/gpuprofctl
ctl=$1
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Never reach a real daemon by accident.
export GPUPROF_SOCKET="$tmp/none.sock"

# expect STATUS PATTERN ARGS...: exit status and a grep pattern on stdout+stderr.
expect() {
	want=$1 pat=$2
	shift 2
	"$ctl" "$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "FAIL gpuprofctl $*: exit $got, want $want"; sed 's/^/  | /' "$tmp/out"
		fails=$((fails + 1))
	elif [ -n "$pat" ] && ! grep -q -- "$pat" "$tmp/out"; then
		echo "FAIL gpuprofctl $*: output lacks '$pat'"; sed 's/^/  | /' "$tmp/out"
		fails=$((fails + 1))
	else
		echo "ok   gpuprofctl $*"
	fi
}

expect 0 'EXIT STATUS' --help
expect 0 'COMMANDS' help
expect 0 'gpuprofctl capture --pid' help capture
expect 0 '--no-kernel' folded --help
expect 0 'xe pause' xe --help
expect 0 'gpuprofctl' --version
expect 2 'unknown command' frobnicate
expect 2 'unknown command' help frobnicate
expect 2 '' 
expect 2 'unrecognized option' --bogus status
expect 2 'unrecognized option' status --bogus
expect 2 '--pid PID is required' capture --duration 5s
expect 2 'exactly one of --duration, --last and --since' capture --pid 1
expect 2 'exactly one of --duration, --last and --since' capture --pid 1 --duration 1s --last 1s
expect 2 'exactly one of --duration, --last and --since' capture --pid 1 --last 1s --since 5
expect 2 'exactly one of --duration, --last and --since' capture --pid 1 --until 5
expect 2 'not --duration' capture --pid 1 --duration 1s --until 5
expect 2 'on one clock' capture --pid 1 --since 5 --until @1764315000
expect 2 'give the time zone' capture --pid 1 --since 2025-11-28T07:30:00
expect 2 'not a time' capture --pid 1 --since yesterday
expect 2 'invalid duration' capture --pid 1 --duration soon
expect 2 'invalid pid' capture --pid abc --last 1s
expect 2 'drop --no-wait' capture --pid 1 --last 1s --no-wait --out "$tmp/f"
expect 2 'needs an argument' capture --pid
expect 2 'invalid --timeout' --timeout never status
expect 2 'missing capture ID' info
expect 2 'invalid capture ID' info x1
expect 2 'missing FILE' import
expect 2 'missing analysis NAME' analyze
expect 2 'expected KEY=VALUE' analyze idle 3 oops
expect 2 '--out FILE is required' flamegraph 3
expect 3 "$tmp/none.sock" status
expect 3 "No such file or directory" status
expect 3 "$tmp/other.sock" --socket "$tmp/other.sock" list
expect 3 "$tmp/after.sock" status --socket "$tmp/after.sock"
expect 4 'cannot open' capture --pid 1 --last 1s --out "$tmp/no/such/dir/f"

# Every manual ends in the global options and exit statuses, once.
"$ctl" help --markdown | sed -n 's/^### gpuprofctl //p' >"$tmp/cmds"
[ "$(wc -l <"$tmp/cmds")" -gt 15 ] || { echo "FAIL help --markdown lists too few commands"; fails=$((fails + 1)); }
while read -r c; do
	n=$("$ctl" help "$c" | grep -c '^GLOBAL OPTIONS')
	if [ "$n" -ne 1 ]; then
		echo "FAIL gpuprofctl help $c: the global options $n times"; fails=$((fails + 1))
	else
		echo "ok   gpuprofctl help $c: global options once"
	fi
done <"$tmp/cmds"
# import: several files make one capture, Nsight exports are named
expect 0 'FILE is one rank of it' help import
expect 0 'one multi-rank capture' help import
expect 0 'Nsight Systems SQLite' help import
expect 2 'takes no command' help --markdown import

echo "$fails failed"
[ "$fails" -eq 0 ]
