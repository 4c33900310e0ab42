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
