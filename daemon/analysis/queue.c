// SPDX-License-Identifier: MIT
/*
 * Queue length per stream (as HTA's): +1 at every launch call (counted on
 * the stream of its GPU row), -1 when that GPU row starts. The series has a
 * row per change; the summary is pandas' describe() over those rows (not
 * time-weighted, as HTA); time blocked on a full queue sums the time spent
 * at or above max_queue_length.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A row of the series before the sort; its ts is in keys[] beside. group:
 * the index in r->streams of its stream's first entry (stream_group()). */
struct qrow {
	uint32_t group;
	int32_t delta;
};

/* Is this event one of HTA's launch rows R (6.6)? */
static bool is_launch(const struct tl_event *e)
{
	return (e->flags & TL_EV_LAUNCH_QUEUE) && tl_ev_index_corr(e) > 0;
}

/* First GPU-side row with this correlation, or NULL. */
static const struct tl_event *gpu_of(const struct tl_rank *r, int64_t corr)
{
	uint32_t first, n = tl_rank_corr(r, corr, &first);

	for (uint32_t i = 0; i < n; i++)
		if (ev_gpu(&r->ev[r->by_corr[first + i]]))
			return &r->ev[r->by_corr[first + i]];
	return NULL;
}

static bool corr_has_launch(const struct tl_rank *r, int64_t corr)
{
	uint32_t first, n = tl_rank_corr(r, corr, &first);

	for (uint32_t i = 0; i < n; i++)
		if (is_launch(&r->ev[r->by_corr[first + i]]))
			return true;
	return false;
}

/* One stream's rows, in (ts, HTA's tie) order: their times and queue
 * lengths. */
static void emit_stream(struct actx *c, cJSON *streams, int64_t stream, const int64_t *ts, size_t n,
			const int64_t *ql, int64_t maxq, int64_t trace_dur, int64_t t0, bool series,
			int64_t *hta_stream)
{
	cJSON *s = cJSON_CreateObject(), *sum, *blk;
	double *vals = malloc((n + 1) * sizeof(double));
	int64_t blocked = 0;
	bool qualifies = false;
	struct dstats d;

	jpush(c, streams, s);
	jint(c, s, "stream", stream);
	if (!vals) {
		c->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		vals[i] = (double)ql[i];
		if (ql[i] >= maxq) {
			qualifies = true;
			if (i + 1 < n) /* the last row's duration is NaN */
				blocked += ts[i + 1] - ts[i];
		}
	}
	if (series) {
		cJSON *se = jobj(c, s, "series"), *tsa = jarr(c, se, "ts_us"),
		      *len = jarr(c, se, "queue_length");

		jnums_reserve(c, tsa, n);
		jnums_reserve(c, len, n);
		for (size_t i = 0; i < n; i++) {
			jpush_num(c, tsa, us(ts[i] - t0));
			jpush_num(c, len, (double)ql[i]);
		}
	}
	dstats_compute(vals, n, &d);
	free(vals);
	sum = jobj(c, s, "summary");
	dstats_json(c, sum, &d, "");
	blk = jobj(c, s, "blocked_on_full_queue");
	jbool(c, blk, "reached", qualifies);
	jnum(c, blk, "duration_at_max_queue_length_us", us(blocked));
	jnum(c, blk, "relative_duration_at_max_queue_length",
	     trace_dur ? (double)blocked / (double)trace_dur : 0);
	if (qualifies)
		*hta_stream = stream;
}

/* One rank's scratch, in one block of room: a block that size is recycled
 * between calls (bigalloc_free), where separate medium-sized arrays were
 * fresh memory in every call. Per entry: a row's time (keys), the row, its
 * argsort index, and 16 bytes that hold first the GPU rows gathered in the
 * first pass, then the rows' times and deltas grouped by stream. */
struct qmem {
	char *blk;
	size_t cap;
	int64_t *keys;
	struct qrow *q;
	uint32_t *idx;
	char *room; /* cap x 16 bytes */
};

static bool qmem_alloc(struct qmem *m, size_t cap)
{
	size_t per = sizeof(*m->keys) + sizeof(*m->q) + sizeof(*m->idx) + 16;
	char *b = bigalloc_malloc_room(cap * per);

	if (!b)
		return false;
	*m = (struct qmem){.blk = b, .cap = cap, .keys = (int64_t *)(void *)b};
	m->q = (struct qrow *)(void *)(b + cap * sizeof(*m->keys));
	m->room = (char *)(m->q + cap);
	m->idx = (uint32_t *)(void *)(m->room + cap * 16);
	return true;
}

/* The index in r->streams of the first entry of this stream (entries are
 * sorted by (stream, pid), so groups in index order are in stream order);
 * UINT32_MAX if none. *last caches the previous answer. */
static uint32_t stream_group(const struct tl_rank *r, int64_t stream, uint32_t *last)
{
	const struct tl_stream *s;

	if (*last < r->nstreams && r->streams[*last].stream == stream)
		return *last;
	if (!(s = tl_rank_stream(r, stream, -1)))
		return UINT32_MAX;
	return *last = (uint32_t)(s - r->streams);
}

struct queue_opts {
	int64_t maxq; /* max_queue_length */
	bool series;
	int64_t t0; /* series times are relative to it */
};

static int one_rank(struct actx *c, const struct tl_rank *r, cJSON *out, const void *opts)
{
	const struct queue_opts *qo = opts;
	int64_t maxq = qo->maxq, t0 = qo->t0;
	bool series = qo->series;
	/* Every row below has a correlation id (a launch's is its kernel's),
	 * so by_corr bounds each list: about half of a trace's events. Only
	 * a row that is both a launch and GPU side (a stream arg on a
	 * launch) is in both; the room then grows. */
	struct qmem m = {0};
	struct qrow *q;
	int64_t *keys, *ql, *ts;
	int32_t *dl;
	uint32_t *idx, *start = NULL, last = UINT32_MAX;
	int64_t tmin = INT64_MAX, tmax = INT64_MIN, hta_stream = TL_NONE;
	size_t n = 0;
	cJSON *o, *streams;
	int err = -ENOMEM;

	if (!qmem_alloc(&m, (size_t)r->nby_corr + 1) ||
	    !(start = calloc((size_t)r->nstreams + 1, sizeof(*start))))
		goto out;
	q = m.q;
	keys = m.keys;
	/* [R in row order, then GPU rows in row order] (6.6), the input order
	 * numpy's argsort sees: one pass over the rows (two were ~20 ms of
	 * memory traffic each on the 1 GB trace), the GPU rows gathered in
	 * the room (free until the grouping) and appended after. Every GPU
	 * side row is in one of r->streams (index.c). */
	{
		int64_t *gk = (int64_t *)(void *)m.room;
		struct qrow *gq = (struct qrow *)(void *)(gk + m.cap);
		size_t ng = 0;

		_Static_assert(sizeof(int64_t) + sizeof(struct qrow) <= 16,
			       "the GPU rows fit in the room");
		for (uint32_t p = 0; p < r->nev; p++) {
			const struct tl_event *e = &r->ev[p], *g;
			int64_t t = ev_ts(r, e);
			uint32_t grp;

			tmin = t < tmin ? t : tmin;
			tmax = t > tmax ? t : tmax;
			if (is_launch(e) && (g = gpu_of(r, e->correlation))) {
				if ((grp = stream_group(r, g->stream, &last)) == UINT32_MAX)
					goto unindexed;
				keys[n] = t;
				q[n++] = (struct qrow){grp, +1};
			}
			/* each list holds at most one row per correlated row */
			if (ev_gpu(e) && e->correlation != TL_NONE &&
			    corr_has_launch(r, e->correlation)) {
				if ((grp = stream_group(r, e->stream, &last)) == UINT32_MAX)
					goto unindexed;
				gk[ng] = t;
				gq[ng++] = (struct qrow){grp, -1};
			}
		}
		if (n + ng > m.cap) { /* rows both launch and GPU side */
			struct qmem g;

			if (!qmem_alloc(&g, n + ng + 1))
				goto out;
			memcpy(g.q, q, n * sizeof(*q));
			memcpy(g.keys, keys, n * sizeof(*keys));
			memcpy(g.q + n, gq, ng * sizeof(*q));
			memcpy(g.keys + n, gk, ng * sizeof(*keys));
			bigalloc_free(m.blk);
			m = g;
			q = m.q;
			keys = m.keys;
		} else {
			memcpy(q + n, gq, ng * sizeof(*q));
			memcpy(keys + n, gk, ng * sizeof(*keys));
		}
		n += ng;
	}
	idx = m.idx;
	np_argsort_i64(keys, idx, n);
	/* groupby(stream) keeps the sorted order inside each stream: the rows
	 * in argsort order, scattered to their stream's run (streams in
	 * ascending order), give the (stream, sorted position) order */
	for (size_t i = 0; i < n; i++)
		start[q[i].group + 1]++;
	for (uint32_t s = 0; s < r->nstreams; s++)
		start[s + 1] += start[s];
	ts = (int64_t *)(void *)m.room;
	dl = (int32_t *)(void *)(ts + m.cap);
	for (size_t i = 0; i < n; i++) {
		uint32_t j = idx[i], p = start[q[j].group]++;

		ts[p] = keys[j];
		dl[p] = q[j].delta;
	}
	ql = keys; /* the times are in ts now: their block holds the lengths */

	o = cJSON_CreateObject();
	jpush(c, out, o);
	jint(c, o, "rank", r->rank);
	jnum(c, o, "trace_duration_us", r->nev ? us(tmax - tmin) : 0);
	streams = jarr(c, o, "streams");
	/* start[s] is now the end of group s's run */
	for (uint32_t s = 0, a = 0; s < r->nstreams; s++) {
		uint32_t b = start[s];
		int64_t run = 0;

		if (b == a)
			continue;
		for (uint32_t i = a; i < b; i++)
			ql[i] = run += dl[i];
		emit_stream(c, streams, r->streams[s].stream, ts + a, b - a, ql + a, maxq,
			    tmax - tmin, t0, series, &hta_stream);
		a = b;
	}
	/* Q10: HTA keeps one row per rank, the last stream that reached the
	 * threshold; we report every stream and name the one HTA would. */
	jnum(c, o, "hta_blocked_stream", hta_stream == TL_NONE ? NAN : (double)hta_stream);
	err = 0;
	goto out;
unindexed:
	err = aerr(c, -EPROTO, "internal: a GPU row's stream is not in the stream index");
out:
	free(start);
	bigalloc_free(m.blk);
	return err;
}

int analysis_queue(struct actx *c, cJSON **out)
{
	int64_t maxq, t0;
	bool series;
	cJSON *root, *ranks;
	int err;

	err = an_param_int(c, "max_queue_length", 1024, 1, INT32_MAX, &maxq);
	if (!err)
		err = an_param_bool(c, "series", false, &series);
	if (!err)
		err = require_gpu(c);
	if (err)
		return err;
	/* series times are relative to HTA's alignment origin (4.6) */
	t0 = timeline_hta_min_ts_us(c->tl) * 1000;
	root = jroot(c, "queue", &ranks);
	jint(c, root, "max_queue_length", maxq);
	return an_each_rank(c, root, ranks, one_rank, &(struct queue_opts){maxq, series, t0}, out);
}
