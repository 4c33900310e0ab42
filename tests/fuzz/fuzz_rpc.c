// SPDX-License-Identifier: MIT
/*
 * Framing + JSON-RPC request parsing and validation, as the daemon runs
 * them for every byte a client sends: the input is a client's byte stream,
 * cut into reads of a size taken from its first byte, pushed through a
 * frame_buf; each complete message goes through rpc_request_parse() (nesting
 * pre-check, cJSON, envelope, method lookup, fd-index rules) and, when it
 * is a valid request with params, through the parameter helpers every
 * handler uses. rpc_error() is replaced here to check what would be sent:
 * every error message must be valid UTF-8 and every reply valid JSON.
 */
#include "fuzz.h"
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framing.h"
#include "rpc/methods.h"
#include "rpc/request.h"

/* Names as in dispatch.c's table (handlers are not called here). */
static const struct rpc_method table[] = {
	{"version", NULL},	  {"status", NULL},	    {"capture.start", NULL},
	{"capture.stop", NULL},	  {"capture.list", NULL},   {"capture.info", NULL},
	{"capture.delete", NULL}, {"capture.folded", NULL}, {"capture.import", NULL},
	{"analyze.list", NULL},	  {"analyze.*", NULL},
};

static bool utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n;
		if (c < 0x80) {
			s++;
			continue;
		} else if ((c & 0xe0) == 0xc0 && c >= 0xc2) {
			n = 1;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
		} else if ((c & 0xf8) == 0xf0 && c <= 0xf4) {
			n = 3;
		} else {
			return false;
		}
		for (unsigned i = 1; i <= n; i++)
			if ((s[i] & 0xc0) != 0x80)
				return false;
		s += n + 1;
	}
	return true;
}

/* What server.c would send: the reply line must parse back. */
static void check_reply(const cJSON *id, int code, const char *msg)
{
	if (!utf8_ok((const unsigned char *)msg)) {
		fprintf(stderr, "error message is not valid UTF-8: %s\n", msg);
		abort();
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	cJSON *e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", msg);
	char *text = cJSON_PrintUnformatted(o);
	if (text) {
		if (strchr(text, '\n')) {
			fprintf(stderr, "reply contains the delimiter: %s\n", text);
			abort();
		}
		cJSON *back = cJSON_Parse(text);
		if (!back) {
			fprintf(stderr, "reply does not parse: %s\n", text);
			abort();
		}
		cJSON_Delete(back);
		free(text);
	}
	cJSON_Delete(o);
}

static const cJSON *cur_id;
static int errors_answered;

/* Replaces dispatch.c's: the param helpers answer through it. */
void rpc_error(struct rpc_req *req, int code, cJSON *data, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	(void)req;
	check_reply(cur_id, code, msg);
	cJSON_Delete(data);
	errors_answered++;
}

static void run_params(const cJSON *params)
{
	static const char *const allowed[] = {"id",   "fd",	  "fds",    "pids",  "duration_ms",
					      "last_ms", "wait",  "name",   "kernel", "comm",
					      "start_ns", "end_ns", "lines", NULL};
	struct rpc_req req = {0};
	uint64_t u = 0;
	bool b = false;
	const char *s = NULL;

	errors_answered = 0;
	if (!params_only(&req, params, allowed))
		return;
	param_u64(&req, params, "id", false, UINT64_MAX >> 11, &u);
	param_u64(&req, params, "duration_ms", false, 24ull * 3600 * 1000, &u);
	param_u64(&req, params, "start_ns", false, UINT64_MAX >> 11, &u);
	param_u64(&req, params, "fd", true, RPC_MAX_REQ_FDS - 1, &u);
	param_bool(&req, params, "wait", &b);
	param_str(&req, params, "name", 127, &s);
	if (s && strlen(s) > 127)
		abort();
}

static void one_message(char *msg, size_t len)
{
	struct rpc_request rq;
	const char *err = NULL;
	int code = rpc_request_parse(msg, len, GPUPROF_MAX_NESTING, table,
				     sizeof(table) / sizeof(table[0]), &rq, &err);
	cur_id = rq.reply_id;
	if (code) {
		if (!err || code >= 0)
			abort();
		check_reply(rq.reply_id, code, err);
		rpc_request_finish(&rq);
		return;
	}
	if (!rq.method_name || (rq.fd_err == 0 && rq.nfds > RPC_MAX_REQ_FDS))
		abort();
	if (!rq.method) {
		char shown[65], m[128];
		rpc_method_shown(rq.method_name, shown, sizeof(shown));
		snprintf(m, sizeof(m), "method not found: %s", shown);
		check_reply(rq.reply_id, GPUPROF_ERR_METHOD_NOT_FOUND, m);
	}
	if (rq.params)
		run_params(rq.params);
	rpc_request_finish(&rq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame_buf fb;
	size_t chunk = 1, max = 1024 * 1024;

	if (size > 0) {
		/* Low bits: read size (1 .. 64 KiB); high bit: a small message
		 * limit so the over-limit paths are reached too. */
		static const size_t chunks[] = {1, 2, 3, 7, 64, 4096, 65536, 1 << 20};
		chunk = chunks[data[0] & 7];
		if (data[0] & 0x80)
			max = 256;
		data++;
		size--;
	}
	frame_buf_init(&fb, max);
	size_t pos = 0;
	while (pos < size) {
		char *p;
		size_t avail;
		if (frame_buf_reserve(&fb, &p, &avail) < 0)
			break; /* the server answers -32001 and closes */
		size_t n = size - pos < chunk ? size - pos : chunk;
		if (n > avail)
			n = avail;
		memcpy(p, data + pos, n);
		frame_buf_commit(&fb, n);
		pos += n;
		char *msg;
		size_t len;
		int r;
		while ((r = frame_buf_next(&fb, &msg, &len)) == 1) {
			if (len > max || msg[len] != '\0')
				abort();
			one_message(msg, len);
		}
		if (r < 0)
			break;
		if (frame_buf_pending(&fb) > max + 1 + 65536)
			abort();
	}
	frame_buf_finish(&fb);
	return 0;
}
