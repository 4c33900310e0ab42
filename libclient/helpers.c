// SPDX-License-Identifier: MIT
/* Typed wrappers around gpuprof_client_call() for the documented methods. */
#include "client-private.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "duration.h"

GPUPROF_EXPORT int gpuprof_version(struct gpuprof_client *client, char **result_json)
{
	return gpuprof_client_call(client, "version", NULL, NULL, 0, result_json);
}

GPUPROF_EXPORT int gpuprof_status(struct gpuprof_client *client, char **result_json)
{
	return gpuprof_client_call(client, "status", NULL, NULL, 0, result_json);
}

/* Call method with params built by the caller; params is consumed. */
static int call_json(struct gpuprof_client *client, const char *method, cJSON *params,
		     char **result_json)
{
	char *text = NULL;
	int r;

	if (!params)
		return -ENOMEM;
	text = cJSON_PrintUnformatted(params);
	cJSON_Delete(params);
	if (!text)
		return -ENOMEM;
	r = gpuprof_client_call(client, method, text, NULL, 0, result_json);
	free(text);
	return r;
}

static cJSON *id_params(uint64_t id)
{
	cJSON *p = cJSON_CreateObject();

	if (p && !cJSON_AddNumberToObject(p, "id", (double)id)) {
		cJSON_Delete(p);
		return NULL;
	}
	return p;
}

/* The first layout of struct gpuprof_capture_opts ends at name. */
#define CAPTURE_OPTS_SIZE_0 (offsetof(struct gpuprof_capture_opts, name) + sizeof(const char *))

/* The caller's options in this library's layout (*o): the size bytes it
 * passed, the rest zero. 0, -EINVAL or -E2BIG (see client.h). */
static int capture_opts_copy(const struct gpuprof_capture_opts *in, struct gpuprof_capture_opts *o)
{
	size_t size = in->size ? in->size : CAPTURE_OPTS_SIZE_0;

	if (size < CAPTURE_OPTS_SIZE_0)
		return -EINVAL;
	for (size_t i = sizeof(*o); i < size; i++)
		if (((const unsigned char *)in)[i])
			return -E2BIG;
	memset(o, 0, sizeof(*o));
	memcpy(o, in, size < sizeof(*o) ? size : sizeof(*o));
	o->size = sizeof(*o);
	return 0;
}

GPUPROF_EXPORT int gpuprof_capture_start(struct gpuprof_client *client,
					 const struct gpuprof_capture_opts *in, uint64_t *id)
{
	struct gpuprof_capture_opts copy, *opts = &copy;
	cJSON *p, *res, *jid;
	char *result = NULL;
	int r;

	if (!client || !in)
		return -EINVAL;
	if ((r = capture_opts_copy(in, &copy)) < 0)
		return r;
	if (opts->npids && !opts->pids)
		return -EINVAL;
	if ((opts->duration_ms != 0) + (opts->last_ms != 0) + (opts->has_start != 0) != 1 ||
	    (opts->has_end && opts->duration_ms))
		return -EINVAL;
	p = cJSON_CreateObject();
	if (!p)
		return -ENOMEM;
	if (opts->npids) {
		cJSON *pids = cJSON_AddArrayToObject(p, "pids");
		for (size_t i = 0; pids && i < opts->npids; i++)
			cJSON_AddItemToArray(pids, cJSON_CreateNumber(opts->pids[i]));
		if (!pids || (size_t)cJSON_GetArraySize(pids) != opts->npids)
			goto nomem;
	}
	if ((opts->duration_ms &&
	     !cJSON_AddNumberToObject(p, "duration_ms", (double)opts->duration_ms)) ||
	    (opts->last_ms && !cJSON_AddNumberToObject(p, "last_ms", (double)opts->last_ms)) ||
	    (opts->has_start && !cJSON_AddNumberToObject(p, "start_ns", (double)opts->start_ns)) ||
	    (opts->has_end && !cJSON_AddNumberToObject(p, "end_ns", (double)opts->end_ns)) ||
	    ((opts->has_start || opts->has_end) &&
	     !cJSON_AddStringToObject(p, "clock", opts->realtime ? "realtime" : "monotonic")) ||
	    !cJSON_AddBoolToObject(p, "wait", opts->wait != 0) ||
	    (opts->name && !cJSON_AddStringToObject(p, "name", opts->name)))
		goto nomem;
	r = call_json(client, "capture.start", p, &result);
	if (r < 0)
		return r;
	res = cJSON_Parse(result);
	free(result);
	jid = cJSON_GetObjectItemCaseSensitive(res, "id");
	r = cJSON_IsNumber(jid) && jid->valuedouble >= 1 ? 0 : -EPROTO;
	if (r == 0 && id)
		*id = (uint64_t)jid->valuedouble;
	cJSON_Delete(res);
	return r;
nomem:
	cJSON_Delete(p);
	return -ENOMEM;
}

GPUPROF_EXPORT int gpuprof_capture_stop(struct gpuprof_client *client, uint64_t id)
{
	return call_json(client, "capture.stop", id_params(id), NULL);
}

GPUPROF_EXPORT int gpuprof_capture_list(struct gpuprof_client *client, char **result_json)
{
	return gpuprof_client_call(client, "capture.list", NULL, NULL, 0, result_json);
}

GPUPROF_EXPORT int gpuprof_capture_info(struct gpuprof_client *client, uint64_t id,
					char **result_json)
{
	return call_json(client, "capture.info", id_params(id), result_json);
}

GPUPROF_EXPORT int gpuprof_capture_delete(struct gpuprof_client *client, uint64_t id)
{
	return call_json(client, "capture.delete", id_params(id), NULL);
}

GPUPROF_EXPORT int gpuprof_parse_duration_ms(const char *text, uint64_t *ms)
{
	return duration_parse_ms(text, ms);
}
