// SPDX-License-Identifier: MIT
/*
 * Sorting, interval algebra and the one percentile definition used by every
 * comm metric. Events arrive as per-stream runs already in time order
 * (tl_rank.by_stream), so a natural merge sort costs O(n log streams).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "comm_int.h"

/*
 * Large buffers: anonymous maps aligned to 2 MiB and advised for
 * transparent huge pages, so that the ~30 MB an analysis of millions of
 * events writes (fresh memory on every call) faults in a few huge pages
 * instead of thousands of 4 KiB ones (the faults and page clearing were
 * ~10 % of bench_comm). Small sizes, or a kernel without THP, fall back
 * to ordinary pages; the result is the same memory either way.
 */
#define BIG_MIN (1u << 20)
#define HUGE_SZ ((size_t)2 << 20)

static size_t big_len(size_t n) /* whole huge pages: a partial one gets 4 KiB pages */
{
	return (n + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
}

void *big_alloc(size_t n)
{
	size_t len = big_len(n), head;
	char *m;

	if (n < BIG_MIN)
		return malloc(n ? n : 1);
	m = mmap(NULL, len + HUGE_SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	head = (HUGE_SZ - (uintptr_t)m % HUGE_SZ) % HUGE_SZ; /* to the next 2 MiB boundary */
	if (head)
		munmap(m, head);
	if (HUGE_SZ - head)
		munmap(m + head + len, HUGE_SZ - head);
	m += head;
#ifdef MADV_HUGEPAGE
	madvise(m, len, MADV_HUGEPAGE); /* advice only: without THP, 4 KiB pages */
#endif
	return m;
}

void big_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n < BIG_MIN)
		free(p);
	else
		munmap(p, big_len(n));
}

/* Natural merge sort by start, stable; merges ping-pong between v and tmp,
 * and the buffer that ends up sorted is returned (no copy back). */
#define NATURAL_MSORT(NAME, T)                                                                 \
	T *NAME(T *v, uint32_t n, T *tmp)                                                      \
	{                                                                                      \
		for (;;) {                                                                     \
			uint32_t i = 0, k = 0;                                                 \
			T *t;                                                                  \
			while (i < n) {                                                        \
				uint32_t a = i, m, b;                                          \
				for (m = a + 1; m < n && v[m - 1].s <= v[m].s; m++)            \
					;                                                      \
				if (m >= n && !a)                                              \
					return v; /* one run: sorted */                        \
				for (b = m + (m < n); b < n && v[b - 1].s <= v[b].s; b++)      \
					;                                                      \
				if (m >= n)                                                    \
					b = n;                                                 \
				uint32_t x = a, y = m;                                         \
				while (x < m && y < b) { /* branch-free: streams interleave */ \
					bool right = v[y].s < v[x].s;                          \
					tmp[k++] = *(right ? &v[y] : &v[x]);                   \
					y += right, x += !right;                               \
				}                                                              \
				while (x < m)                                                  \
					tmp[k++] = v[x++];                                     \
				while (y < b)                                                  \
					tmp[k++] = v[y++];                                     \
				i = b;                                                         \
			}                                                                      \
			if (!n)                                                                \
				return v;                                                      \
			t = v, v = tmp, tmp = t;                                               \
		}                                                                              \
	}

NATURAL_MSORT(sort_cev, struct cev)
NATURAL_MSORT(sort_ival, struct ival)

/* First index from i on (v sorted by start, v[..i) all before t) whose
 * start is at or after t: galloping, then binary search. A window's events
 * are found without streaming through them once more before the metrics. */
#define FIRST_AT(NAME, T)                                            \
	uint32_t NAME(const T *v, uint32_t i, uint32_t n, int64_t t) \
	{                                                            \
		uint32_t hi = i, step = 1;                           \
		while (hi < n && v[hi].s < t) {                      \
			i = hi + 1;                                  \
			hi = n - hi > step ? hi + step : n;          \
			step = step < (1u << 30) ? step * 2 : step;  \
		}                                                    \
		while (i < hi) {                                     \
			uint32_t m = i + (hi - i) / 2;               \
			if (v[m].s < t)                              \
				i = m + 1;                           \
			else                                         \
				hi = m;                              \
		}                                                    \
		return i;                                            \
	}

FIRST_AT(first_cev_at, struct cev)
FIRST_AT(first_ival_at, struct ival)

void sort_ival_inplace(struct ival *v, uint32_t n, struct ival *tmp)
{
	struct ival *r = sort_ival(v, n, tmp);

	if (r != v)
		memcpy(v, r, (size_t)n * sizeof(*v));
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

/* First index of the sorted, disjoint list b whose end is after t (their
 * ends rise with their starts). */
static uint32_t first_end_after(const struct ival *b, uint32_t nb, int64_t t)
{
	uint32_t lo = 0, hi = nb;

	while (lo < hi) {
		uint32_t m = lo + (hi - lo) / 2;

		if (b[m].e > t)
			hi = m;
		else
			lo = m + 1;
	}
	return lo;
}

/* ival_overlap() of a with the part of b that can meet it: one tag's union
 * covers its phase, a fraction of the iteration's compute list. The
 * intervals left out have no intersection with a, so the sum is the same. */
int64_t overlap_window(const struct ival *a, uint32_t na, const struct ival *b, uint32_t nb)
{
	uint32_t lo, hi;

	if (!na || !nb)
		return 0;
	lo = first_end_after(b, nb, a[0].s);
	for (hi = first_end_after(b, nb, a[na - 1].e); hi < nb && b[hi].s < a[na - 1].e; hi++)
		;
	return ival_overlap(a, na, b + lo, hi - lo);
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

/* A key whose unsigned order is the doubles' order (sign flipped for
 * positives, all bits for negatives). */
static inline uint64_t dkey(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	return u >> 63 ? ~u : u | 1ull << 63;
}

/*
 * The k-th and (k+1)-th smallest (*b = *a when k + 1 == n) of v, n > 4096:
 * one radix pass on the top 16 bits of dkey() (sign, exponent, 4 mantissa
 * bits) counts the buckets and moves the one holding k to the front, then
 * quickselect runs on that bucket only. Two linear passes and no
 * comparisons to mispredict on the bulk of the values. Reorders v.
 */
static int radix_pair(double *v, size_t n, size_t k, double *a, double *b)
{
	static const size_t nb = 1u << 16;
	uint32_t *cnt = calloc(nb, sizeof(*cnt));
	size_t below = 0, m = 0, bkt;

	if (!cnt)
		return -1;
	for (size_t i = 0; i < n; i++)
		cnt[dkey(v[i]) >> 48]++;
	for (bkt = 0; below + cnt[bkt] <= k; bkt++)
		below += cnt[bkt];
	for (size_t i = 0; i < n; i++) /* the bucket's values to the front */
		if (dkey(v[i]) >> 48 == bkt) {
			double t = v[m];

			v[m++] = v[i];
			v[i] = t;
		}
	free(cnt);
	k -= below;
	*a = select_kth(v, m, k);
	*b = INFINITY;
	for (size_t i = k + 1; i < m; i++) /* after select, v[k+1..m) >= a: their min */
		*b = v[i] < *b ? v[i] : *b;
	if (k + 1 >= m) /* k is its bucket's last: the next is the least above it */
		for (size_t i = m; i < n; i++) /* (v[m..n) holds the other buckets) */
			if (v[i] > *a && v[i] < *b)
				*b = v[i];
	if (*b == INFINITY)
		*b = *a; /* k is the largest of all (the caller then uses a alone) */
	return 0;
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
	if (n >= 4096 && !radix_pair(v, n, lo, &a, &b))
		return lo + 1 >= n || f == 0 ? a : a + (b - a) * f;
	a = select_kth(v, n, lo); /* small, or no memory for the radix counts */
	if (lo + 1 >= n || f == 0)
		return a;
	for (size_t i = lo + 1; i < n; i++) /* after select, v[lo+1..] >= a: their min */
		b = v[i] < b ? v[i] : b;
	return a + (b - a) * f;
}
