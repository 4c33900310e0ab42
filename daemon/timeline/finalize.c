// SPDX-License-Identifier: MIT
/*
 * Finalize: HTA's correlation link, ProfilerStep filter,
 * row order, then the indexes: per stream, per thread, per
 * correlation. Sorting copies (key, position) pairs out of ev[] once and
 * sorts those (no comparator calls, no random reads of 96-byte events):
 * an order check, then an insertion sort with a move budget (GPU rows
 * come mostly in time order, the disorder is local), then a radix sort
 * when the budget runs out (CPU ops: Kineto writes an enclosing op after
 * its children).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_int.h"

/* The shared LSD radix sort (radix.h: constant bytes skipped, stable, so
 * pairs filled in position order come out in (key, pos) order), its
 * scratch from bigalloc_malloc. The merge sort it replaces took ~0.3 s of a
 * 1 GB import's finalize on the per-thread sorts alone (Kineto writes an
 * enclosing op after its children: far from time order). */
#define RADIX_ALLOC(bytes) bigalloc_malloc(bytes)
#define RADIX_FREE(p) bigalloc_free(p)
#include "radix.h"
#define KP_KEY(x) radix_key_i64((x).key)
DEFINE_RADIX(kp_radix, struct tl_kp, KP_KEY)

static inline bool kp_lt(const struct tl_kp *a, const struct tl_kp *b)
{
	return a->key < b->key || (a->key == b->key && a->pos < b->pos);
}

int tl_sort_kp(struct tl_kp *a, uint32_t n)
{
	/* 4 moves per element: past that the radix sort is cheaper. With 32,
	 * nccl_parser_config's correlation order (kernel rows a few hundred
	 * rows after their launches) kept the insertion sort shifting: about
	 * 0.5 ms of finalize more, by an ad-hoc timing of the two calls. */
	int64_t budget = 4 * (int64_t)n + 4096;
	uint32_t i;

	/* already in order: the common case for GPU streams */
	for (i = 1; i < n && !kp_lt(&a[i], &a[i - 1]); i++)
		;
	/* Insertion sort while the disorder is local; it keeps (key, pos)
	 * order, and what it leaves unsorted follows in position order, so
	 * the radix sort's stable order is (key, pos) too. */
	for (; i < n; i++) {
		struct tl_kp x = a[i];
		uint32_t j = i;

		for (; j > 0 && kp_lt(&x, &a[j - 1]); j--)
			a[j] = a[j - 1];
		a[j] = x;
		budget -= i - j;
		if (budget < 0) /* far from sorted (two interleaved runs, ...) */
			break;
	}
	return i >= n || kp_radix(a, n) ? 0 : -ENOMEM;
}

/* HTA's correlation link over the rank's (unfiltered) rows: index_correlation. Several
 * partners: the last one (highest index) wins. *pairs_out (optional): the
 * (correlation, position) pairs of the rows with a correlation, sorted,
 * in a block with room for r->nev pairs (the caller bigalloc_free()s it). */
int tl_corr_pairs(const struct tl_rank *r, struct tl_kp **pairs, uint32_t *npairs)
{
	struct tl_kp *a = bigalloc_malloc((size_t)r->nev * sizeof(*a) + 1);
	uint32_t n = 0;

	if (!a)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nev; i++)
		if (r->ev[i].correlation != -1)
			a[n++] = (struct tl_kp){.key = r->ev[i].correlation, .pos = i};
	if (tl_sort_kp(a, n) < 0) {
		bigalloc_free(a);
		return -ENOMEM;
	}
	*pairs = a;
	*npairs = n;
	return 0;
}

static int corr_link(struct tl_rank *r, struct tl_kp **pairs_out, uint32_t *npairs)
{
	struct tl_kp *a;
	uint32_t n;

	if (tl_corr_pairs(r, &a, &n) < 0)
		return -ENOMEM;
	for (uint32_t g = 0; g < n;) {
		uint32_t e = g;
		int64_t last_gpu = -1, last_cpu = -1;

		while (e < n && a[e].key == a[g].key)
			e++;
		for (uint32_t i = g; i < e; i++) {
			if (r->ev[a[i].pos].flags & TL_EV_GPU_KERNEL_FILTER)
				last_gpu = r->ev[a[i].pos].index;
			else
				last_cpu = r->ev[a[i].pos].index;
		}
		for (uint32_t i = g; i < e && last_gpu >= 0 && last_cpu >= 0; i++) {
			struct tl_event *ev = &r->ev[a[i].pos];

			/* an index: below TL_NO_INDEX (kimp_count_raw) */
			ev->index_corr = (uint32_t)((ev->flags & TL_EV_GPU_KERNEL_FILTER)
							    ? last_cpu
							    : last_gpu);
		}
		g = e;
	}
	if (pairs_out) {
		*pairs_out = a;
		*npairs = n;
	} else {
		bigalloc_free(a);
	}
	return 0;
}

/* The rows the filter drops, kept aside (r->tail): grown as they come, so
 * a trace whose last step is small costs no pass over every row. */
struct tail {
	uint32_t cap, acap;
	uint32_t rpc; /* string id of record_param_comms, 0 if absent */
};

/*
 * Whether a dropped row goes to the tail: the rows the communication
 * metrics read — GPU work, annotations (iteration marks) and the
 * record_param_comms ops (collective args) — not the CPU ops, runtime
 * calls and Python frames that are most of a step, which would make the
 * capture half again as large (nccl_parser_config) for nothing.
 */
static bool tail_row(const struct tail *t, const struct tl_event *e)
{
	switch (e->kind) {
	case TL_K_KERNEL:
	case TL_K_MEMCPY:
	case TL_K_MEMSET:
	case TL_K_USER_ANNOTATION:
	case TL_K_GPU_USER_ANNOTATION:
		return true;
	default:
		return t->rpc && e->name == t->rpc;
	}
}

static void tail_reset(struct tl_rank *r)
{
	free(r->tail), free(r->tail_args);
	r->tail = NULL, r->tail_args = NULL;
	r->ntail = r->ntail_args = 0;
}

/* A dropped row into the tail. nargs: the kept args so far, which have
 * overwritten args[0..nargs) (none of this row's: args are numbered in row
 * order, so a dropped row's come after every earlier kept row's). */
static int tail_put(struct tl_rank *r, struct tail *t, const struct tl_event *e, uint32_t nargs)
{
	struct tl_event *x;

	if (bigalloc_grow((void **)&r->tail, &t->cap, r->ntail + 1, sizeof(*r->tail)) < 0)
		return -ENOMEM;
	x = &r->tail[r->ntail++];
	memcpy(x, e, sizeof(*x)); /* padding too: timeline_equal() compares bytes */
	x->link = -1;
	if (e->args == TL_NO_ARGS)
		return 0;
	if (e->args < nargs) { /* cannot happen with row-ordered args: dropped, not wrong */
		x->args = TL_NO_ARGS;
		return 0;
	}
	if (bigalloc_grow((void **)&r->tail_args, &t->acap, r->ntail_args + 1,
			  sizeof(*r->tail_args)) < 0)
		return -ENOMEM;
	r->tail_args[r->ntail_args] = r->args[e->args];
	x->args = r->ntail_args++;
	return 0;
}

/*
 * HTA's ProfilerStep filter, one rank: rows at or past the last ProfilerStep's start are
 * dropped, and GPUKernelFilter rows whose correlation no kept CPU-side row
 * has. pairs[0..*npairs): corr_link()'s sorted pairs, which give each
 * correlation's rows together (no sort or search of the kept ids); they
 * are rewritten to the kept rows' new positions, still sorted. Ranks
 * without any ProfilerStep row are left alone (HTA would compare against
 * NaN and drop every row; docs/import.md).
 */
static int step_filter(struct tl_rank *r, struct tl_kp *pairs, uint32_t *npairs,
		       struct tl_bythread *bt, uint32_t rpc)
{
	int64_t cutoff = INT64_MIN, cutoff_ns = -1;
	uint32_t n = 0, nargs = 0, *np, k = 0;
	bool neg1 = false;
	struct tail aside = {.rpc = rpc};

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
	/* np[i]: first whether GPU row i (with a correlation) is kept, then
	 * row i's new position (UINT32_MAX: dropped) */
	if (!(np = bigalloc_malloc((size_t)r->nev * sizeof(*np) + 1)))
		return -ENOMEM;
	for (uint32_t g = 0; g < *npairs;) {
		uint32_t e = g;
		bool keep = false;

		for (; e < *npairs && pairs[e].key == pairs[g].key; e++) {
			const struct tl_event *ev = &r->ev[pairs[e].pos];

			keep |= !(ev->flags & TL_EV_GPU_KERNEL_FILTER) &&
				tl_ev_hta_ts_us(ev) < cutoff;
		}
		for (; g < e; g++)
			np[pairs[g].pos] = keep;
	}
	for (uint32_t i = 0; i < r->nev && !neg1; i++)
		neg1 = r->ev[i].correlation == -1 && !(r->ev[i].flags & TL_EV_GPU_KERNEL_FILTER) &&
		       tl_ev_hta_ts_us(&r->ev[i]) < cutoff;
	/* rows move below: the per-thread sort reading them must be done */
	if (bt && tl_bythread_wait(bt) < 0) {
		bigalloc_free(np);
		return -ENOMEM;
	}
	tail_reset(r);
	for (uint32_t i = 0; i < r->nev; i++) {
		struct tl_event *e = &r->ev[i];
		bool keep;

		if (!(e->flags & TL_EV_GPU_KERNEL_FILTER))
			keep = tl_ev_hta_ts_us(e) < cutoff;
		else
			keep = e->correlation == -1 ? neg1 : np[i];
		np[i] = keep ? n : UINT32_MAX;
		if (!keep) {
			/* not yet overwritten: kept rows only move down to n <= i,
			 * kept args to nargs <= their own index, and args are
			 * numbered in row order */
			if (tail_row(&aside, e) && tail_put(r, &aside, e, nargs) < 0) {
				/* rows have moved: the rank is unusable either way */
				bigalloc_free(np);
				return -ENOMEM;
			}
			continue;
		}
		if (e->args != TL_NO_ARGS) { /* in place: nargs <= e->args */
			if (nargs != e->args)
				r->args[nargs] = r->args[e->args];
			e->args = nargs++;
		}
		/* most rows stay where they are: no 96-byte rewrite for them */
		if (n != i)
			r->ev[n] = *e;
		n++;
	}
	/* new positions keep the order: still sorted by (correlation, pos) */
	for (uint32_t j = 0; j < *npairs; j++)
		if (np[pairs[j].pos] != UINT32_MAX)
			pairs[k++] = (struct tl_kp){.key = pairs[j].key, .pos = np[pairs[j].pos]};
	*npairs = k;
	if (bt)
		tl_bythread_remap(bt, np);
	bigalloc_free(np);
	r->nargs = nargs;
	r->nev = n;
	r->step_cutoff_hta_us = cutoff;
	r->step_cutoff_ns = cutoff_ns;
	r->flags |= TL_RANK_STEP_FILTERED | TL_RANK_TAIL_KEPT;
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

		if (!(r->flags & TL_RANK_FINALIZED) && (err = corr_link(r, NULL, NULL)) < 0)
			return err;
	}
	return 0;
}

/* Link, filter and index each rank not finalized: one sort by correlation
 * serves all three. */
int timeline_finalize(struct timeline *tl, unsigned flags)
{
	uint32_t ids[2];
	bool filter = !(flags & TL_FIN_NO_STEP_FILTER) && step_names(tl, ids, 2) >= 2;
	uint32_t rpc = strtab_find(&tl->st, "record_param_comms", 18);

	for (uint32_t i = 0; i < tl->nranks; i++) {
		struct tl_rank *r = tl->ranks[i];
		struct tl_bythread *bt;
		struct tl_kp *pairs;
		uint32_t npairs;
		int err;

		if (r->flags & TL_RANK_FINALIZED)
			continue;
		/* the per-thread sort, on a second thread beside the link */
		bt = tl_bythread_start(r);
		if ((err = corr_link(r, &pairs, &npairs)) < 0) {
			tl_bythread_free(bt);
			return err;
		}
		if (filter && (err = step_filter(r, pairs, &npairs, bt, rpc)) < 0) {
			bigalloc_free(pairs);
			tl_bythread_free(bt);
			return err;
		}
		err = tl_rank_index_pairs(r, pairs, npairs, bt);
		bigalloc_free(pairs);
		tl_bythread_free(bt);
		if (err < 0)
			return err;
	}
	return 0;
}
