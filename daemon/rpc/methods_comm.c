// SPDX-License-Identifier: MIT
/*
 * analyze.comm: daemon/analysis/comm's metrics on a capture's timeline, in a worker
 * job. Defaults come from the config's comm.params; with "fd" the SVG
 * (time breakdown per rank + phase-window CDF) is written to that client
 * descriptor and the reply is the usual JSON result.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capjob.h"
#include "analysis/comm/comm.h"
#include "gpd.h"
#include "methods.h"
#include "timeline/timeline.h"

struct comm_req {
	cJSON *params;	 /* analysis params (no id, no fd) */
	cJSON *defaults; /* parsed comm.params, or NULL */
	bool svg, windows_asked;
};

static void comm_req_free(void *p)
{
	struct comm_req *q = p;

	cJSON_Delete(q->params);
	cJSON_Delete(q->defaults);
	free(q);
}

/* The SVG needs the window distributions; keep them in the reply only if
 * the client asked for them. */
static void drop_windows(cJSON *result)
{
	cJSON *w;

	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(result, "phase_windows"))
		cJSON_DeleteItemFromObjectCaseSensitive(w, "windows_us");
}

static void comm_run(struct capjob *j, struct capture *c)
{
	struct comm_req *q = j->opts;
	const struct timeline *tl = NULL;
	cJSON *result = NULL;
	char why[512] = "";
	char *svg = NULL;
	size_t len = 0;
	int r;

	if (capjob_timeline(j, c, "an imported trace", &tl) < 0)
		return;
	r = comm_analyze(tl, q->params, q->defaults, &result, why, sizeof(why));
	capjob_timeline_done(j, tl);
	if (r < 0) {
		capjob_fail(j, r,
			    r == -EINVAL    ? GPUPROF_ERR_INVALID_PARAMS
			    : r == -ENODATA ? GPUPROF_ERR_NO_DATA
					    : 0,
			    "%s", why[0] ? why : strerror(-r));
		return;
	}
	if (q->svg) {
		r = comm_svg(result, &svg, &len);
		if (!r)
			r = fdio_write_all(j->fd, svg, len, j->io_timeout_ms);
		free(svg);
		if (r < 0) {
			cJSON_Delete(result);
			capjob_fail(j, r, r == -ENOMEM ? 0 : GPUPROF_ERR_IO, "writing the SVG: %s",
				    strerror(-r));
			return;
		}
		if (!q->windows_asked)
			drop_windows(result);
	}
	j->result = result;
}

void method_analyze_comm(struct rpc_req *req, const cJSON *params)
{
	struct comm_req *q;
	struct capentry *e;
	uint64_t fdi = 0;
	const cJSON *w;

	if (params && !cJSON_IsObject(params)) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "params must be an object");
		return;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	q->svg = cJSON_GetObjectItemCaseSensitive(params, "fd") != NULL;
	if (q->svg && !param_u64(req, params, "fd", true, RPC_MAX_REQ_FDS - 1, &fdi)) {
		free(q);
		return;
	}
	if (req->gpd->cfg.comm_params[0]) {
		q->defaults = cJSON_Parse(req->gpd->cfg.comm_params);
		if (!cJSON_IsObject(q->defaults)) {
			comm_req_free(q);
			rpc_error(req, GPUPROF_ERR_INTERNAL, NULL,
				  "config comm.params is not a JSON object");
			return;
		}
	}
	/* comm_analyze validates its own keys; id and fd are ours */
	q->params = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
	if (!q->params) {
		comm_req_free(q);
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(q->params, "id");
	cJSON_DeleteItemFromObjectCaseSensitive(q->params, "fd");
	w = cJSON_GetObjectItemCaseSensitive(q->params, "windows");
	q->windows_asked = cJSON_IsTrue(w);
	if (q->svg) {
		cJSON_DeleteItemFromObjectCaseSensitive(q->params, "windows");
		cJSON_AddTrueToObject(q->params, "windows");
	}
	e = capture_for_req(req, params, false);
	if (!e) {
		comm_req_free(q);
		return;
	}
	capjob_submit_timeline(req, e, q->svg ? (int)fdi : -1, true, comm_run, q, comm_req_free);
}
