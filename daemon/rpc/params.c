// SPDX-License-Identifier: MIT
/* Parameter validation shared by the handlers. */
#include <math.h>
#include <string.h>

#include "json.h"
#include "methods.h"
#include "request.h"

bool param_u64(struct rpc_req *req, const cJSON *params, const char *key, bool required,
	       uint64_t max, uint64_t *out)
{
	const cJSON *v = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, key)
						: NULL;
	if (!v) {
		if (required) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "missing parameter \"%s\"",
				  key);
			return false;
		}
		return true;
	}
	double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
	if (!cJSON_IsNumber(v) || !isfinite(d) || d < 0 || d != floor(d) || d > (double)max) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"%s\" must be an integer between 0 and %llu", key,
			  (unsigned long long)max);
		return false;
	}
	*out = (uint64_t)d;
	return true;
}

bool param_bool(struct rpc_req *req, const cJSON *params, const char *key, bool *out)
{
	const cJSON *v = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, key)
						: NULL;
	if (!v)
		return true;
	if (!cJSON_IsBool(v)) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "\"%s\" must be true or false",
			  key);
		return false;
	}
	*out = cJSON_IsTrue(v);
	return true;
}

bool param_str(struct rpc_req *req, const cJSON *params, const char *key, size_t maxlen,
	       const char **out)
{
	const cJSON *v = cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, key)
						: NULL;
	if (!v)
		return true;
	if (!cJSON_IsString(v) || strlen(v->valuestring) > maxlen) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"%s\" must be a string of at most %zu bytes", key, maxlen);
		return false;
	}
	/* cJSON passes any bytes through: a string kept or echoed must not
	 * make a later reply invalid JSON for a strict reader */
	if (!json_utf8_valid(v->valuestring, strlen(v->valuestring))) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "\"%s\" is not valid UTF-8", key);
		return false;
	}
	*out = v->valuestring;
	return true;
}

/* A C0 or C1 control character or DEL (U+0000..U+001F, U+007F..U+009F),
 * at the UTF-8 text s. */
static bool is_control(const unsigned char *s)
{
	return s[0] < 0x20 || s[0] == 0x7f || (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f);
}

bool param_name(struct rpc_req *req, const cJSON *params, const char *key, size_t maxlen,
		const char **out)
{
	const char *v = NULL;
	if (!param_str(req, params, key, maxlen, &v))
		return false;
	if (!v)
		return true;
	/* Names are shown on other people's terminals (root's `gpuprofctl
	 * list`): no escape sequences, carriage returns or line breaks. */
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (is_control(p)) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
				  "\"%s\" must not contain control characters (byte %zu)", key,
				  (size_t)(p - (const unsigned char *)v));
			return false;
		}
	}
	*out = v;
	return true;
}

bool param_weight(struct rpc_req *req, const cJSON *params, enum folded_weight *out)
{
	const char *w = NULL;
	if (!param_str(req, params, "weight", 16, &w))
		return false;
	if (!w)
		return true;
	if (!strcmp(w, "samples")) {
		*out = FOLDED_WEIGHT_SAMPLES;
	} else if (!strcmp(w, "launches")) {
		*out = FOLDED_WEIGHT_LAUNCHES;
	} else if (!strcmp(w, "gpu-time")) {
		*out = FOLDED_WEIGHT_GPU_TIME;
	} else if (!strcmp(w, "stalls")) {
		*out = FOLDED_WEIGHT_STALLS;
	} else {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"weight\" must be \"samples\", \"launches\", \"gpu-time\" or "
			  "\"stalls\"");
		return false;
	}
	return true;
}

static bool in_list(const char *key, const void *list)
{
	for (const char *const *a = list; *a; a++)
		if (!strcmp(key, *a))
			return true;
	return false;
}

bool params_only(struct rpc_req *req, const cJSON *params, const char *const *allowed)
{
	return params_known(req, params, in_list, allowed);
}

bool params_known(struct rpc_req *req, const cJSON *params,
		  bool (*known)(const char *key, const void *arg), const void *arg)
{
	if (!params)
		return true;
	if (!cJSON_IsObject(params)) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "params must be an object");
		return false;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, params)
	{
		if (!known(it->string, arg)) {
			/* The name is the client's bytes: echo printable ASCII
			 * only, or a reply could carry invalid UTF-8 (cJSON
			 * passes it through) and break the client's decoder. */
			char shown[65];
			rpc_method_shown(it->string, shown, sizeof(shown));
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "unknown parameter \"%s\"",
				  shown);
			return false;
		}
	}
	return true;
}
