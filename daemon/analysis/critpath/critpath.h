/* SPDX-License-Identifier: MIT */
/*
 * Critical-path analysis (HTA's critical path, docs/analyses.md
 * "Critical path"): a DAG of start/end nodes of CPU ops, runtime calls and
 * GPU kernels of one rank and window, its longest path with HTA's tie rules,
 * the bound-by breakdown, what-if edits on edge weights and the overlay of
 * the path on the original trace.
 *
 * A built graph is self-contained (it copies the few event fields and names
 * it needs), so it can outlive the timeline it came from: the RPC layer
 * caches graphs and answers repeated what-ifs without the timeline.
 * A graph is immutable once built; any number of threads may run
 * cp_solve() / cp_result_json() / cp_overlay_write() on it at once.
 */
#ifndef GPUPROF_CRITPATH_H
#define GPUPROF_CRITPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

struct timeline;
struct cp_graph;

enum cp_edge_type {
	CP_E_OPERATOR = 0,  /* critical_path_operator: span of an op/kernel */
	CP_E_DEPENDENCY,    /* critical_path_dependency */
	CP_E_LAUNCH,	    /* critical_path_kernel_launch_delay */
	CP_E_KERNEL_KERNEL, /* critical_path_kernel_kernel_delay */
	CP_E_SYNC,	    /* critical_path_sync_dependency */
	CP_E_COUNT
};
extern const char *const cp_edge_type_name[CP_E_COUNT];

enum cp_bound {
	CP_B_NONE = 0,	    /* "" (dependency / sync edges, 0 weight) */
	CP_B_CPU,	    /* cpu_bound */
	CP_B_GPU_COMPUTE,   /* gpu_compute_bound */
	CP_B_GPU_COMM,	    /* gpu_communication_bound */
	CP_B_LAUNCH,	    /* gpu_kernel_launch_overhead */
	CP_B_KERNEL_KERNEL, /* gpu_kernel_kernel_overhead */
	CP_B_DATA_LOADING,  /* data_loading */
	CP_B_COUNT
};
extern const char *const cp_bound_name[CP_B_COUNT];

#define CP_MAX_DATA_LOAD 16

struct cp_opts {
	int32_t rank;
	const char *annotation;		  /* "" or NULL = the whole rank */
	int64_t instance_lo, instance_hi; /* positions among matching annotations */
	bool zero_weight_launch;	  /* HTA's CRITICAL_PATH_ADD_ZERO_WEIGHT_LAUNCH_EDGE */
	int64_t kk_threshold_ns;	  /* kernel-kernel edge only below this gap (1500 µs) */
	const char *data_load[CP_MAX_DATA_LOAD]; /* POSIX ERE, searched in names */
	size_t ndata_load;
};
void cp_opts_default(struct cp_opts *o);

/*
 * Build the graph of one rank of a finalized timeline. 0, or -EINVAL (rank
 * absent, bad regex, annotation not found, instance out of range), -ENODATA
 * (no events in the window), -ENOMEM; a one-line reason in err.
 * *ret untouched on failure; free with cp_graph_free().
 */
int cp_build(const struct timeline *tl, const struct cp_opts *o, struct cp_graph **ret, char *err,
	     size_t errlen);
void cp_graph_free(struct cp_graph *g);
/* Heap bytes held by the graph (for the cache's memory bound). */
size_t cp_graph_bytes(const struct cp_graph *g);

/* Counts for results and parity tests. */
struct cp_counts {
	uint32_t nodes;	    /* nodes that are an endpoint of some edge (networkx nodes) */
	uint32_t node_list; /* start+end nodes created */
	uint32_t edges;
	uint32_t by_type[CP_E_COUNT];
	uint32_t negative_weights; /* edges with weight <= -1 µs (graph weight set to 0) */
};
void cp_graph_counts(const struct cp_graph *g, struct cp_counts *c);

/* A solved path (cp_solve). Arrays are malloc'ed; cp_path_finish frees. */
struct cp_path {
	uint32_t *nodes; /* node ids in path order */
	uint32_t nnodes;
	uint32_t *edges;   /* edge ids, nnodes - 1 */
	int64_t length_ns; /* sum of the (raw) weights of the path's edges */
	int64_t by_bound_ns[CP_B_COUNT];
	int64_t by_type_ns[CP_E_COUNT];
	uint32_t *events; /* sorted traceEvents indices of the path's nodes */
	uint32_t nevents;
};
void cp_path_finish(struct cp_path *p);

/*
 * Validate (same-stream sync edges, cycles: -EDOM with the offending events
 * named in err) and find the longest path with networkx's dag_longest_path
 * rules (HTA's). weights: per edge raw weights in ns (what-if), NULL for
 * the graph's own. 0, -EDOM, -ENOMEM.
 */
int cp_solve(const struct cp_graph *g, const int64_t *weights, struct cp_path *out, char *err,
	     size_t errlen);

/*
 * What-if edits (docs/analyses.md): a JSON array of
 *   {"match": "REGEX" | "kind": "cpu"|"gpu"|"kernel"|"comm"|"memory"|
 *    "launch_delay"|"kernel_kernel_delay"|"all", "scale": X | "set_us": X}
 * applied in order to a copy of the weights. *out (malloc'ed, g's edge count)
 * on success. 0, -EINVAL (message in err), -ENOMEM.
 */
int cp_whatif(const struct cp_graph *g, const cJSON *edits, int64_t **out, uint32_t *nmatched,
	      char *err, size_t errlen);
uint32_t cp_graph_nedges(const struct cp_graph *g);

/*
 * The result tree (docs/analyses.md): counts, path length, summary,
 * critical edges (at most max_edges, in path order) and the top events.
 * weights as for cp_solve. NULL on allocation failure.
 */
cJSON *cp_result_json(const struct cp_graph *g, const struct cp_path *p, const int64_t *weights,
		      uint32_t top, uint32_t max_edges);

/*
 * Overlay (as HTA's): stream the original trace (plain or gzip JSON, read
 * with rd) to wr as plain JSON, adding "critical": 1 to the args of critical
 * events and appending flow events (ph s/f) for the critical dependency,
 * launch-delay and sync edges. all_events keeps non-critical X events too
 * (HTA's only_show_critical_events=False). Memory: one event at a time.
 * 0, or a negative errno with a reason in err (-EBADMSG bad input,
 * -E2BIG an event over 16 MiB, or the callback's error).
 */
struct cp_io {
	ssize_t (*read)(void *arg, void *buf, size_t n);  /* bytes, 0 at EOF, -errno */
	int (*write)(void *arg, const void *p, size_t n); /* 0 or -errno */
	void *arg;
};
int cp_overlay_write(const struct cp_graph *g, const struct cp_path *p, const struct cp_io *io,
		     bool all_events, uint64_t *flows_out, char *err, size_t errlen);

/*
 * One request's parameters (docs/protocol.md, analyze.critical_path): the
 * build options, the what-if edits, the result's size and the overlay
 * flags. Strings and edits point into the params object, which must
 * outlive the request. key names everything the graph depends on (o
 * without rank -1 resolved; a cache keys graphs by it).
 */
struct cp_request {
	struct cp_opts o;   /* rank -1: the capture's lowest */
	const cJSON *edits; /* array or NULL */
	uint32_t top, max_edges;
	bool overlay, all_events, unverified;
	char key[1024];
};
/* Unknown keys are the caller's to refuse. 0, or -EINVAL with a reason. */
int cp_request_parse(const cJSON *params, struct cp_request *rq, char *err, size_t errlen);

/* The path of a request's graph, with its edits applied when it has any. */
struct cp_solved {
	struct cp_path base, alt; /* alt: with the edits */
	int64_t *weights;	  /* edited weights, NULL without edits */
	uint32_t matched;	  /* edges the edits matched */
};
/*
 * Solve g for rq and build the result tree in *result (caller deletes).
 * 0, or -EDOM (a cycle, a same-stream sync edge), -EINVAL (bad edit),
 * -ENOMEM, with a reason in err. s is set either way: cp_solved_finish().
 */
int cp_request_solve(const struct cp_graph *g, const struct cp_request *rq, struct cp_solved *s,
		     cJSON **result, char *err, size_t errlen);
/* Adds "whatif" (baseline vs edited length) to result when rq has edits. */
void cp_request_whatif_json(const struct cp_request *rq, const struct cp_solved *s, cJSON *result);
const struct cp_path *cp_solved_path(const struct cp_solved *s, const struct cp_request *rq);
void cp_solved_finish(struct cp_solved *s);

#endif /* GPUPROF_CRITPATH_H */
