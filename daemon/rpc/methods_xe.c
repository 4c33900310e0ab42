// SPDX-License-Identifier: MIT
/* xe.* methods (methods_xe.h, docs/xe.md). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capjob.h"
#include "collect/registry.h"
#include "gpd.h"
#include "jobs.h"
#include "json.h"
#include "methods.h"
#include "output.h"
#include "symtab.h"
#include "xe_collector.h"
#include "zebin.h"

static struct collector *xe_coll(struct rpc_req *req)
{
	struct collector *c = collectors_find(req->gpd, "xe");

	if (!c || !xe_collector_core(c)) {
		rpc_error(req, GPUPROF_ERR_UNAVAILABLE, NULL, "the xe collector is unavailable%s%s",
			  c && c->reason[0] ? ": " : "", c ? c->reason : "");
		return NULL;
	}
	return c;
}

void method_xe_pause(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"seconds", NULL};
	uint64_t secs = 60;
	struct collector *c;
	cJSON *res;

	if (!params_only(req, params, allowed) ||
	    !param_u64(req, params, "seconds", false, 86400, &secs))
		return;
	/* Releasing the GT affects every user of the daemon. */
	if (!req->privileged) {
		rpc_error(req, GPUPROF_ERR_PERMISSION, NULL,
			  "xe.pause needs root or the admin group (access.admin_group)");
		return;
	}
	c = xe_coll(req);
	if (!c)
		return;
	xe_collector_pause(c, secs);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "state", collector_state_name(c->state));
	cJSON_AddNumberToObject(res, "seconds", (double)secs);
	rpc_reply(req, res);
}

void method_xe_resume(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {NULL};
	struct collector *c;
	cJSON *res;

	if (!params_only(req, params, allowed))
		return;
	if (!req->privileged) {
		rpc_error(req, GPUPROF_ERR_PERMISSION, NULL,
			  "xe.resume needs root or the admin group (access.admin_group)");
		return;
	}
	c = xe_coll(req);
	if (!c)
		return;
	xe_collector_resume(c);
	res = cJSON_CreateObject();
	cJSON_AddStringToObject(res, "state", collector_state_name(c->state));
	rpc_reply(req, res);
}

enum xe_out_kind { XO_FOLDED, XO_IAPROF, XO_FLAMESCOPE };

struct xe_out_req {
	enum xe_out_kind kind;
	struct xe_out_opts o;
	struct collector *xc; /* for instruction text; NULL: offsets */
};

static int fd_cb(void *ctx, const void *buf, size_t len)
{
	return fdout_write(ctx, buf, len);
}

static void out_run(struct capjob *j, struct capture *c)
{
	struct xe_out_req *q = j->opts;
	const struct capture_extra *x = capture_find_extra(c, CAPSEC_XE_EU_STALL);
	const struct capture_extra *sx = capture_find_extra(c, CAPSEC_SYMBOLS);
	struct xe_out_opts o = q->o;
	struct sym_table *syms = NULL;
	struct xe_insn_src *isrc = NULL;
	struct xe_capdata d;
	struct xe_out_totals t = {0};
	struct fdout *out;
	char why[160];
	int r;

	if (!x) {
		capjob_fail(j, -ENODATA, GPUPROF_ERR_NO_DATA,
			    "capture %llu holds no EU-stall samples", (unsigned long long)c->id);
		return;
	}
	r = xe_sec_decode(x->data, x->len, &d, why, sizeof(why));
	if (r < 0) {
		capjob_fail(j, r, r == -EBADMSG ? GPUPROF_ERR_DAMAGED : 0, "EU-stall section: %s",
			    r == -EBADMSG ? why : strerror(-r));
		return;
	}
	out = malloc(sizeof(*out));
	if (!out) {
		xe_sec_finish(&d);
		capjob_fail(j, -ENOMEM, 0, "out of memory");
		return;
	}
	fdout_init(out, j->fd, j->io_timeout_ms);
	/* CPU frames named as in capture.folded; a damaged section: addresses */
	if (sx && sym_table_decode(sx->data, sx->len, &syms, NULL, 0) < 0)
		syms = NULL;
	o.syms = syms;
	/* instruction text where the binaries and IGA are there (docs/xe.md) */
	if (q->kind != XO_FLAMESCOPE && xe_collector_insn_src(q->xc, &isrc) < 0)
		isrc = NULL;
	if (q->kind == XO_FOLDED)
		r = xe_write_folded(&d, &o, isrc ? xe_insn_src_text : NULL, isrc, fd_cb, out, &t);
	else if (q->kind == XO_IAPROF)
		r = xe_write_iaprof(&d, &o, isrc ? xe_insn_src_text : NULL, isrc, fd_cb, out, &t);
	else
		r = xe_write_flamescope(&d, &o, fd_cb, out, &t);
	sym_table_free(syms);
	xe_insn_src_free(isrc);
	if (r == 0)
		r = fdout_flush(out);
	if (r < 0) {
		capjob_fail(j, r, r == -ENOMEM ? 0 : GPUPROF_ERR_IO, "writing: %s", strerror(-r));
	} else {
		j->result = cJSON_CreateObject();
		json_add_u64(j->result, "lines", t.lines);
		json_add_u64(j->result, "samples", t.samples);
		json_add_u64(j->result, "unattributed", t.unattributed);
		json_add_u64(j->result, "kernels", t.kernels);
		json_add_u64(j->result, "interval_ns", d.h->interval_ns);
		json_add_u64(j->result, "deferred_at_capture", d.h->deferred_now);
	}
	xe_sec_finish(&d);
	free(out);
}

void method_xe_output(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", "fd", "pid", "cgroup", "interval_ms", NULL};
	struct xe_out_req *q;
	uint64_t fdi = 0, pid = 0, ms = 100;
	struct capentry *e;

	if (!params_only(req, params, allowed))
		return;
	q = calloc(1, sizeof(*q));
	if (!q) {
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	q->kind = !strcmp(req->method, "xe.folded")   ? XO_FOLDED
		  : !strcmp(req->method, "xe.iaprof") ? XO_IAPROF
						      : XO_FLAMESCOPE;
	if (!param_u64(req, params, "fd", true, RPC_MAX_REQ_FDS - 1, &fdi) ||
	    !param_u64(req, params, "pid", false, UINT32_MAX, &pid) ||
	    !param_bool(req, params, "cgroup", &q->o.cgroup) ||
	    !param_u64(req, params, "interval_ms", false, 3600000, &ms)) {
		free(q);
		return;
	}
	if (!ms) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "interval_ms must be > 0");
		free(q);
		return;
	}
	q->o.pid = (uint32_t)pid;
	q->o.bucket_ns = ms * 1000000ull;
	q->xc = collectors_find(req->gpd, "xe");
	e = capture_for_req(req, params, false);
	if (!e) {
		free(q);
		return;
	}
	capjob_submit(req, e, (int)fdi, true, out_run, q, free);
}
