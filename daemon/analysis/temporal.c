// SPDX-License-Identifier: MIT
/*
 * Temporal breakdown (SPEC 6.1) and, beside it, the split of non-compute
 * time into communication / memory / other by a priority sweep.
 *
 * HTA: span = union of all GPU-side rows (stream != -1, so stream-carrying
 * cuda_sync rows count as busy, SPEC 5), idle = span - |union|, compute =
 * |union of COMPUTATION rows|, non-compute = the rest. The split walks the
 * same rows once more and gives each instant to the highest-priority type
 * active then (compute > communication > memory > other), so
 * communication + memory + other == non_compute exactly.
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* time[type] = time during which `type` is the highest-priority active type. */
static int priority_split(const struct tl_rank *r, struct actx *c, int64_t time[KT_COUNT])
{
	struct sweep_ev *ev = tl_malloc_big(2 * (size_t)r->nby_stream * sizeof(*ev) + 1);
	int64_t active[KT_COUNT] = { 0 };
	size_t n = 0;

	if (!ev)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		int64_t s = ev_ts(r, e), d = ev_dur(r, e);
		uint8_t t = (uint8_t)ktype_of(c, e->name);

		if (d <= 0) /* adds nothing; a negative one would unbalance the counts */
			continue;
		ev[n++] = (struct sweep_ev){ s, 1, t };
		ev[n++] = (struct sweep_ev){ s + d, -1, t };
	}
	sweep_sort(ev, n);
	for (size_t i = 0; i < n;) {
		int64_t t = ev[i].t;

		while (i < n && ev[i].t == t) {
			active[ev[i].type] += ev[i].delta;
			i++;
		}
		if (i == n)
			break;
		for (int k = 0; k < KT_COUNT; k++) {
			if (active[k] > 0) {
				time[k] += ev[i].t - t;
				break;
			}
		}
	}
	tl_free_big(ev);
	return 0;
}

static int one_rank(struct actx *c, const struct tl_rank *r, cJSON *out)
{
	struct ival *all = NULL, *comp = NULL;
	size_t nall = 0, ncomp = 0;
	int64_t span, busy, compute, idle, noncomp, split[KT_COUNT] = { 0 };
	cJSON *o;
	int err = -ENOMEM;

	all = tl_malloc_big((r->nby_stream + 1) * sizeof(*all));
	comp = tl_malloc_big((r->nby_stream + 1) * sizeof(*comp));
	if (!all || !comp)
		goto out;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		struct ival v = { ev_ts(r, e), ev_end(r, e) };

		all[nall++] = v;
		if (ktype_of(c, e->name) == KT_COMPUTATION)
			comp[ncomp++] = v;
	}
	nall = ival_merge(all, nall);
	ncomp = ival_merge(comp, ncomp);
	span = all[nall - 1].e - all[0].s;
	busy = ival_total(all, nall);
	compute = ival_total(comp, ncomp);
	idle = span - busy;
	noncomp = span - compute - idle;
	err = priority_split(r, c, split);
	if (err)
		goto out;

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
		static const char *const key[KT_COUNT] = { NULL, "communication", "memory", "other" };
		char k[48];

		for (int t = KT_COMMUNICATION; t < KT_COUNT; t++) {
			snprintf(k, sizeof(k), "%s_time_us", key[t]);
			jnum(c, s, k, us(split[t]));
			snprintf(k, sizeof(k), "%s_time_pctg", key[t]);
			jnum(c, s, k, span ? 100.0 * (double)split[t] / (double)span : 0);
		}
	}
	err = 0;
out:
	tl_free_big(all);
	tl_free_big(comp);
	return err;
}

int analysis_temporal(struct actx *c, cJSON **out)
{
	static const char *const keys[] = { "rank", NULL };
	cJSON *root, *ranks;
	int err;

	err = an_param_keys(c, keys);
	if (err)
		return err;
	err = require_gpu(c);
	if (err)
		return err;
	root = jroot(c, "temporal", &ranks);
	for (uint32_t i = 0; !err && i < timeline_nranks(c->tl); i++) {
		const struct tl_rank *r = timeline_rank_at(c->tl, i);

		if (!rank_selected(c, r))
			continue;
		if (!rank_has_gpu(r)) {
			cJSON *o = cJSON_CreateObject();

			jpush(c, ranks, o);
			jint(c, o, "rank", r->rank);
			jbool(c, o, "no_gpu_activity", true);
			continue;
		}
		err = one_rank(c, r, ranks);
	}
	if (!err && c->oom)
		err = -ENOMEM;
	if (err) {
		cJSON_Delete(root);
		return err;
	}
	*out = root;
	return 0;
}
