// SPDX-License-Identifier: MIT
/* capture.start, capture.stop, capture.list, capture.info, capture.delete */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capreg.h"
#include "gpd.h"
#include "tlcache.h"
#include "methods.h"

/* Real uid of a process, from /proc (the pid namespace of the daemon). */
static int pid_uid(int32_t pid, uid_t *uid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	int r = -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		unsigned u;
		if (sscanf(line, "Uid: %u", &u) == 1) {
			*uid = u;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

struct capentry *capture_for_req(struct rpc_req *req, const cJSON *params, bool allow_damaged)
{
	uint64_t id = 0;
	if (!param_u64(req, params, "id", true, UINT64_MAX >> 11, &id))
		return NULL;
	struct capentry *e = capreg_find(req->gpd->captures, id);
	if (!e || !capreg_visible(e, req->uid, req->privileged)) {
		rpc_error(req, GPUPROF_ERR_NOT_FOUND, NULL, "no capture %llu",
			  (unsigned long long)id);
		return NULL;
	}
	if (!allow_damaged && e->sum->state == CAPTURE_DAMAGED) {
		rpc_error(req, GPUPROF_ERR_DAMAGED, NULL, "capture %llu is damaged: %s",
			  (unsigned long long)id, e->sum->damage);
		return NULL;
	}
	if (!allow_damaged && e->sum->state == CAPTURE_FAILED) {
		rpc_error(req, GPUPROF_ERR_NO_DATA, NULL, "capture %llu failed: %s",
			  (unsigned long long)id, e->sum->damage);
		return NULL;
	}
	return e;
}

void method_capture_start(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"pids", "duration_ms", "last_ms", "wait", "name",
					      NULL};
	if (!params_only(req, params, allowed))
		return;
	struct capreg_start o = {
		.owner_uid = req->uid,
		.privileged = req->privileged,
		.uid_filter = !req->privileged,
	};
	int32_t pids[CAPTURE_MAX_PIDS];
	bool wait = false;
	const uint64_t max_ms = 24ull * 3600 * 1000;
	if (!param_u64(req, params, "duration_ms", false, max_ms, &o.duration_ms) ||
	    !param_u64(req, params, "last_ms", false, max_ms, &o.last_ms) ||
	    !param_bool(req, params, "wait", &wait) ||
	    !param_str(req, params, "name", CAPTURE_NAME_MAX - 1, &o.name))
		return;
	if ((o.duration_ms == 0) == (o.last_ms == 0)) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "give exactly one of \"duration_ms\" and \"last_ms\", above 0");
		return;
	}
	const cJSON *jp = params ? cJSON_GetObjectItemCaseSensitive(params, "pids") : NULL;
	if (jp) {
		if (!cJSON_IsArray(jp) || cJSON_GetArraySize(jp) > CAPTURE_MAX_PIDS) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
				  "\"pids\" must be an array of at most %d pids", CAPTURE_MAX_PIDS);
			return;
		}
		const cJSON *it;
		cJSON_ArrayForEach(it, jp)
		{
			double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
			if (d < 1 || d > 4194304 || d != (double)(int32_t)d) {
				rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
					  "\"pids\" must hold process ids (1..4194304)");
				return;
			}
			int32_t pid = (int32_t)d;
			uid_t owner;
			if (pid_uid(pid, &owner) < 0) {
				/* A process that has exited is fine for a window in
				 * the past (the flight-recorder case): an unprivileged
				 * peer's capture is limited to its own uid anyway. A
				 * forward window on a process that does not exist is
				 * a mistake. */
				if (o.last_ms) {
					pids[o.npids++] = pid;
					continue;
				}
				rpc_error(req, GPUPROF_ERR_NOT_FOUND, NULL, "no process %d", pid);
				return;
			}
			if (!req->privileged && owner != req->uid) {
				rpc_error(req, GPUPROF_ERR_PERMISSION, NULL,
					  "process %d belongs to another user", pid);
				return;
			}
			pids[o.npids++] = pid;
		}
	}
	o.pids = pids;
	struct capentry *e;
	char why[CAPREG_WHY_MAX];
	/* why names the limit that refused it: the count of captures, this
	 * user's quota, the queue of captures waiting for a job slot, ... */
	int r = capreg_start(req->gpd->captures, &o, &e, why);
	if (r == -EBUSY || r == -EDQUOT) {
		rpc_error(req, GPUPROF_ERR_BUSY, NULL, "%s", why);
		return;
	}
	if (r == -EFBIG) {
		rpc_error(req, GPUPROF_ERR_TOO_LARGE, NULL, "%s", why);
		return;
	}
	if (r < 0) {
		rpc_error_errno(req, r, why);
		return;
	}
	if (wait && e->sum->state == CAPTURE_RECORDING)
		capreg_wait(e, req);
	else
		rpc_reply(req, capreg_info(e));
}

void method_capture_stop(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", "wait", NULL};
	bool wait = false;
	if (!params_only(req, params, allowed) || !param_bool(req, params, "wait", &wait))
		return;
	struct capentry *e = capture_for_req(req, params, false);
	if (!e)
		return;
	uint64_t id = e->id;
	capreg_stop(e); /* one that cannot be saved stays, failed */
	e = capreg_find(req->gpd->captures, id);
	if (!e) {
		rpc_error(req, GPUPROF_ERR_IO, NULL, "capture %llu failed",
			  (unsigned long long)id);
		return;
	}
	if (wait && e->sum->state == CAPTURE_RECORDING)
		capreg_wait(e, req);
	else
		rpc_reply(req, capreg_info(e));
}

void method_capture_list(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {NULL};
	if (!params_only(req, params, allowed))
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "captures");
	for (struct capentry *e = capreg_first(req->gpd->captures); e; e = e->next)
		if (capreg_visible(e, req->uid, req->privileged))
			cJSON_AddItemToArray(arr, capreg_info(e));
	rpc_reply(req, o);
}

void method_capture_info(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", NULL};
	if (!params_only(req, params, allowed))
		return;
	struct capentry *e = capture_for_req(req, params, true);
	if (e)
		rpc_reply(req, capreg_info(e));
}

void method_capture_delete(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", NULL};
	if (!params_only(req, params, allowed))
		return;
	struct capentry *e = capture_for_req(req, params, true);
	if (!e)
		return;
	uint64_t id = e->id;
	int r = capreg_delete(e);
	if (r < 0) {
		rpc_error_errno(req, r, "deleting the capture");
		return;
	}
	tlcache_drop(req->gpd->tlcache, id); /* its decoded timeline, if kept */
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)id);
	cJSON_AddBoolToObject(o, "deleted", 1);
	rpc_reply(req, o);
}
