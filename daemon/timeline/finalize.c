// SPDX-License-Identifier: MIT
/*
 * Finalize: HTA's correlation link (SPEC 4.5), ProfilerStep filter (4.8),
 * row order (4.9), then the indexes: per stream, per thread, per
 * correlation. Sorting copies (key, position) pairs out of ev[] once and
 * sorts those (no comparator calls, no random reads of 112-byte events):
 * an order check, then an insertion sort with a move budget (Kineto
 * writes mostly in time order, the disorder is local: enclosing ops come
 * after their children), then a merge sort when the budget runs out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_int.h"

int tl_cmp_ts(const struct tl_event *ev, uint32_t a, uint32_t b)
{
	if (ev[a].ts_ns != ev[b].ts_ns)
		return ev[a].ts_ns < ev[b].ts_ns ? -1 : 1;
	return ev[a].index < ev[b].index ? -1 : ev[a].index > ev[b].index;
}

int tl_cmp_corr(const struct tl_event *ev, uint32_t a, uint32_t b)
{
	if (ev[a].correlation != ev[b].correlation)
		return ev[a].correlation < ev[b].correlation ? -1 : 1;
	return ev[a].index < ev[b].index ? -1 : ev[a].index > ev[b].index;
}

/* Stable merge sort of positions p[0..n) by cmp; tmp has room for n. */
void tl_msort(uint32_t *p, uint32_t *tmp, uint32_t n, const struct tl_event *ev, tl_cmp_fn cmp)
{
	uint32_t i, w;

	for (i = 1; i < n && cmp(ev, p[i - 1], p[i]) <= 0; i++)
		;
	if (i >= n)
		return;
	for (w = 1; w < n; w *= 2) {
		for (i = 0; i < n; i += 2 * w) {
			uint32_t lo = i, mid = i + w < n ? i + w : n;
			uint32_t hi = i + 2 * w < n ? i + 2 * w : n, a = lo, b = mid, k = lo;

			if (mid >= hi || cmp(ev, p[mid - 1], p[mid]) <= 0) {
				memcpy(tmp + lo, p + lo, (hi - lo) * sizeof(*p));
				continue;
			}
			while (a < mid && b < hi)
				tmp[k++] = cmp(ev, p[b], p[a]) < 0 ? p[b++] : p[a++];
			while (a < mid)
				tmp[k++] = p[a++];
			while (b < hi)
				tmp[k++] = p[b++];
		}
		memcpy(p, tmp, n * sizeof(*p));
	}
}

static inline bool kp_lt(const struct tl_kp *a, const struct tl_kp *b)
{
	return a->key < b->key || (a->key == b->key && a->pos < b->pos);
}

/* Bottom-up merge sort of a[0..n) (after insertion-sorted runs of 32). */
static int kp_msort(struct tl_kp *a, uint32_t n)
{
	struct tl_kp *tmp = tl_malloc_big((size_t)n * sizeof(*tmp)), *src = a, *dst = tmp, *t;

	if (!tmp)
		return -ENOMEM;
	for (uint32_t lo = 0; lo < n; lo += 32) {
		uint32_t hi = n - lo < 32 ? n : lo + 32;

		for (uint32_t i = lo + 1; i < hi; i++) {
			struct tl_kp x = a[i];
			uint32_t j = i;

			for (; j > lo && kp_lt(&x, &a[j - 1]); j--)
				a[j] = a[j - 1];
			a[j] = x;
		}
	}
	for (uint32_t w = 32; w < n; w *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * w) {
			uint32_t mid = n - lo < w ? n : lo + w;
			uint32_t hi = n - lo < 2 * w ? n : lo + 2 * w, i = lo, j = mid, k = lo;

			if (mid >= hi || !kp_lt(&src[mid], &src[mid - 1])) {
				memcpy(dst + lo, src + lo, (hi - lo) * sizeof(*src));
				continue;
			}
			while (i < mid && j < hi)
				dst[k++] = kp_lt(&src[j], &src[i]) ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		t = src, src = dst, dst = t;
	}
	if (src != a)
		memcpy(a, src, (size_t)n * sizeof(*a));
	tl_free_big(tmp);
	return 0;
}

int tl_sort_pos(uint32_t *p, uint32_t n, const struct tl_event *ev, bool by_corr, struct tl_kp *a)
{
	/* 4 moves per element: past that the merge sort is cheaper. With 32,
	 * nccl_parser_config's correlation order (kernel rows a few hundred
	 * rows after their launches) kept the insertion sort shifting: about
	 * 0.5 ms of finalize more, by an ad-hoc timing of the two calls. */
	int64_t budget = 4 * (int64_t)n + 4096;
	uint32_t i;
	int err = 0;

	if (n < 2)
		return 0;
	{ /* already in order (the common case for GPU streams): a check
	   * that reads the keys once and leaves a[] untouched */
		struct tl_kp prev = { by_corr ? ev[p[0]].correlation : ev[p[0]].ts_ns, p[0] }, x;

		for (i = 1; i < n; i++, prev = x) {
			x = (struct tl_kp){ by_corr ? ev[p[i]].correlation : ev[p[i]].ts_ns, p[i] };
			if (kp_lt(&x, &prev))
				break;
		}
		if (i >= n)
			return 0;
	}
	for (i = 0; i < n; i++)
		a[i] = (struct tl_kp){ .key = by_corr ? ev[p[i]].correlation : ev[p[i]].ts_ns,
				       .pos = p[i] };
	for (i = 1; i < n && !kp_lt(&a[i], &a[i - 1]); i++)
		;
	for (; i < n; i++) {
		struct tl_kp x = a[i];
		uint32_t j = i;

		for (; j > 0 && kp_lt(&x, &a[j - 1]); j--)
			a[j] = a[j - 1];
		a[j] = x;
		budget -= i - j;
		if (budget < 0) { /* far from sorted (two interleaved runs, ...) */
			err = kp_msort(a, n);
			break;
		}
	}
	if (err < 0)
		return err;
	for (i = 0; i < n; i++)
		p[i] = a[i].pos;
	return 0;
}

/* HTA 4.5 over the rank's (unfiltered) rows: index_correlation. Several
 * partners: the last one (highest index) wins. */
static int corr_link(struct tl_rank *r)
{
	uint32_t *p = tl_malloc_big((size_t)r->nev * sizeof(*p) + 1), n = 0;
	struct tl_kp *tmp = tl_malloc_big((size_t)r->nev * sizeof(*tmp) + 1);

	if (!p || !tmp) {
		tl_free_big(p);
		tl_free_big(tmp);
		return -ENOMEM;
	}
	bool sorted = true; /* live captures: launches and kernels in corr order */
	int64_t prev = INT64_MIN;

	for (uint32_t i = 0; i < r->nev; i++) {
		int64_t c = r->ev[i].correlation;

		if (c != -1) {
			p[n++] = i;
			sorted &= c >= prev;
			prev = c;
		}
	}
	if (!sorted && tl_sort_pos(p, n, r->ev, true, tmp) < 0) {
		tl_free_big(p);
		tl_free_big(tmp);
		return -ENOMEM;
	}
	for (uint32_t g = 0; g < n;) {
		uint32_t e = g;
		int64_t last_gpu = -1, last_cpu = -1;

		while (e < n && r->ev[p[e]].correlation == r->ev[p[g]].correlation)
			e++;
		for (uint32_t i = g; i < e; i++) {
			if (r->ev[p[i]].flags & TL_EV_GPU_KERNEL_FILTER)
				last_gpu = r->ev[p[i]].index;
			else
				last_cpu = r->ev[p[i]].index;
		}
		for (uint32_t i = g; i < e && last_gpu >= 0 && last_cpu >= 0; i++) {
			struct tl_event *ev = &r->ev[p[i]];

			ev->index_correlation =
				(ev->flags & TL_EV_GPU_KERNEL_FILTER) ? last_cpu : last_gpu;
		}
		g = e;
	}
	tl_free_big(p);
	tl_free_big(tmp);
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* Correlation ids of CPU-side rows come mostly in increasing order:
 * insertion sort while that stays cheap, else qsort(). */
static void sort_i64(int64_t *a, uint32_t n)
{
	int64_t budget = 16 * (int64_t)n + 4096;

	for (uint32_t i = 1; i < n; i++) {
		int64_t x = a[i];
		uint32_t j = i;

		for (; j > 0 && x < a[j - 1]; j--)
			a[j] = a[j - 1];
		a[j] = x;
		budget -= i - j;
		if (budget < 0) {
			qsort(a, n, sizeof(*a), cmp_i64);
			return;
		}
	}
}

static bool has_i64(const int64_t *a, uint32_t n, int64_t x)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (a[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && a[lo] == x;
}

/* HTA 4.8, one rank. Ranks without any ProfilerStep row are left alone
 * (HTA would compare against NaN and drop every row; docs/import.md). */
static int step_filter(struct tl_rank *r)
{
	int64_t cutoff = INT64_MIN, cutoff_ns = -1, *corrs;
	uint32_t ncorr = 0, n = 0, nargs = 0;
	bool neg1 = false;

	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];

		if ((e->flags & TL_EV_PROFILER_STEP) && !(e->flags & TL_EV_GPU_KERNEL_FILTER) &&
		    tl_ev_hta_ts_us(e) > cutoff) {
			cutoff = tl_ev_hta_ts_us(e);
			cutoff_ns = e->ts_ns;
		}
	}
	if (cutoff == INT64_MIN)
		return 0;
	corrs = tl_malloc_big((size_t)r->nev * sizeof(*corrs) + 1);
	if (!corrs)
		return -ENOMEM;
	/* -1 (no correlation, most CPU ops) is kept out of the array as a
	 * flag: it would break the mostly increasing order */
	for (uint32_t i = 0; i < r->nev; i++)
		if (!(r->ev[i].flags & TL_EV_GPU_KERNEL_FILTER) &&
		    tl_ev_hta_ts_us(&r->ev[i]) < cutoff) {
			if (r->ev[i].correlation == -1)
				neg1 = true;
			else
				corrs[ncorr++] = r->ev[i].correlation;
		}
	sort_i64(corrs, ncorr);
	for (uint32_t i = 0; i < r->nev; i++) {
		struct tl_event *e = &r->ev[i];
		bool keep;

		if (e->flags & TL_EV_GPU_KERNEL_FILTER)
			keep = e->correlation == -1 ? neg1 : has_i64(corrs, ncorr, e->correlation);
		else
			keep = tl_ev_hta_ts_us(e) < cutoff;
		if (!keep)
			continue;
		if (e->args != TL_NO_ARGS) { /* in place: nargs <= e->args */
			if (nargs != e->args)
				r->args[nargs] = r->args[e->args];
			e->args = nargs++;
		}
		/* most rows stay where they are: no 112-byte rewrite for them */
		if (n != i)
			r->ev[n] = *e;
		n++;
	}
	tl_free_big(corrs);
	r->nargs = nargs;
	r->nev = n;
	r->step_cutoff_hta_us = cutoff;
	r->step_cutoff_ns = cutoff_ns;
	r->flags |= TL_RANK_STEP_FILTERED;
	return 0;
}

static uint32_t step_names(struct timeline *tl, uint32_t *ids, uint32_t cap)
{
	uint32_t n = 0;

	for (uint32_t ri = 0; ri < tl->nranks; ri++) {
		const struct tl_rank *r = tl->ranks[ri];

		for (uint32_t i = 0; i < r->nev && n < cap; i++) {
			uint32_t j;

			if (!(r->ev[i].flags & TL_EV_PROFILER_STEP))
				continue;
			for (j = 0; j < n && ids[j] != r->ev[i].name; j++)
				;
			if (j == n)
				ids[n++] = r->ev[i].name;
		}
	}
	return n;
}

int tl_link_ranks(struct timeline *tl)
{
	int err;

	for (uint32_t i = 0; i < tl->nranks; i++) {
		struct tl_rank *r = tl->ranks[i];

		if (!(r->flags & TL_RANK_FINALIZED) && (err = corr_link(r)) < 0)
			return err;
	}
	return 0;
}

int timeline_finalize(struct timeline *tl, unsigned flags)
{
	uint32_t ids[2];
	bool filter;
	int err;

	if ((err = tl_link_ranks(tl)) < 0)
		return err;
	filter = !(flags & TL_FIN_NO_STEP_FILTER) && step_names(tl, ids, 2) >= 2;
	for (uint32_t i = 0; i < tl->nranks; i++) {
		struct tl_rank *r = tl->ranks[i];

		if (r->flags & TL_RANK_FINALIZED)
			continue;
		if (filter && (err = step_filter(r)) < 0)
			return err;
		if ((err = tl_rank_index(r)) < 0)
			return err;
	}
	return 0;
}
