# shellcheck shell=bash
# SPDX-License-Identifier: MIT
# Shell helpers shared by the device scripts (sourced, not run).

# find_cupti: CUPTI=the libcupti.so.13 the dynamic linker finds, else the
# toolkit's; empty when there is none. NVTX must be routed to the same copy
# the process uses (NVTX_INJECTION64_PATH).
find_cupti() {
    CUPTI=$(ldconfig -p | awk '/libcupti\.so\.13 / { print $NF; exit }')
    for c in /usr/local/cuda/lib64/libcupti.so.13 /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13; do
        [ -n "$CUPTI" ] || { [ -f "$c" ] && CUPTI=$c; }
    done
}

# find_nvdisasm: NVDISASM=nvdisasm on PATH or in the toolkit, else empty
# (where the daemon looks too, cupti.nvdisasm's default)
find_nvdisasm() {
    NVDISASM=$(command -v nvdisasm || true)
    for c in /usr/local/cuda/bin/nvdisasm /opt/cuda/bin/nvdisasm; do
        [ -n "$NVDISASM" ] || { [ -x "$c" ] && NVDISASM=$c; }
    done
}

# cupti_variants STEP [FILE]: "LABEL ENV..." for each configuration of the
# library that STEP (cost or rate) measures, in the order of FILE
# (scripts/device/cupti_variants.txt: the one list of them)
cupti_variants() {
    awk -F'|' -v s="$1" '
        /^[[:space:]]*(#|$)/ { next }
        NF >= 4 {
            n = split($2, st, " ")
            for (i = 1; i <= n; i++) if (st[i] == s) {
                gsub(/^[[:space:]]+|[[:space:]]+$/, "", $1)
                gsub(/^[[:space:]]+|[[:space:]]+$/, "", $3)
                print $1, $3
            }
        }' "${2:-$(dirname "${BASH_SOURCE[0]}")/cupti_variants.txt}"
}

# rotated R WORD...: the words rotated left by R - 1 places (round R of a
# set of configurations: over the rounds each runs at every position, so
# a drift within a round, or the first run's extra cost, lands on none of
# them always)
rotated() {
    local r=$1
    shift
    local n=$# i
    local a=("$@") o=()
    for ((i = 0; i < n; i++)); do o+=("${a[$(((i + r - 1) % n))]}"); done
    echo "${o[*]}"
}
