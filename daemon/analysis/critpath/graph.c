// SPDX-License-Identifier: MIT
/*
 * Graph primitives for the build passes (build.c, stacks.c, gpu.c): error
 * text, position lookup, the g->ev entry and string of an event, edges
 * deduplicated through an open-addressing (u,v) hash, and HTA's edge
 * attribution (HTA's _attribute_edge).
 */
#include <stdlib.h>
#include <string.h>

#include "critpath_int.h"

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
		/* HTA's bound_by; is_comm_kernel = nccl prefix or gloo */
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
			 * keeps the adjacency position (as networkx) */
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
