// SPDX-License-Identifier: MIT
/* cupti.release (docs/protocol.md): ask a process's CUPTI library to give
 * CUPTI up so that another profiler started in it next gets all of it. */

#include <errno.h>

#include "collect/cupti.h"
#include "gpd.h"
#include "json.h"
#include "methods.h"

void method_cupti_release(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"pid", NULL};
	const char *state = "";
	int subscribed = -1;
	uint64_t pid;
	cJSON *res;
	int r;

	if (!params_only(req, params, allowed) ||
	    !param_u64(req, params, "pid", true, 0x7fffffff, &pid))
		return;
	r = cupti_release(req->gpd, (pid_t)pid, req->uid, req->privileged, &state, &subscribed);
	if (r == -ENODEV) {
		rpc_error(req, GPUPROF_ERR_UNAVAILABLE, NULL, "the cupti collector is not running");
		return;
	}
	if (r == -ESRCH) {
		rpc_error(req, GPUPROF_ERR_NOT_FOUND, NULL,
			  "no CUPTI library of yours is connected from pid %llu",
			  (unsigned long long)pid);
		return;
	}
	if (r == -EAGAIN) {
		rpc_error(req, GPUPROF_ERR_BUSY, NULL, "pid %llu does not read its socket now",
			  (unsigned long long)pid);
		return;
	}
	if (r < 0) {
		rpc_error(req, GPUPROF_ERR_IO, NULL, "sending to pid %llu failed (errno %d)",
			  (unsigned long long)pid, -r);
		return;
	}
	res = cJSON_CreateObject();
	json_add_u64(res, "pid", pid);
	/* the library answers in its stats, sent as soon as the subscription
	 * is gone: status' peer_list shows "subscribed": false */
	cJSON_AddStringToObject(res, "state_before", state);
	if (subscribed < 0)
		cJSON_AddNullToObject(res, "subscribed_before");
	else
		cJSON_AddBoolToObject(res, "subscribed_before", subscribed);
	cJSON_AddBoolToObject(res, "sent", 1);
	rpc_reply(req, res);
}
