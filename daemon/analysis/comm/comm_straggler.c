// SPDX-License-Identifier: MIT
/*
 * Straggler view: every rank of a communicator issues its collectives in
 * the same order (NCCL requires it), so the k-th kernel of process group g
 * on each rank is one collective instance. Its start spread across ranks
 * is the time the early ranks waited; the last to start is the straggler.
 * Ranks must share a clock (one host, or synchronised hosts): the skew
 * between hosts is not corrected.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm_acc.h"

struct inst {
	double spread;
	uint32_t group, seq;
	int32_t last_rank;
	uint8_t type;
};

static int cmp_inst(const void *a, const void *b)
{
	const struct inst *x = a, *y = b;

	return x->spread < y->spread ? 1 : x->spread > y->spread ? -1 : 0;
}

int comm_straggler_begin(struct cctx *c)
{
	if (c->ngroups > c->nsg) {
		struct sggroup *p = realloc(c->sg, c->ngroups * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->sg = p;
		for (; c->nsg < c->ngroups; c->nsg++)
			c->sg[c->nsg] = (struct sggroup){.nmin = UINT32_MAX};
	}
	for (uint32_t g = 0; g < c->ngroups; g++) {
		struct sggroup *x = &c->sg[g];

		if (c->gcount[g] > x->cap) {
			uint32_t cap = c->gcount[g] > 2 * x->cap ? c->gcount[g] : 2 * x->cap;
			struct sginst *p = realloc(x->v, (size_t)cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			x->v = p, x->cap = cap;
		}
	}
	return 0;
}

void comm_straggler_end(struct cctx *c)
{
	for (uint32_t g = 0; g < c->nsg; g++) {
		struct sggroup *x = &c->sg[g];

		if (!x->cur)
			continue;
		x->with++;
		x->nmin = x->cur < x->nmin ? x->cur : x->nmin;
		x->nmax = x->cur > x->nmax ? x->cur : x->nmax;
		x->cur = 0;
	}
}

/* The top K instances by spread: a min-heap on spread, root = smallest kept. */
struct topk {
	struct inst *h;
	size_t n, k;
};

static void topk_add(struct topk *t, struct inst x)
{
	size_t i;

	if (t->n < t->k) {
		for (i = t->n++; i && t->h[(i - 1) / 2].spread > x.spread; i = (i - 1) / 2)
			t->h[i] = t->h[(i - 1) / 2];
		t->h[i] = x;
		return;
	}
	if (!t->k || x.spread <= t->h[0].spread)
		return;
	for (i = 0;;) { /* replace the root, sift down */
		size_t c = 2 * i + 1;

		if (c >= t->n)
			break;
		if (c + 1 < t->n && t->h[c + 1].spread < t->h[c].spread)
			c++;
		if (t->h[c].spread >= x.spread)
			break;
		t->h[i] = t->h[c];
		i = c;
	}
	t->h[i] = x;
}

static int one_group(struct cctx *c, uint32_t g, struct topk *all, struct dvec *sp, uint64_t *last,
		     bool *mismatch)
{
	const struct sggroup *x = g < c->nsg ? &c->sg[g] : NULL;

	*mismatch = x && x->with >= 2 && x->nmax != x->nmin;
	if (!x || x->with < 2)
		return 0;
	if (sp->cap < x->nmin) {
		double *p = realloc(sp->v, (size_t)x->nmin * sizeof(*p));

		if (!p)
			return -ENOMEM;
		sp->v = p, sp->cap = x->nmin;
	}
	for (uint32_t k = 0; k < x->nmin; k++) {
		const struct sginst *in = &x->v[k];
		struct inst i = {(double)(in->hi - in->lo), g, k, c->ranks[in->last].r->rank,
				 in->type};

		last[in->last]++;
		sp->v[sp->n++] = i.spread;
		topk_add(all, i);
	}
	return 0;
}

int comm_straggler(struct cctx *c, cJSON *root)
{
	cJSON *o = cj_obj(c, root, "straggler"), *ga = cj_arr(c, o, "groups");
	uint64_t *last = calloc(c->nranks + 1, sizeof(*last));
	struct dvec sp = {0};
	struct topk all = {calloc((size_t)c->top + 1, sizeof(struct inst)), 0, (size_t)c->top};
	int err = 0;

	cj_str(c, o, "matching",
	       "k-th kernel of a process group on each rank (issue order); "
	       "no clock-skew correction");
	if (!last || !all.h) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t g = 0; g < c->ngroups && !err && c->nranks >= 2; g++) {
		bool mismatch = false;
		cJSON *x;

		memset(last, 0, c->nranks * sizeof(*last));
		sp.n = 0;
		if ((err = one_group(c, g, &all, &sp, last, &mismatch)) || !sp.n)
			continue;
		x = cj_obj(c, ga, NULL);
		cj_str(c, x, "group",
		       c->groups[g].key ? timeline_str(c->tl, c->groups[g].key, NULL)
					: "(unknown)");
		cj_str(c, x, "tag", tag_name[c->groups[g].tag]);
		cj_num(c, x, "instances", (double)sp.n);
		cj_bool(c, x, "count_mismatch", mismatch);
		{ /* spreads are whole ns: the sum is exact in any order */
			double sum = 0, max = 0;

			for (size_t i = 0; i < sp.n; i++)
				sum += sp.v[i], max = sp.v[i] > max ? sp.v[i] : max;
			cj_us(c, x, "spread_mean_us", sum / (double)sp.n);
			cj_us(c, x, "spread_p50_us", pctl_unsorted(sp.v, sp.n, 50));
			cj_us(c, x, "spread_p95_us", pctl_unsorted(sp.v, sp.n, 95));
			cj_us(c, x, "spread_max_us", max);
		}
		{
			cJSON *lr = cj_arr(c, x, "last_arrivals");

			for (uint32_t r = 0; r < c->nranks; r++) {
				cJSON *e;

				if (!last[r])
					continue;
				e = cj_obj(c, lr, NULL);
				cj_num(c, e, "rank", c->ranks[r].r->rank);
				cj_num(c, e, "count", (double)last[r]);
			}
		}
	}
	if (!err && all.n) {
		cJSON *ta = cj_arr(c, o, "top_instances");

		qsort(all.h, all.n, sizeof(*all.h), cmp_inst);
		for (size_t i = 0; i < all.n; i++) {
			cJSON *e = cj_obj(c, ta, NULL);
			const struct cgroup *g = &c->groups[all.h[i].group];

			cj_str(c, e, "group",
			       g->key ? timeline_str(c->tl, g->key, NULL) : "(unknown)");
			cj_num(c, e, "seq", all.h[i].seq);
			cj_str(c, e, "type", ctype_name[all.h[i].type]);
			cj_us(c, e, "spread_us", all.h[i].spread);
			cj_num(c, e, "last_rank", all.h[i].last_rank);
		}
	}
out:
	free(last);
	free(all.h);
	dvec_free(&sp);
	return err ? err : c->oom ? -ENOMEM : 0;
}
