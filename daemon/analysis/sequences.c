// SPDX-License-Identifier: MIT
/*
 * Frequent kernel sequences under an operator (as HTA's). We rebuild HTA's
 * call graph: a call stack per CPU thread (HTA's end-point order,
 * trace_call_stack.py:_less_than), GPU rows hung under their launch call,
 * the backward thread re-parented under the main thread's "## backward ##"
 * (or ProfilerStep#) annotations. Roots = rows whose name contains the
 * operator, at the smallest depth among such rows, with >= min_pattern_len
 * GPU descendants; a root's pattern is its name followed by its GPU
 * descendants' names in time order.
 *
 * Deliberate difference (documented): HTA raises ValueError("Unexpected
 * case") when a thread holds a negative duration (the "dur = -1" rows of
 * 4.2, Q12). We nest such a row as if its duration were 0. And where a
 * row ends, another starts and a zero-length row sits at one time, HTA's
 * order depends on the file; ours does not (endpt_cmp).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define NOT_NODE (-1)

struct endpt {
	int64_t time, dur;
	uint32_t index, pos;
	int kind;      /* -1 open, +1 close (HTA's OPEN_END / CLOSE_END) */
	bool boundary; /* its time holds a close, an open and a zero-length row */
};

/* HTA's _less_than for two end points at the same thread (durations >= 0). */
static bool less_than(const struct endpt *x, const struct endpt *y)
{
	if (x->time != y->time)
		return x->time < y->time;
	if (x->index == y->index)
		return x->kind < 0;
	if (x->dur == 0 && y->dur > 0) /* a zero event sits inside a non-zero one */
		return y->kind > 0;
	if (x->dur > 0 && y->dur == 0)
		return x->kind < 0;
	if (x->dur == 0 && y->dur == 0) {
		if (x->kind < 0 && y->kind < 0)
			return x->index < y->index;
		if (x->kind > 0 && y->kind > 0)
			return x->index > y->index;
		return x->kind < 0;
	}
	if (x->kind > 0 && y->kind < 0)
		return true;
	if (x->kind < 0 && y->kind > 0)
		return false;
	if (x->dur != y->dur)
		return x->kind < 0 ? x->dur > y->dur : x->dur < y->dur;
	return x->kind < 0 ? x->index < y->index : x->index > y->index;
}

/*
 * less_than() is not transitive where one row ends, another starts and a
 * zero-length row sits at the same time: the end goes before the start,
 * the start before the zero-length row (inside the starting one), and the
 * zero-length row before the end (inside the ending one). HTA's sort then
 * gives an order that depends on the rows' order in the file, and can let
 * the ending row's close pop the starting row: the starting row and all that
 * follows nest one level too deep. At such a time we order the zero-length
 * rows (inside the ending row), then ends, then starts: what glibc's qsort
 * gave before from our rows' order (by time, longer first), now whatever
 * that order. Every other time keeps HTA's order, consistent there.
 */
static int boundary_class(const struct endpt *x)
{
	if (x->dur == 0)
		return 0;
	return x->kind > 0 ? 1 : 2;
}

static int endpt_cmp(const void *a, const void *b)
{
	const struct endpt *x = a, *y = b;

	if (x->time == y->time && x->boundary) { /* y->boundary too: same time */
		int cx = boundary_class(x), cy = boundary_class(y);

		if (cx != cy)
			return cx < cy ? -1 : 1;
	}
	return less_than(x, y) ? -1 : less_than(y, x) ? 1 : 0;
}

static int time_cmp(const void *a, const void *b)
{
	const struct endpt *x = a, *y = b;

	return (x->time > y->time) - (x->time < y->time);
}

/* Mark the run ep[0..n) of one time when it holds all three kinds. */
static void mark_boundary(struct endpt *ep, size_t n)
{
	bool seen[3] = {false}; /* zero-length, end, start */

	for (size_t i = 0; i < n; i++)
		seen[boundary_class(&ep[i])] = true;
	for (size_t i = 0; i < n; i++)
		ep[i].boundary = seen[0] && seen[1] && seen[2];
}

#include "radix.h"
#define ENDPT_KEY(x) radix_key_i64((x).time)
DEFINE_RADIX(radix_endpt, struct endpt, ENDPT_KEY)

/*
 * The order HTA's comparator gives: time decides first (less_than), so a
 * sort by time (radix, stable; a qsort of a thread's millions of end points
 * was most of this analysis on a 1 GB trace), then each run of equal times
 * sorted with the comparator (a run is a few end points), made total at
 * the times where HTA's is not (endpt_cmp).
 */
static void endpt_sort(struct endpt *ep, size_t n)
{
	if (n < RADIX_MIN || !radix_endpt(ep, n))
		qsort(ep, n, sizeof(*ep), time_cmp);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a + 1; b < n && ep[b].time == ep[a].time; b++)
			;
		if (b - a > 2) /* fewer cannot hold three kinds */
			mark_boundary(ep + a, b - a);
		if (b - a > 1)
			qsort(ep + a, b - a, sizeof(*ep), endpt_cmp);
	}
}

struct cg {
	const struct tl_rank *r;
	uint32_t n, nroots; /* nodes: events 0..n-1, then thread roots n.. */
	int64_t *parent;    /* NOT_NODE, or a node id */
	int32_t *depth;
	uint32_t *nkern;
	int64_t *kdur;
	uint32_t *cfirst, *child; /* children CSR */
	uint32_t *order;	  /* BFS order from the roots */
	uint32_t norder;
};

static bool gpu_thread(const struct tl_rank *r, const struct tl_thread *t)
{
	bool all_stream = true, all_pid0 = true, all_tid0 = true;

	/* types.py:infer_device_type */
	for (uint32_t i = 0; i < t->count; i++) {
		const struct tl_event *e = &r->ev[r->by_thread[t->first + i]];

		all_stream &= e->stream > 0;
		all_pid0 &= e->pid == 0;
		all_tid0 &= e->tid == 0;
	}
	return all_stream || all_pid0 || all_tid0;
}

static int nest_thread(struct cg *g, const struct tl_thread *t, uint32_t root)
{
	const struct tl_rank *r = g->r;
	struct endpt *ep = bigalloc_malloc((2 * (size_t)t->count + 1) * sizeof(*ep));
	uint32_t *stack = bigalloc_malloc_room(((size_t)t->count + 1) * sizeof(*stack));
	size_t n = 0, sp = 0;

	if (!ep || !stack) {
		bigalloc_free(ep);
		bigalloc_free(stack);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->count; i++) {
		uint32_t p = r->by_thread[t->first + i];
		const struct tl_event *e = &r->ev[p];
		int64_t d = ev_dur(r, e);

		if (e->stream != TL_NONE)
			continue;
		d = d < 0 ? 0 : d; /* HTA crashes here (Q12) */
		ep[n++] = (struct endpt){ev_ts(r, e), d, e->index, p, -1, false};
		ep[n++] = (struct endpt){ev_ts(r, e) + d, d, e->index, p, 1, false};
	}
	endpt_sort(ep, n);
	for (size_t i = 0; i < n; i++) {
		if (ep[i].kind < 0) {
			g->parent[ep[i].pos] = sp ? stack[sp - 1] : root;
			stack[sp++] = ep[i].pos;
		} else if (sp) {
			sp--; /* HTA pops the top, whichever row ends */
		}
	}
	bigalloc_free(ep);
	bigalloc_free(stack);
	return 0;
}

static bool name_starts(const struct timeline *tl, uint32_t id, const char *p)
{
	return strncmp(timeline_str(tl, id, NULL), p, strlen(p)) == 0;
}

struct kid {
	int64_t ts, end;
	uint32_t pos;
};

static int kid_cmp(const void *a, const void *b)
{
	const struct kid *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Move the kids inside [ts, end] under p: those whose ts is in range (sorted
 * by ts, durations >= 0), then the few with a negative duration. */
static uint32_t adopt(struct cg *g, const struct kid *k, uint32_t nk, const struct kid *neg,
		      uint32_t nneg, int64_t bwd_root, uint32_t p, int64_t ts, int64_t end)
{
	uint32_t lo = 0, hi = nk, moved = 0;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (k[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t i = lo; i < nk && k[i].ts <= end; i++) {
		if (k[i].end <= end && g->parent[k[i].pos] == bwd_root) {
			g->parent[k[i].pos] = p;
			moved++;
		}
	}
	for (uint32_t i = 0; i < nneg; i++) {
		if (neg[i].ts >= ts && neg[i].end <= end && g->parent[neg[i].pos] == bwd_root) {
			g->parent[neg[i].pos] = p;
			moved++;
		}
	}
	return moved;
}

/*
 * trace_call_graph.py:_link_main_and_bwd_stacks. Every first-level row of
 * the backward thread that lies inside one of the main thread's "## backward
 * ##" annotations (or, when it has none, ProfilerStep# annotations) moves
 * under the first such annotation in row order. The rows are sorted by ts
 * once, so each annotation looks only at those starting inside it: linear
 * in the rows for disjoint annotations (a scan of every row per annotation
 * was quadratic in the trace's length).
 */
static int link_backward(struct actx *c, struct cg *g, const struct tl_thread *main_t,
			 uint32_t bwd_root)
{
	const struct tl_rank *r = g->r;
	static const char *const anns[] = {"## backward ##", "ProfilerStep#"};
	struct kid *k, *neg;
	uint32_t left = 0, nk = 0, nneg = 0;

	for (uint32_t p = 0; p < g->n; p++)
		left += g->parent[p] == bwd_root;
	if (!left)
		return 0;
	k = bigalloc_malloc((size_t)left * 2 * sizeof(*k));
	if (!k)
		return -ENOMEM;
	neg = k + left;
	for (uint32_t p = 0; p < g->n; p++) {
		if (g->parent[p] == bwd_root) {
			const struct tl_event *e = &r->ev[p];
			struct kid x = {ev_ts(r, e), ev_end(r, e), p};

			if (x.end >= x.ts)
				k[nk++] = x;
			else
				neg[nneg++] = x;
		}
	}
	qsort(k, nk, sizeof(*k), kid_cmp);
	for (int a = 0; a < 2; a++) {
		bool any = false;

		for (uint32_t p = 0; p < r->nev && left; p++) {
			const struct tl_event *e = &r->ev[p];

			if (e->pid != main_t->pid || e->tid != main_t->tid ||
			    !name_starts(c->tl, e->name, anns[a]))
				continue;
			any = true;
			if (g->parent[p] == NOT_NODE)
				continue;
			/* The backward root loses its first-level rows that lie
			 * inside the annotation; once it has none left HTA would
			 * start moving the main thread's rows (it re-roots), a
			 * case we stop short of. */
			left -= adopt(g, k, nk, neg, nneg, bwd_root, p, ev_ts(r, e), ev_end(r, e));
		}
		if (any)
			break;
	}
	bigalloc_free(k);
	return 0;
}

static int build_tree(struct cg *g)
{
	uint32_t total = g->n + g->nroots, head = 0;

	g->cfirst = bigalloc_calloc(total + 1, sizeof(uint32_t));
	g->child = bigalloc_malloc(((size_t)g->n + 1) * sizeof(uint32_t));
	g->order = bigalloc_malloc(((size_t)total + 1) * sizeof(uint32_t));
	if (!g->cfirst || !g->child || !g->order)
		return -ENOMEM;
	for (uint32_t p = 0; p < g->n; p++)
		if (g->parent[p] != NOT_NODE)
			g->cfirst[g->parent[p] + 1]++;
	for (uint32_t i = 0; i < total; i++)
		g->cfirst[i + 1] += g->cfirst[i];
	{
		uint32_t *fill = bigalloc_malloc(((size_t)total + 1) * sizeof(uint32_t));

		if (!fill)
			return -ENOMEM;
		memcpy(fill, g->cfirst, total * sizeof(uint32_t));
		for (uint32_t p = 0; p < g->n; p++)
			if (g->parent[p] != NOT_NODE)
				g->child[fill[g->parent[p]]++] = p;
		bigalloc_free(fill);
	}
	/* BFS from the roots gives depth (first level 0) and an order whose
	 * reverse visits children before parents. */
	for (uint32_t t = 0; t < g->nroots; t++) {
		g->order[g->norder++] = g->n + t;
		g->depth[g->n + t] = -1;
	}
	for (; head < g->norder; head++) {
		uint32_t v = g->order[head];

		for (uint32_t i = g->cfirst[v]; i < g->cfirst[v + 1]; i++) {
			g->depth[g->child[i]] = g->depth[v] + 1;
			g->order[g->norder++] = g->child[i];
		}
	}
	for (uint32_t i = g->norder; i-- > 0;) {
		uint32_t v = g->order[i];

		if (v < g->n && g->r->ev[v].stream != TL_NONE) {
			g->nkern[v] = 1;
			g->kdur[v] = ev_dur(g->r, &g->r->ev[v]);
		}
		if (v < g->n && g->parent[v] != NOT_NODE) {
			g->nkern[g->parent[v]] += g->nkern[v];
			g->kdur[g->parent[v]] += g->kdur[v];
		}
	}
	return 0;
}

/* The call graph of one rank (trace_call_graph.py:_build_call_stacks). */
static int call_graph(struct actx *c, struct cg *g)
{
	const struct tl_rank *r = g->r;
	uint32_t total, labelled[2], nlab = 0;
	int lab[2];
	int err;

	g->n = r->nev;
	g->nroots = r->nthreads;
	total = g->n + g->nroots;
	g->parent = bigalloc_malloc(((size_t)total + 1) * sizeof(int64_t));
	g->depth = bigalloc_malloc(((size_t)total + 1) * sizeof(int32_t));
	g->nkern = bigalloc_calloc(total + 1, sizeof(uint32_t));
	g->kdur = bigalloc_calloc(total + 1, sizeof(int64_t));
	if (!g->parent || !g->depth || !g->nkern || !g->kdur)
		return -ENOMEM;
	for (uint32_t i = 0; i < total; i++) {
		g->parent[i] = NOT_NODE;
		g->depth[i] = -1; /* HTA's column default for rows off every stack */
	}
	for (uint32_t t = 0; t < r->nthreads; t++) {
		const struct tl_thread *th = &r->threads[t];
		bool m = false, b = false;

		if (gpu_thread(r, th))
			continue;
		err = nest_thread(g, th, g->n + t);
		if (err)
			return err;
		for (uint32_t i = 0; i < th->count; i++) {
			uint32_t id = r->ev[r->by_thread[th->first + i]].name;

			m |= name_starts(c->tl, id, "ProfilerStep#");
			b |= strstr(timeline_str(c->tl, id, NULL), "autograd::") != NULL;
		}
		if ((m || b) && nlab < 2) {
			labelled[nlab] = t;
			lab[nlab++] = m ? 1 : 0; /* "main" sorts after "bwd" */
		} else if (m || b) {
			nlab = 3; /* more than two labelled stacks: HTA links none */
		}
	}
	/* GPU rows (stream > 0, with a partner) hang under their launch row */
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *e = &r->ev[p];
		int64_t q;

		if (e->stream <= 0 || tl_ev_index_corr(e) <= 0 || g->parent[p] != NOT_NODE)
			continue;
		q = ev_partner(r, e);
		if (q >= 0 && g->parent[q] != NOT_NODE)
			g->parent[p] = q;
	}
	if (nlab == 2) {
		/* sort_values("label"): stable, so equal labels keep thread order */
		int bi = lab[0] <= lab[1] ? 0 : 1;

		err = link_backward(c, g, &r->threads[labelled[1 - bi]], g->n + labelled[bi]);
		if (err)
			return err;
	}
	return build_tree(g);
}

static void cg_free(struct cg *g)
{
	bigalloc_free(g->parent);
	bigalloc_free(g->depth);
	bigalloc_free(g->nkern);
	bigalloc_free(g->kdur);
	bigalloc_free(g->cfirst);
	bigalloc_free(g->child);
	bigalloc_free(g->order);
}

struct pat {
	uint64_t hash;
	uint32_t off, len, count;
	int64_t kdur, cpudur;
	char *str;
};

static int pat_cmp_ids(const void *a, const void *b, void *ids)
{
	const struct pat *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp((uint32_t *)ids + x->off, (uint32_t *)ids + y->off,
		      x->len * sizeof(uint32_t));
}

static int pat_cmp_out(const void *a, const void *b)
{
	const struct pat *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->str, y->str);
}

struct kref {
	int64_t ts;
	uint32_t index, name;
};

static int kref_cmp(const void *a, const void *b)
{
	const struct kref *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

/* Root name + GPU descendants in time order, appended to ids. */
static int root_pattern(const struct cg *g, uint32_t root, uint32_t **ids, size_t *nids,
			size_t *cap, struct kref *kr, uint32_t *stack)
{
	const struct tl_rank *r = g->r;
	size_t nk = 0, sp = 0;

	stack[sp++] = root;
	while (sp) {
		uint32_t v = stack[--sp];

		if (v < g->n && r->ev[v].stream != TL_NONE)
			kr[nk++] =
				(struct kref){ev_ts(r, &r->ev[v]), r->ev[v].index, r->ev[v].name};
		for (uint32_t i = g->cfirst[v]; i < g->cfirst[v + 1]; i++)
			stack[sp++] = g->child[i];
	}
	qsort(kr, nk, sizeof(*kr), kref_cmp);
	if (*nids + nk + 1 > *cap) {
		size_t ncap = 2 * (*nids + nk + 1);
		uint32_t *n = realloc(*ids, ncap * sizeof(**ids));

		if (!n)
			return -ENOMEM;
		*ids = n;
		*cap = ncap;
	}
	(*ids)[(*nids)++] = r->ev[root].name;
	for (size_t i = 0; i < nk; i++)
		(*ids)[(*nids)++] = kr[i].name;
	return 0;
}

static char *join_names(struct actx *c, const uint32_t *ids, uint32_t len)
{
	size_t total = 1, at = 0;
	char *s;

	for (uint32_t i = 0; i < len; i++)
		total += strlen(timeline_str(c->tl, ids[i], NULL)) + 1;
	s = malloc(total);
	if (!s)
		return NULL;
	for (uint32_t i = 0; i < len; i++) {
		const char *n = timeline_str(c->tl, ids[i], NULL);
		size_t l = strlen(n);

		if (i)
			s[at++] = '|';
		memcpy(s + at, n, l);
		at += l;
	}
	s[at] = 0;
	return s;
}

static int seq_patterns(struct actx *c, const struct cg *g, const char *op, int64_t min_len,
			int64_t top_k, cJSON *out)
{
	const struct tl_rank *r = g->r;
	uint32_t nstrs = timeline_nstrs(c->tl), npat = 0, ngroups = 0;
	uint8_t *match = calloc(nstrs + 1, 1);
	/* room for the worst case; a root's kernels, the stack and the
	 * patterns are a small part of it */
	struct kref *kr = bigalloc_malloc_room(((size_t)g->n + 1) * sizeof(*kr));
	uint32_t *stack = bigalloc_malloc_room(((size_t)g->n + g->nroots + 1) * sizeof(*stack));
	struct pat *pats = bigalloc_malloc_room(((size_t)g->n + 1) * sizeof(*pats));
	uint32_t *ids = NULL;
	size_t nids = 0, cap = 0;
	int32_t min_depth = INT32_MAX;
	int err = -ENOMEM;
	cJSON *o, *arr;

	if (!match || !kr || !stack || !pats)
		goto out;
	for (uint32_t i = 0; i < nstrs; i++)
		match[i] = strstr(timeline_str(c->tl, i, NULL), op) != NULL;
	/* candidates: every row whose name contains op (a substring match, Q12) */
	for (uint32_t p = 0; p < g->n; p++)
		if (r->ev[p].name < nstrs && match[r->ev[p].name] && g->depth[p] < min_depth)
			min_depth = g->depth[p];
	for (uint32_t p = 0; p < g->n; p++) {
		const struct tl_event *e = &r->ev[p];
		struct pat *pt;
		uint64_t h = 1469598103934665603ull;

		if (e->name >= nstrs || !match[e->name] || g->depth[p] != min_depth ||
		    g->parent[p] == NOT_NODE || (int64_t)g->nkern[p] < min_len)
			continue;
		pt = &pats[npat++];
		pt->off = (uint32_t)nids;
		err = root_pattern(g, p, &ids, &nids, &cap, kr, stack);
		if (err)
			goto out;
		err = -ENOMEM;
		pt->len = (uint32_t)(nids - pt->off);
		for (uint32_t i = 0; i < pt->len; i++)
			h = (h ^ ids[pt->off + i]) * 1099511628211ull;
		pt->hash = h;
		pt->count = 1;
		pt->kdur = g->kdur[p];
		pt->cpudur = ev_dur(r, e);
		pt->str = NULL;
	}
	qsort_r(pats, npat, sizeof(*pats), pat_cmp_ids, ids);
	for (uint32_t i = 0; i < npat; i++) {
		if (ngroups && pat_cmp_ids(&pats[ngroups - 1], &pats[i], ids) == 0) {
			pats[ngroups - 1].count++;
			pats[ngroups - 1].kdur += pats[i].kdur;
			pats[ngroups - 1].cpudur += pats[i].cpudur;
		} else {
			pats[ngroups++] = pats[i];
		}
	}
	for (uint32_t i = 0; i < ngroups; i++)
		if (!(pats[i].str = join_names(c, ids + pats[i].off, pats[i].len)))
			goto out;
	qsort(pats, ngroups, sizeof(*pats), pat_cmp_out);

	o = cJSON_CreateObject();
	jpush(c, out, o);
	jint(c, o, "rank", r->rank);
	jint(c, o, "roots", npat);
	jint(c, o, "patterns_total", ngroups);
	arr = jarr(c, o, "patterns");
	for (uint32_t i = 0; i < ngroups && (!top_k || i < top_k); i++) {
		cJSON *p = cJSON_CreateObject();

		jpush(c, arr, p);
		jstr(c, p, "pattern", pats[i].str);
		jint(c, p, "count", pats[i].count);
		jint(c, p, "length", pats[i].len);
		jnum(c, p, "gpu_kernel_duration_us", us(pats[i].kdur));
		jnum(c, p, "cpu_op_duration_us", us(pats[i].cpudur));
	}
	err = 0;
out:
	if (pats)
		for (uint32_t i = 0; i < ngroups; i++)
			free(pats[i].str);
	bigalloc_free(pats);
	free(ids);
	free(match);
	bigalloc_free(kr);
	bigalloc_free(stack);
	return err;
}

struct seq_opts {
	const char *op;		/* operator */
	int64_t min_len, top_k; /* min_pattern_len, top_k */
};

static int one_rank(struct actx *c, const struct tl_rank *r, cJSON *out, const void *opts)
{
	const struct seq_opts *so = opts;
	const char *op = so->op;
	int64_t min_len = so->min_len, top_k = so->top_k;
	struct cg g = {.r = r};
	int err = call_graph(c, &g);

	if (!err)
		err = seq_patterns(c, &g, op, min_len, top_k, out);
	cg_free(&g);
	return err;
}

int analysis_sequences(struct actx *c, cJSON **out)
{
	const char *op = NULL;
	int64_t top_k, min_len;
	cJSON *root, *ranks;
	int err;

	err = an_param_str(c, "operator", &op);
	if (!err)
		err = an_param_int(c, "top_k", 5, 0, INT32_MAX, &top_k);
	if (!err)
		err = an_param_int(c, "min_pattern_len", 3, 1, INT32_MAX, &min_len);
	if (!err)
		err = require_gpu(c);
	if (err)
		return err;
	root = jroot(c, "sequences", &ranks);
	jstr(c, root, "operator", op);
	jint(c, root, "top_k", top_k);
	jint(c, root, "min_pattern_len", min_len);
	return an_each_rank(c, root, ranks, one_rank, &(struct seq_opts){op, min_len, top_k}, out);
}
