/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the Xe EU-stall unit tests (test_xe*.c): records built
 * bit by bit from the documented layouts (the Xe PRMs' EU-stall record), and a sink that
 * collects an output into a string.
 */
#ifndef GPUPROF_TESTS_XE_TEST_UTIL_H
#define GPUPROF_TESTS_XE_TEST_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "xe.h"
#include "xe_int.h" /* xe_kfind */

/* Set bits [lo, lo + width) of a 64-byte record to v, one bit at a time. */
static inline void put_bits(uint8_t *rec, unsigned lo, unsigned width, uint64_t v)
{
	for (unsigned i = 0; i < width; i++) {
		unsigned b = lo + i;

		if ((v >> i) & 1)
			rec[b / 8] |= (uint8_t)(1u << (b % 8));
		else
			rec[b / 8] &= (uint8_t) ~(1u << (b % 8));
	}
}

struct layout {
	const char *dec;
	unsigned ip_bits, pos[XE_NREASONS], ex_id, end; /* pos ~0u: absent */
};

#define NA (~0u)
/* Bit positions from the Xe PRMs' EU-stall record, reason order as enum xe_reason:
 * active, control, pipestall, send, dist_acc, sbid, sync, inst_fetch, other, tdr */
static const struct layout layouts[] = {
    {"pvc", 29, {29, 45, 53, 61, 69, 77, 85, 93, 37, NA}, NA, NA},
    {"xe2", 29, {101, 45, 53, 61, 69, 77, 85, 93, 37, 29}, 109, 112},
    {"xe3p", 61, {133, 77, 85, 93, 101, 109, 117, 125, 69, 61}, 141, 144},
};

/* An Xe2 record with ip and one reason count. */
static inline void xe2_rec(uint8_t *rec, uint64_t ip, int reason, unsigned cnt)
{
	memset(rec, 0, 64);
	put_bits(rec, 0, 29, ip);
	put_bits(rec, layouts[1].pos[reason], 8, cnt);
}

#define IBA 0x800000000000ull
#define NS_IV 100000000ull

/* Output callback: appends to the malloc'ed NUL-terminated string *ctx. */
static inline int sink_buf(void *ctx, const void *buf, size_t len)
{
	char **s = ctx;
	size_t have = *s ? strlen(*s) : 0;
	char *n = realloc(*s, have + len + 1);

	if (!n)
		return -ENOMEM;
	memcpy(n + have, buf, len);
	n[have + len] = '\0';
	*s = n;
	return 0;
}

/* The name of the kernel covering IBA-relative byte offset addr, "?" for an
 * unnamed one, or NULL. */
static inline const char *kname_at(struct xe *x, uint64_t addr)
{
	uint64_t a;
	struct xe_kent *e = xe_kfind(x, addr >> 3, &a);

	return e ? (e->name ? e->name : "?") : NULL;
}

#endif
