/* SPDX-License-Identifier: MIT */
/* Method handlers, one function per JSON-RPC method; dispatch.c's table
 * names them all. */
#ifndef GPUPROF_RPC_METHODS_H
#define GPUPROF_RPC_METHODS_H

#include "render/folded.h"
#include "rpc.h"

void method_version(struct rpc_req *req, const cJSON *params);
void method_status(struct rpc_req *req, const cJSON *params);
void method_capture_start(struct rpc_req *req, const cJSON *params);
void method_capture_stop(struct rpc_req *req, const cJSON *params);
void method_capture_list(struct rpc_req *req, const cJSON *params);
void method_capture_info(struct rpc_req *req, const cJSON *params);
void method_capture_delete(struct rpc_req *req, const cJSON *params);

/* The visible capture named by params.id, or NULL after answering the
 * error (not found / damaged unless allow_damaged). */
struct capentry *capture_for_req(struct rpc_req *req, const cJSON *params, bool allow_damaged);

void method_capture_folded(struct rpc_req *req, const cJSON *params);
/* Answer req with e's info once e is saved, or with why it was not. */
void rpc_wait_saved(struct rpc_req *req, struct capentry *e);

/* Renderers (methods_render.c): flame graphs, diffs, heat maps, exports. */
void method_capture_flamegraph(struct rpc_req *req, const cJSON *params);
void method_capture_diff(struct rpc_req *req, const cJSON *params);
void method_capture_heatmap(struct rpc_req *req, const cJSON *params);
void method_capture_export(struct rpc_req *req, const cJSON *params);

/* gpu.top (methods_gpu.c): the GPU kernels of a capture, ranked. */
void method_gpu_top(struct rpc_req *req, const cJSON *params);

/* capture.import (methods_import.c): trace files into a capture. */
void method_capture_import(struct rpc_req *req, const cJSON *params);

/* analyze.<name> and analyze.list (methods_analyze.c): every analysis of
 * daemon/analysis's table; the name is taken from the method. */
void method_analyze(struct rpc_req *req, const cJSON *params);
void method_analyze_list(struct rpc_req *req, const cJSON *params);
/* analyze.critical_path (methods_critpath.c): with the graph cache, what-if
 * edits and the overlay on fds (docs/protocol.md). */
void method_analyze_critical_path(struct rpc_req *req, const cJSON *params);
/* analyze.comm (methods_comm.c): with comm.params defaults and the SVG. */
void method_analyze_comm(struct rpc_req *req, const cJSON *params);

/* xe.* (methods_xe.c, docs/xe.md): pause/resume the EU-stall streams, and
 * the EU-stall outputs of a capture on an fd. */
void method_xe_pause(struct rpc_req *req, const cJSON *params);
void method_xe_resume(struct rpc_req *req, const cJSON *params);
/* xe.folded, xe.iaprof, xe.flamescope: the output is taken from the method. */
void method_xe_output(struct rpc_req *req, const cJSON *params);
/* xe.batch: a batch-buffer dump on an fd to the host parser (methods_xecs.c,
 * docs/gpu-cs.md). */
void method_xe_batch(struct rpc_req *req, const cJSON *params);
/* xe.zebin: a NEO debug zebin on an fd: kernels and binaries (docs/xe.md) */
void method_xe_zebin(struct rpc_req *req, const cJSON *params);

/* cupti.release (methods_cupti.c): a process's CUPTI library gives CUPTI up. */
void method_cupti_release(struct rpc_req *req, const cJSON *params);

/* Param helpers: each answers -32602 itself and returns false on error. */
struct rpc_req;
bool param_u64(struct rpc_req *req, const cJSON *params, const char *key, bool required,
	       uint64_t max, uint64_t *out);
bool param_bool(struct rpc_req *req, const cJSON *params, const char *key, bool *out);
/* A string of valid UTF-8 of at most maxlen bytes (*out untouched when absent). */
bool param_str(struct rpc_req *req, const cJSON *params, const char *key, size_t maxlen,
	       const char **out);
/* param_str() for a name that is stored and shown to others: no control
 * characters (C0, DEL, C1) either. */
bool param_name(struct rpc_req *req, const cJSON *params, const char *key, size_t maxlen,
		const char **out);
/* "weight": "samples" (default, *out untouched when absent), "launches" or
 * "gpu-time" (render/folded.h). */
bool param_weight(struct rpc_req *req, const cJSON *params, enum folded_weight *out);
/* Reject members not in the NULL-terminated list (typos are errors). */
bool params_only(struct rpc_req *req, const cJSON *params, const char *const *allowed);
/* The same with a predicate: a key is allowed when known(key, arg). */
bool params_known(struct rpc_req *req, const cJSON *params,
		  bool (*known)(const char *key, const void *arg), const void *arg);

#endif
