// SPDX-License-Identifier: MIT
/*
 * gpu.top: the hottest GPU kernels of the last window_ms, from the live
 * store, with the call sites that launch them (docs/protocol.md, gpu.top).
 *
 * Counting and ranking (collect/gpu_top.c) walk the ring on the loop
 * thread; naming the call sites may read ELF files, so that runs as a job.
 * Kernels the launch probes know only by handle ("0x<hex>") are named in
 * that job too, from the CUPTI kernels joined to their launches, as a
 * saved capture names them (capture/gpumatch.h): the loop copies the
 * window's GPU records the requester may see, the job joins and counts
 * again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpd.h"
#include "capture/capture.h"
#include "capture/gpumatch.h"
#include "collect/gpu_top.h"
#include "jobs.h"
#include "json.h"
#include "methods.h"
#include "sym.h"

struct top {
	struct rpc_req *req;
	struct symbolizer *sym;
	uint64_t window_ms, now_ns;
	unsigned nsites;
	struct gpu_top r;
	/* for the names: the query again and its window's GPU records
	 * (NULL when nothing needs naming) */
	struct gpu_top_query q;
	uint32_t pids[GPU_TOP_MAX_PIDS];
	struct capture *cap;
};

/* Worker: count again from the window's copy, the launches known only by
 * handle named as a saved capture would name them. The loop's count stays
 * when nothing gets a name or memory runs out. */
static void top_name(struct top *t)
{
	struct gpu_top r;
	uint32_t *names = NULL;

	if (gpu_launch_names(t->cap, &names) < 0 || !names)
		return;
	if (gpu_top_count_capture(t->cap, names, &t->q, &r) == 0) {
		gpu_top_free(&t->r);
		t->r = r;
	}
	free(names);
}

/* Worker: name the reported call sites (return addresses: look up ip - 1). */
static void top_resolve(void *arg)
{
	struct top *t = arg;
	struct symbolizer *sym = t->sym;

	if (t->cap)
		top_name(t);
	for (size_t i = 0; i < t->r.nk; i++)
		for (unsigned j = 0; j < t->r.k[i].nsites && j < t->nsites; j++) {
			struct gpu_top_site *st = &t->r.k[i].sites[j];

			if (!st->ip)
				snprintf(st->name, sizeof(st->name), "[unknown]");
			else if (!sym || sym_resolve(sym, st->pid, st->ip - 1, false, st->name,
						     sizeof(st->name), NULL, 0) < -ENOENT)
				snprintf(st->name, sizeof(st->name), "0x%" PRIx64, st->ip);
		}
}

static void top_free(struct top *t)
{
	gpu_top_free(&t->r);
	capture_free(t->cap);
	free(t);
}

/*
 * The window's launches, CUPTI API calls and intervals that the query may
 * count, for top_name(): the same pid and uid filters as the count, so a
 * member joins only its own processes' records and no other user's name
 * reaches it. Left NULL when memory runs out or the copy is larger than a
 * capture may be (memory.capture_max): the handles are shown then.
 */
static void top_copy_window(struct top *t, const struct gpd *g)
{
	int32_t pids[GPU_TOP_MAX_PIDS];
	struct capture_filter f = {
		.pids = pids,
		.npids = t->q.npids,
		.uid_filter = !t->q.all_uids,
		.uid = (uint32_t)t->q.uid,
		.types = 1u << STORE_REC_GPU_LAUNCH | 1u << STORE_REC_GPU_API |
			 1u << STORE_REC_GPU_INTERVAL,
	};

	_Static_assert(GPU_TOP_MAX_PIDS <= CAPTURE_MAX_PIDS, "a query's pids fit a capture's");
	for (size_t i = 0; i < t->q.npids; i++)
		pids[i] = (int32_t)t->q.pids[i];
	if (capture_take(g->store, &f, t->q.t0_ns, UINT64_MAX, &t->cap) < 0) {
		t->cap = NULL;
		return;
	}
	if (t->cap->nrecs * sizeof(*t->cap->recs) + t->cap->str_blob_len +
		    t->cap->nips * sizeof(*t->cap->ips) >
	    g->cfg.capture_max_bytes) {
		capture_free(t->cap);
		t->cap = NULL;
	}
}

static void top_reply(void *arg)
{
	struct top *t = arg;
	double secs = (double)t->window_ms / 1000.0;
	cJSON *o = cJSON_CreateObject(), *ks;

	json_add_u64(o, "window_ms", t->window_ms);
	json_add_u64(o, "now_ns", t->now_ns);
	json_add_u64(o, "launches", t->r.total);
	cJSON_AddNumberToObject(o, "launches_per_s", (double)t->r.total / secs);
	ks = cJSON_AddArrayToObject(o, "kernels");
	for (size_t i = 0; ks && i < t->r.nk; i++) {
		struct gpu_top_kernel *k = &t->r.k[i];
		cJSON *ko = cJSON_CreateObject(), *pa, *sa;

		if (!ko)
			break;
		cJSON_AddStringToObject(ko, "name", k->name);
		json_add_u64(ko, "launches", k->count);
		cJSON_AddNumberToObject(ko, "launches_per_s", (double)k->count / secs);
		if (k->geometry[0])
			cJSON_AddStringToObject(ko, "geometry", k->geometry);
		pa = cJSON_AddArrayToObject(ko, "pids");
		for (unsigned j = 0; pa && j < k->npids; j++)
			cJSON_AddItemToArray(pa, cJSON_CreateNumber(k->pids[j]));
		if (k->more_pids)
			cJSON_AddBoolToObject(ko, "more_pids", true);
		sa = cJSON_AddArrayToObject(ko, "call_sites");
		for (unsigned j = 0; sa && j < k->nsites && j < t->nsites; j++) {
			cJSON *so = cJSON_CreateObject();
			char addr[24];

			if (!so)
				break;
			snprintf(addr, sizeof(addr), "0x%" PRIx64, k->sites[j].ip);
			cJSON_AddStringToObject(so, "name", k->sites[j].name);
			cJSON_AddStringToObject(so, "address", addr);
			cJSON_AddNumberToObject(so, "pid", k->sites[j].pid);
			json_add_u64(so, "launches", k->sites[j].count);
			cJSON_AddItemToArray(sa, so);
		}
		cJSON_AddItemToArray(ks, ko);
	}
	rpc_reply(t->req, o);
	top_free(t);
}

static bool param_pids(struct rpc_req *req, const cJSON *params, uint32_t *out, size_t *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(params, "pids"), *it;

	*n = 0;
	if (!a)
		return true;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > GPU_TOP_MAX_PIDS) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"pids\" must be an array of at most %d pids", GPU_TOP_MAX_PIDS);
		return false;
	}
	cJSON_ArrayForEach(it, a)
	{
		double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
		if (d < 1 || d > 4194304 || d != (double)(uint32_t)d) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
				  "\"pids\" must hold pids between 1 and 4194304");
			return false;
		}
		out[(*n)++] = (uint32_t)d;
	}
	return true;
}

void method_gpu_top(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"pids", "window_ms", "limit", "sites", NULL};
	uint64_t window_ms = 5000, limit = 20, sites = 3;
	uint32_t pids[GPU_TOP_MAX_PIDS];
	size_t npids;
	struct top *t;

	if (!params_only(req, params, allowed) || !param_pids(req, params, pids, &npids) ||
	    !param_u64(req, params, "window_ms", false, 3600000, &window_ms) ||
	    !param_u64(req, params, "limit", false, 1000, &limit) ||
	    !param_u64(req, params, "sites", false, GPU_TOP_SITES, &sites))
		return;
	if (!window_ms || !limit) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"window_ms\" and \"limit\" must be positive");
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	t->req = req;
	t->sym = req->gpd->symbolizer;
	t->window_ms = window_ms;
	t->now_ns = gpd_now_ns();
	t->nsites = (unsigned)sites;
	memcpy(t->pids, pids, npids * sizeof(*pids));
	t->q = (struct gpu_top_query){
		.t0_ns = t->now_ns > window_ms * 1000000 ? t->now_ns - window_ms * 1000000 : 0,
		.pids = t->pids,
		.npids = npids,
		.all_uids = req->privileged,
		.uid = req->uid,
		.limit = (size_t)limit,
	};
	if (gpu_top_count(req->gpd->store, &t->q, &t->r) < 0) {
		free(t);
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	if (t->r.nameable)
		top_copy_window(t, req->gpd);
	if (job_submit(req->gpd, &(struct job_owner){req->uid, req->privileged}, top_resolve,
		       top_reply, t) < 0) {
		/* No worker free: answer with addresses rather than wait. */
		for (size_t i = 0; i < t->r.nk; i++)
			for (unsigned j = 0; j < t->r.k[i].nsites; j++)
				snprintf(t->r.k[i].sites[j].name, sizeof(t->r.k[i].sites[j].name),
					 "0x%" PRIx64, t->r.k[i].sites[j].ip);
		top_reply(t);
	}
}
