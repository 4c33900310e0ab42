// SPDX-License-Identifier: MIT
/* capture.folded: folded stacks of a capture, written to a client fd. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capjob.h"
#include "json.h"
#include "methods.h"
#include "render/folded.h"
#include "render/tlrender.h"
#include "collect/cupti_sass.h"
#include "collector.h"
#include "collect/registry.h"
#include "gpd.h"

struct folded_req {
	struct folded_opts o;
	uint32_t sass_uid;   /* stalls: whose cubins the peer may see (0: all) */
	struct cupti *cupti; /* the cupti collector's state, NULL: none */
	char nvdisasm[256];
	uint32_t pids[CAPTURE_MAX_PIDS];
	uint32_t tids[CAPTURE_MAX_PIDS];
	char comm[64];
	uint64_t from_ns, to_ns; /* offsets into the capture's window; 0 = none */
};

/* An array of at most max ids (1..2^22) into out; answers the error itself. */
static bool param_ids(struct rpc_req *req, const cJSON *params, const char *key, uint32_t *out,
		      size_t max, size_t *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(params, key);
	*n = 0;
	if (!a)
		return true;
	if (!cJSON_IsArray(a) || (size_t)cJSON_GetArraySize(a) > max) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"%s\" must be an array of at most %zu ids", key, max);
		return false;
	}
	const cJSON *it;
	cJSON_ArrayForEach(it, a)
	{
		double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
		if (d < 1 || d > 4194304 || d != (double)(uint32_t)d) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
				  "\"%s\" must hold ids between 1 and 4194304", key);
			return false;
		}
		out[(*n)++] = (uint32_t)d;
	}
	return true;
}

static int fdout_cb(void *ctx, const void *buf, size_t len)
{
	return fdout_write(ctx, buf, len);
}

static void folded_run(struct capjob *j, struct capture *c)
{
	struct folded_req *f = j->opts;
	/* A sub-window given relative to the capture's start (the CLI's
	 * --from/--to): only the loaded capture knows that start exactly. */
	if (f->from_ns)
		f->o.start_ns = c->t0_ns + f->from_ns;
	if (f->to_ns)
		f->o.end_ns = c->t0_ns + f->to_ns;
	struct fdout *out = malloc(sizeof(*out));
	if (!out) {
		capjob_fail(j, -ENOMEM, 0, "out of memory");
		return;
	}
	fdout_init(out, j->fd, j->io_timeout_ms);
	struct folded_totals t = {0};
	const struct timeline *tl = NULL;
	int r;
	if (c->kind == CAPTURE_IMPORT) {
		/* no stack samples: the CPU-op stacks of its timeline */
		r = capjob_timeline(j, c, "an imported trace", &tl);
		if (r < 0) {
			free(out);
			return;
		}
		r = timeline_folded_write(tl, fdout_cb, out, &t);
		capjob_timeline_done(j, tl);
		if (r == -ENODATA) {
			capjob_fail(j, r, GPUPROF_ERR_NO_DATA,
				    "capture %llu is an imported trace without CPU events: "
				    "no stacks to fold",
				    (unsigned long long)c->id);
			free(out);
			return;
		}
	} else {
		struct cupti_sass *sass = NULL;

		f->o.view = j->view;
		/* NVIDIA stalls: SASS text where nvdisasm and the cubin are */
		if (f->o.weight == FOLDED_WEIGHT_STALLS && f->cupti &&
		    cupti_sass_new(f->cupti, f->nvdisasm, f->sass_uid, &sass) == 0 && sass) {
			f->o.insn = cupti_sass_insn;
			f->o.insn_ctx = sass;
		}
		r = folded_write(c, &f->o, fdout_cb, out, &t);
		cupti_sass_free(sass);
	}
	if (r == 0)
		r = fdout_flush(out);
	if (r < 0) {
		capjob_fail(j, r, r == -ENOMEM ? 0 : GPUPROF_ERR_IO, "writing folded stacks: %s",
			    strerror(-r));
	} else {
		j->result = cJSON_CreateObject();
		json_add_u64(j->result, "stacks", t.stacks);
		json_add_u64(j->result, "samples", t.samples);
		json_add_u64(j->result, "weight", t.weight);
		json_add_u64(j->result, "bytes", out->w.total);
		cJSON_AddBoolToObject(j->result, "symbolized", t.symbolized);
		if (tl)
			cJSON_AddStringToObject(j->result, "weighted_by", "exclusive-ns");
		else if (t.gpu_time_fallback) /* no GPU job intervals: launches were counted */
			cJSON_AddStringToObject(j->result, "weighted_by", "launches");
		if (t.sass) { /* NVIDIA stalls: the SASS text the capture kept */
			cJSON *n = cJSON_AddObjectToObject(j->result, "sass");
			if (n) {
				json_add_u64(n, "kept", t.sass_kept);
				json_add_u64(n, "missing", t.sass_missing);
				json_add_u64(n, "capped", t.sass_capped);
			}
		}
		if (t.cupti_intervals) { /* NVIDIA: how the join went (render/folded.h) */
			cJSON *n = cJSON_AddObjectToObject(j->result, "cupti");
			if (n) {
				json_add_u64(n, "intervals", t.cupti_intervals);
				json_add_u64(n, "no_call", t.cupti_no_call);
				json_add_u64(n, "no_launch", t.cupti_no_launch);
			}
		}
	}
	free(out);
}

void method_capture_folded(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id",	 "fd",	     "kernel", "pid",
					      "tid",	 "lines",    "comm",   "pids",
					      "tids",	 "start_ns", "end_ns", "weight",
					      "from_ns", "to_ns",    "cgroup", NULL};
	if (!params_only(req, params, allowed))
		return;
	struct folded_req *f = calloc(1, sizeof(*f));
	if (!f) {
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	bool kernel = true;
	const char *comm = NULL;
	uint64_t fdi = 0;
	if (!param_u64(req, params, "fd", true, RPC_MAX_REQ_FDS - 1, &fdi) ||
	    !param_bool(req, params, "kernel", &kernel) ||
	    !param_bool(req, params, "pid", &f->o.pid) ||
	    !param_bool(req, params, "tid", &f->o.tid) ||
	    !param_bool(req, params, "cgroup", &f->o.cgroup) ||
	    !param_bool(req, params, "lines", &f->o.lines) ||
	    !param_str(req, params, "comm", sizeof(f->comm) - 1, &comm) ||
	    !param_u64(req, params, "start_ns", false, UINT64_MAX >> 11, &f->o.start_ns) ||
	    !param_u64(req, params, "end_ns", false, UINT64_MAX >> 11, &f->o.end_ns) ||
	    !param_u64(req, params, "from_ns", false, UINT64_MAX >> 11, &f->from_ns) ||
	    !param_u64(req, params, "to_ns", false, UINT64_MAX >> 11, &f->to_ns) ||
	    !param_ids(req, params, "pids", f->pids, CAPTURE_MAX_PIDS, &f->o.npids) ||
	    !param_ids(req, params, "tids", f->tids, CAPTURE_MAX_PIDS, &f->o.ntids) ||
	    /* what the counts are: CPU samples (default), GPU launches, or
	     * GPU time (ns) from intervals (render/folded.h) */
	    !param_weight(req, params, &f->o.weight)) {
		free(f);
		return;
	}
	f->o.no_kernel = !kernel;
	f->o.pids = f->pids;
	f->o.tids = f->tids;
	if (comm) {
		strcpy(f->comm, comm);
		f->o.comm = f->comm;
	}
	if (f->o.weight == FOLDED_WEIGHT_STALLS) {
		struct collector *cc = collectors_find(req->gpd, "cupti");

		f->cupti = cc ? cc->priv : NULL;
		f->sass_uid = req->privileged ? 0 : (uint32_t)req->uid;
		snprintf(f->nvdisasm, sizeof(f->nvdisasm), "%s", req->gpd->cfg.cupti.nvdisasm);
	}
	struct capentry *e = capture_for_req(req, params, false);
	if (!e) {
		free(f);
		return;
	}
	capjob_submit(req, e, (int)fdi, true, folded_run, f, free);
}
