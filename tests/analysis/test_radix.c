// SPDX-License-Identifier: MIT
/*
 * The analyses' radix sorts (daemon/analysis/radix.c) against qsort on
 * random and adversarial keys: negative, equal, all-but-one byte constant,
 * the full int64 range, -0.0 / +0.0 / infinities, NaN (qsort fallback),
 * sizes around the radix threshold. The ival payload is each element's
 * original position, so that sort's stability is checked too; sweep events
 * are checked for order and for losing or duplicating nothing.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/internal.h"
#include "test.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Key of element i for distribution d. */
static int64_t key(int d, size_t i)
{
	switch (d) {
	case 0: return (int64_t)next(); /* full range, both signs */
	case 1: return 1700000000000000000ll + (int64_t)(next() % 1000000); /* timestamps */
	case 2: return (int64_t)(next() % 8) - 4; /* many equal, negative */
	case 3: return 42; /* all equal */
	case 4: return (int64_t)i; /* sorted */
	default: return -(int64_t)i; /* reversed */
	}
}

static int ival_ref_cmp(const void *a, const void *b)
{
	const struct ival *x = a, *y = b;

	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return (x->e > y->e) - (x->e < y->e); /* e = original position: stable */
}

static int sweep_ref_cmp(const void *a, const void *b)
{
	const struct sweep_ev *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return (x->delta > y->delta) - (x->delta < y->delta);
}

static void test_ival_and_sweep(void)
{
	static const size_t sizes[] = { 0, 1, 2, 255, 256, 257, 1000, 65536 };

	for (int d = 0; d < 6; d++) {
		for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			size_t n = sizes[si];
			struct ival *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
			struct sweep_ev *x = malloc((n + 1) * sizeof(*x)),
					*y = malloc((n + 1) * sizeof(*y));

			for (size_t i = 0; i < n; i++) {
				a[i] = (struct ival){ key(d, i), (int64_t)i };
				x[i] = (struct sweep_ev){ a[i].s, (int8_t)(i % 3), (uint8_t)i };
			}
			memcpy(b, a, n * sizeof(*a));
			memcpy(y, x, n * sizeof(*x));
			ival_sort(a, n);
			qsort(b, n, sizeof(*b), ival_ref_cmp);
			CHECK(n == 0 || memcmp(a, b, n * sizeof(*a)) == 0);
			sweep_sort(x, n);
			for (size_t i = 1; i < n; i++)
				CHECK(x[i - 1].t <= x[i].t);
			/* same elements: both put in (t, type, delta) order */
			qsort(x, n, sizeof(*x), sweep_ref_cmp);
			qsort(y, n, sizeof(*y), sweep_ref_cmp);
			for (size_t i = 0; i < n; i++) /* fields: padding is not copied */
				CHECK(sweep_ref_cmp(&x[i], &y[i]) == 0);
			free(a);
			free(b);
			free(x);
			free(y);
		}
	}
}

static int dbl_ref_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void test_doubles(void)
{
	static const double odd[] = { 0.0, -0.0, INFINITY, -INFINITY, 1e-300, -1e-300, 5e-324,
				      1.5, -1.5, 1e300, -1e300 };
	size_t n = 5000;
	double *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));

	for (size_t i = 0; i < n; i++)
		a[i] = i % 7 == 0 ? odd[(i / 7) % (sizeof(odd) / sizeof(odd[0]))] :
				    ((double)(int64_t)next() / 1e6);
	memcpy(b, a, n * sizeof(*a));
	dstats_sort(a, n);
	qsort(b, n, sizeof(*b), dbl_ref_cmp);
	for (size_t i = 0; i < n; i++)
		CHECK(a[i] == b[i]); /* -0.0 == 0.0: qsort leaves those in any order */
	for (size_t i = 1; i < n; i++)
		CHECK(a[i - 1] <= a[i]);
	/* NaN: sorted the old way, and nothing is lost */
	a[17] = NAN;
	dstats_sort(a, n);
	{
		size_t nans = 0;

		for (size_t i = 0; i < n; i++)
			nans += a[i] != a[i];
		CHECK_EQ_INT(nans, 1);
	}
	free(a);
	free(b);
}

/* dstats_compute() on whole numbers of a narrow span (a histogram from
 * 4096 values on, spans under max(n, 65536), negative ones included) gives
 * the order statistics of the sorted values; so do the shapes it leaves to
 * the sort (a wider span, a fraction, -0, the int32 edges). */
static void test_dstats_counted(void)
{
	static const size_t sizes[] = { 4095, 4096, 4097, 5000, 65536, 150000 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		double *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));

		for (int shape = 0; shape < 10; shape++) {
			struct dstats x;

			for (size_t i = 0; i < n; i++)
				a[i] = shape == 0 ? (double)(next() % 7) :
				       shape == 1 ? (double)(next() % 65536) :
				       shape == 2 ? (double)(i % 3 == 0 ? 0 : 1000 + next() % 5) :
				       shape == 3 ? (double)(n - i) :
				       shape == 4 ? (double)(next() % 9) + (i == n / 2 ? 0.5 : 0) :
				       shape == 5 ? (double)((int64_t)(next() % 201) - 100) :
				       shape == 6 ? (double)((int64_t)(next() % 65536) - 70000) :
				       shape == 7 ? (double)((int64_t)(next() % 65537) - 32768) :
				       shape == 8 ? (i == n / 3 ? -0.0 : (double)(next() % 5)) :
						    (i % 2 ? 2147483647.0 - (double)(next() % 3) :
							     -2147483648.0 + (double)(next() % 3));
			memcpy(b, a, n * sizeof(*a));
			qsort(b, n, sizeof(*b), dbl_ref_cmp);
			dstats_compute(a, n, &x);
			CHECK_EQ_U64(x.count, n);
			CHECK(x.min == b[0]);
			CHECK(x.max == b[n - 1]);
			CHECK(x.q25 == quantile_sorted(b, n, 0.25));
			CHECK(x.q50 == quantile_sorted(b, n, 0.5));
			CHECK(x.q75 == quantile_sorted(b, n, 0.75));
		}
		free(a);
		free(b);
	}
}

int main(void)
{
	RUN(test_ival_and_sweep);
	RUN(test_doubles);
	RUN(test_dstats_counted);
	return test_summary();
}
