/* SPDX-License-Identifier: MIT */
/*
 * A growing, NUL-terminated memory buffer for tests that compare what a
 * writer produced (folded, flamegraph, pprof, the Chrome trace, ...): pass
 * membuf_write and a struct membuf as their (write, ctx) pair.
 *
 *   struct membuf m = {0};
 *   CHECK_EQ_INT(folded_write(c, &o, membuf_write, &m, NULL), 0);
 *   CHECK_STREQ(m.p, "...");
 *   free(m.p);
 *
 * m.p stays NULL until something is written. Aborts on ENOMEM.
 */
#ifndef GPUPROF_TESTS_MEMBUF_H
#define GPUPROF_TESTS_MEMBUF_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct membuf {
	char *p;
	size_t len, cap;
	int fail_after; /* > 0: that call (counting from 1) fails with -EPIPE */
};

static inline int membuf_write(void *ctx, const void *data, size_t len)
{
	struct membuf *m = ctx;

	if (m->fail_after && --m->fail_after == 0)
		return -EPIPE;
	if (m->len + len + 1 > m->cap) {
		size_t cap = (m->len + len + 1) * 2;
		char *p = realloc(m->p, cap);

		if (!p)
			abort();
		m->p = p;
		m->cap = cap;
	}
	memcpy(m->p + m->len, data, len);
	m->len += len;
	m->p[m->len] = '\0';
	return 0;
}

/* Empties m for the next writer, keeping its memory. */
static inline void membuf_reset(struct membuf *m)
{
	m->len = 0;
	if (m->p)
		m->p[0] = '\0';
}

#endif
