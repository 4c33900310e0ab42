/* SPDX-License-Identifier: MIT */
/*
 * NEO's compile_kernel USDT in the gpu collector test: a debug
 * zebin written for the fake NEO ($FAKE_NEO_ZEBIN), a zebin hook that parses
 * it (daemon/xe/zebin.c) into an EU-stall kernel table of its own, as
 * daemon/hooks.c wires the daemon's.
 */
#ifndef GPUPROF_TESTS_GPU_ZEBIN_USDT_H
#define GPUPROF_TESTS_GPU_ZEBIN_USDT_H

#include <stdbool.h>
#include <stdint.h>

struct collector;

/* Write the zebin, export $FAKE_NEO_ZEBIN for the child, install the hook.
 * 0, or -1 with the failed conditions on stderr. */
int zebin_usdt_setup(struct collector *c);
/* The hook has run (loaded or failed) for one file. */
bool zebin_usdt_done(struct collector *c);
/* The status counters say one zebin loaded, and the kernel table names its
 * two kernels for pid. Removes the file and the table. 0, or -1 with the
 * failed conditions on stderr. */
int zebin_usdt_check(struct collector *c, uint32_t pid);

#endif
