// SPDX-License-Identifier: MIT
/* The analysis framework: pandas describe()-style statistics. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* numpy 1.24 _lerp: from the upper end when frac >= 0.5, so the last bits
 * match pandas' describe() */
static double np_lerp(double a, double b, double frac)
{
	if (frac >= 0.5)
		return b - (b - a) * (1.0 - frac);
	return a + (b - a) * frac;
}

/* Where the linear quantile q of n sorted values falls: v[*lo], frac. */
static double quantile_pos(size_t n, double q, size_t *lo)
{
	double pos = q * (double)(n - 1);

	*lo = (size_t)floor(pos);
	return pos - (double)*lo;
}

double quantile_sorted(const double *v, size_t n, double q)
{
	double frac;
	size_t lo;

	if (!n)
		return NAN;
	frac = quantile_pos(n, q, &lo);
	if (lo + 1 >= n)
		return v[n - 1];
	return np_lerp(v[lo], v[lo + 1], frac);
}

/* The k-th smallest (from 0) of the values counted in cnt[0..top], the
 * value x counted in cnt[x - lo]. */
static double kth_counted(const uint32_t *cnt, uint32_t top, int64_t lo, size_t k)
{
	size_t seen = 0;

	for (uint32_t x = 0; x < top; x++)
		if ((seen += cnt[x]) > k)
			return (double)((int64_t)x + lo);
	return (double)((int64_t)top + lo);
}

/*
 * Order statistics of whole numbers that span fewer than max(n, 65536)
 * values (queue lengths: millions of them on a large trace, negative
 * where a correlation has more GPU rows than launches, in the hundred
 * thousands where GPU rows never start) from a histogram, instead of
 * sorting v. The same doubles as quantile_sorted() of the sorted values.
 * false (s untouched): some value is not such a number (or is -0), the
 * span is wider, or too few values to be worth it.
 */
static bool dstats_counted(const double *v, size_t n, struct dstats *s)
{
	static const double qs[3] = {0.25, 0.5, 0.75};
	double *out[3] = {&s->q25, &s->q50, &s->q75};
	/* a histogram no longer than the values (4 bytes a slot, scanned
	 * six times), at least 65536 slots */
	int64_t lo = INT64_MAX, hi = INT64_MIN, span = n > 65536 ? (int64_t)n : 65536;
	uint32_t top, *cnt;

	if (n < 4096)
		return false;
	for (size_t i = 0; i < n; i++) {
		int64_t x;

		if (!(v[i] > -2147483648.0 && v[i] < 2147483648.0) ||
		    v[i] != (double)(x = (int64_t)v[i]) || (v[i] == 0 && signbit(v[i])))
			return false;
		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
		if (hi - lo >= span)
			return false;
	}
	top = (uint32_t)(hi - lo);
	if (!(cnt = calloc((size_t)top + 1, sizeof(*cnt))))
		return false;
	for (size_t i = 0; i < n; i++)
		cnt[(int64_t)v[i] - lo]++;
	s->min = (double)lo;
	s->max = (double)hi;
	for (int j = 0; j < 3; j++) {
		size_t k;
		double frac = quantile_pos(n, qs[j], &k);

		*out[j] = k + 1 >= n ? s->max
				     : np_lerp(kth_counted(cnt, top, lo, k),
					       kth_counted(cnt, top, lo, k + 1), frac);
	}
	free(cnt);
	return true;
}

void dstats_compute(double *v, size_t n, struct dstats *s)
{
	double sum = 0, ss = 0;

	s->count = n;
	s->mean = s->std = s->min = s->q25 = s->q50 = s->q75 = s->max = NAN;
	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	s->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - s->mean) * (v[i] - s->mean);
	if (n > 1)
		s->std = sqrt(ss / (double)(n - 1));
	if (dstats_counted(v, n, s))
		return;
	dstats_sort(v, n);
	s->min = v[0];
	s->max = v[n - 1];
	s->q25 = quantile_sorted(v, n, 0.25);
	s->q50 = quantile_sorted(v, n, 0.5);
	s->q75 = quantile_sorted(v, n, 0.75);
}

void dstats_json(struct actx *c, cJSON *o, const struct dstats *s, const char *suffix)
{
	static const char *const k[] = {"mean", "std", "min", "p25", "p50", "p75", "max"};
	const double v[] = {s->mean, s->std, s->min, s->q25, s->q50, s->q75, s->max};
	char key[32];

	jint(c, o, "count", (int64_t)s->count);
	for (int i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "%s%s", k[i], suffix);
		jnum(c, o, key, v[i]);
	}
}
