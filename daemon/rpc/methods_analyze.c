// SPDX-License-Identifier: MIT
/*
 * analyze.<name>: an analysis of daemon/analysis's table on a capture's
 * timeline, in a worker job; analyze.list: that table. (critical_path and
 * comm have methods of their own for what goes beyond the table's entry:
 * methods_critpath.c, methods_comm.c.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "capjob.h"
#include "gpd.h"
#include "methods.h"

/* The JSON-RPC code for an analysis's errno (analysis.h lists them). */
static int rpc_code(int err)
{
	switch (err) {
	case -EINVAL:
		return GPUPROF_ERR_INVALID_PARAMS;
	case -ENODATA:
		return GPUPROF_ERR_NO_DATA;
	case -ENOENT:
		return GPUPROF_ERR_METHOD_NOT_FOUND;
	default:
		return GPUPROF_ERR_INTERNAL;
	}
}

static void analyze_run(struct capjob *j, struct capture *c)
{
	cJSON *params = j->opts;
	const char *name = cJSON_GetObjectItemCaseSensitive(params, "__analysis")->valuestring;
	const struct timeline *tl = NULL;
	if (capjob_timeline(j, c, "an imported trace or GPU job intervals (gpu_jobs collector)",
			    &tl) < 0)
		return;
	cJSON *aparams = cJSON_Duplicate(params, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(aparams, "__analysis");
	cJSON_DeleteItemFromObjectCaseSensitive(aparams, "__gpu_coverage");
	char err[512] = "";
	cJSON *result = NULL;
	/* the result is only printed: long number arrays as raw JSON text */
	int r = analysis_run_flags(name, tl, aparams, ANALYSIS_COMPACT, &result, err, sizeof(err));
	cJSON_Delete(aparams);
	capjob_timeline_done(j, tl);
	if (r < 0) {
		capjob_fail(j, r, rpc_code(r), "%s", err[0] ? err : strerror(-r));
		cJSON_Delete(result);
		return;
	}
	/* a duty-cycled CUPTI library's gaps are not an idle GPU: say so
	 * next to whatever the analysis found (method_analyze took it from
	 * the entry: c is NULL when the timeline came from the cache) */
	cJSON *cov = cJSON_DetachItemFromObjectCaseSensitive(params, "__gpu_coverage");
	if (cov && cJSON_IsObject(result))
		cJSON_AddItemToObject(result, "gpu_coverage", cov);
	else
		cJSON_Delete(cov);
	j->result = result;
}

static void free_json(void *p)
{
	cJSON_Delete(p);
}

void method_analyze(struct rpc_req *req, const cJSON *params)
{
	const char *name = req->method + strlen("analyze.");
	if (!analysis_find(name)) {
		rpc_error(req, GPUPROF_ERR_METHOD_NOT_FOUND, NULL,
			  "no analysis \"%.40s\" (analyze.list names them)", name);
		return;
	}
	if (params && !cJSON_IsObject(params)) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "params must be an object");
		return;
	}
	struct capentry *e = capture_for_req(req, params, false);
	if (!e)
		return;
	/* The analysis validates its own parameters; pass all but "id". */
	cJSON *p = cJSON_Duplicate(params, 1);
	cJSON_DeleteItemFromObjectCaseSensitive(p, "id");
	cJSON_AddStringToObject(p, "__analysis", name);
	cJSON_DeleteItemFromObjectCaseSensitive(p, "__gpu_coverage"); /* ours only */
	capreg_coverage_json(p, &e->cov);
	cJSON *g = cJSON_DetachItemFromObjectCaseSensitive(p, "gpu_coverage");
	if (g)
		cJSON_AddItemToObject(p, "__gpu_coverage", g);
	capjob_submit_timeline(req, e, -1, false, analyze_run, p, free_json);
}

void method_analyze_list(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {NULL};
	if (!params_only(req, params, allowed))
		return;
	cJSON *o = analysis_list_json();

	if (!o) {
		rpc_error_errno(req, -ENOMEM, "analyze.list");
		return;
	}
	rpc_reply(req, o);
}
