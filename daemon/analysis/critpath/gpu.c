// SPDX-License-Identifier: MIT
/*
 * The GPU side of the graph. Kernel spans, launch-delay vs kernel-kernel edges
 * decided by the launch queue length (6.6, on the full rank), GPU->CPU sync
 * edges (stream / context / event synchronize) and GPU->GPU edges from
 * cudaEventRecord -> cudaStreamWaitEvent pairs. Every sort HTA does with
 * numpy's unstable quicksort goes through np_argsort_i64 so ties fall the
 * same way; all the rows sorted are CPU-side or all GPU-side, so position
 * order equals HTA's row order (4.9) for each input.
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

static int wrec_cmp(const void *a, const void *b)
{
	const struct wrec *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
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
	int32_t call = pos_of(r, tl_ev_index_corr(e)),
		call_end = call < 0 ? CP_NONE : b->nend[call];

	if (e->sync == TL_SYNC_STREAM_WAIT || e->sync == TL_SYNC_EVENT) {
		int32_t lp = synced_launch(s, e), src;

		if (lp < 0)
			return;
		src = pos_of(r, tl_ev_index_corr(&r->ev[lp])); /* on the full trace */
		if (e->sync == TL_SYNC_STREAM_WAIT) {
			int32_t nl = call < 0 ? CP_NONE : s->next_launch[call], dst;

			if (nl < 0)
				return;
			dst = pos_of(r, tl_ev_index_corr(&r->ev[nl]));
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
	int32_t start = b->nstart[p], end = b->nend[p], rt = pos_of(r, tl_ev_index_corr(e));
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
	rc = cpb_gpu_queue_values(&s);
	if (!rc)
		rc = cpb_gpu_launches(&s);
	if (!rc)
		rc = cpb_gpu_pair_calls(&s, true);
	if (!rc)
		rc = cpb_gpu_pair_calls(&s, false);
	if (rc)
		goto out;
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *e = &r->ev[p];
		bool sync = e->kind == TL_K_SYNC;

		if (!b->clip[p] || tl_ev_index_corr(e) < 0 ||
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
