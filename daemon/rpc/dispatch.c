// SPDX-License-Identifier: MIT
/* Request validation and the one table of methods. */
#include "rpc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpd.h"
#include "json.h"
#include "log.h"
#include "methods.h"
#include "request.h"

/* Every method, one handler each (methods.h). A new method: its handler in
 * a methods_<area>.c here, its line in this table. */
static const struct rpc_method methods[] = {
	{"version", method_version},
	{"status", method_status},
	{"capture.start", method_capture_start},
	{"capture.stop", method_capture_stop},
	{"capture.list", method_capture_list},
	{"capture.info", method_capture_info},
	{"capture.delete", method_capture_delete},
	{"capture.folded", method_capture_folded},
	{"capture.flamegraph", method_capture_flamegraph},
	{"capture.diff", method_capture_diff},
	{"capture.heatmap", method_capture_heatmap},
	{"capture.export", method_capture_export},
	{"gpu.top", method_gpu_top},
	{"capture.import", method_capture_import},
	{"analyze.list", method_analyze_list},
	{"analyze.critical_path", method_analyze_critical_path},
	{"analyze.comm", method_analyze_comm},
	{"analyze.*", method_analyze},
	{"cupti.release", method_cupti_release},
	{"xe.pause", method_xe_pause},
	{"xe.resume", method_xe_resume},
	{"xe.folded", method_xe_output},
	{"xe.iaprof", method_xe_output},
	{"xe.flamescope", method_xe_output},
	{"xe.batch", method_xe_batch},
	{"xe.zebin", method_xe_zebin},
};

static void send_json(struct rpc_conn *conn, cJSON *msg)
{
	/* Every reply leaves as exact integers and valid UTF-8, whatever a
	 * handler put in it (json.h). */
	char *text = json_reply_normalize(msg) ? cJSON_PrintUnformatted(msg) : NULL;
	if (!text) {
		static const char oom[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":"
					  "-32603,\"message\":\"out of memory\"}}";
		rpc_conn_send(conn, oom, sizeof(oom) - 1);
		return;
	}
	size_t len = strlen(text);
	if (len + 1 > GPUPROF_MAX_REPLY_SIZE) {
		char m[200];
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
		snprintf(m, sizeof(m),
			 "the reply would be %zu MiB, over the %u MiB a reply may have: "
			 "narrow the request (rank, params)",
			 (len + (1u << 20) - 1) >> 20, GPUPROF_MAX_REPLY_SIZE >> 20);
		free(text);
		rpc_send_error_line(conn, id, GPUPROF_ERR_TOO_LARGE, m);
		return;
	}
	rpc_conn_send(conn, text, len);
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

/* The reply object with jsonrpc and the request's id (moved into it), or
 * NULL when no reply goes out: a notification, a closed peer, no memory. */
static cJSON *reply_envelope(struct rpc_req *req)
{
	cJSON *o;

	if (!req->id || !rpc_conn_alive(req->conn) || !(o = cJSON_CreateObject()))
		return NULL;
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", req->id);
	req->id = NULL;
	return o;
}

void rpc_reply(struct rpc_req *req, cJSON *result)
{
	cJSON *o = reply_envelope(req);

	if (o) {
		cJSON_AddItemToObject(o, "result", result ? result : cJSON_CreateNull());
		result = NULL;
		send_json(req->conn, o);
		cJSON_Delete(o);
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
	cJSON *o = reply_envelope(req);
	if (o) {
		cJSON *e = cJSON_AddObjectToObject(o, "error");
		cJSON_AddNumberToObject(e, "code", code);
		cJSON_AddStringToObject(e, "message", msg);
		if (data)
			cJSON_AddItemToObject(e, "data", data);
		data = NULL;
		send_json(req->conn, o);
		cJSON_Delete(o);
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

void rpc_dispatch(struct rpc_conn *conn, char *msg, size_t len)
{
	struct gpd *g = rpc_conn_gpd(conn);
	struct rpc_request rq;
	const char *bad = NULL;
	int code = rpc_request_parse(msg, len, g->cfg.max_nesting, methods,
				     sizeof(methods) / sizeof(methods[0]), &rq, &bad);
	if (code) {
		rpc_send_error_line(conn, rq.reply_id, code, bad);
		rpc_request_finish(&rq);
		return;
	}

	struct rpc_req *req = calloc(1, sizeof(*req));
	if (!req) {
		rpc_send_error_line(conn, rq.reply_id, GPUPROF_ERR_INTERNAL, "out of memory");
		rpc_request_finish(&rq);
		return;
	}
	req->conn = conn;
	rpc_conn_ref(conn);
	rpc_conn_inflight(conn, 1);
	req->gpd = g;
	req->id = rq.notification ? NULL : cJSON_Duplicate(rq.reply_id, 1);
	snprintf(req->method, sizeof(req->method), "%s", rq.method_name);
	rpc_conn_peer(conn, &req->uid, &req->pid, &req->privileged);
	req->gid = rpc_conn_peer_gid(conn);
	for (size_t i = 0; i < RPC_MAX_REQ_FDS; i++)
		req->fds[i] = -1;
	if (rq.fd_err == 0 && rq.nfds > 0)
		req->nfds = rpc_conn_take_fds(conn, req->fds, rq.nfds);

	if (!rq.method) {
		char shown[65];
		rpc_method_shown(rq.method_name, shown, sizeof(shown));
		rpc_error(req, GPUPROF_ERR_METHOD_NOT_FOUND, NULL, "method not found: %s", shown);
	} else if (rq.fd_err < 0) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"fd\"/\"fds\" must be indexes below %d", RPC_MAX_REQ_FDS);
	} else if (req->nfds < rq.nfds) {
		rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
			  "request names %zu file descriptor(s) but %zu arrived with it", rq.nfds,
			  req->nfds);
	} else if (g->stopping) {
		rpc_error(req, GPUPROF_ERR_SHUTTING_DOWN, NULL, "daemon is stopping");
	} else {
		log_debug("uid=%u pid=%d: %s", (unsigned)req->uid, (int)req->pid, rq.method->name);
		rq.method->fn(req, rq.params);
	}
	rpc_request_finish(&rq);
}
