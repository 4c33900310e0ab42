// SPDX-License-Identifier: MIT
/*
 * The tables the GPU edges are decided from: the launch queue
 * length at each row (6.6, on the full rank), the launch calls with their
 * GPU rows, and each cudaEventRecord / cudaStreamWaitEvent paired with its
 * previous / next launch. Sorts go through np_argsort_i64 (see gpu.c).
 */
#include <stdlib.h>
#include <string.h>

#include "gpu_int.h"

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
int cpb_gpu_queue_values(struct gstate *s)
{
	const struct tl_rank *r = s->b->r;
	size_t n = 0, cap = (size_t)r->nev + 1;
	/* keys zeroed: see cpb_gpu_launches */
	int64_t *keys = calloc(cap, sizeof(*keys)), *strm = malloc(cap * sizeof(*strm));
	uint32_t *rowpos = malloc(cap * sizeof(*rowpos)), *idx = malloc(cap * sizeof(*idx));
	int *delta = malloc(cap * sizeof(*delta));
	bool *launch_corr_ok = calloc(cap, sizeof(bool));
	int rc = -ENOMEM;

	if (!keys || !strm || !rowpos || !idx || !delta || !launch_corr_ok)
		goto out;
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *e = &r->ev[p];
		uint32_t k;

		if (!(e->flags & TL_EV_LAUNCH_QUEUE) || tl_ev_index_corr(e) <= 0 ||
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
int cpb_gpu_launches(struct gstate *s)
{
	const struct tl_rank *r = s->b->r;
	size_t n = 0, cap = (size_t)r->nev + 1;
	/* calloc: GCC 12 cannot see that np_argsort_i64 reads only the n keys
	 * filled in, once this is not inlined into cpb_gpu_edges
	 * (-Wmaybe-uninitialized); zeroing is cheap next to the sort */
	int64_t *keys = calloc(cap, sizeof(*keys));
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
		int32_t k = cpb_pos_of_index(r, tl_ev_index_corr(e));

		/* inner merge with GPU rows having index_correlation > 0 */
		if (k < 0 || !ev_gpu(&r->ev[k]) || tl_ev_index_corr(&r->ev[k]) <= 0)
			continue;
		s->l[s->nl] = (struct launch){pos[idx[i]],     (uint32_t)k,  ev_ts(r, e),
					      r->ev[k].stream, r->ev[k].pid, e->pid,
					      e->tid,	       s->nl};
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

int cpb_gpu_pair_calls(struct gstate *s, bool records)
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
				    tl_ev_index_corr(e) <= 0)
					continue;
				k = cpb_pos_of_index(r, tl_ev_index_corr(e));
				if (k < 0 || !ev_gpu(&r->ev[k]) || tl_ev_index_corr(&r->ev[k]) <= 0)
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
