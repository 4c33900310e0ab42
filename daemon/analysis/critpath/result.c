// SPDX-License-Identifier: MIT
/*
 * The result tree (docs/analyses.md "Critical path"): graph counts, path
 * length, bound-by summary (as HTA's: Σ weight per class / Σ weight of
 * the path × 100, raw CPEdge weights, Q11), the critical edges in path order
 * and the events contributing most.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "critpath_int.h"

const char *const cp_bound_name[CP_B_COUNT] = {
	"",
	"cpu_bound",
	"gpu_compute_bound",
	"gpu_communication_bound",
	"gpu_kernel_launch_overhead",
	"gpu_kernel_kernel_overhead",
	"data_loading",
};

static double usd(int64_t ns)
{
	return (double)ns / 1000.0;
}

static enum cp_bound edge_bound(const struct cp_graph *g, const struct cp_edge *e)
{
	if (e->type == CP_E_KERNEL_KERNEL)
		return CP_B_KERNEL_KERNEL;
	if (e->type == CP_E_LAUNCH)
		return CP_B_LAUNCH;
	if (e->type == CP_E_OPERATOR && e->attr >= 0)
		return (enum cp_bound)g->ev[e->attr].bound;
	return CP_B_NONE;
}

struct contrib {
	int64_t ns;
	int32_t ev;
};

static int contrib_cmp(const void *a, const void *b)
{
	const struct contrib *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return (x->ev > y->ev) - (x->ev < y->ev);
}

static void add_edges(cJSON *o, const struct cp_graph *g, const struct cp_path *p, const int64_t *w,
		      uint32_t max_edges)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "critical_edges");
	uint32_t n = p->nnodes ? p->nnodes - 1 : 0;

	for (uint32_t i = 0; arr && i < n && i < max_edges; i++) {
		const struct cp_edge *e = &g->edges[p->edges[i]];
		const struct cp_node *a = &g->nodes[e->u], *b = &g->nodes[e->v];
		cJSON *x = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, x);
		cJSON_AddStringToObject(x, "type", cp_edge_type_name[e->type]);
		cJSON_AddNumberToObject(x, "weight_us", usd(w ? w[p->edges[i]] : e->w));
		cJSON_AddNumberToObject(x, "from_event", g->ev[a->ev].index);
		cJSON_AddStringToObject(x, "from", a->is_start ? "start" : "end");
		cJSON_AddNumberToObject(x, "to_event", g->ev[b->ev].index);
		cJSON_AddStringToObject(x, "to", b->is_start ? "start" : "end");
		if (e->attr >= 0) {
			cJSON_AddNumberToObject(x, "event", g->ev[e->attr].index);
			cJSON_AddStringToObject(x, "name", cp_ev_name(g, &g->ev[e->attr]));
		}
		cJSON_AddStringToObject(x, "bound_by", cp_bound_name[edge_bound(g, e)]);
	}
	cJSON_AddBoolToObject(o, "critical_edges_truncated", n > max_edges);
}

static void add_top(cJSON *o, const struct cp_graph *g, const struct cp_path *p, const int64_t *w,
		    uint32_t top)
{
	struct contrib *c = calloc((size_t)g->nev + 1, sizeof(*c));
	cJSON *arr = cJSON_AddArrayToObject(o, "top_events");
	uint32_t n = p->nnodes ? p->nnodes - 1 : 0;

	if (!c || !arr) {
		free(c);
		return;
	}
	for (uint32_t i = 0; i < g->nev; i++)
		c[i].ev = (int32_t)i;
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_edge *e = &g->edges[p->edges[i]];

		if (e->attr >= 0)
			c[e->attr].ns += w ? w[p->edges[i]] : e->w;
	}
	qsort(c, g->nev, sizeof(*c), contrib_cmp);
	for (uint32_t i = 0; i < g->nev && i < top && c[i].ns > 0; i++) {
		const struct cp_event *x = &g->ev[c[i].ev];
		cJSON *it = cJSON_CreateObject();

		cJSON_AddItemToArray(arr, it);
		cJSON_AddNumberToObject(it, "event", x->index);
		cJSON_AddStringToObject(it, "name", cp_ev_name(g, x));
		cJSON_AddNumberToObject(it, "stream", (double)x->stream);
		cJSON_AddNumberToObject(it, "duration_us", usd(c[i].ns));
		cJSON_AddNumberToObject(it, "path_pctg",
					p->length_ns
						? 100.0 * (double)c[i].ns / (double)p->length_ns
						: 0);
		cJSON_AddStringToObject(it, "bound_by", cp_bound_name[x->bound]);
	}
	free(c);
}

cJSON *cp_result_json(const struct cp_graph *g, const struct cp_path *p, const int64_t *w,
		      uint32_t top, uint32_t max_edges)
{
	cJSON *o = cJSON_CreateObject(), *gr, *bt, *pa, *sm, *bu, *ev;
	struct cp_counts c;

	if (!o)
		return NULL;
	cp_graph_counts(g, &c);
	cJSON_AddStringToObject(o, "analysis", "critical_path");
	cJSON_AddStringToObject(o, "unit", "us");
	cJSON_AddNumberToObject(o, "rank", g->rank);
	gr = cJSON_AddObjectToObject(o, "graph");
	cJSON_AddNumberToObject(gr, "nodes", c.nodes);
	cJSON_AddNumberToObject(gr, "node_list", c.node_list);
	cJSON_AddNumberToObject(gr, "edges", c.edges);
	bt = cJSON_AddObjectToObject(gr, "edges_by_type");
	for (int t = 0; t < CP_E_COUNT; t++)
		cJSON_AddNumberToObject(bt, cp_edge_type_name[t], c.by_type[t]);
	cJSON_AddNumberToObject(gr, "negative_weight_edges", c.negative_weights);
	cJSON_AddNumberToObject(gr, "kernels_without_edge", g->warnings);
	cJSON_AddNumberToObject(gr, "window_start_us", usd(g->win_lo));
	if (g->win_hi == INT64_MAX)
		cJSON_AddNullToObject(gr, "window_end_us");
	else
		cJSON_AddNumberToObject(gr, "window_end_us", usd(g->win_hi));
	pa = cJSON_AddObjectToObject(o, "path");
	cJSON_AddNumberToObject(pa, "length_us", usd(p->length_ns));
	cJSON_AddNumberToObject(pa, "nodes", p->nnodes);
	cJSON_AddNumberToObject(pa, "edges", p->nnodes ? p->nnodes - 1 : 0);
	cJSON_AddNumberToObject(pa, "events", p->nevents);
	bt = cJSON_AddObjectToObject(pa, "length_by_type_us");
	for (int t = 0; t < CP_E_COUNT; t++)
		cJSON_AddNumberToObject(bt, cp_edge_type_name[t], usd(p->by_type_ns[t]));
	sm = cJSON_AddObjectToObject(o, "summary");
	bu = cJSON_AddObjectToObject(o, "bound_by_us");
	for (int b = 1; b < CP_B_COUNT; b++) {
		char k[64];

		snprintf(k, sizeof(k), "%s_pctg", cp_bound_name[b]);
		cJSON_AddNumberToObject(sm, k,
					p->length_ns ? 100.0 * (double)p->by_bound_ns[b] /
							       (double)p->length_ns
						     : 0);
		cJSON_AddNumberToObject(bu, cp_bound_name[b], usd(p->by_bound_ns[b]));
	}
	add_edges(o, g, p, w, max_edges);
	ev = cJSON_AddArrayToObject(o, "critical_events");
	for (uint32_t i = 0; ev && i < p->nevents; i++)
		cJSON_AddItemToArray(ev, cJSON_CreateNumber(p->events[i]));
	add_top(o, g, p, w, top);
	return o;
}
