// SPDX-License-Identifier: MIT
/*
 * capture.import: trace files (one per rank) read from client fds into one
 * capture holding a timeline, in a worker job.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capjob.h"
#include "gpd.h"
#include "tlcache.h"
#include "json.h"
#include "methods.h"
#include "import/import.h"
#include "import/xxh64.h"
#include "timeline/timeline.h"

struct import_job {
	struct rpc_req *req;
	struct gpd *g;
	int fds[RPC_MAX_REQ_FDS];
	int32_t ranks[RPC_MAX_REQ_FDS];
	size_t nfds;
	char name[CAPTURE_NAME_MAX];
	uint64_t max_bytes;
	uint32_t io_timeout_ms;
	/* set when the client hangs up or the daemon stops (jobs.h) */
	struct job_cancel cancel;
	/* taken from g->jobs_mem (memory.jobs_max) by the worker as the
	 * timeline grows; given back in import_done() */
	uint64_t mem_reserved;
	/* results */
	struct capture *cap;
	struct timeline *tl; /* the imported timeline, for the analysis cache */
	int err, code;
	char msg[512];
	cJSON *data;
};

static void import_fail(struct import_job *j, int err, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void import_fail(struct import_job *j, int err, int code, const char *fmt, ...)
{
	j->err = err;
	j->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->msg, sizeof(j->msg), fmt, ap);
	va_end(ap);
}

static cJSON *warnings_json(const uint64_t *w)
{
	cJSON *o = cJSON_CreateObject();
	for (int k = 0; k < IMPORT_W_COUNT; k++)
		if (w[k])
			json_add_u64(o, import_warn_name(k), w[k]);
	return o;
}

/* import_opts.mem_reserve: the job's reservation from the budget all jobs
 * share grows to bytes (worker thread). */
static int import_mem_reserve(void *arg, uint64_t bytes, char *msg, size_t msg_len)
{
	struct import_job *j = arg;
	struct membudget *b = &j->g->jobs_mem;

	if (bytes <= j->mem_reserved)
		return 0;
	if (membudget_take(b, bytes - j->mem_reserved) < 0) {
		snprintf(msg, msg_len,
			 "the memory all jobs share is exhausted (memory.jobs_max = %llu bytes, "
			 "%llu reserved by running jobs); retry later",
			 (unsigned long long)b->max, (unsigned long long)membudget_used(b));
		return -ENOSPC;
	}
	j->mem_reserved = bytes;
	return 0;
}

static void import_work(void *arg)
{
	struct import_job *j = arg;
	struct timeline *tl = NULL;
	void *enc = NULL;
	size_t enclen = 0;
	char *info_text = NULL;
	uint64_t warnings = 0, events = 0;
	cJSON *info = cJSON_CreateObject();
	cJSON *files = cJSON_AddArrayToObject(info, "files");

	if (timeline_new(&tl) < 0) {
		import_fail(j, -ENOMEM, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < j->nfds; i++) {
		struct xxh64 digest;
		struct import_opts o = {
			.rank = j->ranks[i],
			.max_bytes = j->max_bytes,
			.no_finalize = j->nfds > 1,
			.io_timeout_ms = j->io_timeout_ms,
			.cancel = &j->cancel.cancelled,
			/* the timeline in memory is the capture: bounded by the same
			 * limit as it is read, not only once it is encoded */
			.max_mem = j->g->cfg.capture_max_bytes,
			.max_mem_name = "memory.capture_max",
			.mem_reserve = import_mem_reserve,
			.mem_arg = j,
			/* the file's bytes as read: the critical-path overlay
			 * takes the trace again and must know it is this one */
			.digest = &digest,
		};
		struct import_result res;
		memset(&res, 0, sizeof(res));
		xxh64_init(&digest);
		/* Kineto JSON (plain/gzip) or an nsys SQLite export, by magic */
		int r = timeline_import_any_fd(j->fds[i], &o, tl, &res);
		if (r < 0) {
			if (r == -ETIMEDOUT) {
				import_fail(j, r, GPUPROF_ERR_IO,
					    "file %zu: no data for %u ms (limits.io_timeout)", i,
					    j->io_timeout_ms);
			} else if (r == -ECANCELED) {
				import_fail(j, r, GPUPROF_ERR_SHUTTING_DOWN,
					    "file %zu: import cancelled (the client hung up or the "
					    "daemon is stopping)",
					    i);
			} else if (r == -EFBIG) {
				import_fail(j, r, GPUPROF_ERR_TOO_LARGE, "file %zu: %s", i,
					    res.error_msg[0] ? res.error_msg : strerror(-r));
			} else if (r == -ENOMEM) {
				import_fail(j, r, 0, "file %zu: out of memory", i);
			} else {
				import_fail(j, r, GPUPROF_ERR_BAD_INPUT, "file %zu: %s", i,
					    res.error_msg[0] ? res.error_msg : strerror(-r));
				j->data = cJSON_CreateObject();
				json_add_u64(j->data, "file", i);
				json_add_u64(j->data, "offset", res.error_offset);
			}
			goto out;
		}
		cJSON *f = cJSON_CreateObject();
		cJSON_AddNumberToObject(f, "rank", res.rank);
		cJSON_AddBoolToObject(f, "gzip", res.gzip);
		cJSON_AddStringToObject(f, "format",
					res.format == IMPORT_FMT_NSYS ? "nsys" : "kineto");
		if (res.format == IMPORT_FMT_NSYS) {
			cJSON *nc = cJSON_AddObjectToObject(f, "nccl");

			cJSON_AddNumberToObject(f, "nranks", res.nranks);
			/* what the export does not say about its NCCL kernels */
			cJSON_AddNumberToObject(nc, "kernels", res.nccl_kernels);
			cJSON_AddNumberToObject(nc, "bytes_unknown", res.nccl_no_bytes);
			cJSON_AddNumberToObject(nc, "communicator_unknown", res.nccl_no_comm);
		}
		json_add_u64(f, "bytes", res.bytes_in);
		if (res.format == IMPORT_FMT_KINETO && digest.len == res.bytes_in) {
			char hex[17];

			snprintf(hex, sizeof(hex), "%016llx",
				 (unsigned long long)xxh64_digest(&digest));
			cJSON_AddStringToObject(f, "xxh64", hex);
		}
		json_add_u64(f, "json_bytes", res.bytes_json);
		json_add_u64(f, "events_raw", res.events_raw);
		cJSON_AddItemToObject(f, "warnings", warnings_json(res.warnings));
		cJSON_AddItemToArray(files, f);
		warnings += res.warnings_total;
	}
	if (j->nfds > 1 && timeline_finalize(tl, 0) < 0) {
		import_fail(j, -EINVAL, GPUPROF_ERR_BAD_INPUT, "merging the ranks failed");
		goto out;
	}
	cJSON *ranks = cJSON_AddArrayToObject(info, "ranks");
	for (uint32_t i = 0; i < timeline_nranks(tl); i++) {
		const struct tl_rank *rk = timeline_rank_at(tl, i);
		cJSON_AddItemToArray(ranks, cJSON_CreateNumber(rk->rank));
		events += rk->nev;
	}
	json_add_u64(info, "events", events);
	/* encoding holds a second copy, at most memory.capture_max: reserve
	 * what it will likely take */
	{
		uint64_t more = timeline_mem_bytes(tl);
		char why[256];

		if (more > j->g->cfg.capture_max_bytes)
			more = j->g->cfg.capture_max_bytes;
		if (import_mem_reserve(j, j->mem_reserved + more, why, sizeof(why)) < 0) {
			import_fail(j, -EFBIG, GPUPROF_ERR_TOO_LARGE, "%s", why);
			goto out;
		}
	}
	if (timeline_encode(tl, &enc, &enclen) < 0) {
		import_fail(j, -ENOMEM, 0, "encoding the timeline: out of memory");
		goto out;
	}
	if (enclen > j->g->cfg.capture_max_bytes) {
		import_fail(j, -EFBIG, GPUPROF_ERR_TOO_LARGE,
			    "imported timeline (%zu bytes) exceeds memory.capture_max", enclen);
		goto out;
	}
	info_text = cJSON_PrintUnformatted(info);
	struct capture *c;
	if (!info_text || capture_new(&c) < 0) {
		import_fail(j, -ENOMEM, 0, "out of memory");
		goto out;
	}
	c->kind = CAPTURE_IMPORT;
	c->owner_uid = j->req->uid;
	memcpy(c->name, j->name, sizeof(c->name));
	c->created_realtime_ns = gpd_now_ns() + (uint64_t)gpd_mono_to_realtime_ns();
	c->warnings = warnings;
	int64_t t0 = timeline_min_ts_ns(tl);
	c->t0_ns = c->t1_ns = t0 > 0 ? (uint64_t)t0 : 0;
	for (uint32_t i = 0; i < timeline_nranks(tl); i++) {
		const struct tl_rank *rk = timeline_rank_at(tl, i);
		for (uint32_t k = 0; k < rk->nev; k++) {
			int64_t end =
				rk->ev[k].ts_ns + (rk->ev[k].dur_ns > 0 ? rk->ev[k].dur_ns : 0);
			if (end > 0 && (uint64_t)end > c->t1_ns)
				c->t1_ns = (uint64_t)end;
		}
	}
	if (capture_add_extra(c, CAPSEC_TIMELINE, enc, enclen) < 0 ||
	    capture_add_extra(c, CAPSEC_IMPORT_INFO, info_text, strlen(info_text)) < 0) {
		capture_free(c);
		import_fail(j, -ENOMEM, 0, "out of memory");
		goto out;
	}
	j->cap = c;
	/* equal to what decoding the section gives (test_import_ref checks
	 * the round trip): the first analysis need not decode it */
	timeline_shrink(tl);
	j->tl = tl;
	tl = NULL;
out:
	free(enc);
	free(info_text);
	cJSON_Delete(info);
	timeline_free(tl);
}

static void import_done(void *arg)
{
	struct import_job *j = arg;
	job_cancel_unwatch(&j->cancel);
	membudget_give(&j->g->jobs_mem, j->mem_reserved);
	for (size_t i = 0; i < j->nfds; i++)
		close(j->fds[i]);
	if (j->err) {
		if (j->code)
			rpc_error(j->req, j->code, j->data, "%s", j->msg);
		else
			rpc_error_errno(j->req, j->err, j->msg);
		j->data = NULL;
	} else {
		struct capentry *e;
		char why[CAPREG_WHY_MAX];
		int r = capreg_add(j->g->captures, j->cap, j->req->privileged, &e, why);
		if (r == 0 && j->tl && j->g->tlcache) {
			tlcache_release(j->g->tlcache, tlcache_put(j->g->tlcache, e->id, j->tl));
			j->tl = NULL;
		}
		if (r < 0) {
			capture_free(j->cap);
			if (r == -EBUSY || r == -EDQUOT)
				rpc_error(j->req, GPUPROF_ERR_BUSY, NULL, "%s", why);
			else
				rpc_error_errno(j->req, r, why);
		} else {
			rpc_wait_saved(j->req, e); /* answered with the info once persisted */
		}
	}
	timeline_free(j->tl);
	cJSON_Delete(j->data);
	free(j);
}

void method_capture_import(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"fd", "fds", "rank", "ranks", "name", NULL};
	if (!params_only(req, params, allowed))
		return;
	struct import_job *j = calloc(1, sizeof(*j));
	if (!j) {
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	const char *name = NULL;
	uint64_t rank = UINT64_MAX;
	if (!param_name(req, params, "name", CAPTURE_NAME_MAX - 1, &name) ||
	    !param_u64(req, params, "rank", false, INT32_MAX, &rank)) {
		free(j);
		return;
	}
	snprintf(j->name, sizeof(j->name), "%s", name ? name : "");
	if (req->nfds == 0) {
		free(j);
		rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
			  "pass the trace as a descriptor: \"fd\": 0 or \"fds\": [0, ...]");
		return;
	}
	const cJSON *jr = cJSON_GetObjectItemCaseSensitive(params, "ranks");
	if (jr && (!cJSON_IsArray(jr) || (size_t)cJSON_GetArraySize(jr) != req->nfds)) {
		free(j);
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"ranks\" must give one rank per descriptor");
		return;
	}
	for (size_t i = 0; i < req->nfds; i++) {
		j->ranks[i] = rank == UINT64_MAX ? -1 : (int32_t)(rank + i);
		if (jr) {
			const cJSON *it = cJSON_GetArrayItem(jr, (int)i);
			double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
			if (d < 0 || d > INT32_MAX || d != (double)(int32_t)d) {
				for (size_t k = 0; k < j->nfds; k++)
					close(j->fds[k]);
				free(j);
				rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
					  "\"ranks\" must hold integers >= 0");
				return;
			}
			j->ranks[i] = (int32_t)d;
		}
		j->fds[i] = rpc_req_take_fd(req, i);
		j->nfds++;
		if (j->fds[i] < 0 || fdio_prepare(j->fds[i], false) < 0) {
			for (size_t k = 0; k < j->nfds; k++)
				if (j->fds[k] >= 0)
					close(j->fds[k]);
			free(j);
			rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
				  "descriptor %zu must be a file, pipe or connected socket open "
				  "for reading",
				  i);
			return;
		}
	}
	/* Refuse before reading a byte what the capture could not be kept as
	 * (the user's quota, or the count of captures). */
	char why[CAPREG_WHY_MAX];
	int r = capreg_admit(req->gpd->captures, req->uid, req->privileged, why);
	if (r < 0) {
		for (size_t k = 0; k < j->nfds; k++)
			close(j->fds[k]);
		free(j);
		rpc_error(req, GPUPROF_ERR_BUSY, NULL, "%s", why);
		return;
	}
	j->req = req;
	j->g = req->gpd;
	j->max_bytes = req->gpd->cfg.import_max_bytes;
	j->io_timeout_ms = req->gpd->cfg.io_timeout_ms;
	job_cancel_watch(req->gpd, &j->cancel, rpc_conn_gone, req->conn);
	struct job_owner who = {req->uid, req->privileged};
	r = job_submit(req->gpd, &who, import_work, import_done, j);
	if (r < 0) {
		job_cancel_unwatch(&j->cancel);
		for (size_t k = 0; k < j->nfds; k++)
			close(j->fds[k]);
		free(j);
		if (r == -EBUSY) {
			job_busy_reason(req->gpd, &who, why, sizeof(why));
			rpc_error(req, GPUPROF_ERR_BUSY, NULL, "%s", why);
		} else
			rpc_error_errno(req, r, "starting the import");
	}
}
