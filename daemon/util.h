/* SPDX-License-Identifier: MIT */
/* Small helpers with no dependency beyond libc, for every part of the daemon. */
#ifndef GPUPROF_UTIL_H
#define GPUPROF_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

/*
 * Read a whole text file of the proc file system (/proc/PID/maps and the
 * like: sizes unknown in advance, reads short) into a NUL-terminated
 * malloc'd buffer of at most max bytes (more is cut). 0, or -errno; -ESRCH
 * for an empty file (the process exited).
 */
int gpd_read_text(const char *path, size_t max, char **out, size_t *len);

/*
 * Room for need elements of elem bytes in the array *p of capacity *cap:
 * the capacity doubles, from first, until it holds need. 0, or -ENOMEM
 * with *p and *cap untouched. Header-only, so libc-only libraries (the
 * symbol table codec) use it too.
 */
static inline int gpd_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t n;
	void *q;

	if (need <= *cap)
		return 0;
	n = *cap ? *cap : first;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

#endif
