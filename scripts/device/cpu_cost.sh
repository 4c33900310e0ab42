#!/bin/bash
# SPDX-License-Identifier: MIT
# The CPU sampler's cost with CFI unwinding on a quiet many-core machine
# (the device machine): bench/cpu/bench-cpu-overhead at 49 Hz on all CPUs,
# with the stack copy (16 KiB, the default) and with frame pointers only,
# each around a C program built without frame pointers and around a
# PyTorch training loop. Run from the repository root as root after
# scripts/device/bundle.sh build-rel and a copy of
# build-rel/bench/cpu/bench-cpu-overhead into .devbundle/bin.
set -u
BUN=$PWD/.devbundle
B() { LD_LIBRARY_PATH=$BUN/lib "$BUN/bin/bench-cpu-overhead" "$@"; }
W=$(mktemp -d /tmp/gpcost.XXXXXX)
nproc; uname -r
cc -O2 -fomit-frame-pointer -Itests/programs/unwind -o "$W/chain" tests/programs/unwind/chain.c -lm
for sb in 16384 0; do
    echo "== chain, --stack-bytes $sb"
    B 15 49 --stack-bytes $sb -- "$W/chain" 60 2>&1 | grep -v '^unwind status'
done
for sb in 16384 0; do
    echo "== torch_cpu.py, --stack-bytes $sb"
    B 15 49 --stack-bytes $sb -- python3 scripts/device/torch_cpu.py "$W/done" 2>&1 |
        grep -v '^unwind status'
done
