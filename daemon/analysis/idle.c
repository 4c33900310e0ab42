// SPDX-License-Identifier: MIT
/*
 * Idle-time breakdown per stream (as HTA's): each gap before a kernel /
 * memcpy / memset on a stream is host wait (the launch came after the
 * previous row ended), kernel wait (a gap under the threshold, negative
 * ones included) or other. Streams are not merged, and the gap is measured
 * from the *previous row's* end, not a running max (Q7): both copied.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { IC_HOST, IC_KERNEL, IC_OTHER, IC_COUNT };
static const char *const ic_name[IC_COUNT] = {"host_wait", "kernel_wait", "other"};

struct krow {
	int64_t stream, ts, end;
	uint32_t index, pos;
};

static int krow_cmp(const void *a, const void *b)
{
	const struct krow *x = a, *y = b;

	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/*
 * (stream, ts, index) order. by_stream, which the rows come from, is
 * grouped per (stream, pid) and ordered by (ts_ns, index): the rows are
 * sorted already but where a stream spans several pids or HTA's rounded
 * ts ties rows that ts_ns orders. So: insertion sort while the moves stay
 * few, qsort past that (a qsort of every row was half this analysis on a
 * 1 GB trace). The order is total (index is unique): either gives it.
 */
static void krow_sort(struct krow *k, size_t n)
{
	size_t moves = 0, budget = 32 * n + 1024;

	for (size_t i = 1; i < n; i++) {
		struct krow x = k[i];
		size_t j = i;

		if (krow_cmp(&k[i - 1], &x) <= 0)
			continue;
		while (j > 0 && krow_cmp(&k[j - 1], &x) > 0 && moves++ < budget) {
			k[j] = k[j - 1];
			j--;
		}
		k[j] = x;
		if (moves > budget) {
			qsort(k, n, sizeof(*k), krow_cmp);
			return;
		}
	}
}

/*
 * ts of the row whose event index is this row's index_correlation. 0 means
 * "no partner" in HTA but is looked up as event 0 all the same (Q6): copied,
 * the kept event 0 (if any) answers.
 */
static bool runtime_ts(const struct tl_rank *r, const struct tl_event *e, int64_t *ts)
{
	int64_t q = ev_partner(r, e);

	if (q < 0)
		return false;
	*ts = ev_ts(r, &r->ev[q]);
	return true;
}

static bool is_idle_row(const struct tl_event *e, uint32_t mtia_cat)
{
	if (!ev_gpu(e))
		return false;
	return e->kind == TL_K_KERNEL || e->kind == TL_K_MEMCPY || e->kind == TL_K_MEMSET ||
	       (mtia_cat && e->cat == mtia_cat);
}

static void emit_stream(struct actx *c, cJSON *streams, int64_t stream, const int64_t sum[IC_COUNT],
			const bool seen[IC_COUNT], double *vals[IC_COUNT],
			const size_t nvals[IC_COUNT], bool stats)
{
	cJSON *s = cJSON_CreateObject(), *cats;
	int64_t total = 0;

	jpush(c, streams, s);
	jint(c, s, "stream", stream);
	cats = jarr(c, s, "categories");
	for (int k = 0; k < IC_COUNT; k++)
		if (seen[k])
			total += sum[k];
	for (int k = 0; k < IC_COUNT; k++) {
		cJSON *o;

		if (!seen[k])
			continue;
		o = cJSON_CreateObject();
		jpush(c, cats, o);
		jstr(c, o, "idle_category", ic_name[k]);
		jnum(c, o, "idle_time_us", us(sum[k]));
		jnum(c, o, "idle_time_ratio", total ? (double)sum[k] / (double)total : NAN);
		if (stats) {
			struct dstats d;

			dstats_compute(vals[k], nvals[k], &d);
			dstats_json(c, jobj(c, o, "interval_stats"), &d, "_us");
		}
	}
}

/* One stream's rows k[0..n) (sorted by ts): categorise each gap, emit. */
static void one_stream(struct actx *c, const struct tl_rank *r, cJSON *streams,
		       const struct krow *k, size_t n, int64_t delay, bool stats,
		       double *vals[IC_COUNT])
{
	int64_t sum[IC_COUNT] = {0};
	bool seen[IC_COUNT] = {false};
	size_t nvals[IC_COUNT] = {0};

	for (size_t b = 0; b < n; b++) {
		const struct tl_event *e = &r->ev[k[b].pos];
		int64_t rt, gap = 0;
		bool first = b == 0;
		int cat;

		/* the row ahead, and the launch of the row half as far
		 * ahead (read through its link, when its row is in) */
		if (b + PREFETCH_AHEAD < n)
			__builtin_prefetch(&r->ev[k[b + PREFETCH_AHEAD].pos]);
		if (b + PREFETCH_AHEAD / 2 < n) {
			int32_t l = r->ev[k[b + PREFETCH_AHEAD / 2].pos].link;

			if (l >= 0)
				__builtin_prefetch(&r->ev[l]);
		}

		if (!first)
			gap = k[b].ts - k[b - 1].end;
		if (!first && runtime_ts(r, e, &rt) && rt > k[b - 1].end)
			cat = IC_HOST;
		else if (!first && gap < delay)
			cat = IC_KERNEL;
		else
			cat = IC_OTHER; /* the first row's gap is NaN: counted, adds 0 */
		seen[cat] = true;
		if (!first) {
			sum[cat] += gap;
			vals[cat][nvals[cat]++] = us(gap);
		}
	}
	emit_stream(c, streams, k[0].stream, sum, seen, vals, nvals, stats);
}

/* The rows k[a..b) of one stream; first: its smallest event index. */
struct sgroup {
	size_t a, b;
	uint32_t first;
};

static int sgroup_cmp(const void *x, const void *y)
{
	const struct sgroup *p = x, *q = y;

	return (p->first > q->first) - (p->first < q->first);
}

/*
 * The streams of k (sorted by stream, ts) in the order HTA lists them: of
 * first appearance among the rows in event-index order (its DataFrame
 * order), not by stream number. Values do not depend on it, but a reader
 * comparing the two outputs row by row does. Returns how many.
 */
static size_t stream_groups(const struct krow *k, size_t n, struct sgroup *g)
{
	size_t ng = 0;

	for (size_t a = 0, b; a < n; a = b) {
		uint32_t first = k[a].index;

		for (b = a + 1; b < n && k[b].stream == k[a].stream; b++)
			if (k[b].index < first)
				first = k[b].index;
		g[ng++] = (struct sgroup){a, b, first};
	}
	qsort(g, ng, sizeof(*g), sgroup_cmp);
	return ng;
}

struct idle_opts {
	int64_t delay; /* consecutive_kernel_delay_us, in ns */
	bool stats;
	uint32_t mtia_cat;
};

static int one_rank(struct actx *c, const struct tl_rank *r, cJSON *out, const void *opts)
{
	const struct idle_opts *io = opts;
	int64_t delay = io->delay;
	bool stats = io->stats;
	uint32_t mtia_cat = io->mtia_cat;
	struct krow *k = bigalloc_malloc((r->nby_stream + 1) * sizeof(*k));
	double *vals[IC_COUNT] = {NULL};
	struct sgroup *groups = NULL;
	size_t n = 0, ns;
	int err = -ENOMEM;
	cJSON *o, *streams;

	if (!k)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];

		if (i + PREFETCH_AHEAD < r->nby_stream)
			__builtin_prefetch(&r->ev[r->by_stream[i + PREFETCH_AHEAD]]);
		if (is_idle_row(e, mtia_cat))
			k[n++] = (struct krow){e->stream, ev_ts(r, e), ev_end(r, e), e->index,
					       r->by_stream[i]};
	}
	for (int j = 0; j < IC_COUNT; j++) {
		vals[j] = malloc((n + 1) * sizeof(double));
		if (!vals[j])
			goto out;
	}
	groups = malloc((n + 1) * sizeof(*groups));
	if (!groups)
		goto out;
	krow_sort(k, n);

	o = cJSON_CreateObject();
	jpush(c, out, o);
	jint(c, o, "rank", r->rank);
	streams = jarr(c, o, "streams");
	ns = stream_groups(k, n, groups);
	for (size_t g = 0; g < ns; g++)
		one_stream(c, r, streams, k + groups[g].a, groups[g].b - groups[g].a, delay, stats,
			   vals);
	err = 0;
out:
	for (int j = 0; j < IC_COUNT; j++)
		free(vals[j]);
	free(groups);
	bigalloc_free(k);
	return err;
}

int analysis_idle(struct actx *c, cJSON **out)
{
	double delay_us;
	bool stats;
	uint32_t mtia;
	cJSON *root, *ranks;
	int err;

	err = an_param_num(c, "consecutive_kernel_delay_us", 30, 0, 1e12, &delay_us);
	if (!err)
		err = an_param_bool(c, "interval_stats", false, &stats);
	if (!err)
		err = require_gpu(c);
	if (err)
		return err;
	mtia = timeline_str_find(c->tl, "mtia_ccp_events", strlen("mtia_ccp_events"));
	root = jroot(c, "idle", &ranks);
	jnum(c, root, "consecutive_kernel_delay_us", delay_us);
	return an_each_rank(c, root, ranks, one_rank,
			    &(struct idle_opts){(int64_t)llround(delay_us * 1000.0), stats, mtia},
			    out);
}
