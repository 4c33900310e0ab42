// SPDX-License-Identifier: MIT
/* Request validation without a connection (see request.h). */
#include "request.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "framing.h"
#include "json.h"

int rpc_fds_named(const cJSON *params, size_t *count)
{
	*count = 0;
	if (!cJSON_IsObject(params))
		return 0;
	const cJSON *fd = cJSON_GetObjectItemCaseSensitive(params, "fd");
	const cJSON *fds = cJSON_GetObjectItemCaseSensitive(params, "fds");
	long max = -1;
	/* Range before the integer test: casting an out-of-range double to
	 * long is undefined behaviour (UBSan flags 1e300). */
	if (fd) {
		if (!cJSON_IsNumber(fd) || !(fd->valuedouble >= 0) ||
		    fd->valuedouble >= RPC_MAX_REQ_FDS ||
		    fd->valuedouble != (double)(long)fd->valuedouble)
			return -EINVAL;
		max = (long)fd->valuedouble;
	}
	if (fds) {
		const cJSON *it;
		if (!cJSON_IsArray(fds))
			return -EINVAL;
		cJSON_ArrayForEach(it, fds)
		{
			if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
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

void rpc_method_shown(const char *name, char *out, size_t n)
{
	size_t k = 0;
	if (!n)
		return;
	for (const char *p = name; *p && k < n - 1; p++)
		out[k++] = (*p >= 0x20 && *p < 0x7f && *p != '\\') ? *p : '?';
	out[k] = '\0';
}

const struct rpc_method *rpc_method_find(const struct rpc_method *table, size_t ntable,
					 const char *name)
{
	const struct rpc_method *wild = NULL;
	for (size_t i = 0; i < ntable; i++) {
		const char *n = table[i].name;
		if (!n)
			continue;
		if (!strcmp(n, name))
			return &table[i];
		/* "area.*": every "area.<something>" not listed exactly; the
		 * handler answers -32601 for names it does not know. */
		size_t l = strlen(n);
		if (!wild && l >= 2 && n[l - 2] == '.' && n[l - 1] == '*' &&
		    !strncmp(n, name, l - 1) && name[l - 1])
			wild = &table[i];
	}
	return wild;
}

void rpc_request_finish(struct rpc_request *req)
{
	cJSON_Delete(req->root);
	memset(req, 0, sizeof(*req));
}

/*
 * JSON-RPC 2.0 ids are strings, numbers without a fractional part, or null.
 * A number is echoed back from cJSON's double, so only the integers a
 * double holds exactly (|id| < 2^53) can be echoed as sent; anything
 * else (1e400, 0.5) is refused rather than answered with a different id.
 */
static bool id_valid(const cJSON *id)
{
	if (!id || cJSON_IsNull(id))
		return true;
	if (cJSON_IsString(id))
		return json_utf8_valid(id->valuestring, strlen(id->valuestring));
	if (!cJSON_IsNumber(id))
		return false;
	double d = id->valuedouble;
	/* 2^53 itself is also what 2^53 + 1 parses to: refused with it */
	return isfinite(d) && d == floor(d) && fabs(d) < 9007199254740992.0;
}

int rpc_request_parse(char *msg, size_t len, int max_nesting, const struct rpc_method *table,
		      size_t ntable, struct rpc_request *req, const char **err)
{
	memset(req, 0, sizeof(*req));
	if (!json_nesting_ok(msg, len, max_nesting)) {
		*err = "message nested too deeply";
		return GPUPROF_ERR_TOO_LARGE;
	}
	/* A NUL is no JSON text, and C string handling past it would see a
	 * different message than the parser. */
	if (memchr(msg, '\0', len)) {
		*err = "parse error: NUL byte in the message";
		return GPUPROF_ERR_PARSE;
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(msg, len, &end, false);
	if (!root) {
		*err = "parse error: invalid JSON";
		return GPUPROF_ERR_PARSE;
	}
	req->root = root;
	/* One message is one JSON value: "{..}{..}" on one line would
	 * otherwise run the first and drop the second without a word. */
	for (const char *p = end; p && p < msg + len; p++) {
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
			*err = "parse error: data after the JSON value (one request per line)";
			return GPUPROF_ERR_PARSE;
		}
	}
	if (!cJSON_IsObject(root)) {
		*err = cJSON_IsArray(root) ? "batches are not supported"
					   : "request must be an object";
		return GPUPROF_ERR_INVALID_REQUEST;
	}
	const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "jsonrpc");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
	const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "method");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(root, "params");
	bool id_ok = id_valid(id);
	req->reply_id = id_ok && (cJSON_IsNumber(id) || cJSON_IsString(id)) ? id : NULL;

	*err = NULL;
	if (!cJSON_IsString(ver) || strcmp(ver->valuestring, "2.0") != 0)
		*err = "\"jsonrpc\" must be \"2.0\"";
	else if (!id_ok)
		*err = "\"id\" must be a string (UTF-8), an integer below 2^53 in "
		       "magnitude, or null";
	else if (!cJSON_IsString(method))
		*err = "\"method\" must be a string";
	else if (params && !cJSON_IsObject(params) && !cJSON_IsArray(params))
		*err = "\"params\" must be an object or an array";
	if (*err)
		return GPUPROF_ERR_INVALID_REQUEST;

	req->notification = !id || cJSON_IsNull(id);
	req->method_name = method->valuestring;
	req->params = params;
	req->method = rpc_method_find(table, ntable, method->valuestring);
	req->fd_err = rpc_fds_named(params, &req->nfds);
	return 0;
}
