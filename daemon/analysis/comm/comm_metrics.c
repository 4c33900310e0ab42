// SPDX-License-Identifier: MIT
/*
 * Metrics 0-5 of the specification for every (iteration, rank), accumulated
 * for the per-rank and the global report. GPU intervals belong to the
 * iteration their start falls in; the simple sums use whole durations (as
 * the specification writes them), the union metrics clip at the iteration's
 * end so that they partition iteration_time exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm_acc.h"

int dvec_push(struct dvec *d, double x)
{
	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 64;
		double *p = realloc(d->v, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		d->v = p;
		d->cap = nc;
	}
	d->v[d->n++] = x;
	return 0;
}

void dvec_free(struct dvec *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}

/* The utilisation values live in big_alloc() memory (millions of them). */
void bwacc_free(struct bwacc *b)
{
	big_free(b->util.v, b->util.cap * sizeof(double));
	memset(&b->util, 0, sizeof(b->util));
}

static int util_room(struct dvec *d, size_t need)
{
	size_t cap = d->cap * 2 > need ? d->cap * 2 : need;
	double *p;

	if (need <= d->cap)
		return 0;
	if (!(p = big_alloc(cap * sizeof(*p))))
		return -ENOMEM;
	if (d->n)
		memcpy(p, d->v, d->n * sizeof(*p));
	big_free(d->v, d->cap * sizeof(*p));
	d->v = p;
	d->cap = cap;
	return 0;
}

/* Scratch reused across iterations of one rank. */
struct scratch {
	struct ival *cu, *tu[TAG_N], *co, *me, *tmp; /* merged unions, clipped */
	uint32_t ncu, ntu[TAG_N], nco, nme;
	uint32_t cap;
};

static int scratch_room(struct scratch *s, uint32_t n)
{
	if (n <= s->cap)
		return 0;
	n = n < 256 ? 256 : n * 2;
	free(s->cu), free(s->co), free(s->me), free(s->tmp);
	s->cu = malloc(n * sizeof(*s->cu));
	s->co = malloc(n * sizeof(*s->co));
	s->me = malloc(n * sizeof(*s->me));
	s->tmp = malloc(2 * (size_t)n * sizeof(*s->tmp));
	for (int t = 0; t < TAG_N; t++) {
		free(s->tu[t]);
		s->tu[t] = malloc(n * sizeof(*s->tu[t]));
		if (!s->tu[t])
			return -ENOMEM;
	}
	s->cap = n;
	return s->cu && s->co && s->me && s->tmp ? 0 : -ENOMEM;
}

static void scratch_free(struct scratch *s)
{
	free(s->cu), free(s->co), free(s->me), free(s->tmp);
	for (int t = 0; t < TAG_N; t++)
		free(s->tu[t]);
}

/* Split the comm union among the tags active in each elementary segment,
 * equally: an exact partition of |∪ comm| whatever overlaps. A tag is
 * active where its own union (s->tu[], clipped, sorted, disjoint) is, so
 * the sweep merges at most TAG_N lists of merged intervals: far fewer
 * boundaries than events, and no heap. */
static void tag_shares(const struct scratch *s, double *share)
{
	uint32_t pos[TAG_N] = {0};
	unsigned act = 0, k = 0; /* the tags inside one of their intervals, how many */
	int64_t prev = 0;

	for (;;) {
		int64_t t = INT64_MAX;

		for (int g = 0; g < TAG_N; g++) {
			if (pos[g] < s->ntu[g]) {
				const struct ival *x = &s->tu[g][pos[g]];
				int64_t bnd = act >> g & 1 ? x->e : x->s;

				t = bnd < t ? bnd : t;
			}
		}
		if (t == INT64_MAX)
			break;
		if (k == 1) { /* the usual case: one tag active */
			share[__builtin_ctz(act)] += (double)(t - prev);
		} else if (k) {
			double part = (double)(t - prev) / k;

			for (unsigned m = act; m; m &= m - 1)
				share[__builtin_ctz(m)] += part;
		}
		prev = t;
		for (int g = 0; g < TAG_N; g++) { /* every list with a boundary at t */
			if (pos[g] >= s->ntu[g])
				continue;
			if (act >> g & 1) {
				if (s->tu[g][pos[g]].e == t)
					act &= ~(1u << g), k--, pos[g]++;
			} else if (s->tu[g][pos[g]].s == t) {
				act |= 1u << g, k++;
			}
		}
	}
}

/* Clip [s, e) to [lo, hi) into the merged list u: starts come sorted, so
 * the union (sorted, disjoint) is built as it goes. */
static uint32_t clip_push(struct ival *u, uint32_t n, int64_t s, int64_t e, int64_t lo, int64_t hi)
{
	if (s < lo)
		s = lo;
	if (e > hi)
		e = hi;
	if (e <= s)
		return n;
	if (n && s <= u[n - 1].e) {
		if (e > u[n - 1].e)
			u[n - 1].e = e;
		return n;
	}
	u[n] = (struct ival){s, e};
	return n + 1;
}

/* The last (type, group size) and its bus-bandwidth factor. */
struct bfmemo {
	uint8_t type;
	int32_t n;
	double f;
};

/* One event into its rank's accumulator b and the global one g: the means'
 * sums in event order on both, the utilisation values on g only (room
 * reserved by one_rank()). */
static void bw_event(struct bwacc *b, struct bwacc *g, const struct cev *v, double link_bw,
		     struct bfmemo *memo)
{
	double dur = (double)(v->e - v->s), bw, f;

	b->events++;
	b->time_ns += dur;
	if (v->bytes < 0) {
		b->unknown++;
		return;
	}
	b->bytes += (double)v->bytes;
	b->known_time_ns += dur;
	if (dur <= 0)
		return;
	bw = (double)v->bytes / (dur * 1e-9);
	if (v->type != memo->type || v->n != memo->n) /* runs of one collective: one division */
		*memo = (struct bfmemo){v->type, v->n, busbw_factor(v->type, v->n)};
	f = memo->f;
	b->bw_sum += bw, b->bw_n++;
	g->bw_sum += bw, g->bw_n++;
	if (isfinite(f)) {
		b->bus_bytes += (double)v->bytes * f;
		b->bus_time_ns += dur;
		b->busbw_sum += bw * f, b->busbw_n++;
		g->busbw_sum += bw * f, g->busbw_n++;
	}
	if (link_bw > 0) {
		double u = bw / link_bw;

		b->util_sum += u;
		g->util_sum += u;
		g->util.v[g->util.n++] = u;
	}
}

static void brk_add(struct brk *d, const struct brk *s)
{
	d->T += s->T;
	for (int t = 0; t < TAG_N; t++)
		d->sum_comm[t] += s->sum_comm[t], d->u_comm[t] += s->u_comm[t];
	d->sum_comp += s->sum_comp, d->sum_mem += s->sum_mem, d->sum_idle += s->sum_idle;
	d->u_comp += s->u_comp, d->u_mem += s->u_mem, d->u_idle += s->u_idle;
	d->comm_union += s->comm_union;
}

/* One (iteration, rank)'s time breakdown: the specification's values (comm
 * per tag as sums, compute = T - |∪ comm|, idle) and the finer ones. */
static void iter_breakdown(struct cctx *c, cJSON *o, const struct brk *b)
{
	cJSON *cm = cj_obj(c, o, "comm_us");
	double all = 0;

	for (int t = 0; t < TAG_N; t++) {
		cj_us(c, cm, tag_name[t], b->sum_comm[t]);
		all += b->sum_comm[t];
	}
	cj_us(c, o, "all_comm_us", all);
	cj_us(c, o, "compute_spec_us", b->T - b->comm_union);
	cj_us(c, o, "idle_spec_us", b->T - b->sum_comp - all);
	cj_us(c, o, "compute_kernels_us", b->sum_comp);
	cj_us(c, o, "memory_us", b->sum_mem);
	cj_us(c, o, "idle_us", b->sum_idle);
	cj_us(c, o, "compute_union_us", b->u_comp);
	cj_us(c, o, "idle_union_us", b->u_idle);
}

/* One (iteration, rank): ev[0..n) are its comm events (by start). */
static int one_iter(struct cctx *c, struct crank *cr, uint32_t it, const struct cev *ev, uint32_t n,
		    uint32_t *ci, uint32_t *mi, struct scratch *s, struct cacc *a,
		    struct rankacc *ra)
{
	int64_t lo = cr->iters[it].s, hi = cr->iters[it].e;
	struct brk b = {.T = (double)(hi - lo)};
	double bytes = 0, ov, u_all;
	uint32_t nall, c0 = *ci, m0 = *mi, nunk = 0;
	int64_t known_union = 0, ks = 0, ke = 0; /* sized events' union: total, open run */
	bool kn = false;
	struct bfmemo memo = {CT_N, 0, NAN};
	const uint32_t rank = (uint32_t)(cr - c->ranks);
	const double link_bw = cr->link_bw;
	int err;

	/* compute / memory intervals starting in this iteration */
	*ci = first_ival_at(cr->comp, *ci, cr->ncomp, hi);
	*mi = first_ival_at(cr->mem, *mi, cr->nmem, hi);
	if ((err = scratch_room(s, n + (*ci - c0) + (*mi - m0) + 1)))
		return err;
	s->ncu = s->nco = s->nme = 0;
	for (int t = 0; t < TAG_N; t++)
		s->ntu[t] = 0;
	for (uint32_t i = c0; i < *ci; i++) {
		if (cr->comp[i].s < lo)
			continue;
		b.sum_comp += (double)(cr->comp[i].e - cr->comp[i].s);
		s->nco = clip_push(s->co, s->nco, cr->comp[i].s, cr->comp[i].e, lo, hi);
	}
	for (uint32_t i = m0; i < *mi; i++) {
		if (cr->mem[i].s < lo)
			continue;
		b.sum_mem += (double)(cr->mem[i].e - cr->mem[i].s);
		s->nme = clip_push(s->me, s->nme, cr->mem[i].s, cr->mem[i].e, lo, hi);
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct cev v = ev[i]; /* one load: the stores below may alias ev */

		struct tyacc *ty = &ra->type[v.type];

		sg_put(c, rank, &v);
		b.sum_comm[v.tag] += (double)(v.e - v.s);
		ty->events++;
		ty->time_ns += (double)(v.e - v.s);
		if (v.bytes < 0)
			ty->unknown++;
		else
			ty->bytes += (double)v.bytes;
		s->ncu = clip_push(s->cu, s->ncu, v.s, v.e, lo, hi);
		s->ntu[v.tag] = clip_push(s->tu[v.tag], s->ntu[v.tag], v.s, v.e, lo, hi);
		bw_event(&ra->bw[v.tag], &a->bw[v.tag], &v, link_bw, &memo);
		if (v.bytes < 0) {
			nunk++;
			continue;
		}
		bytes += (double)v.bytes;
		/* the (unclipped) union of sized events, for the iteration's bandwidth */
		if (v.e <= v.s)
			continue;
		if (kn && v.s <= ke) {
			ke = v.e > ke ? v.e : ke;
		} else {
			known_union += ke - ks;
			ks = v.s, ke = v.e, kn = true;
		}
	}
	known_union += ke - ks;

	/* exact partition: comm, then compute outside comm, then memory */
	b.comm_union = (double)ival_total(s->cu, s->ncu);
	ov = (double)ival_overlap(s->cu, s->ncu, s->co, s->nco);
	b.u_comp = (double)ival_total(s->co, s->nco) - ov;
	if (s->nme) { /* memory outside comm ∪ compute */
		nall = ival_union2(s->cu, s->ncu, s->co, s->nco, s->tmp);
		b.u_mem = (double)(ival_total(s->me, s->nme) -
				   ival_overlap(s->me, s->nme, s->tmp, nall));
	}
	u_all = b.comm_union + b.u_comp + b.u_mem;
	b.u_idle = b.T - u_all;
	tag_shares(s, b.u_comm);
	b.sum_idle = b.T - b.sum_comp - b.sum_mem;
	for (int t = 0; t < TAG_N; t++)
		b.sum_idle -= b.sum_comm[t];
	brk_add(&ra->b, &b);
	if ((err = dvec_push(&a->iter_time, b.T)))
		return err;

	/* overlap ratio (metric 5), overall and per tag */
	if (b.comm_union > 0) {
		a->ov_sum += ov / b.comm_union, a->ov_n++;
		ra->ov_sum += ov / b.comm_union, ra->ov_n++;
	}
	for (int t = 0; t < TAG_N; t++) {
		double tu = (double)ival_total(s->tu[t], s->ntu[t]);

		if (tu > 0) {
			a->ov_tag_sum[t] +=
				(double)overlap_window(s->tu[t], s->ntu[t], s->co, s->nco) / tu;
			a->ov_tag_n[t]++;
		}
	}

	/* phase windows (metric 2): runs of one tag in start order */
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i;
		int64_t end = ev[i].e;

		while (j + 1 < n && ev[j + 1].tag == ev[i].tag)
			end = ev[++j].e > end ? ev[j].e : end;
		if (j + 1 < n && (err = dvec_push(&a->win[ev[i].tag][ev[j + 1].tag],
						  (double)(ev[j + 1].s - end))))
			return err;
		i = j + 1;
	}

	if (ra->iters) {
		cJSON *o = cj_obj(c, ra->iters, NULL);
		double bw = known_union > 0 ? bytes / ((double)known_union * 1e-9) : NAN;

		cj_num(c, o, "index", it);
		cj_us(c, o, "start_us", (double)lo);
		cj_us(c, o, "time_us", b.T);
		cj_us(c, o, "comm_union_us", b.comm_union);
		iter_breakdown(c, cj_obj(c, o, "breakdown"), &b);
		cj_bytes(c, o, "comm_bytes", bytes, n, nunk);
		cj_num(c, o, "events", n);
		cj_num(c, o, "events_bytes_unknown", nunk);
		cj_num(c, o, "bw_Bps", bw);
		cj_num(c, o, "util", cr->link_bw > 0 ? bw / cr->link_bw : NAN);
		cj_num(c, o, "overlap_ratio", b.comm_union > 0 ? ov / b.comm_union : NAN);
	}
	return 0;
}

static void bw_merge(struct bwacc *d, const struct bwacc *s)
{
	d->events += s->events, d->unknown += s->unknown, d->time_ns += s->time_ns;
	d->known_time_ns += s->known_time_ns, d->bytes += s->bytes;
	d->bus_bytes += s->bus_bytes, d->bus_time_ns += s->bus_time_ns;
}

static int one_rank(struct cctx *c, struct crank *cr, struct scratch *s, struct cacc *a,
		    cJSON *ranks)
{
	struct rankacc ra = {0};
	size_t util0[TAG_N];
	uint32_t i = 0, ci = 0, mi = 0;
	cJSON *o = cj_obj(c, ranks, NULL);
	int err = comm_extract_rank(c, cr);

	for (int t = 0; t < TAG_N; t++)
		util0[t] = a->bw[t].util.n;
	ra.iters = cJSON_CreateArray();
	if (!err)
		err = comm_straggler_begin(c);
	if (!err && cr->link_bw > 0) { /* at most one utilisation value per event */
		for (int t = 0; t < TAG_N && !err; t++)
			err = util_room(&a->bw[t].util, a->bw[t].util.n + c->tcount[t]);
	}
	/* an event belongs to the iteration its start falls in (windows are
	 * sorted and disjoint), else it is outside every iteration */
	for (uint32_t it = 0; it < cr->niters && !err; it++) {
		uint32_t j;

		for (; i < cr->nev && cr->ev[i].s < cr->iters[it].s; i++) {
			a->outside_ns += (double)(cr->ev[i].e - cr->ev[i].s), a->outside_events++;
			sg_put(c, (uint32_t)(cr - c->ranks), &cr->ev[i]);
		}
		j = first_cev_at(cr->ev, i, cr->nev, cr->iters[it].e);
		/* compute/memory intervals before this window are skipped */
		while (ci < cr->ncomp && cr->comp[ci].s < cr->iters[it].s)
			ci++;
		while (mi < cr->nmem && cr->mem[mi].s < cr->iters[it].s)
			mi++;
		err = one_iter(c, cr, it, cr->ev + i, j - i, &ci, &mi, s, a, &ra);
		i = j;
	}
	for (; !err && i < cr->nev; i++) { /* after the last iteration */
		a->outside_ns += (double)(cr->ev[i].e - cr->ev[i].s), a->outside_events++;
		sg_put(c, (uint32_t)(cr - c->ranks), &cr->ev[i]);
	}
	a->comm_total_ns += (double)cr->comm_total_ns;
	a->rank_iters += cr->niters;
	if (cr->niters > a->max_iters)
		a->max_iters = cr->niters;
	brk_add(&a->all, &ra.b);
	for (int k = 0; k < CT_N; k++) {
		a->type[k].events += ra.type[k].events, a->type[k].unknown += ra.type[k].unknown;
		a->type[k].time_ns += ra.type[k].time_ns, a->type[k].bytes += ra.type[k].bytes;
	}
	for (int t = 0; t < TAG_N; t++) { /* the rank's slice of the global values */
		bw_merge(&a->bw[t], &ra.bw[t]);
		ra.bw[t].util =
			(struct dvec){a->bw[t].util.v + util0[t], a->bw[t].util.n - util0[t], 0};
	}
	if (!err) {
		cj_num(c, o, "rank", cr->r->rank);
		cj_num(c, o, "iterations", cr->niters);
		cj_num(c, o, "link_bandwidth_Bps", cr->link_bw > 0 ? cr->link_bw : NAN);
		cj_num(c, o, "comm_events", cr->nev);
		report_breakdown(c, cj_obj(c, o, "breakdown"), &ra.b);
		report_bandwidth(c, cj_obj(c, o, "bandwidth"), ra.bw, cr->link_bw);
		report_types(c, cj_obj(c, o, "types"), ra.type);
		cj_num(c, o, "overlap_ratio", ra.ov_n ? ra.ov_sum / ra.ov_n : NAN);
		if (ra.iters && o && cJSON_AddItemToObject(o, "iteration_list", ra.iters))
			ra.iters = NULL;
	}
	comm_straggler_end(c);
	cJSON_Delete(ra.iters);
	cr->ev = NULL, cr->comp = cr->mem = NULL; /* the shared buffers move on */
	return err;
}

int comm_metrics(struct cctx *c, cJSON *root)
{
	struct cacc a;
	struct scratch s = {0};
	cJSON *ranks = cj_arr(c, root, "ranks");
	int err = 0;

	memset(&a, 0, sizeof(a));
	for (uint32_t r = 0; r < c->nranks && !err; r++)
		err = one_rank(c, &c->ranks[r], &s, &a, ranks);
	if (!err && !c->comm_events)
		err = cerr(c, -ENODATA, "no communication kernels (NCCL/RCCL/oneCCL/DeepEP) in %s",
			   c->has_rank ? "this rank" : "this capture");
	if (!err)
		err = comm_report(c, root, &a);
	scratch_free(&s);
	dvec_free(&a.iter_time);
	for (int t = 0; t < TAG_N; t++) {
		bwacc_free(&a.bw[t]);
		for (int u = 0; u < TAG_N; u++)
			dvec_free(&a.win[t][u]);
	}
	return err;
}
