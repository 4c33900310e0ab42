/* SPDX-License-Identifier: MIT */
/*
 * Shared by the analyses only: the per-call context, HTA's time grid, kernel
 * types (HTA's rules), interval union (HTA's), describe()-style statistics and
 * small JSON/param helpers.
 */
#ifndef GPUPROF_ANALYSIS_INTERNAL_H
#define GPUPROF_ANALYSIS_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "analysis.h"
#include "alloc/bigalloc.h"
#include "timeline/timeline.h"

/* One analysis call. Owned by analysis_run(); lives for the call only. */
struct actx {
	const struct timeline *tl;
	const cJSON *params; /* object or NULL */
	char *err;
	size_t errlen;
	bool has_rank; /* params.rank given */
	int32_t rank;
	bool oom;	/* a cJSON allocation failed somewhere: report -ENOMEM */
	uint8_t *ktype; /* per string id: enum ktype + 1, 0 = not yet classified */
	uint32_t nstrs;
	/* ANALYSIS_COMPACT: jpush_num() writes each array's numbers here as
	 * its JSON text; on success that becomes one cJSON_Raw node per
	 * array (jnums_finish), not a node per number. */
	bool compact;
	struct jnums *nums;
	uint32_t nnums, nums_cap;
};

enum ktype { KT_COMPUTATION = 0, KT_COMMUNICATION, KT_MEMORY, KT_OTHER, KT_COUNT };
extern const char *const ktype_name[KT_COUNT];

/* Kernel type of a name (HTA's kernel-type rules), cached per string id. */
enum ktype ktype_of(struct actx *c, uint32_t name);

/*
 * HTA's time grid in integer ns: where HTA rounds a trace to µs
 * we take its rounded ts/end times 1000, so every sum matches HTA's exactly;
 * elsewhere the exact ns from the file (whole µs on every reference trace).
 */
static inline int64_t ev_ts(const struct tl_rank *r, const struct tl_event *e)
{
	return (r->flags & TL_RANK_HTA_ROUNDING) ? tl_ev_hta_ts_ns(e) : e->ts_ns;
}

static inline int64_t ev_dur(const struct tl_rank *r, const struct tl_event *e)
{
	return (r->flags & TL_RANK_HTA_ROUNDING) ? tl_ev_hta_dur_ns(e) : e->dur_ns;
}

static inline int64_t ev_end(const struct tl_rank *r, const struct tl_event *e)
{
	return ev_ts(r, e) + ev_dur(r, e);
}

/* Position of the event whose index is e's index_correlation (its link
 * when that is the one, else a binary search: rows are in index order),
 * -1 if none or e has none. */
int64_t ev_partner(const struct tl_rank *r, const struct tl_event *e);

static inline bool ev_gpu(const struct tl_event *e)
{
	return e->flags & TL_EV_GPU_SIDE;
}

static inline double us(int64_t ns)
{
	return (double)ns / 1000.0;
}

/* Rank selection: params.rank when given, else every rank. */
bool rank_selected(const struct actx *c, const struct tl_rank *r);
/* GPU-side events in this rank? */
static inline bool rank_has_gpu(const struct tl_rank *r)
{
	return r->nby_stream > 0;
}
/* -ENODATA with the standard message when no selected rank has GPU events. */
int require_gpu(struct actx *c);

/* One selected rank's part of a per-rank analysis, added to the array
 * ranks; opts are the analysis's parsed parameters. 0 or a negative errno. */
typedef int (*an_rank_fn)(struct actx *c, const struct tl_rank *r, cJSON *ranks, const void *opts);
/*
 * The end of every per-rank analysis: fn on each selected rank in timeline
 * order until one fails, then an_finish(). root holds ranks (jroot()).
 */
int an_each_rank(struct actx *c, cJSON *root, cJSON *ranks, an_rank_fn fn, const void *opts,
		 cJSON **out);
/* The result: root in *out when err is 0 and no allocation failed (else
 * -ENOMEM); otherwise root is deleted and the error returned. */
int an_finish(struct actx *c, int err, cJSON *root, cJSON **out);
/* A whole per-rank analysis whose only parameter is rank: its root named
 * name, fn on each selected rank (opts NULL). */
int an_rank_only(struct actx *c, const char *name, an_rank_fn fn, cJSON **out);

/* Error with a message in c->err; returns err. */
int aerr(struct actx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Params: each returns 0 (default when absent) or -EINVAL with a message. */
int an_param_int(struct actx *c, const char *key, int64_t def, int64_t lo, int64_t hi,
		 int64_t *out);
int an_param_num(struct actx *c, const char *key, double def, double lo, double hi, double *out);
int an_param_bool(struct actx *c, const char *key, bool def, bool *out);
int an_param_str(struct actx *c, const char *key, const char **out); /* required */

/* Rows ahead to prefetch in a walk over an index (by_stream, by_corr):
 * the rows it names are scattered over the event array, a cache miss
 * each. */
#define PREFETCH_AHEAD 16

/* Half-open intervals [s, e) in ns. */
struct ival {
	int64_t s, e;
};

/*
 * The GPU-side rows of a rank (by_stream) in ev_ts order without sorting
 * them: a k-way merge of the per-stream runs, which finalize sorted by
 * ts_ns, ties going to the earlier run: the order a stable sort of
 * by_stream by ev_ts gives. ev_ts follows ts_ns except where HTA's µs
 * rounding reorders rows of one ns (timestamps with digits past the ns):
 * then `unsorted` is set and the order is not that one.
 */
struct gpu_merge {
	const struct tl_rank *r;
	struct gm_head {
		int64_t ts;
		uint32_t run, at, end; /* at/end: positions in by_stream */
	} * h;			       /* min-heap on (ts, run) */
	uint32_t n;
	bool unsorted;
};
/* The heap's order: a before b. */
static inline bool gm_before(const struct gm_head *a, const struct gm_head *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->run < b->run);
}
int gpu_merge_init(struct gpu_merge *m, const struct tl_rank *r); /* 0 or -ENOMEM */
void gpu_merge_free(struct gpu_merge *m);
/* The next row, or NULL at the end. */
static inline const struct tl_event *gpu_merge_next(struct gpu_merge *m)
{
	const struct tl_rank *r = m->r;
	struct gm_head *h = m->h, top;
	const struct tl_event *e;
	uint32_t i = 0;

	if (!m->n)
		return NULL;
	top = h[0];
	e = &r->ev[r->by_stream[top.at++]];
	if (top.at + PREFETCH_AHEAD < top.end)
		__builtin_prefetch(&r->ev[r->by_stream[top.at + PREFETCH_AHEAD]]);
	if (top.at < top.end) {
		int64_t ts = ev_ts(r, &r->ev[r->by_stream[top.at]]);

		m->unsorted |= ts < top.ts;
		top.ts = ts;
	} else {
		top = h[--m->n];
	}
	/* sift top down from the root */
	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= m->n)
			break;
		if (c + 1 < m->n && gm_before(&h[c + 1], &h[c]))
			c++;
		if (gm_before(&top, &h[c]))
			break;
		h[i] = h[c];
		i = c;
	}
	if (m->n)
		h[i] = top;
	return e;
}

/* HTA's union (4.12) of intervals added in start order, one at a time. */
struct ival_acc {
	int64_t s, e;  /* the open group */
	int64_t total; /* Σ lengths of the closed groups */
	bool open;
};
static inline void ival_acc_add(struct ival_acc *u, int64_t s, int64_t e)
{
	if (u->open && s <= u->e) {
		if (e > u->e)
			u->e = e;
		return;
	}
	if (u->open)
		u->total += u->e - u->s;
	u->s = s;
	u->e = e;
	u->open = true;
}
/* Σ lengths of the groups (ival_total of ival_merge). */
static inline int64_t ival_acc_total(const struct ival_acc *u)
{
	return u->total + (u->open ? u->e - u->s : 0);
}

/*
 * Measures of unions of GPU rows by kernel type, in one gpu_merge pass:
 * for every set S of types (bit t = enum ktype t) with bit S of `want`,
 * u[S] = Σ lengths of HTA's union (4.12) of the rows whose type is in S;
 * rows[t] counts the rows of each type in some wanted set. With no
 * negative durations among those rows, every group has a length >= 0 and
 * u[] are true measures, from which intersections and exclusive times
 * follow by inclusion-exclusion. 1 (u[] not set): a negative duration, or
 * rows out of ev_ts order; the caller then sorts. 0, or -ENOMEM.
 */
int gpu_unions(struct actx *c, const struct tl_rank *r, uint32_t want, int64_t u[1u << KT_COUNT],
	       uint32_t rows[KT_COUNT]);
/* HTA's union (4.12): sort by start, merge touching/overlapping. In place. */
size_t ival_merge(struct ival *v, size_t n);
int64_t ival_total(const struct ival *v, size_t n);
/* Measure of the intersection of two merged (sorted, disjoint) unions. */
int64_t ival_overlap(const struct ival *a, size_t na, const struct ival *b, size_t nb);

/* pandas describe(): sample std (ddof 1), linear quantiles; NaN = absent. */
struct dstats {
	size_t count;
	double mean, std, min, q25, q50, q75, max;
};
void dstats_compute(double *v, size_t n, struct dstats *out); /* may sort v */
double quantile_sorted(const double *v, size_t n, double q);
/* Adds count/mean/std/min/25%/50%/75%/max to obj; NaN → null. */
void dstats_json(struct actx *c, cJSON *obj, const struct dstats *s, const char *suffix);

/*
 * The builders under every analysis's result (comm's too): x added to
 * parent under key (key NULL: pushed, parent an array; parent NULL: x is a
 * root), or *oom set and x freed when x is NULL or cannot be added.
 * static_key: key outlives the tree (a literal) and is not copied. Returns
 * x, or NULL.
 */
cJSON *jtree_add(bool *oom, cJSON *parent, const char *key, cJSON *x, bool static_key);
/* item pushed to arr, or *oom set and item freed. */
void jtree_push(bool *oom, cJSON *arr, cJSON *item);

/* cJSON helpers that record allocation failure in c->oom. */
cJSON *jobj(struct actx *c, cJSON *parent, const char *key);
cJSON *jarr(struct actx *c, cJSON *parent, const char *key);
void jnum(struct actx *c, cJSON *obj, const char *key, double v); /* NaN/inf → null */
void jint(struct actx *c, cJSON *obj, const char *key, int64_t v);
void jstr(struct actx *c, cJSON *obj, const char *key, const char *s);
void jbool(struct actx *c, cJSON *obj, const char *key, bool v);
/* NaN/inf → null. An array gets jpush_num() or jpush() items, never both
 * (in compact mode the numbers of an array that also has items are lost). */
void jpush_num(struct actx *c, cJSON *arr, double v);
/* Room for n more jpush_num() items in arr (compact mode; else nothing):
 * one allocation instead of doublings for an array of known length. */
void jnums_reserve(struct actx *c, cJSON *arr, size_t n);
/* After the analysis ran (ok: it succeeded, its tree is intact): the
 * arrays' text closed and attached as raw JSON, or just dropped. */
void jnums_finish(struct actx *c, bool ok);
/* A double as JSON text that parses back to exactly v ("null" if not
 * finite); at most 32 bytes with the NUL. Returns the length. */
size_t jfmt_num(double v, char *out);
void jpush(struct actx *c, cJSON *arr, cJSON *item);
/* New root {"analysis": name, "unit": "us", "ranks": []}; *ranks gets the array. */
cJSON *jroot(struct actx *c, const char *name, cJSON **ranks);

/* The analyses (each parses its own params from c->params). */
int analysis_temporal(struct actx *c, cJSON **out);
int analysis_idle(struct actx *c, cJSON **out);
int analysis_kernels(struct actx *c, cJSON **out);
int analysis_overlap(struct actx *c, cJSON **out);
int analysis_launch(struct actx *c, cJSON **out);
int analysis_queue(struct actx *c, cJSON **out);
int analysis_sequences(struct actx *c, cJSON **out);
int analysis_critical_path(struct actx *c, cJSON **out); /* critpath/request.c */
int analysis_comm(struct actx *c, cJSON **out);		 /* comm/comm.c */

/* The analyses' radix sorts (DEFINE_RADIX, daemon/radix.h) take their
 * scratch from bigalloc_malloc(), whose big blocks are kept for the next
 * sort; below RADIX_MIN elements qsort is as fast. */
#define RADIX_ALLOC(bytes) bigalloc_malloc(bytes)
#define RADIX_FREE(p) bigalloc_free(p)
#define RADIX_MIN 256

/* Radix sorts (radix.c) for sorts whose result ignores the order of equal
 * keys: ival by start, doubles ascending (NaN: qsort as before), sweep
 * events by time. */
struct sweep_ev {
	int64_t t;
	int8_t delta;
	uint8_t type;
};
void ival_sort(struct ival *v, size_t n);
void dstats_sort(double *v, size_t n);
void sweep_sort(struct sweep_ev *v, size_t n);

/* numpy 1.24's introsort argsort of int64 keys (queue.c needs its tie order). */
void np_argsort_i64(const int64_t *v, uint32_t *idx, size_t n);

#endif /* GPUPROF_ANALYSIS_INTERNAL_H */
