// SPDX-License-Identifier: MIT
/*
 * Temporal breakdown (as HTA's) and, beside it, the split of non-compute
 * time into communication / memory / other by a priority sweep.
 *
 * HTA: span = union of all GPU-side rows (stream != -1, so stream-carrying
 * cuda_sync rows count as busy, as in HTA), idle = span - |union|, compute =
 * |union of COMPUTATION rows|, non-compute = the rest. The split gives
 * each instant to the highest-priority type active then (compute >
 * communication > memory > other), so communication + memory + other ==
 * non_compute exactly. All of it comes from one pass over the rows in time
 * order, merged from the per-stream runs (sums_merged).
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#include "internal.h"

struct tsums {
	int64_t span, busy, compute;
	int64_t split[KT_COUNT]; /* time during which each type is the highest-priority active one */
};

/*
 * One pass over the GPU rows in time order (gpu_merge), no arrays: the
 * unions of all rows and of the COMPUTATION rows as HTA merges them, and
 * the priority split as differences of unions. With U_k the union of the
 * rows of positive length whose type is k or higher in priority, type k is
 * the highest active one on U_k \ U_(k-1): split[k] = |U_k| - |U_(k-1)|,
 * the sweep's sums exactly. 1: the rows were not in ev_ts order (see
 * gpu_merge): nothing computed.
 */
static int sums_merged(struct actx *c, const struct tl_rank *r, struct tsums *t)
{
	struct ival_acc all = {0}, comp = {0}, up[KT_COUNT] = {0};
	struct gpu_merge m;
	const struct tl_event *e;
	int64_t first = 0;
	bool unsorted;

	if (gpu_merge_init(&m, r) < 0)
		return -ENOMEM;
	while ((e = gpu_merge_next(&m))) {
		int64_t s = ev_ts(r, e), d = ev_dur(r, e);
		enum ktype k = ktype_of(c, e->name);

		if (!all.open)
			first = s;
		ival_acc_add(&all, s, s + d);
		if (k == KT_COMPUTATION)
			ival_acc_add(&comp, s, s + d);
		if (d > 0) /* adds nothing; a negative one would not be an interval */
			for (int u = k; u < KT_COUNT; u++)
				ival_acc_add(&up[u], s, s + d);
	}
	unsorted = m.unsorted;
	gpu_merge_free(&m);
	if (unsorted)
		return 1;
	t->span = all.e - first;
	t->busy = ival_acc_total(&all);
	t->compute = ival_acc_total(&comp);
	for (int k = 0; k < KT_COUNT; k++)
		t->split[k] = ival_acc_total(&up[k]) - (k ? ival_acc_total(&up[k - 1]) : 0);
	return 0;
}

/* The same from sorted copies: for rows out of ev_ts order. */
static int sums_sorted(struct actx *c, const struct tl_rank *r, struct tsums *t)
{
	struct ival *all = bigalloc_malloc((r->nby_stream + 1) * sizeof(*all));
	struct ival *comp = bigalloc_malloc((r->nby_stream + 1) * sizeof(*comp));
	struct sweep_ev *ev = bigalloc_malloc(2 * (size_t)r->nby_stream * sizeof(*ev) + 1);
	int64_t active[KT_COUNT] = {0};
	size_t nall = 0, ncomp = 0, n = 0;
	int err = -ENOMEM;

	if (!all || !comp || !ev)
		goto out;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		int64_t s = ev_ts(r, e), d = ev_dur(r, e);
		uint8_t k = (uint8_t)ktype_of(c, e->name);

		all[nall++] = (struct ival){s, s + d};
		if (k == KT_COMPUTATION)
			comp[ncomp++] = (struct ival){s, s + d};
		if (d <= 0)
			continue;
		ev[n++] = (struct sweep_ev){s, 1, k};
		ev[n++] = (struct sweep_ev){s + d, -1, k};
	}
	nall = ival_merge(all, nall);
	ncomp = ival_merge(comp, ncomp);
	t->span = all[nall - 1].e - all[0].s;
	t->busy = ival_total(all, nall);
	t->compute = ival_total(comp, ncomp);
	sweep_sort(ev, n);
	for (size_t i = 0; i < n;) {
		int64_t at = ev[i].t;

		while (i < n && ev[i].t == at) {
			active[ev[i].type] += ev[i].delta;
			i++;
		}
		if (i == n)
			break;
		for (int k = 0; k < KT_COUNT; k++) {
			if (active[k] > 0) {
				t->split[k] += ev[i].t - at;
				break;
			}
		}
	}
	err = 0;
out:
	bigalloc_free(all);
	bigalloc_free(comp);
	bigalloc_free(ev);
	return err;
}

static int one_rank(struct actx *c, const struct tl_rank *r, cJSON *out)
{
	struct tsums sum = {0};
	int64_t span, idle, compute, noncomp, *split = sum.split;
	cJSON *o;
	int err;

	err = sums_merged(c, r, &sum);
	if (err == 1) {
		sum = (struct tsums){0};
		err = sums_sorted(c, r, &sum);
	}
	if (err < 0)
		return err;
	span = sum.span;
	compute = sum.compute;
	idle = span - sum.busy;
	noncomp = span - compute - idle;

	o = cJSON_CreateObject();
	jpush(c, out, o);
	jint(c, o, "rank", r->rank);
	jnum(c, o, "kernel_time_us", us(span));
	jnum(c, o, "idle_time_us", us(idle));
	jnum(c, o, "compute_time_us", us(compute));
	jnum(c, o, "non_compute_time_us", us(noncomp));
	jnum(c, o, "idle_time_pctg", span ? 100.0 * (double)idle / (double)span : 0);
	jnum(c, o, "compute_time_pctg", span ? 100.0 * (double)compute / (double)span : 0);
	jnum(c, o, "non_compute_time_pctg", span ? 100.0 * (double)noncomp / (double)span : 0);

	/* The finer split: percentages of the span, like HTA's three. */
	{
		cJSON *s = jobj(c, o, "non_compute_split");
		static const char *const key[KT_COUNT] = {NULL, "communication", "memory", "other"};
		char k[48];

		for (int t = KT_COMMUNICATION; t < KT_COUNT; t++) {
			snprintf(k, sizeof(k), "%s_time_us", key[t]);
			jnum(c, s, k, us(split[t]));
			snprintf(k, sizeof(k), "%s_time_pctg", key[t]);
			jnum(c, s, k, span ? 100.0 * (double)split[t] / (double)span : 0);
		}
	}
	return 0;
}

/* A rank without GPU rows is listed as such (HTA leaves it out). */
static int rank_part(struct actx *c, const struct tl_rank *r, cJSON *ranks, const void *opts)
{
	cJSON *o;

	(void)opts; /* none but rank */
	if (rank_has_gpu(r))
		return one_rank(c, r, ranks);
	o = cJSON_CreateObject();
	jpush(c, ranks, o);
	jint(c, o, "rank", r->rank);
	jbool(c, o, "no_gpu_activity", true);
	return 0;
}

int analysis_temporal(struct actx *c, cJSON **out)
{
	return an_rank_only(c, "temporal", rank_part, out);
}
