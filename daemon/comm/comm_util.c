// SPDX-License-Identifier: MIT
/*
 * Sorting, interval algebra and the one percentile definition used by every
 * comm metric. Events arrive as per-stream runs already in time order
 * (tl_rank.by_stream), so a natural merge sort costs O(n log streams).
 */
#include <math.h>
#include <string.h>

#include "comm_int.h"

#define NATURAL_MSORT(NAME, T)                                                                   \
	void NAME(T *v, uint32_t n, T *tmp)                                                       \
	{                                                                                         \
		for (;;) {                                                                        \
			uint32_t runs = 0, i = 0, k = 0;                                          \
			while (i < n) {                                                           \
				uint32_t a = i, m, b;                                             \
				for (m = a + 1; m < n && v[m - 1].s <= v[m].s; m++)               \
					;                                                         \
				for (b = m + (m < n); b < n && v[b - 1].s <= v[b].s; b++)         \
					;                                                         \
				if (m >= n)                                                       \
					b = n;                                                    \
				runs += m < n; /* a real merge of two runs */                     \
				uint32_t x = a, y = m;                                            \
				while (x < m && y < b)                                            \
					tmp[k++] = v[y].s < v[x].s ? v[y++] : v[x++];             \
				while (x < m)                                                     \
					tmp[k++] = v[x++];                                        \
				while (y < b)                                                     \
					tmp[k++] = v[y++];                                        \
				i = b;                                                            \
			}                                                                         \
			if (!runs)                                                                \
				return; /* v is one run: sorted (tmp's copy is discarded) */      \
			memcpy(v, tmp, (size_t)n * sizeof(*v));                                   \
		}                                                                                 \
	}

NATURAL_MSORT(sort_cev, struct cev)
NATURAL_MSORT(sort_ival, struct ival)

uint32_t ival_merge_sorted(struct ival *v, uint32_t n)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (v[i].e <= v[i].s)
			continue; /* empty */
		if (k && v[i].s <= v[k - 1].e) {
			if (v[i].e > v[k - 1].e)
				v[k - 1].e = v[i].e;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

uint32_t ival_union2(const struct ival *a, uint32_t na, const struct ival *b, uint32_t nb,
		     struct ival *out)
{
	uint32_t i = 0, j = 0, k = 0;

	while (i < na || j < nb) {
		struct ival x = j >= nb || (i < na && a[i].s <= b[j].s) ? a[i++] : b[j++];

		if (k && x.s <= out[k - 1].e) {
			if (x.e > out[k - 1].e)
				out[k - 1].e = x.e;
		} else {
			out[k++] = x;
		}
	}
	return k;
}

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double pctl(const double *v, size_t n, double p)
{
	double h, f;
	size_t lo;

	if (!n)
		return NAN;
	h = (double)(n - 1) * p / 100.0;
	lo = (size_t)floor(h);
	f = h - (double)lo;
	if (lo + 1 >= n)
		return v[n - 1];
	return v[lo] + (v[lo + 1] - v[lo]) * f;
}

/* k-th smallest by quickselect (Hoare partition, median of three): O(n),
 * reorders v. The bandwidth percentiles run over millions of events, where
 * a full sort would cost more than every other metric together. */
static double select_kth(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (hi > lo) {
		size_t i = lo, j = hi, mid = lo + (hi - lo) / 2;
		double a = v[lo], b = v[mid], c = v[hi];
		double piv = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));

		while (i <= j) {
			while (v[i] < piv)
				i++;
			while (v[j] > piv)
				j--;
			if (i <= j) {
				double t = v[i];

				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

double pctl_unsorted(double *v, size_t n, double p)
{
	double h, f, a, b = INFINITY;
	size_t lo;

	if (!n)
		return NAN;
	h = (double)(n - 1) * p / 100.0;
	lo = (size_t)floor(h);
	f = h - (double)lo;
	a = select_kth(v, n, lo);
	if (lo + 1 >= n || f == 0)
		return a;
	for (size_t i = lo + 1; i < n; i++) /* after select, v[lo+1..] >= a: take their min */
		b = v[i] < b ? v[i] : b;
	return a + (b - a) * f;
}
