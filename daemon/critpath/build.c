// SPDX-License-Identifier: MIT
/*
 * Graph construction (SPEC 6.8 A-D1): clip the rank to the window, create
 * start/end nodes, and the CUDA-runtime-lock edges. D2 (call stacks) is in
 * stacks.c, D3 (GPU side) in gpu.c. Times are HTA's grid in ns
 * (analysis/internal.h), so weights are HTA's µs × 1000 exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const cp_edge_type_name[CP_E_COUNT] = {
    "critical_path_operator",
    "critical_path_dependency",
    "critical_path_kernel_launch_delay",
    "critical_path_kernel_kernel_delay",
    "critical_path_sync_dependency",
};

void cp_opts_default(struct cp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->annotation = "";
	o->kk_threshold_ns = 1500 * 1000; /* KERNEL_KERNEL_DELAY_THRESHOLD_US */
}

int cpb_fail(struct cp_build *b, int err, const char *fmt, ...)
{
	va_list ap;

	if (b->err && b->errlen) {
		va_start(ap, fmt);
		vsnprintf(b->err, b->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

int32_t cpb_pos_of_index(const struct tl_rank *r, int64_t idx)
{
	uint32_t lo = 0, hi = r->nev;

	if (idx < 0 || idx > UINT32_MAX)
		return CP_NONE;
	while (lo < hi) { /* ev[] is in ascending traceEvents index */
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->ev[mid].index < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nev && r->ev[lo].index == idx ? (int32_t)lo : CP_NONE;
}

const char *cpb_name(const struct cp_build *b, uint32_t pos)
{
	return timeline_str(b->tl, b->r->ev[pos].name, NULL);
}

static uint32_t intern(struct cp_build *b, uint32_t sid)
{
	struct cp_graph *g = b->g;
	size_t len;
	const char *s;

	if (b->str_off[sid])
		return b->str_off[sid] - 1;
	s = timeline_str(b->tl, sid, &len);
	if (g->nstrs + len + 1 > g->cap_strs) {
		size_t cap = (g->cap_strs + len + 1) * 2;
		char *p = realloc(g->strs, cap);

		if (!p)
			return 0; /* "" stays readable at offset 0 */
		g->strs = p;
		g->cap_strs = cap;
	}
	memcpy(g->strs + g->nstrs, s, len);
	g->strs[g->nstrs + len] = 0;
	b->str_off[sid] = (uint32_t)g->nstrs + 1;
	g->nstrs += len + 1;
	return b->str_off[sid] - 1;
}

int32_t cpb_event(struct cp_build *b, uint32_t pos)
{
	const struct tl_event *e = &b->r->ev[pos];
	struct cp_graph *g = b->g;
	struct cp_event *x;

	if (b->loc[pos] != CP_NONE)
		return b->loc[pos];
	if (g->nev == g->cap_ev) {
		uint32_t cap = g->cap_ev ? g->cap_ev * 2 : 256;
		void *p = realloc(g->ev, cap * sizeof(*g->ev));

		if (!p)
			return CP_NONE;
		g->ev = p;
		g->cap_ev = cap;
	}
	x = &g->ev[g->nev];
	*x = (struct cp_event){
	    .index = e->index,
	    .pos = pos,
	    .name = intern(b, e->name),
	    .stream = e->stream,
	    .ts = ev_ts(b->r, e),
	    .dur = ev_dur(b->r, e),
	    .kind = e->kind,
	    .gpu = ev_gpu(e),
	};
	{
		const char *n = cp_ev_name(g, x);
		bool dl = false;

		for (size_t i = 0; i < b->ndl && !dl; i++)
			dl = regexec(&b->dl[i], n, 0, NULL, 0) == 0;
		/* SPEC 6.8 F bound_by; is_comm_kernel = nccl prefix or gloo */
		if (!x->gpu && x->stream < 0)
			x->bound = dl ? CP_B_DATA_LOADING : CP_B_CPU;
		else if (strncmp(n, "nccl", 4) == 0 || strstr(n, "gloo:"))
			x->bound = CP_B_GPU_COMM;
		else
			x->bound = CP_B_GPU_COMPUTE;
	}
	b->loc[pos] = (int32_t)g->nev;
	return (int32_t)g->nev++;
}

static size_t hslot(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

static int hgrow(struct cp_build *b)
{
	size_t cap = b->hcap ? b->hcap * 2 : 1024;
	uint64_t *k = malloc(cap * sizeof(*k));
	uint32_t *v = malloc(cap * sizeof(*v));

	if (!k || !v) {
		free(k);
		free(v);
		return -ENOMEM;
	}
	memset(k, 0xff, cap * sizeof(*k));
	for (size_t i = 0; i < b->hcap; i++) {
		size_t s;

		if (b->hkey[i] == UINT64_MAX)
			continue;
		for (s = hslot(b->hkey[i], cap); k[s] != UINT64_MAX; s = (s + 1) & (cap - 1))
			;
		k[s] = b->hkey[i];
		v[s] = b->hval[i];
	}
	free(b->hkey);
	free(b->hval);
	b->hkey = k;
	b->hval = v;
	b->hcap = cap;
	return 0;
}

int32_t cpb_edge(struct cp_build *b, int32_t u, int32_t v, enum cp_edge_type t, bool zero)
{
	struct cp_graph *g = b->g;
	uint64_t key = (uint64_t)(uint32_t)u << 32 | (uint32_t)v;
	int64_t w;
	size_t s;

	if (u < 0 || v < 0 || u == v) /* HTA asserts src != dest */
		return CP_NONE;
	w = (t == CP_E_DEPENDENCY || t == CP_E_SYNC || zero) ? 0 : g->nodes[v].ts - g->nodes[u].ts;
	if ((size_t)g->nedges * 2 >= b->hcap && hgrow(b))
		return CP_NONE;
	for (s = hslot(key, b->hcap); b->hkey[s] != UINT64_MAX; s = (s + 1) & (b->hcap - 1)) {
		if (b->hkey[s] == key) {
			/* networkx: re-adding (u,v) replaces the attributes but
			 * keeps the adjacency position (SPEC 6.8 C) */
			g->edges[b->hval[s]].w = w;
			g->edges[b->hval[s]].type = (uint8_t)t;
			return (int32_t)b->hval[s];
		}
	}
	if (g->nedges == g->cap_edges) {
		uint32_t cap = g->cap_edges ? g->cap_edges * 2 : 1024;
		void *p = realloc(g->edges, cap * sizeof(*g->edges));

		if (!p)
			return CP_NONE;
		g->edges = p;
		g->cap_edges = cap;
	}
	g->edges[g->nedges] = (struct cp_edge){(uint32_t)u, (uint32_t)v, w, CP_NONE, (uint8_t)t};
	b->hkey[s] = key;
	b->hval[s] = g->nedges;
	return (int32_t)g->nedges++;
}

void cpb_attribute(struct cp_build *b, int32_t e, int32_t src_parent)
{
	struct cp_graph *g = b->g;
	struct cp_edge *x;
	const struct cp_node *src, *dst;
	int32_t ev;

	if (e < 0)
		return;
	x = &g->edges[e];
	if (x->type != CP_E_OPERATOR && x->type != CP_E_KERNEL_KERNEL)
		return;
	src = &g->nodes[x->u];
	dst = &g->nodes[x->v];
	if (x->type == CP_E_KERNEL_KERNEL || src->is_start)
		ev = (int32_t)src->ev; /* previous kernel; cases 1 and 2 */
	else if (!dst->is_start)
		ev = (int32_t)dst->ev; /* case 3 */
	else			       /* case 4: the parent of the source in the call stack */
		ev = src_parent < 0 ? CP_NONE : cpb_event(b, (uint32_t)src_parent);
	x->attr = ev;
}

static bool cat_has_nodes(const struct tl_event *e)
{
	/* cpu_op, cuda_runtime, cuda_driver (HTA); xpu_runtime/xpu_driver map
	 * to the same kinds: the Level Zero equivalents (docs/analyses.md) */
	return e->kind == TL_K_CPU_OP || e->kind == TL_K_RUNTIME || e->kind == TL_K_DRIVER;
}

/* SPEC 6.8 A: window, then the clipped set. */
static int clip(struct cp_build *b)
{
	const struct tl_rank *r = b->r;
	const char *ann = b->o->annotation ? b->o->annotation : "";
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	if (!*ann) {
		for (uint32_t p = 0; p < r->nev; p++)
			lo = ev_ts(r, &r->ev[p]) < lo ? ev_ts(r, &r->ev[p]) : lo;
		hi = INT64_MAX; /* the stale end column: effectively +inf (4.7) */
	} else {
		int64_t n = 0;

		for (uint32_t i = 0; i < r->nev; i++) {
			uint32_t p = r->hta_order ? r->hta_order[i] : i;
			const struct tl_event *e = &r->ev[p];

			if (!strstr(cpb_name(b, p), ann))
				continue;
			if (n >= b->o->instance_lo && n <= b->o->instance_hi) {
				lo = ev_ts(r, e) < lo ? ev_ts(r, e) : lo;
				hi = ev_end(r, e) > hi ? ev_end(r, e) : hi;
			}
			n++;
		}
		if (!n)
			return cpb_fail(b, -EINVAL, "annotation \"%s\" not found in rank %d", ann,
					r->rank);
		if (b->o->instance_lo >= n)
			return cpb_fail(b, -EINVAL,
					"instance %lld out of range: \"%s\" has %lld instances",
					(long long)b->o->instance_lo, ann, (long long)n);
	}
	b->g->win_lo = lo;
	b->g->win_hi = hi;
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *c = &r->ev[p];
		int64_t ts = ev_ts(r, c);
		int32_t k;

		if (ev_gpu(c)) {
			if (c->kind == TL_K_SYNC && c->sync == TL_SYNC_STREAM_WAIT)
				b->clip[p] = true; /* (b') regardless of the window */
			continue;
		}
		if (ts < lo || ts > hi || ev_dur(r, c) <= 0)
			continue;
		b->clip[p] = true; /* (a) */
		/* (b): the GPU row this CPU row's index_correlation names */
		k = cpb_pos_of_index(r, c->index_correlation);
		if (k >= 0 && ev_gpu(&r->ev[k]))
			b->clip[k] = true;
	}
	return 0;
}

struct nkey {
	int64_t ts;
	uint32_t index, pos;
	uint8_t is_end;
};

static int nkey_cmp(const void *a, const void *b)
{
	const struct nkey *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return (int)x->is_end - (int)y->is_end; /* stable: starts were first */
}

/* SPEC 6.8 B: nodes sorted by (ts, ev_idx), starts before ends. */
static int make_nodes(struct cp_build *b)
{
	const struct tl_rank *r = b->r;
	struct cp_graph *g = b->g;
	struct nkey *k = malloc(((size_t)r->nev * 2 + 1) * sizeof(*k));
	size_t n = 0;

	if (!k)
		return -ENOMEM;
	for (uint32_t p = 0; p < r->nev; p++) {
		const struct tl_event *e = &r->ev[p];
		bool has = false;

		if (!b->clip[p])
			continue;
		has = cat_has_nodes(e) || (ev_gpu(e) && e->index_correlation >= 0);
		for (size_t i = 0; i < b->ndl && !has; i++)
			has = regexec(&b->dl[i], cpb_name(b, p), 0, NULL, 0) == 0;
		if (!has)
			continue;
		k[n++] = (struct nkey){ev_ts(r, e), e->index, p, 0};
		k[n++] = (struct nkey){ev_end(r, e), e->index, p, 1};
	}
	qsort(k, n, sizeof(*k), nkey_cmp);
	g->nodes = malloc((n + 1) * sizeof(*g->nodes));
	if (!g->nodes) {
		free(k);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		int32_t ev = cpb_event(b, k[i].pos);

		if (ev < 0) {
			free(k);
			return -ENOMEM;
		}
		g->nodes[i] = (struct cp_node){k[i].ts, (uint32_t)ev, !k[i].is_end,
					       (r->ev[k[i].pos].flags & TL_EV_BLOCKING) != 0};
		(k[i].is_end ? b->nend : b->nstart)[k[i].pos] = (int32_t)i;
	}
	g->nnodes = (uint32_t)n;
	free(k);
	return 0;
}

/* SPEC 6.8 D1: events holding the CUDA runtime lock, across threads. */
static int lock_edges(struct cp_build *b)
{
	struct cp_graph *g = b->g;
	uint32_t *stack = malloc(((size_t)g->nnodes + 1) * sizeof(*stack)), ns = 0;
	int32_t last = CP_NONE;

	if (!stack)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		uint32_t pos = g->ev[g->nodes[i].ev].pos;

		if (!(b->r->ev[pos].flags & TL_EV_RUNTIME_LOCK))
			continue;
		if (g->nodes[i].is_start) {
			stack[ns++] = i;
		} else {
			while (ns) {
				uint32_t s = stack[--ns];

				if (g->nodes[s].ev == g->nodes[i].ev)
					cpb_attribute(b,
						      cpb_edge(b, (int32_t)s, (int32_t)i,
							       CP_E_OPERATOR, false),
						      CP_NONE);
				else
					cpb_edge(b, (int32_t)s, (int32_t)i, CP_E_DEPENDENCY, false);
			}
			if (last >= 0 && !g->nodes[last].is_start)
				cpb_edge(b, last, (int32_t)i, CP_E_DEPENDENCY, false);
		}
		last = (int32_t)i;
	}
	free(stack);
	return 0;
}

static void build_finish(struct cp_build *b)
{
	for (size_t i = 0; i < b->ndl; i++)
		regfree(&b->dl[i]);
	free(b->clip);
	free(b->loc);
	free(b->nstart);
	free(b->nend);
	free(b->str_off);
	free(b->hkey);
	free(b->hval);
}

int cp_build(const struct timeline *tl, const struct cp_opts *o, struct cp_graph **ret, char *err,
	     size_t errlen)
{
	struct cp_build b = {.tl = tl, .o = o, .err = err, .errlen = errlen};
	size_t n;
	int rc = -ENOMEM;

	b.r = timeline_rank(tl, o->rank);
	if (!b.r)
		return cpb_fail(&b, -EINVAL, "rank %d is not in this capture", o->rank);
	for (size_t i = 0; i < o->ndata_load && i < CP_MAX_DATA_LOAD; i++) {
		if (regcomp(&b.dl[i], o->data_load[i], REG_EXTENDED | REG_NOSUB)) {
			build_finish(&b);
			return cpb_fail(&b, -EINVAL, "data_load_events: bad regex \"%s\"",
					o->data_load[i]);
		}
		b.ndl++;
	}
	n = (size_t)b.r->nev + 1;
	b.g = calloc(1, sizeof(*b.g));
	b.clip = calloc(n, sizeof(*b.clip));
	b.loc = malloc(n * sizeof(*b.loc));
	b.nstart = malloc(n * sizeof(*b.nstart));
	b.nend = malloc(n * sizeof(*b.nend));
	b.str_off = calloc((size_t)timeline_nstrs(tl) + 1, sizeof(*b.str_off));
	if (!b.g || !b.clip || !b.loc || !b.nstart || !b.nend || !b.str_off)
		goto fail;
	b.g->rank = o->rank;
	b.g->strs = calloc(1, 64); /* offset 0 = "" */
	if (!b.g->strs)
		goto fail;
	b.g->nstrs = 1;
	b.g->cap_strs = 64;
	memset(b.loc, 0xff, n * sizeof(*b.loc));
	memset(b.nstart, 0xff, n * sizeof(*b.nstart));
	memset(b.nend, 0xff, n * sizeof(*b.nend));
	rc = clip(&b);
	if (!rc)
		rc = make_nodes(&b);
	if (!rc && b.g->nnodes == 0)
		rc = cpb_fail(&b, -ENODATA, "no CPU operators or GPU kernels in the window");
	if (!rc)
		rc = lock_edges(&b);
	if (!rc)
		rc = cpb_call_stacks(&b);
	if (!rc)
		rc = cpb_gpu_edges(&b);
	if (!rc)
		rc = cp_graph_index(b.g);
	if (rc)
		goto fail;
	build_finish(&b);
	*ret = b.g;
	return 0;
fail:
	if (rc == -ENOMEM)
		cpb_fail(&b, rc, "out of memory building the critical-path graph");
	cp_graph_free(b.g);
	build_finish(&b);
	return rc;
}

void cp_graph_free(struct cp_graph *g)
{
	if (!g)
		return;
	free(g->ev);
	free(g->nodes);
	free(g->edges);
	free(g->order);
	free(g->succ_off);
	free(g->succ);
	free(g->pred_off);
	free(g->pred);
	free(g->strs);
	free(g);
}

size_t cp_graph_bytes(const struct cp_graph *g)
{
	return sizeof(*g) + (size_t)g->cap_ev * sizeof(*g->ev) +
	       (size_t)g->nnodes * (sizeof(*g->nodes) + 3 * sizeof(uint32_t)) +
	       (size_t)g->cap_edges * sizeof(*g->edges) + (size_t)g->nedges * 2 * sizeof(uint32_t) +
	       g->cap_strs;
}

uint32_t cp_graph_nedges(const struct cp_graph *g)
{
	return g->nedges;
}

void cp_graph_counts(const struct cp_graph *g, struct cp_counts *c)
{
	memset(c, 0, sizeof(*c));
	c->nodes = g->norder;
	c->node_list = g->nnodes;
	c->edges = g->nedges;
	for (uint32_t i = 0; i < g->nedges; i++) {
		c->by_type[g->edges[i].type]++;
		if (g->edges[i].w <= -1000)
			c->negative_weights++;
	}
}
