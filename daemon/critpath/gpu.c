// SPDX-License-Identifier: MIT
/*
 * SPEC 6.8 D3: GPU side. Kernel spans, launch-delay vs kernel-kernel edges
 * decided by the launch queue length (6.6, on the full rank), GPU->CPU sync
 * edges (stream / context / event synchronize) and GPU->GPU edges from
 * cudaEventRecord -> cudaStreamWaitEvent pairs. Every sort HTA does with
 * numpy's unstable quicksort goes through np_argsort_i64 so ties fall the
 * same way; all the rows sorted are CPU-side or all GPU-side, so position
 * order equals HTA's row order (4.9) for each input.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define QNONE INT64_MIN

struct launch {
	uint32_t pos, kpos; /* launch call, its GPU row */
	int64_t ts, stream, gpu, pid, tid;
	uint32_t id; /* launch_id */
};

/* A sync row naming the record it waits on (_get_cuda_event_to_stream_df). */
struct wrec {
	int64_t corr, gpu, stream;
	uint32_t pos;
};

static int wrec_cmp(const void *a, const void *b)
{
	const struct wrec *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

struct gstate {
	struct cp_build *b;
	int64_t *qv; /* queue length at each position, QNONE */
	struct launch *l;
	uint32_t nl;
	int32_t *prev_launch; /* record position -> launch position, CP_NONE */
	int32_t *next_launch; /* cudaStreamWaitEvent position -> launch position */
	struct wrec *w;	      /* rows with wait_on_stream > -1, by record correlation */
	size_t nw;
};

static const struct tl_event *gpu_of(const struct tl_rank *r, int64_t corr, uint32_t *pos)
{
	uint32_t first, n = tl_rank_corr(r, corr, &first);

	for (uint32_t i = 0; i < n; i++)
		if (ev_gpu(&r->ev[r->by_corr[first + i]])) {
			*pos = r->by_corr[first + i];
			return &r->ev[*pos];
		}
	return NULL;
}

/* The queue-length series of 6.6, as analysis/queue.c builds it. */
static int queue_values(struct gstate *s)
{
	const struct tl_rank *r = s->b->r;
	size_t n = 0, cap = (size_t)r->nev + 1;
	int64_t *keys = malloc(cap * sizeof(*keys)), *strm = malloc(cap * sizeof(*strm));
	uint32_t *rowpos = malloc(cap * sizeof(*rowpos)), *idx = malloc(cap * sizeof(*idx));
	int *delta = malloc(cap * sizeof(*delta));
	bool *launch_corr_ok = calloc(cap, sizeof(bool));
	int rc = -ENOMEM;

	if (!keys || !strm || !rowpos || !idx || !delta || !launch_corr_ok)
		goto out;
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *e = &r->ev[p];
		uint32_t k;

		if (!(e->flags & TL_EV_LAUNCH_QUEUE) || e->index_correlation <= 0 ||
		    !gpu_of(r, e->correlation, &k))
			continue;
		keys[n] = ev_ts(r, e);
		strm[n] = r->ev[k].stream;
		rowpos[n] = p;
		delta[n++] = 1;
	}
	/* GPU rows whose correlation belongs to a launch row */
	for (size_t i = 0; i < n; i++) {
		uint32_t first, c = tl_rank_corr(r, r->ev[rowpos[i]].correlation, &first);

		for (uint32_t j = 0; j < c; j++)
			launch_corr_ok[r->by_corr[first + j]] = true;
	}
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *e = &r->ev[p];

		if (!ev_gpu(e) || e->correlation == TL_NONE || !launch_corr_ok[p])
			continue;
		keys[n] = ev_ts(r, e);
		strm[n] = e->stream;
		rowpos[n] = p;
		delta[n++] = -1;
	}
	np_argsort_i64(keys, idx, n);
	/* groupby(stream) keeps the sorted order inside each stream: a running
	 * sum per stream over the sorted sequence gives the same values */
	{
		int64_t *sk = malloc((n + 1) * sizeof(*sk)), *sv = malloc((n + 1) * sizeof(*sv));
		size_t ns = 0;

		if (!sk || !sv) {
			free(sk);
			free(sv);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t row = idx[i];
			size_t k;

			for (k = 0; k < ns && sk[k] != strm[row]; k++)
				;
			if (k == ns) {
				sk[ns] = strm[row];
				sv[ns++] = 0;
			}
			sv[k] += delta[row];
			s->qv[rowpos[row]] = sv[k];
		}
		free(sk);
		free(sv);
	}
	rc = 0;
out:
	free(keys);
	free(strm);
	free(rowpos);
	free(idx);
	free(delta);
	free(launch_corr_ok);
	return rc;
}

/* _get_cuda_runtime_calls_df: launch calls with a GPU row, ts-sorted. */
static int launches(struct gstate *s)
{
	const struct tl_rank *r = s->b->r;
	size_t n = 0, cap = (size_t)r->nev + 1;
	int64_t *keys = malloc(cap * sizeof(*keys));
	uint32_t *pos = malloc(cap * sizeof(*pos)), *idx = malloc(cap * sizeof(*idx));

	s->l = malloc(cap * sizeof(*s->l));
	if (!keys || !pos || !idx || !s->l) {
		free(keys);
		free(pos);
		free(idx);
		return -ENOMEM;
	}
	for (uint32_t p = 0; p < r->nev; p++)
		if (r->ev[p].flags & TL_EV_LAUNCH_QUEUE) {
			keys[n] = ev_ts(r, &r->ev[p]);
			pos[n++] = p;
		}
	np_argsort_i64(keys, idx, n);
	for (size_t i = 0; i < n; i++) {
		const struct tl_event *e = &r->ev[pos[idx[i]]];
		int32_t k = cpb_pos_of_index(r, e->index_correlation);

		/* inner merge with GPU rows having index_correlation > 0 */
		if (k < 0 || !ev_gpu(&r->ev[k]) || r->ev[k].index_correlation <= 0)
			continue;
		s->l[s->nl] =
		    (struct launch){pos[idx[i]],  (uint32_t)k, ev_ts(r, e), r->ev[k].stream,
				    r->ev[k].pid, e->pid,      e->tid,	    s->nl};
		s->nl++;
	}
	free(keys);
	free(pos);
	free(idx);
	return 0;
}

/*
 * Records: previous launch on the record's (gpu, stream) in the ts order of
 * [launches..., records...] (find_previous_launch). Waits: next launch on
 * the wait's (pid, tid, kernel stream) (find_next_launch). Both sort the
 * concatenation with numpy's quicksort, then scan per key.
 */
struct cc {
	int64_t k1, k2, k3; /* group key */
	int32_t launch;	    /* launch number or CP_NONE for a record/wait */
	uint32_t pos;
};

static int pair_calls(struct gstate *s, bool records)
{
	const struct tl_rank *r = s->b->r;
	size_t n = 0, cap = (size_t)s->nl + r->nev + 1;
	struct cc *c = malloc(cap * sizeof(*c));
	int64_t *keys = malloc(cap * sizeof(*keys));
	uint32_t *idx = malloc(cap * sizeof(*idx));
	int32_t *best = malloc(cap * sizeof(*best));
	int rc = -ENOMEM;

	if (!c || !keys || !idx || !best)
		goto out;
	for (uint32_t i = 0; i < s->nl; i++) {
		const struct launch *l = &s->l[i];

		c[n] = records ? (struct cc){l->gpu, l->stream, 0, (int32_t)i, l->pos}
			       : (struct cc){l->pid, l->tid, l->stream, (int32_t)i, l->pos};
		keys[n++] = l->ts;
	}
	{
		size_t m0 = n, cnt = 0;
		int64_t *ts = calloc(cap, sizeof(*ts));
		uint32_t *ix2 = malloc(cap * sizeof(*ix2));
		struct cc *tmp = malloc(cap * sizeof(*tmp));

		if (!ts || !ix2 || !tmp) {
			free(ts);
			free(ix2);
			free(tmp);
			goto out;
		}
		for (uint32_t p = 0; p < r->nev; p++) {
			const struct tl_event *e = &r->ev[p];
			struct cc x = {0, 0, 0, CP_NONE, p};

			if (records) {
				/* (gpu, stream) from a sync row waiting on this record */
				size_t lo = 0, hi = s->nw;
				bool found;

				if (!(e->flags & TL_EV_EVENT_RECORD))
					continue;
				while (lo < hi) {
					size_t mid = lo + (hi - lo) / 2;

					if (s->w[mid].corr < e->correlation)
						lo = mid + 1;
					else
						hi = mid;
				}
				found = lo < s->nw && s->w[lo].corr == e->correlation;
				if (found) {
					x.k1 = s->w[lo].gpu;
					x.k2 = s->w[lo].stream;
				}
				if (!found)
					continue;
			} else {
				int32_t k;

				if (!(e->flags & TL_EV_STREAM_WAIT_EVENT) ||
				    e->index_correlation <= 0)
					continue;
				k = cpb_pos_of_index(r, e->index_correlation);
				if (k < 0 || !ev_gpu(&r->ev[k]) || r->ev[k].index_correlation <= 0)
					continue;
				x.k1 = e->pid;
				x.k2 = e->tid;
				x.k3 = r->ev[k].stream;
			}
			ts[cnt] = ev_ts(r, e);
			tmp[cnt++] = x;
		}
		/* each side is ts-sorted on its own before the concatenation */
		np_argsort_i64(ts, ix2, cnt);
		for (size_t i = 0; i < cnt; i++) {
			c[m0 + i] = tmp[ix2[i]];
			keys[m0 + i] = ts[ix2[i]];
		}
		n = m0 + cnt;
		free(ts);
		free(ix2);
		free(tmp);
	}
	np_argsort_i64(keys, idx, n);
	/* Scan per group key; groups are few, so a small table of running
	 * values indexed by first occurrence is enough. */
	for (size_t i = 0; i < n; i++)
		best[i] = CP_NONE;
	{
		size_t ng = 0;
		struct cc *gk = malloc((n + 1) * sizeof(*gk));
		int32_t *run = malloc((n + 1) * sizeof(*run));

		if (!gk || !run) {
			free(gk);
			free(run);
			goto out;
		}
		for (size_t j = 0; j < n; j++) {
			size_t i = records ? j : n - 1 - j; /* cummax forward, cummin backward */
			const struct cc *x = &c[idx[i]];
			size_t g;

			for (g = 0; g < ng; g++)
				if (gk[g].k1 == x->k1 && gk[g].k2 == x->k2 && gk[g].k3 == x->k3)
					break;
			if (g == ng) {
				gk[ng] = *x;
				run[ng++] = CP_NONE;
			}
			if (x->launch >= 0) {
				if (run[g] < 0 ||
				    (records ? x->launch > run[g] : x->launch < run[g]))
					run[g] = x->launch;
			} else {
				best[idx[i]] = run[g];
			}
		}
		free(gk);
		free(run);
	}
	for (size_t i = s->nl; i < n; i++) {
		int32_t *dst = records ? s->prev_launch : s->next_launch;

		dst[c[i].pos] = best[i] < 0 ? CP_NONE : (int32_t)s->l[best[i]].pos;
	}
	rc = 0;
out:
	free(c);
	free(keys);
	free(idx);
	free(best);
	return rc;
}

/* last_node[stream], in first-insertion order (Context Sync walks it). */
struct lastn {
	int64_t stream;
	int32_t node;
};

static int32_t *last_slot(struct lastn *ln, size_t *n, int64_t stream, bool add)
{
	for (size_t i = 0; i < *n; i++)
		if (ln[i].stream == stream)
			return &ln[i].node;
	if (!add)
		return NULL;
	ln[*n] = (struct lastn){stream, CP_NONE};
	return &ln[(*n)++].node;
}

static int32_t pos_of(const struct tl_rank *r, int64_t idx)
{
	return cpb_pos_of_index(r, idx);
}

/* The launch position a Stream Wait Event / Event Sync row waits behind:
 * its cudaEventRecord's previous launch (_check_event_sync_helper). */
static int32_t synced_launch(struct gstate *s, const struct tl_event *e)
{
	const struct tl_rank *r = s->b->r;
	const struct tl_args *a = tl_event_args(r, e);
	uint32_t first, n;

	if (!a || a->wait_on_event_record_corr < 0)
		return CP_NONE;
	n = tl_rank_corr(r, a->wait_on_event_record_corr, &first);
	for (uint32_t i = 0; i < n; i++)
		if (r->ev[r->by_corr[first + i]].flags & TL_EV_EVENT_RECORD)
			return s->prev_launch[r->by_corr[first + i]];
	return CP_NONE;
}

static void handle_sync(struct gstate *s, uint32_t p, int32_t *ksync, struct lastn *ln, size_t *nln)
{
	struct cp_build *b = s->b;
	const struct tl_rank *r = b->r;
	const struct tl_event *e = &r->ev[p];
	int32_t call = pos_of(r, e->index_correlation),
		call_end = call < 0 ? CP_NONE : b->nend[call];

	if (e->sync == TL_SYNC_STREAM_WAIT || e->sync == TL_SYNC_EVENT) {
		int32_t lp = synced_launch(s, e), src;

		if (lp < 0)
			return;
		src = pos_of(r, r->ev[lp].index_correlation); /* on the full trace */
		if (e->sync == TL_SYNC_STREAM_WAIT) {
			int32_t nl = call < 0 ? CP_NONE : s->next_launch[call], dst;

			if (nl < 0)
				return;
			dst = pos_of(r, r->ev[nl].index_correlation);
			if (dst >= 0)
				ksync[dst] = src; /* the next kernel waits on src */
		} else if (src >= 0 && b->nend[src] >= 0) {
			cpb_edge(b, b->nend[src], call_end, CP_E_SYNC, false);
		}
		return;
	}
	if (e->sync == TL_SYNC_CONTEXT) {
		for (size_t i = 0; i < *nln; i++)
			cpb_edge(b, ln[i].node, call_end, CP_E_SYNC, false);
	} else if (e->sync == TL_SYNC_STREAM) {
		int32_t *l = last_slot(ln, nln, e->stream, false);

		if (l)
			cpb_edge(b, *l, call_end, CP_E_SYNC, false);
	}
}

static void handle_kernel(struct gstate *s, uint32_t p, int32_t *ksync, struct lastn *ln,
			  size_t *nln)
{
	struct cp_build *b = s->b;
	const struct tl_rank *r = b->r;
	const struct tl_event *e = &r->ev[p];
	struct cp_graph *g = b->g;
	int32_t start = b->nstart[p], end = b->nend[p], rt = pos_of(r, e->index_correlation);
	int32_t *last = last_slot(ln, nln, e->stream, true), sync_end = CP_NONE;
	int64_t ql = s->qv[p], qlr = rt < 0 ? QNONE : s->qv[rt];
	int64_t rts = rt < 0 ? 0 : ev_ts(r, &r->ev[rt]);
	bool added = false, launch = false;

	cpb_attribute(b, cpb_edge(b, start, end, CP_E_OPERATOR, false), CP_NONE);
	if (ksync[p] >= 0) {
		sync_end = b->nend[ksync[p]];
		if (sync_end >= 0) {
			cpb_edge(b, sync_end, start, CP_E_SYNC, false);
			added = true;
		}
		ksync[p] = CP_NONE;
	}
	if (rt >= 0 && qlr == 1 && ql == 0 && (*last < 0 || g->nodes[*last].ts < rts) &&
	    (sync_end < 0 || g->nodes[sync_end].ts < rts)) {
		if (b->nstart[rt] >= 0) {
			cpb_edge(b, b->nstart[rt], start, CP_E_LAUNCH, false);
			added = launch = true;
		}
	} else if (*last >= 0 && g->nodes[start].ts - g->nodes[*last].ts < b->o->kk_threshold_ns &&
		   (sync_end < 0 || g->nodes[sync_end].ts < g->nodes[*last].ts)) {
		cpb_attribute(b, cpb_edge(b, *last, start, CP_E_KERNEL_KERNEL, false), CP_NONE);
		added = true;
	}
	if (!added)
		g->warnings++; /* HTA logs "No edge was added" */
	if (b->o->zero_weight_launch && !launch && rt >= 0 && b->nstart[rt] >= 0)
		cpb_edge(b, b->nstart[rt], start, CP_E_LAUNCH, true);
	*last = end;
}

int cpb_gpu_edges(struct cp_build *b)
{
	const struct tl_rank *r = b->r;
	size_t cap = (size_t)r->nev + 1, nc = 0, nln = 0;
	struct gstate s = {.b = b};
	int32_t *ksync = malloc(cap * sizeof(*ksync));
	int64_t *keys = malloc(cap * sizeof(*keys));
	uint32_t *cand = malloc(cap * sizeof(*cand)), *idx = malloc(cap * sizeof(*idx));
	struct lastn *ln = malloc(cap * sizeof(*ln));
	int rc = -ENOMEM;

	s.qv = malloc(cap * sizeof(*s.qv));
	s.prev_launch = malloc(cap * sizeof(int32_t));
	s.next_launch = malloc(cap * sizeof(int32_t));
	s.w = malloc(cap * sizeof(*s.w));
	if (!ksync || !keys || !cand || !idx || !ln || !s.qv || !s.prev_launch || !s.next_launch ||
	    !s.w)
		goto out;
	for (size_t i = 0; i < cap; i++) {
		s.qv[i] = QNONE;
		ksync[i] = s.prev_launch[i] = s.next_launch[i] = CP_NONE;
	}
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_args *a = tl_event_args(r, &r->ev[p]);

		if (a && a->wait_on_stream > -1)
			s.w[s.nw++] = (struct wrec){a->wait_on_event_record_corr, r->ev[p].pid,
						    a->wait_on_stream, p};
	}
	qsort(s.w, s.nw, sizeof(*s.w), wrec_cmp);
	rc = queue_values(&s);
	if (!rc)
		rc = launches(&s);
	if (!rc)
		rc = pair_calls(&s, true);
	if (!rc)
		rc = pair_calls(&s, false);
	if (rc)
		goto out;
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *e = &r->ev[p];
		bool sync = e->kind == TL_K_SYNC;

		if (!b->clip[p] || e->index_correlation < 0 ||
		    !(ev_gpu(e) ||
		      (sync && (e->sync == TL_SYNC_EVENT || e->sync == TL_SYNC_CONTEXT))))
			continue;
		/* kernels by start, cuda_sync rows by end */
		keys[nc] = sync ? ev_end(r, e) : ev_ts(r, e);
		cand[nc++] = p;
	}
	np_argsort_i64(keys, idx, nc);
	for (size_t i = 0; i < nc; i++) {
		uint32_t p = cand[idx[i]];

		if (r->ev[p].kind == TL_K_SYNC)
			handle_sync(&s, p, ksync, ln, &nln);
		else if (b->nstart[p] >= 0)
			handle_kernel(&s, p, ksync, ln, &nln);
	}
	rc = 0;
out:
	free(ksync);
	free(keys);
	free(cand);
	free(idx);
	free(ln);
	free(s.qv);
	free(s.prev_launch);
	free(s.next_launch);
	free(s.w);
	free(s.l);
	return rc;
}
