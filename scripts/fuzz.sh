#!/bin/sh
# SPDX-License-Identifier: MIT
# Build the libFuzzer harnesses (clang, -Dfuzz=true) and run each for a
# bounded time. Fails (non-zero) on the first finding; crash/leak/timeout
# inputs are kept under $GPUPROF_FUZZ_OUT/<harness>/ (default
# build-fuzz/fuzz-out). See docs/fuzzing.md.
#
#   scripts/fuzz.sh                  # CI: every harness, a fixed seed and a fixed
#                                    # number of runs (about 45 s each here)
#   scripts/fuzz.sh 60               # every harness, 60 s of random exploration
#   scripts/fuzz.sh 3600 import rpc  # an hour each on two of them
#   FUZZ_JOBS=8 scripts/fuzz.sh 0    # until the first finding, 8 workers each
#
# Why the CI run is deterministic: a time-bounded random run explores a
# different path every time, so a CI run could fail on a finding nobody can
# reproduce at the commit that landed. With -seed=1, a -runs budget and a
# fresh work corpus the CI run replays exactly what was verified before the
# commit; exploration happens in the timed runs, and what they find becomes
# a committed regression input.
set -eu
cd "$(dirname "$0")/.."
CI_MODE=0
if [ $# -eq 0 ]; then
	CI_MODE=1
	SECONDS_EACH=ci
else
	SECONDS_EACH=$1
	shift
fi
BUILD=${GPUPROF_FUZZ_BUILD:-build-fuzz}
OUT=${GPUPROF_FUZZ_OUT:-$BUILD/fuzz-out}
JOBS=${FUZZ_JOBS:-1}
ALL="rpc capture symtab timeline import"
[ -f daemon/render/foldedin.c ] && ALL="$ALL foldedin"
[ -f daemon/xe/section.c ] && ALL="$ALL xe_decode xe_section"
[ -f daemon/import/nsys/nsys.c ] && ALL="$ALL nsys"
[ -f daemon/xe/cs.c ] && ALL="$ALL gpu_cs"
[ -f daemon/xe/zebin.c ] && ALL="$ALL zebin"
[ -f daemon/collect/cupti_dec.c ] && ALL="$ALL cupti"
HARNESSES=${*:-$ALL}

command -v clang >/dev/null || { echo "fuzz.sh: clang is required" >&2; exit 1; }
if ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
	echo "fuzz.sh: libFuzzer missing: apt-get install libclang-rt-14-dev" >&2
	exit 1
fi
if [ ! -f "$BUILD/build.ninja" ]; then
	CC=clang meson setup "$BUILD" -Dfuzz=true -Dbuildtype=debugoptimized >/dev/null
fi
targets=""
for h in $HARNESSES; do
	targets="$targets tests/fuzz/fuzz_$h"
done
ninja -C "$BUILD" $targets

# Per input: 1 MiB max (the protocol's message cap; traces stay small so
# each run is fast), 10 s is a hang, 2 GiB RSS is a leak or a bomb.
rc=0
for h in $HARNESSES; do
	corpus=tests/fuzz/corpus/$h
	work=$OUT/$h/corpus
	art=$OUT/$h/
	mkdir -p "$work" "$art"
	# git does not keep empty directories: pass only the seed dirs a clean
	# checkout has (libFuzzer exits on a missing one).
	seeds=""
	for dir in "$corpus" tests/fuzz/regressions/$h; do
		[ -d "$dir" ] && seeds="$seeds $dir"
	done
	dict=""
	[ -f tests/fuzz/dict/$h.dict ] && dict="-dict=tests/fuzz/dict/$h.dict"
	case $h in
	rpc) max_len=65536 ;;
	# SQLite pages: seeds are a few KB, 64 KiB leaves room for a dozen
	# tables without making every exec a large deserialize.
	nsys) max_len=65536 ;;
	# 24-byte kernels + 64-byte records, sections of a few KB.
	xe_decode | xe_section) max_len=65536 ;;
	# a dump of a few batch buffers (the parser reads at most 4 MiB)
	gpu_cs) max_len=65536 ;;
	# small ELF images (seeds are a few KB)
	zebin) max_len=65536 ;;
	# a few messages of the CUPTI wire, 2-byte length each
	cupti) max_len=65536 ;;
	*) max_len=262144 ;;
	esac
	par=""
	# -jobs spawns children logging to ./fuzz-N.log: only when asked for.
	[ "$JOBS" -gt 1 ] && par="-jobs=$JOBS -workers=$JOBS"
	if [ $CI_MODE = 1 ]; then
		# about 45 s each at the exec rates seen on a 2-core machine
		case $h in
		rpc) runs=200000 ;;
		capture) runs=2500000 ;;
		symtab) runs=10000000 ;;
		timeline) runs=1500000 ;;
		import | foldedin) runs=400000 ;;
		xe_decode) runs=70000 ;;
		xe_section) runs=35000 ;;
		nsys) runs=45000 ;;
		gpu_cs) runs=80000 ;;
		zebin) runs=5000000 ;;
		cupti) runs=70000 ;;
		*) runs=100000 ;;
		esac
		time_opt="-seed=1 -runs=$runs"
		rm -rf "$work"
		mkdir -p "$work"
		par=""
	else
		time_opt="-max_total_time=$SECONDS_EACH"
		[ "$SECONDS_EACH" = 0 ] && time_opt=""
	fi
	echo "== fuzz_$h: ${time_opt:-unbounded}, $JOBS job(s), artifacts in $art"
	# New coverage goes to the work dir; the committed corpus is only read.
	if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
	     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	     "$BUILD/tests/fuzz/fuzz_$h" $time_opt -max_len=$max_len -timeout=10 \
		-rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
		$par $dict -artifact_prefix="$art" \
		"$work" $seeds >"$OUT/$h/log" 2>&1; then
		echo "fuzz_$h: FINDING (log: $OUT/$h/log)" >&2
		tail -40 "$OUT/$h/log" >&2
		ls "$art" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' >&2 || true
		rc=1
	else
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$OUT/$h/log" | tail -2
		echo "fuzz_$h: ok"
	fi
done
exit $rc
