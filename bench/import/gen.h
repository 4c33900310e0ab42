/* SPDX-License-Identifier: MIT */
/* Synthetic Kineto trace writer (gen.c), used by gen_kineto and bench_import. */
#ifndef GPUPROF_BENCH_GEN_H
#define GPUPROF_BENCH_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct gen_opts {
	uint64_t size; /* target bytes per rank (used when iters == 0) */
	uint64_t iters; /* ProfilerStep iterations; 0 = until size */
	int streams; /* compute streams, 1..3 (a comm stream is added) */
	int world; /* world size written in distributedInfo / Group size */
};

/* Write one rank's trace to f; returns the bytes written. */
uint64_t gen_kineto_write(FILE *f, const struct gen_opts *o, int rank);
/* The Kineto trace at path (plain or gzip) repeated with shifted timestamps
 * and ids (repeat.c): copies times when copies > 0, else until at least
 * size bytes are written (at least once). Returns the repetitions written,
 * or -1 with err set; *bytes = bytes written. */
int gen_repeat_write(FILE *out, const char *path, uint64_t size, int copies, uint64_t *bytes,
		     char *err, size_t errlen);
/* "1G", "300M", "64k", "123" → bytes; 0 on error. */
uint64_t gen_parse_size(const char *s);

#endif
