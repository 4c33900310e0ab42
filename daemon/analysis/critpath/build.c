// SPDX-License-Identifier: MIT
/*
 * Graph construction, as HTA's critical path: clip the rank to the window, create
 * start/end nodes, and the CUDA-runtime-lock edges. D2 (call stacks) is in
 * stacks.c, D3 (GPU side) in gpu.c and gpu_tables.c, the node/edge
 * primitives all of them use in graph.c. Times are HTA's grid in ns
 * (analysis/internal.h), so weights are HTA's µs × 1000 exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "critpath_int.h"

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

static bool cat_has_nodes(const struct tl_event *e)
{
	/* cpu_op, cuda_runtime, cuda_driver (HTA); xpu_runtime/xpu_driver map
	 * to the same kinds: the Level Zero equivalents (docs/analyses.md) */
	return e->kind == TL_K_CPU_OP || e->kind == TL_K_RUNTIME || e->kind == TL_K_DRIVER;
}

/* The window, then the clipped set. */
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

		/* instances counted in HTA's row order (4.9): after its step
		 * filter the GPUKernelFilter rows first, then the others (each
		 * in index order); else index order */
		bool filtered = r->flags & TL_RANK_STEP_FILTERED;

		for (int pass = 0; pass < (filtered ? 2 : 1); pass++) {
			for (uint32_t p = 0; p < r->nev; p++) {
				const struct tl_event *e = &r->ev[p];

				bool gk = (e->flags & TL_EV_GPU_KERNEL_FILTER) != 0;

				if (filtered && gk != (pass == 0))
					continue;
				if (!strstr(cpb_name(b, p), ann))
					continue;
				if (n >= b->o->instance_lo && n <= b->o->instance_hi) {
					lo = ev_ts(r, e) < lo ? ev_ts(r, e) : lo;
					hi = ev_end(r, e) > hi ? ev_end(r, e) : hi;
				}
				n++;
			}
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
		k = cpb_pos_of_index(r, tl_ev_index_corr(c));
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

/* Nodes sorted by (ts, ev_idx), starts before ends. */
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
		has = cat_has_nodes(e) || (ev_gpu(e) && tl_ev_index_corr(e) >= 0);
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

/* Runtime-lock edges: events holding the CUDA runtime lock, across threads. */
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
