// SPDX-License-Identifier: MIT
/*
 * Validation and the longest path, O(V + E), with networkx's
 * dag_longest_path tie rules: Kahn generations seeded in graph node order
 * (first appearance in the edge insertion sequence), successors in
 * first-insertion order, the first maximal predecessor wins, and the path
 * ends at the first node (in topological order) with the maximal distance.
 */
#include <stdlib.h>
#include <string.h>

#include "critpath_int.h"

int cp_graph_index(struct cp_graph *g)
{
	uint32_t n = g->nnodes, m = g->nedges;
	uint32_t *seen = calloc((size_t)n + 1, sizeof(*seen)), *fill;

	g->order = malloc(((size_t)n + 1) * sizeof(*g->order));
	g->succ_off = calloc((size_t)n + 2, sizeof(uint32_t));
	g->pred_off = calloc((size_t)n + 2, sizeof(uint32_t));
	g->succ = malloc(((size_t)m + 1) * sizeof(uint32_t));
	g->pred = malloc(((size_t)m + 1) * sizeof(uint32_t));
	fill = calloc((size_t)n + 2, sizeof(*fill));
	if (!seen || !g->order || !g->succ_off || !g->pred_off || !g->succ || !g->pred || !fill) {
		free(seen);
		free(fill);
		return -ENOMEM;
	}
	g->norder = 0;
	for (uint32_t i = 0; i < m; i++) {
		const struct cp_edge *e = &g->edges[i];

		if (!seen[e->u]) {
			seen[e->u] = 1;
			g->order[g->norder++] = e->u;
		}
		if (!seen[e->v]) {
			seen[e->v] = 1;
			g->order[g->norder++] = e->v;
		}
		g->succ_off[e->u + 1]++;
		g->pred_off[e->v + 1]++;
	}
	for (uint32_t i = 0; i < n; i++) {
		g->succ_off[i + 1] += g->succ_off[i];
		g->pred_off[i + 1] += g->pred_off[i];
	}
	/* counting sort keeps the insertion order inside each list */
	for (uint32_t i = 0; i < m; i++)
		g->succ[g->succ_off[g->edges[i].u] + fill[g->edges[i].u]++] = i;
	memset(fill, 0, ((size_t)n + 2) * sizeof(*fill));
	for (uint32_t i = 0; i < m; i++)
		g->pred[g->pred_off[g->edges[i].v] + fill[g->edges[i].v]++] = i;
	free(seen);
	free(fill);
	return 0;
}

void cp_path_finish(struct cp_path *p)
{
	free(p->nodes);
	free(p->edges);
	free(p->events);
	memset(p, 0, sizeof(*p));
}

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* SYNC_DEPENDENCY between two events on the same stream: HTA refuses it. */
static int validate(const struct cp_graph *g, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < g->nedges; i++) {
		const struct cp_edge *e = &g->edges[i];
		const struct cp_event *a = &g->ev[g->nodes[e->u].ev],
				      *b = &g->ev[g->nodes[e->v].ev];

		if (e->type == CP_E_SYNC && a->stream != -1 && a->stream == b->stream)
			return fail(err, errlen, -EDOM,
				    "invalid graph: sync edge between events %u (%s) and %u (%s) "
				    "on the same stream %lld",
				    a->index, cp_ev_name(g, a), b->index, cp_ev_name(g, b),
				    (long long)a->stream);
	}
	return 0;
}

int cp_solve(const struct cp_graph *g, const int64_t *weights, struct cp_path *out, char *err,
	     size_t errlen)
{
	uint32_t n = g->nnodes, *topo = NULL, *indeg = NULL, *from = NULL, nt = 0, head = 0;
	int64_t *dist = NULL, best = INT64_MIN;
	int32_t end = CP_NONE;
	struct cp_path p = {0};
	int rc = validate(g, err, errlen);

	if (rc)
		return rc;
	rc = -ENOMEM;
	topo = malloc(((size_t)n + 1) * sizeof(*topo));
	indeg = calloc((size_t)n + 1, sizeof(*indeg));
	from = malloc(((size_t)n + 1) * sizeof(*from));
	dist = malloc(((size_t)n + 1) * sizeof(*dist));
	if (!topo || !indeg || !from || !dist)
		goto out;
	for (uint32_t i = 0; i < g->norder; i++) {
		uint32_t v = g->order[i];

		indeg[v] = g->pred_off[v + 1] - g->pred_off[v];
		if (!indeg[v])
			topo[nt++] = v;
	}
	/* generations flattened: a FIFO over the same sequence */
	while (head < nt) {
		uint32_t u = topo[head++];

		for (uint32_t k = g->succ_off[u]; k < g->succ_off[u + 1]; k++) {
			uint32_t v = g->edges[g->succ[k]].v;

			if (--indeg[v] == 0)
				topo[nt++] = v;
		}
	}
	if (nt < g->norder) {
		/* every node left has an in-edge from another node left: a cycle */
		for (uint32_t i = 0; i < g->norder; i++) {
			uint32_t v = g->order[i];

			if (indeg[v]) {
				const struct cp_event *a = &g->ev[g->nodes[v].ev];

				rc = fail(err, errlen, -EDOM,
					  "invalid graph: cycle through event %u (%s, %s node); "
					  "%u nodes are on or behind cycles",
					  a->index, cp_ev_name(g, a),
					  g->nodes[v].is_start ? "start" : "end", g->norder - nt);
				goto out;
			}
		}
	}
	for (uint32_t i = 0; i < nt; i++) {
		uint32_t v = topo[i];
		int64_t d = INT64_MIN;
		uint32_t via = UINT32_MAX;

		for (uint32_t k = g->pred_off[v]; k < g->pred_off[v + 1]; k++) {
			const struct cp_edge *e = &g->edges[g->pred[k]];
			int64_t w = weights ? weights[g->pred[k]] : e->w;

			if (w <= -1000)
				w = 0; /* graph weight reset, CPEdge keeps its value (Q11) */
			if (dist[e->u] + w > d) { /* first maximum wins */
				d = dist[e->u] + w;
				via = g->pred[k];
			}
		}
		if (via == UINT32_MAX || d < 0) {
			d = 0;
			via = UINT32_MAX;
		}
		dist[v] = d;
		from[v] = via;
		if (d > best) {
			best = d;
			end = (int32_t)v;
		}
	}
	if (end < 0) {
		rc = fail(err, errlen, -ENODATA, "the graph has no edges");
		goto out;
	}
	/* trace back */
	for (int32_t v = end;; v = (int32_t)g->edges[from[v]].u) {
		p.nnodes++;
		if (from[v] == UINT32_MAX)
			break;
	}
	p.nodes = malloc((size_t)p.nnodes * sizeof(*p.nodes));
	p.edges = malloc((size_t)p.nnodes * sizeof(*p.edges));
	p.events = malloc((size_t)p.nnodes * sizeof(*p.events));
	if (!p.nodes || !p.edges || !p.events)
		goto out;
	{
		uint32_t k = p.nnodes;

		for (int32_t v = end;; v = (int32_t)g->edges[from[v]].u) {
			p.nodes[--k] = (uint32_t)v;
			if (from[v] == UINT32_MAX)
				break;
			p.edges[k - 1] = from[v];
		}
	}
	for (uint32_t i = 0; i + 1 < p.nnodes; i++) {
		const struct cp_edge *e = &g->edges[p.edges[i]];
		int64_t w = weights ? weights[p.edges[i]] : e->w;
		enum cp_bound bd = CP_B_NONE;

		p.length_ns += w;
		p.by_type_ns[e->type] += w;
		if (e->type == CP_E_KERNEL_KERNEL)
			bd = CP_B_KERNEL_KERNEL;
		else if (e->type == CP_E_LAUNCH)
			bd = CP_B_LAUNCH;
		else if (e->type == CP_E_OPERATOR)
			bd = e->attr >= 0 ? (enum cp_bound)g->ev[e->attr].bound : CP_B_NONE;
		p.by_bound_ns[bd] += w;
	}
	for (uint32_t i = 0; i < p.nnodes; i++)
		p.events[i] = g->ev[g->nodes[p.nodes[i]].ev].index;
	qsort(p.events, p.nnodes, sizeof(*p.events), u32_cmp);
	for (uint32_t i = 0; i < p.nnodes; i++)
		if (!p.nevents || p.events[p.nevents - 1] != p.events[i])
			p.events[p.nevents++] = p.events[i];
	*out = p;
	memset(&p, 0, sizeof(p));
	rc = 0;
out:
	cp_path_finish(&p);
	free(topo);
	free(indeg);
	free(from);
	free(dist);
	return rc;
}
