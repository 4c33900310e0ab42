/* SPDX-License-Identifier: MIT */
/* Method handlers, one function per JSON-RPC method. */
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

#endif
