/* SPDX-License-Identifier: MIT */
/* A gzip'd writer output (a pprof export) inflated, for tests that look
 * for names in it. Link with zlib. */
#ifndef GPUPROF_TESTS_GUNZIP_H
#define GPUPROF_TESTS_GUNZIP_H

#include <stdlib.h>

#include <zlib.h>

#include "membuf.h"

/* m's gzip stream inflated whole (at most 1 MiB), NUL-terminated for
 * strstr on names, its length in *len; NULL when m holds no complete gzip
 * stream of that size. free() it. */
static inline char *membuf_gunzip(const struct membuf *m, size_t *len)
{
	const size_t cap = 1 << 20;
	z_stream zs = {0};
	char *out = malloc(cap + 1);
	int r;

	*len = 0;
	if (!out || !m->p || inflateInit2(&zs, 15 + 16) != Z_OK) {
		free(out);
		return NULL;
	}
	zs.next_in = (unsigned char *)m->p;
	zs.avail_in = (uInt)m->len;
	zs.next_out = (unsigned char *)out;
	zs.avail_out = (uInt)cap;
	r = inflate(&zs, Z_FINISH);
	*len = zs.total_out;
	inflateEnd(&zs);
	if (r != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	out[*len] = '\0';
	return out;
}

#endif
