// SPDX-License-Identifier: MIT
/*
 * LSD radix sorts for the large sorts whose result does not depend on the
 * order of equal keys (interval unions, sweep events grouped by time,
 * quantiles of doubles): 8 passes of 8 bits over an order-preserving
 * unsigned key, skipping the passes where every element has the same byte
 * (the high bytes of timestamps in one trace), one scratch array of the
 * same size. qsort (glibc: a merge sort calling a comparator per step) was
 * the largest single cost of several analyses on big traces. Small arrays,
 * or no memory for the scratch, fall back to qsort: same order of keys.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h" /* RADIX_ALLOC / RADIX_FREE, RADIX_MIN */
#include "radix.h"    /* DEFINE_RADIX, shared with capture/ and timeline/ */

#define IVAL_KEY(x) radix_key_i64((x).s)
#define F64_KEY(x) radix_key_f64(x)
DEFINE_RADIX(radix_ival, struct ival, IVAL_KEY)
DEFINE_RADIX(radix_f64, double, F64_KEY)

static int ival_cmp(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;

	return (x->s > y->s) - (x->s < y->s);
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void ival_sort(struct ival *v, size_t n)
{
	if (n < RADIX_MIN || !radix_ival(v, n))
		qsort(v, n, sizeof(*v), ival_cmp);
}

void dstats_sort(double *v, size_t n)
{
	bool nan = false;

	for (size_t i = 0; i < n; i++)
		nan |= v[i] != v[i];
	if (nan || n < RADIX_MIN || !radix_f64(v, n))
		qsort(v, n, sizeof(*v), dbl_cmp);
}

/* Sweep events (temporal.c) sort on their int64 time; the rest rides along. */
#define SWEEP_KEY(x) radix_key_i64((x).t)
DEFINE_RADIX(radix_sweep, struct sweep_ev, SWEEP_KEY)

static int sweep_cmp(const void *a, const void *b)
{
	const struct sweep_ev *x = a, *y = b;

	return (x->t > y->t) - (x->t < y->t);
}

void sweep_sort(struct sweep_ev *v, size_t n)
{
	if (n < RADIX_MIN || !radix_sweep(v, n))
		qsort(v, n, sizeof(*v), sweep_cmp);
}
