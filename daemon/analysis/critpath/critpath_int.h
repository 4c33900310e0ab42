/* SPDX-License-Identifier: MIT */
/* Shared by the critical-path files only: the graph and the build state. */
#ifndef GPUPROF_CRITPATH_INTERNAL_H
#define GPUPROF_CRITPATH_INTERNAL_H

#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/internal.h" /* HTA's time grid, np_argsort_i64 */
#include "critpath.h"
#include "timeline/timeline.h"

#define CP_NONE (-1)

/* One event the graph refers to (has nodes, or is an attributed parent). */
struct cp_event {
	uint32_t index;	 /* traceEvents position */
	uint32_t name;	 /* offset into g->strs */
	uint32_t pos;	 /* position in the rank's ev[] (meaningful while building) */
	int64_t stream;	 /* HTA's stream column (-1 CPU side) */
	int64_t ts, dur; /* HTA grid, ns */
	uint8_t bound;	 /* enum cp_bound of an operator edge attributed to it */
	uint8_t kind;	 /* enum tl_kind */
	uint8_t gpu;	 /* stream != -1 */
	uint8_t reserved;
};

struct cp_node {
	int64_t ts;  /* HTA grid, ns */
	uint32_t ev; /* into g->ev */
	uint8_t is_start, is_blocking;
};

struct cp_edge {
	uint32_t u, v; /* node ids */
	int64_t w;     /* HTA's CPEdge.weight in ns (may be negative) */
	int32_t attr;  /* attributed event (into g->ev), CP_NONE */
	uint8_t type;  /* enum cp_edge_type */
};

struct cp_graph {
	int32_t rank;
	int64_t win_lo, win_hi; /* clipping window, HTA grid ns */
	struct cp_event *ev;
	uint32_t nev, cap_ev;
	struct cp_node *nodes;
	uint32_t nnodes;
	struct cp_edge *edges; /* first-insertion order */
	uint32_t nedges, cap_edges;
	/* networkx structure, built after the edges (path.c) */
	uint32_t *order; /* graph node order: first appearance in the edges */
	uint32_t norder;
	uint32_t *succ_off, *succ; /* CSR: edge ids per source, insertion order */
	uint32_t *pred_off, *pred; /* CSR: edge ids per destination */
	char *strs;		   /* NUL-terminated names */
	size_t nstrs, cap_strs;
	uint32_t warnings; /* kernels without launch/kernel-kernel edge etc. */
};

/* Build state (build.c, graph.c, stacks.c, gpu.c, gpu_tables.c). */
struct cp_build {
	const struct timeline *tl;
	const struct tl_rank *r;
	const struct cp_opts *o;
	struct cp_graph *g;
	regex_t dl[CP_MAX_DATA_LOAD];
	size_t ndl;
	bool *clip;		/* per position */
	int32_t *loc;		/* position -> g->ev, CP_NONE */
	int32_t *nstart, *nend; /* position -> node id, CP_NONE */
	uint32_t *str_off;	/* timeline string id -> g->strs offset + 1, 0 = not yet */
	/* (u,v) -> edge id, open addressing */
	uint64_t *hkey;
	uint32_t *hval;
	size_t hcap;
	char *err;
	size_t errlen;
};

int cpb_fail(struct cp_build *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Position of the event with traceEvents index idx, or CP_NONE. */
int32_t cpb_pos_of_index(const struct tl_rank *r, int64_t idx);
/* g->ev entry for a position (added on first use); CP_NONE on ENOMEM. */
int32_t cpb_event(struct cp_build *b, uint32_t pos);
/* _add_edge_helper: returns the edge id, or CP_NONE (same node, ENOMEM). */
int32_t cpb_edge(struct cp_build *b, int32_t u, int32_t v, enum cp_edge_type t, bool zero);
/* HTA's _attribute_edge; src_parent is a position or CP_NONE. */
void cpb_attribute(struct cp_build *b, int32_t e, int32_t src_parent);
const char *cpb_name(const struct cp_build *b, uint32_t pos);
int cpb_gpu_edges(struct cp_build *b);	 /* gpu.c: phase D3 */
int cpb_call_stacks(struct cp_build *b); /* stacks.c: phase D2 */
int cp_graph_index(struct cp_graph *g);	 /* path.c: node order and CSR */

static inline const char *cp_ev_name(const struct cp_graph *g, const struct cp_event *e)
{
	return g->strs + e->name;
}

#endif /* GPUPROF_CRITPATH_INTERNAL_H */
