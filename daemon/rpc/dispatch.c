// SPDX-License-Identifier: MIT
/* Request validation and the one table of methods. */
#include "rpc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framing.h"
#include "gpd.h"
#include "log.h"
#include "methods.h"

/*
 * Components add their methods by providing methods_<area>.h with a
 * METHODS_<AREA> list of table entries; dispatch.c stays the one table.
 */
#if __has_include("methods_render.h")
#include "methods_render.h"
#endif
#if __has_include("methods_gpu.h")
#include "methods_gpu.h"
#endif
#if __has_include("methods_import.h")
#include "methods_import.h"
#endif
#ifndef METHODS_RENDER
#define METHODS_RENDER
#endif
#ifndef METHODS_GPU
#define METHODS_GPU
#endif
#ifndef METHODS_IMPORT
#define METHODS_IMPORT
#endif

static const struct rpc_method methods[] = {
	{"version", method_version},
	{"status", method_status},
	{"capture.start", method_capture_start},
	{"capture.stop", method_capture_stop},
	{"capture.list", method_capture_list},
	{"capture.info", method_capture_info},
	{"capture.delete", method_capture_delete},
	{"capture.folded", method_capture_folded},
	METHODS_RENDER METHODS_GPU METHODS_IMPORT
};

static void send_json(struct rpc_conn *conn, cJSON *msg)
{
	char *text = cJSON_PrintUnformatted(msg);
	if (!text) {
		static const char oom[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
					  "-32603,\"message\":\"out of memory\"}}";
		rpc_conn_send(conn, oom, sizeof(oom) - 1);
		return;
	}
	rpc_conn_send(conn, text, strlen(text));
	free(text);
}

void rpc_send_error_line(struct rpc_conn *conn, const cJSON *id, int code, const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return;
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	cJSON *e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	send_json(conn, o);
	cJSON_Delete(o);
}

static void req_free(struct rpc_req *req)
{
	for (size_t i = 0; i < req->nfds; i++)
		if (req->fds[i] >= 0)
			close(req->fds[i]);
	rpc_conn_inflight(req->conn, -1);
	rpc_conn_unref(req->conn);
	cJSON_Delete(req->id);
	free(req);
}

int rpc_req_take_fd(struct rpc_req *req, size_t idx)
{
	if (idx >= req->nfds)
		return -1;
	int fd = req->fds[idx];
	req->fds[idx] = -1;
	return fd;
}

void rpc_reply(struct rpc_req *req, cJSON *result)
{
	if (req->id && rpc_conn_alive(req->conn)) {
		cJSON *o = cJSON_CreateObject();
		if (o) {
			cJSON_AddStringToObject(o, "jsonrpc", "2.0");
			cJSON_AddItemToObject(o, "id", req->id);
			req->id = NULL;
			cJSON_AddItemToObject(o, "result", result ? result : cJSON_CreateNull());
			result = NULL;
			send_json(req->conn, o);
			cJSON_Delete(o);
		}
	}
	cJSON_Delete(result);
	req_free(req);
}

void rpc_error(struct rpc_req *req, int code, cJSON *data, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (req->id && rpc_conn_alive(req->conn)) {
		cJSON *o = cJSON_CreateObject();
		if (o) {
			cJSON_AddStringToObject(o, "jsonrpc", "2.0");
			cJSON_AddItemToObject(o, "id", req->id);
			req->id = NULL;
			cJSON *e = cJSON_AddObjectToObject(o, "error");
			cJSON_AddNumberToObject(e, "code", code);
			cJSON_AddStringToObject(e, "message", msg);
			if (data)
				cJSON_AddItemToObject(e, "data", data);
			data = NULL;
			send_json(req->conn, o);
			cJSON_Delete(o);
		}
	}
	cJSON_Delete(data);
	req_free(req);
}

void rpc_error_errno(struct rpc_req *req, int err, const char *what)
{
	int code;
	switch (-err) {
	case EACCES:
	case EPERM:
		code = GPUPROF_ERR_PERMISSION;
		break;
	case ENOENT:
	case ESRCH:
		code = GPUPROF_ERR_NOT_FOUND;
		break;
	case EBUSY:
	case EAGAIN:
		code = GPUPROF_ERR_BUSY;
		break;
	case EBADF:
		code = GPUPROF_ERR_BAD_FD;
		break;
	case EBADMSG:
		code = GPUPROF_ERR_DAMAGED;
		break;
	case EFBIG:
	case E2BIG:
	case EMSGSIZE:
		code = GPUPROF_ERR_TOO_LARGE;
		break;
	case ETIMEDOUT:
		code = GPUPROF_ERR_TIMEOUT;
		break;
	case ENODATA:
		code = GPUPROF_ERR_NO_DATA;
		break;
	case EINVAL:
		code = GPUPROF_ERR_INVALID_PARAMS;
		break;
	case ENOMEM:
		code = GPUPROF_ERR_INTERNAL;
		break;
	default:
		code = GPUPROF_ERR_IO;
		break;
	}
	rpc_error(req, code, NULL, "%s: %s", what, strerror(-err));
}

/* Indexes of fds a request names: "fd": N or "fds": [N, ...]. */
static int fds_named(const cJSON *params, size_t *count)
{
	*count = 0;
	if (!cJSON_IsObject(params))
		return 0;
	const cJSON *fd = cJSON_GetObjectItemCaseSensitive(params, "fd");
	const cJSON *fds = cJSON_GetObjectItemCaseSensitive(params, "fds");
	long max = -1;
	if (fd) {
		if (!cJSON_IsNumber(fd) || fd->valuedouble != (double)(long)fd->valuedouble ||
		    fd->valuedouble < 0 || fd->valuedouble >= RPC_MAX_REQ_FDS)
			return -EINVAL;
		max = (long)fd->valuedouble;
	}
	if (fds) {
		const cJSON *it;
		if (!cJSON_IsArray(fds))
			return -EINVAL;
		cJSON_ArrayForEach(it, fds)
		{
			if (!cJSON_IsNumber(it) || it->valuedouble < 0 ||
			    it->valuedouble >= RPC_MAX_REQ_FDS ||
			    it->valuedouble != (double)(long)it->valuedouble)
				return -EINVAL;
			if ((long)it->valuedouble > max)
				max = (long)it->valuedouble;
		}
	}
	*count = (size_t)(max + 1);
	return 0;
}

void rpc_dispatch(struct rpc_conn *conn, char *msg, size_t len)
{
	struct gpd *g = rpc_conn_gpd(conn);
	if (!json_nesting_ok(msg, len, g->cfg.max_nesting)) {
		rpc_send_error_line(conn, NULL, GPUPROF_ERR_TOO_LARGE,
				    "message nested too deeply");
		return;
	}
	cJSON *root = cJSON_ParseWithLength(msg, len);
	if (!root) {
		rpc_send_error_line(conn, NULL, GPUPROF_ERR_PARSE, "parse error: invalid JSON");
		return;
	}
	if (!cJSON_IsObject(root)) {
		rpc_send_error_line(conn, NULL, GPUPROF_ERR_INVALID_REQUEST,
				    cJSON_IsArray(root) ? "batches are not supported"
							: "request must be an object");
		cJSON_Delete(root);
		return;
	}
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "jsonrpc");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
	const cJSON *reply_id = id && (cJSON_IsNumber(id) || cJSON_IsString(id)) ? id : NULL;

	const char *bad = NULL;
	if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0)
		bad = "\"jsonrpc\" must be \"2.0\"";
	else if (id && !cJSON_IsNumber(id) && !cJSON_IsString(id) && !cJSON_IsNull(id))
		bad = "\"id\" must be a number, a string or null";
	else if (!cJSON_IsString(method))
		bad = "\"method\" must be a string";
	else if (params && !cJSON_IsObject(params) && !cJSON_IsArray(params))
		bad = "\"params\" must be an object or an array";
	if (bad) {
		rpc_send_error_line(conn, reply_id, GPUPROF_ERR_INVALID_REQUEST, bad);
		cJSON_Delete(root);
		return;
	}

	const struct rpc_method *m = NULL;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (methods[i].name && !strcmp(methods[i].name, method->valuestring)) {
			m = &methods[i];
			break;
		}
	}
	size_t nfds = 0;
	int fr = fds_named(params, &nfds);

	struct rpc_req *req = calloc(1, sizeof(*req));
	if (!req) {
		rpc_send_error_line(conn, reply_id, GPUPROF_ERR_INTERNAL, "out of memory");
		cJSON_Delete(root);
		return;
	}
	req->conn = conn;
	rpc_conn_ref(conn);
	rpc_conn_inflight(conn, 1);
	req->gpd = g;
	req->id = id && !cJSON_IsNull(id) ? cJSON_Duplicate(id, 1) : NULL;
	snprintf(req->method, sizeof(req->method), "%s", method->valuestring);
	rpc_conn_peer(conn, &req->uid, &req->pid, &req->privileged);
	for (size_t i = 0; i < RPC_MAX_REQ_FDS; i++)
		req->fds[i] = -1;
	if (fr == 0 && nfds > 0)
		req->nfds = rpc_conn_take_fds(conn, req->fds, nfds);

	if (!m) {
		/* Echo only printable ASCII: replies must stay valid UTF-8. */
		char shown[65];
		size_t k = 0;
		for (const char *p = method->valuestring; *p && k < sizeof(shown) - 1; p++)
			shown[k++] = (*p >= 0x20 && *p < 0x7f && *p != '\\') ? *p : '?';
		shown[k] = '\0';
		rpc_error(req, GPUPROF_ERR_METHOD_NOT_FOUND, NULL, "method not found: %s", shown);
	} else if (fr < 0) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"fd\"/\"fds\" must be indexes below %d", RPC_MAX_REQ_FDS);
	} else if (req->nfds < nfds) {
		rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
			  "request names %zu file descriptor(s) but %zu arrived with it", nfds,
			  req->nfds);
	} else if (g->stopping) {
		rpc_error(req, GPUPROF_ERR_SHUTTING_DOWN, NULL, "daemon is stopping");
	} else {
		log_debug("uid=%u pid=%d: %s", (unsigned)req->uid, (int)req->pid, m->name);
		m->fn(req, params);
	}
	cJSON_Delete(root);
}
