/* SPDX-License-Identifier: MIT */
/*
 * LSD radix sort over a 64-bit unsigned key, shared by the daemon's large
 * sorts (analysis/radix.c, capture/gpumatch.c, timeline/finalize.c): glibc's
 * qsort is a merge sort calling a comparator per step, and was the largest
 * single cost of several paths on big inputs.
 *
 * DEFINE_RADIX(fn, T, KEY) defines `static bool fn(T *v, size_t n)`: 8
 * passes of 8 bits over KEY(elem) (an order-preserving unsigned key),
 * counts for all 8 bytes from one pass, a byte whose histogram has a single
 * bucket skipped (the high bytes of timestamps in one capture), one scratch
 * array of n elements. Every pass is stable, so the whole sort is: sorting
 * by a minor key first and a major key second gives (major, minor) order.
 * Returns false (v untouched) when the scratch cannot be allocated.
 */
#ifndef GPUPROF_RADIX_H
#define GPUPROF_RADIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Ascending unsigned order = ascending signed order. */
static inline uint64_t radix_key_i64(int64_t v)
{
	return (uint64_t)v ^ (1ull << 63);
}

/* Ascending unsigned order = ascending IEEE order (-0 before +0; no NaN). */
static inline uint64_t radix_key_f64(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u >> 63 ? ~u : u | (1ull << 63);
}

/* The scratch array's allocator: a user may define these first (the
 * analyses keep big scratch blocks for reuse, alloc/bigalloc.h bigalloc_malloc). */
#ifndef RADIX_ALLOC
#define RADIX_ALLOC(bytes) malloc(bytes)
#define RADIX_FREE(p) free(p)
#endif
#define DEFINE_RADIX(fn, T, KEY)                                                    \
	static bool fn(T *v, size_t n)                                              \
	{                                                                           \
		if (n < 2)                                                          \
			return true;                                                \
		size_t(*cnt)[256] = calloc(8, sizeof(*cnt));                        \
		T *tmp = RADIX_ALLOC(n * sizeof(T)), *src = v, *dst = tmp;          \
                                                                                    \
		if (!cnt || !tmp) {                                                 \
			free(cnt);                                                  \
			RADIX_FREE(tmp);                                            \
			return false;                                               \
		}                                                                   \
		for (size_t i = 0; i < n; i++) {                                    \
			uint64_t k = KEY(v[i]);                                     \
			for (int b = 0; b < 8; b++)                                 \
				cnt[b][(k >> (8 * b)) & 0xff]++;                    \
		}                                                                   \
		for (int b = 0; b < 8; b++) {                                       \
			size_t sum = 0, *c = cnt[b];                                \
                                                                                    \
			if (c[(KEY(v[0]) >> (8 * b)) & 0xff] == n)                  \
				continue; /* every element has this byte */         \
			for (int d = 0; d < 256; d++) {                             \
				size_t t = c[d];                                    \
				c[d] = sum;                                         \
				sum += t;                                           \
			}                                                           \
			for (size_t i = 0; i < n; i++)                              \
				dst[c[(KEY(src[i]) >> (8 * b)) & 0xff]++] = src[i]; \
			T *t = src;                                                 \
			src = dst;                                                  \
			dst = t;                                                    \
		}                                                                   \
		if (src != v)                                                       \
			memcpy(v, src, n * sizeof(T));                              \
		RADIX_FREE(tmp);                                                    \
		free(cnt);                                                          \
		return true;                                                        \
	}

#endif
