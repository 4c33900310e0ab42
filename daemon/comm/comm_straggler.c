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

/* Positions of group g's events on each rank, in start order. */
struct gpos {
	uint32_t *p;
	uint32_t n;
};

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

static int one_group(struct cctx *c, uint32_t g, struct gpos *pos, struct topk *all,
		     struct dvec *sp, uint64_t *last, bool *mismatch)
{
	uint32_t nmax = 0, nmin = UINT32_MAX, with = 0;
	int err = 0;

	for (uint32_t r = 0; r < c->nranks; r++) {
		struct crank *cr = &c->ranks[r];

		pos[r].n = 0;
		for (uint32_t i = 0; i < cr->nev; i++)
			if (cr->ev[i].group == g)
				pos[r].p[pos[r].n++] = i;
		if (pos[r].n) {
			with++;
			nmax = pos[r].n > nmax ? pos[r].n : nmax;
			nmin = pos[r].n < nmin ? pos[r].n : nmin;
		}
	}
	*mismatch = with >= 2 && nmax != nmin;
	if (with < 2)
		return 0;
	for (uint32_t k = 0; k < nmin && !err; k++) {
		int64_t lo = INT64_MAX, hi = INT64_MIN;
		uint32_t lr = 0;
		struct inst in;

		for (uint32_t r = 0; r < c->nranks; r++) {
			int64_t s;

			if (!pos[r].n)
				continue;
			s = c->ranks[r].ev[pos[r].p[k]].s;
			lo = s < lo ? s : lo;
			if (s > hi)
				hi = s, lr = r;
		}
		in = (struct inst){ (double)(hi - lo), g, k, c->ranks[lr].r->rank,
				    c->ranks[lr].ev[pos[lr].p[k]].type };
		last[lr]++;
		err = dvec_push(sp, in.spread);
		topk_add(all, in);
	}
	return err;
}

int comm_straggler(struct cctx *c, cJSON *root)
{
	cJSON *o = cj_obj(c, root, "straggler"), *ga = cj_arr(c, o, "groups");
	struct gpos *pos = calloc(c->nranks + 1, sizeof(*pos));
	uint64_t *last = calloc(c->nranks + 1, sizeof(*last));
	struct dvec sp = { 0 };
	struct topk all = { calloc((size_t)c->top + 1, sizeof(struct inst)), 0, (size_t)c->top };
	int err = 0;

	cj_str(c, o, "matching", "k-th kernel of a process group on each rank (issue order); "
				 "no clock-skew correction");
	if (!pos || !last || !all.h) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t r = 0; r < c->nranks; r++)
		if (!(pos[r].p = malloc(((size_t)c->ranks[r].nev + 1) * sizeof(uint32_t)))) {
			err = -ENOMEM;
			goto out;
		}
	for (uint32_t g = 0; g < c->ngroups && !err && c->nranks >= 2; g++) {
		bool mismatch = false;
		cJSON *x;

		memset(last, 0, c->nranks * sizeof(*last));
		sp.n = 0;
		if ((err = one_group(c, g, pos, &all, &sp, last, &mismatch)) || !sp.n)
			continue;
		qsort(sp.v, sp.n, sizeof(double), cmp_double);
		x = cj_obj(c, ga, NULL);
		cj_str(c, x, "group", c->groups[g].key ? timeline_str(c->tl, c->groups[g].key, NULL)
						       : "(unknown)");
		cj_str(c, x, "tag", tag_name[c->groups[g].tag]);
		cj_num(c, x, "instances", (double)sp.n);
		cj_bool(c, x, "count_mismatch", mismatch);
		{
			double s = 0;

			for (size_t i = 0; i < sp.n; i++)
				s += sp.v[i];
			cj_num(c, x, "spread_mean_us", ns_us(s / (double)sp.n));
		}
		cj_num(c, x, "spread_p50_us", ns_us(pctl(sp.v, sp.n, 50)));
		cj_num(c, x, "spread_p95_us", ns_us(pctl(sp.v, sp.n, 95)));
		cj_num(c, x, "spread_max_us", ns_us(sp.v[sp.n - 1]));
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

			cj_str(c, e, "group", g->key ? timeline_str(c->tl, g->key, NULL) : "(unknown)");
			cj_num(c, e, "seq", all.h[i].seq);
			cj_str(c, e, "type", ctype_name[all.h[i].type]);
			cj_num(c, e, "spread_us", ns_us(all.h[i].spread));
			cj_num(c, e, "last_rank", all.h[i].last_rank);
		}
	}
out:
	if (pos)
		for (uint32_t r = 0; r < c->nranks; r++)
			free(pos[r].p);
	free(pos);
	free(last);
	free(all.h);
	dvec_free(&sp);
	return err ? err : c->oom ? -ENOMEM : 0;
}
