#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what is missing, build with AddressSanitizer + UBSan, run every test
# suite (unit, bpf, integration). Usage: scripts/test.sh [meson test args...]
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
BUILD=${GPUPROF_TEST_BUILD:-build-test}
if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" -Db_sanitize=address,undefined -Db_lundef=false \
		-Dbuildtype=debugoptimized >/dev/null
fi
ninja -C "$BUILD"
rc=0
meson test -C "$BUILD" --print-errorlogs --num-processes 2 "$@" || rc=$?
fuzz=""
# Every libFuzzer harness for a bounded time (docs/fuzzing.md); the corpora
# and regressions are also replayed by the fuzz-replay-* tests above.
if [ $# -eq 0 ] && [ "${GPUPROF_SKIP_FUZZ:-0}" = 0 ]; then
	# No argument: the deterministic CI run (scripts/fuzz.sh explains why).
	if sh scripts/fuzz.sh ${GPUPROF_FUZZ_SECONDS:+"$GPUPROF_FUZZ_SECONDS"}; then
		fuzz=--fuzz=pass
	else
		fuzz=--fuzz=fail
		rc=1
	fi
fi
# The C style (.clang-format), applied to the whole tree once: a change that
# drifts from it fails the run (scripts/format-check.sh -d shows the diff).
if [ $# -eq 0 ] && ! sh scripts/format-check.sh; then
	rc=1
fi
python3 scripts/test-summary.py "$BUILD/meson-logs/testlog.json" $fuzz
exit $rc
