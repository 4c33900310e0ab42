/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the importer's pipeline tests (test_import_gzpipe.c,
 * test_import_spec.c). Include after test.h.
 */
#ifndef GPUPROF_TESTS_IMPORT_TEST_H
#define GPUPROF_TESTS_IMPORT_TEST_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>

/* The importer uses its second thread only with 2 CPUs to run on. */
static inline bool two_cpus(void)
{
	cpu_set_t cpus;

	return sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) >= 2;
}

/* gzip of doc[0..len) in `members` members into a new *gz; its size. */
static inline size_t gzip_members(const char *doc, size_t len, int members, unsigned char **gz)
{
	size_t cap = len + 4096 * (size_t)members, out = 0, part = len / (size_t)members;

	*gz = malloc(cap);
	for (int m = 0; m < members; m++) {
		size_t off = part * (size_t)m, n = m == members - 1 ? len - off : part;
		z_stream zs = { 0 };

		deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
		zs.next_in = (unsigned char *)(uintptr_t)(doc + off);
		zs.avail_in = (uInt)n;
		zs.next_out = *gz + out;
		zs.avail_out = (uInt)(cap - out);
		CHECK_EQ_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
		out = cap - zs.avail_out;
		deflateEnd(&zs);
	}
	return out;
}

#endif
