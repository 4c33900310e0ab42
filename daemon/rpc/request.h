/* SPDX-License-Identifier: MIT */
/*
 * The pure part of request dispatch: nesting pre-check, JSON parse, the
 * JSON-RPC envelope (jsonrpc, id, method, params), method lookup and the
 * fd-index rules. No connection, no I/O, no daemon state: dispatch.c calls
 * it for every message and tests/fuzz/fuzz_rpc.c feeds it anything.
 */
#ifndef GPUPROF_RPC_REQUEST_H
#define GPUPROF_RPC_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "rpc.h"

struct rpc_request {
	cJSON *root; /* owned; freed by rpc_request_finish() */
	/* The rest points into root and lives as long as it. */
	const cJSON *reply_id; /* id to echo in an error: number/string, else NULL */
	bool notification;     /* no id, or id null: no reply */
	const char *method_name;
	const struct rpc_method *method; /* NULL: not in the table */
	const cJSON *params;		 /* NULL, an object or an array */
	int fd_err;			 /* 0, or -EINVAL when "fd"/"fds" are not valid indexes */
	size_t nfds;			 /* descriptors the request names (highest index + 1) */
};

/*
 * Parse and validate one message (msg[len] must be '\0', as frame_buf_next
 * leaves it). Returns 0 with *req filled (the method may still be unknown
 * and fd_err set: those are answered with the request's id), or a JSON-RPC
 * error code (GPUPROF_ERR_*) with *err a static message; then req->root is
 * NULL except for -32600, where reply_id may be set and root must be freed
 * with rpc_request_finish() too (always safe to call).
 */
int rpc_request_parse(char *msg, size_t len, int max_nesting, const struct rpc_method *table,
		      size_t ntable, struct rpc_request *req, const char **err);
void rpc_request_finish(struct rpc_request *req);

/* Exact name, else the first "prefix.*" entry matching; NULL if none. */
const struct rpc_method *rpc_method_find(const struct rpc_method *table, size_t ntable,
					 const char *name);

/* Indexes of fds a request names: "fd": N or "fds": [N, ...]. 0 or -EINVAL. */
int rpc_fds_named(const cJSON *params, size_t *count);

/* Copy an unknown method name for an error message: printable ASCII only,
 * so replies stay valid UTF-8 and cannot smuggle escapes. */
void rpc_method_shown(const char *name, char *out, size_t n);

#endif
