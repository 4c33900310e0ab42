// SPDX-License-Identifier: MIT
/*
 * capture.flamegraph, capture.diff, capture.heatmap, capture.export: the
 * renderers of daemon/render run in a worker and write to the client's fd
 * through a bounded fdout (docs/render.md has the params).
 *
 * Sources of stacks: a capture (by id; loaded by capjob, a diff's second
 * capture loaded in the same worker) or a folded-stack file the client
 * passes as a descriptor (named in "fds"; the output is "fd"). When no
 * capture is involved there is nothing for capjob to load, so such a
 * request runs on its own small job that completes the same way.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capjob.h"
#include "gpd.h"
#include "json.h"
#include "methods.h"
#include "render/flamegraph.h"
#include "render/tlrender.h"
#include "timeline/timeline.h"

#define MAX_FOLDED_INPUT (256ull << 20) /* bytes of folded text per request */
#define MAX_HEATMAP_DATA (256ull << 20) /* the most a heat map's max_bytes may ask */

enum rkind { R_FLAME, R_DIFF, R_HEAT, R_CHROME, R_PPROF };

struct ropts {
	enum rkind kind;
	struct flame_opts fo;
	struct folded_opts fold;
	struct heatmap_opts ho;
	char title[256], subtitle[256], countname[64], comm[64];
	uint64_t ids[2]; /* capture per side, 0: from in_fd */
	int in_fd[2];	 /* folded input per side, -1: none */
	int loaded;	 /* side of the capture capjob loads, -1: none */
	uint64_t period_ns;
	int32_t rank; /* export of an imported capture: its rank, -1: the only one */
	bool typed;   /* pprof: "weight" named the default sample type (fold.weight) */
};

/* pprof's sample type of each weight of capture.folded, so that the
 * export opens (`go tool pprof` without -sample_index) on what `folded
 * --weight W` counts */
static const char *const pprof_type[] = {
	[FOLDED_WEIGHT_SAMPLES] = "samples",
	[FOLDED_WEIGHT_LAUNCHES] = "launches",
	[FOLDED_WEIGHT_GPU_TIME] = "gpu",
	[FOLDED_WEIGHT_STALLS] = "stall_samples",
};

static void ropts_free(void *p)
{
	struct ropts *o = p;
	for (int i = 0; o && i < 2; i++)
		if (o->in_fd[i] >= 0)
			close(o->in_fd[i]);
	free(o);
}

static int fdout_cb(void *ctx, const void *buf, size_t len)
{
	return fdout_write(ctx, buf, len);
}

static void fail_r(struct capjob *j, int r, const char *what)
{
	if (r == -ENODATA)
		capjob_fail(j, r, GPUPROF_ERR_NO_DATA, "%s: nothing to draw (no samples)", what);
	else if (r == -EFBIG || r == -E2BIG)
		capjob_fail(j, r, GPUPROF_ERR_TOO_LARGE, "%s: input over the limit", what);
	else
		capjob_fail(j, r, r == -ENOMEM ? 0 : GPUPROF_ERR_IO, "%s: %s", what, strerror(-r));
}

struct side_feed {
	struct fold_set *s;
	int side;
};

static int feed_cb(void *ctx, const void *buf, size_t len)
{
	struct side_feed *f = ctx;
	return fold_set_feed(f->s, f->side, buf, len);
}

/* An imported capture has no stack samples: its stacks are the CPU ops of
 * its timeline (timeline_folded_write()). */
static int add_timeline_side(struct capjob *j, struct capture *c, bool cached, struct fold_set *s,
			     int side)
{
	const struct timeline *tl = NULL;
	struct timeline *own = NULL;
	char why[256] = "";
	int r;
	if (cached) {
		if ((r = capjob_timeline(j, c, "an imported trace", &tl)) < 0)
			return r;
	} else {
		const struct capture_extra *x = capture_find_extra(c, CAPSEC_TIMELINE);
		if (!x)
			return -ENODATA;
		if ((r = timeline_decode(x->data, x->len, &own, why, sizeof(why))) < 0)
			return r;
		tl = own;
	}
	struct side_feed f = {s, side};
	r = timeline_folded_write(tl, feed_cb, &f, NULL);
	if (r == 0)
		r = fold_set_end(s, side);
	if (own)
		timeline_free(own);
	else
		capjob_timeline_done(j, tl);
	return r;
}

/* Stacks of one side into s, from its capture or its fd. */
static int load_side(struct capjob *j, struct ropts *o, int side, struct capture *c,
		     struct fold_set *s)
{
	struct capture *own = NULL;
	int r;
	if (o->in_fd[side] >= 0)
		return fold_set_read_fd(s, side, o->in_fd[side], j->io_timeout_ms);
	if (side != o->loaded) {
		r = capture_load(j->dirfd, o->ids[side], &own);
		if (r < 0) {
			capture_free(own);
			return r;
		}
		c = own;
	}
	if (c->kind == CAPTURE_IMPORT)
		r = add_timeline_side(j, c, !own, s, side);
	else
		r = fold_set_add_capture(s, side, c, &o->fold, NULL);
	capture_free(own);
	return r;
}

/* capture.export of an imported capture: the trace events of its timeline. */
static int export_timeline(struct capjob *j, struct ropts *o, struct capture *c, struct fdout *out,
			   struct export_totals *et)
{
	const struct timeline *tl = NULL;
	int r = capjob_timeline(j, c, "an imported trace", &tl);
	if (r < 0)
		return r;
	r = timeline_chrome_export(tl, o->rank, c->name, c->id, fdout_cb, out, et);
	if (r == -EDOM)
		capjob_fail(j, -EINVAL, GPUPROF_ERR_INVALID_PARAMS,
			    "capture %llu holds %u ranks: name the one to export with \"rank\"",
			    (unsigned long long)c->id, timeline_nranks(tl));
	else if (r == -ENOENT)
		capjob_fail(j, -EINVAL, GPUPROF_ERR_INVALID_PARAMS, "capture %llu has no rank %d",
			    (unsigned long long)c->id, (int)o->rank);
	capjob_timeline_done(j, tl);
	return r;
}

static void add_fold_stats(cJSON *res, const struct fold_set *s)
{
	const struct fold_stats *st = fold_set_stats(s);
	json_add_u64(res, "lines", st->lines[0] + st->lines[1]);
	json_add_u64(res, "malformed", st->malformed);
	json_add_u64(res, "too_long", st->too_long);
	json_add_u64(res, "saturated", st->saturated);
	if (st->lines[1] || st->total[1]) {
		json_add_u64(res, "total_a", st->total[0]);
		json_add_u64(res, "total_b", st->total[1]);
	}
}

static void render_run(struct capjob *j, struct capture *c)
{
	struct ropts *o = j->opts;
	struct fdout *out = malloc(sizeof(*out));
	struct fold_set *s = NULL;
	const char *what = "rendering";
	struct flame_totals ft = {0};
	struct heatmap_totals ht = {0};
	struct export_totals et = {0};
	int r = -ENOMEM;
	if (!out)
		goto fail;
	fdout_init(out, j->fd, j->io_timeout_ms);
	o->fold.view = o->ho.view = j->view;
	switch (o->kind) {
	case R_FLAME:
	case R_DIFF:
		what = "reading stacks";
		if ((r = fold_set_new(MAX_FOLDED_INPUT, &s)) < 0)
			goto fail;
		for (int side = 0; side < (o->kind == R_DIFF ? 2 : 1); side++)
			if ((r = load_side(j, o, side, c, s)) < 0)
				goto fail;
		what = "rendering the flame graph";
		r = flame_render(s, &o->fo, fdout_cb, out, &ft);
		break;
	case R_HEAT:
		what = "rendering the heat map";
		if (c->kind == CAPTURE_IMPORT) {
			capjob_fail(j, -ENODATA, GPUPROF_ERR_NO_DATA,
				    "capture %llu is an imported trace: a heat map needs CPU "
				    "samples; draw a flame graph of its CPU ops instead",
				    (unsigned long long)c->id);
			goto done;
		}
		r = heatmap_render(c, &o->ho, fdout_cb, out, &ht);
		break;
	case R_CHROME:
		what = "exporting the Chrome trace";
		if (c->kind == CAPTURE_IMPORT)
			r = export_timeline(j, o, c, out, &et);
		else
			r = chrome_export(c, &j->view, fdout_cb, out, &et);
		break;
	case R_PPROF:
		what = "exporting pprof";
		if (c->kind == CAPTURE_IMPORT) {
			capjob_fail(j, -ENODATA, GPUPROF_ERR_NO_DATA,
				    "capture %llu is an imported trace: pprof holds CPU samples, "
				    "which it has none of; export it with format \"chrome\"",
				    (unsigned long long)c->id);
			goto done;
		}
		r = pprof_export_typed(c, &j->view, o->period_ns,
				       o->typed ? pprof_type[o->fold.weight] : NULL, fdout_cb, out,
				       &et);
		if (r == -ENOENT) {
			capjob_fail(j, r, GPUPROF_ERR_NO_DATA,
				    "capture %llu has no %s samples to make the default",
				    (unsigned long long)c->id, pprof_type[o->fold.weight]);
			goto done;
		}
		break;
	}
	if (r == 0)
		r = fdout_flush(out);
	if (r < 0)
		goto fail;
	cJSON *res = j->result = cJSON_CreateObject();
	if (o->kind == R_FLAME || o->kind == R_DIFF) {
		json_add_u64(res, "frames", ft.frames);
		json_add_u64(res, "pruned", ft.pruned);
		json_add_u64(res, "total", ft.total);
		json_add_u64(res, "depth", ft.depth);
		add_fold_stats(res, s);
	} else if (o->kind == R_HEAT) {
		json_add_u64(res, "samples", ht.samples);
		json_add_u64(res, "columns", ht.columns);
		json_add_u64(res, "rows", ht.rows);
		json_add_u64(res, "max_cell", ht.max_cell);
		json_add_u64(res, "bucket_ns", ht.bucket_ns);
		json_add_u64(res, "min_count", ht.min_count);
		json_add_u64(res, "pruned", ht.pruned);
		json_add_u64(res, "nodes", ht.nodes);
		json_add_u64(res, "names", ht.names);
		json_add_u64(res, "data_bytes", ht.data_bytes);
	} else {
		json_add_u64(res, "events", et.events);
		json_add_u64(res, "frames", et.frames);
	}
	json_add_u64(res, "bytes", out->w.total);
	goto done;
fail:
	if (!j->err) /* else already answered with a precise message */
		fail_r(j, r, what);
done:
	fold_set_free(s);
	free(out);
}

/* ---- jobs without a capture (folded input only) ---------------------- */

static void fdjob_work(void *arg)
{
	struct capjob *j = arg;
	j->run(j, NULL);
}

/* As capjob_done(): close the output first (clients wait for EOF). */
static void fdjob_done(void *arg)
{
	struct capjob *j = arg;
	if (j->fd >= 0)
		close(j->fd);
	if (j->err) {
		if (j->code)
			rpc_error(j->req, j->code, NULL, "%s", j->msg);
		else
			rpc_error_errno(j->req, j->err, j->msg[0] ? j->msg : "render job");
		cJSON_Delete(j->result);
	} else {
		rpc_reply(j->req, j->result);
	}
	ropts_free(j->opts);
	free(j);
}

static void fdjob_submit(struct rpc_req *req, int out_fd, struct ropts *o)
{
	struct capjob *j = calloc(1, sizeof(*j));
	if (!j) {
		close(out_fd);
		ropts_free(o);
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	*j = (struct capjob){.req = req,
			     .dirfd = -1,
			     .fd = out_fd,
			     .opts = o,
			     .run = render_run,
			     .io_timeout_ms = (int)req->gpd->cfg.io_timeout_ms};
	rpc_peer_view(req, &j->view); /* a diff's other side may be a capture */
	int r = job_submit(req->gpd, &(struct job_owner){req->uid, req->privileged}, fdjob_work,
			   fdjob_done, j);
	if (r < 0) {
		capjob_fail_submit(j, r);
		fdjob_done(j);
	}
}

/* ---- params ---------------------------------------------------------- */

static bool param_double(struct rpc_req *req, const cJSON *params, const char *key, double max,
			 double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	if (!v)
		return true;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
	    v->valuedouble > max) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"%s\" must be a number between 0 and %g", key, max);
		return false;
	}
	*out = v->valuedouble;
	return true;
}

static bool copy_str(struct rpc_req *req, const cJSON *params, const char *key, char *dst,
		     size_t cap, const char **set)
{
	const char *v = NULL;
	if (!param_str(req, params, key, cap - 1, &v))
		return false;
	if (v) {
		strcpy(dst, v);
		*set = dst;
	}
	return true;
}

/* Options shared by flamegraph and diff; false after answering. */
static bool flame_params(struct rpc_req *req, const cJSON *params, struct ropts *o)
{
	bool kernel = true;
	uint64_t width = 0;
	const char *comm = NULL;
	if (!copy_str(req, params, "title", o->title, sizeof(o->title), &o->fo.title) ||
	    !copy_str(req, params, "subtitle", o->subtitle, sizeof(o->subtitle), &o->fo.subtitle) ||
	    !copy_str(req, params, "countname", o->countname, sizeof(o->countname),
		      &o->fo.countname) ||
	    !copy_str(req, params, "comm", o->comm, sizeof(o->comm), &comm) ||
	    !param_double(req, params, "minwidth", 1000, &o->fo.minwidth) ||
	    !param_u64(req, params, "width", false, 100000, &width) ||
	    !param_bool(req, params, "icicle", &o->fo.icicle) ||
	    !param_bool(req, params, "kernel", &kernel) ||
	    !param_bool(req, params, "pid", &o->fold.pid) ||
	    !param_bool(req, params, "tid", &o->fold.tid) ||
	    !param_u64(req, params, "start_ns", false, UINT64_MAX >> 11, &o->fold.start_ns) ||
	    !param_u64(req, params, "end_ns", false, UINT64_MAX >> 11, &o->fold.end_ns) ||
	    !param_weight(req, params, &o->fold.weight))
		return false;
	if (width && width < 100) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "\"width\" must be at least 100");
		return false;
	}
	o->fo.width = (unsigned)width;
	o->fold.no_kernel = !kernel;
	o->fold.comm = comm;
	return true;
}

/* A capture id the peer may read, not recording; false after answering. */
static bool readable_capture(struct rpc_req *req, uint64_t id)
{
	struct capentry *e = capreg_find(req->gpd->captures, id);
	if (!e || !capreg_visible(e, req->uid, req->privileged)) {
		rpc_error(req, GPUPROF_ERR_NOT_FOUND, NULL, "no capture %llu",
			  (unsigned long long)id);
		return false;
	}
	if (e->sum->state != CAPTURE_READY) {
		rpc_error(req,
			  e->sum->state == CAPTURE_DAMAGED ? GPUPROF_ERR_DAMAGED : GPUPROF_ERR_BUSY,
			  NULL, "capture %llu is %s", (unsigned long long)id,
			  e->sum->state == CAPTURE_DAMAGED ? "damaged" : "still recording");
		return false;
	}
	return true;
}

/*
 * Sources of nsides sides: side i is capture keys[i] when given, else the
 * next descriptor listed in "fds". Then submit (capjob when a capture is
 * involved). Consumes o.
 */
static void submit_sources(struct rpc_req *req, const cJSON *params, struct ropts *o, int nsides,
			   const char *const *keys)
{
	const cJSON *fds = cJSON_GetObjectItemCaseSensitive(params, "fds");
	uint64_t fdi = 0;
	int nfds = fds ? cJSON_GetArraySize(fds) : 0, used = 0;
	if (!param_u64(req, params, "fd", true, RPC_MAX_REQ_FDS - 1, &fdi))
		goto drop;
	o->loaded = -1;
	for (int side = 0; side < nsides; side++) {
		if (!param_u64(req, params, keys[side], false, UINT64_MAX >> 11, &o->ids[side]))
			goto drop;
		if (o->ids[side]) {
			if (!readable_capture(req, o->ids[side]))
				goto drop;
			if (o->loaded < 0)
				o->loaded = side;
			continue;
		}
		if (used >= nfds) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
				  "\"%s\" (a capture id) or a folded-stack descriptor in \"fds\" "
				  "is required",
				  keys[side]);
			goto drop;
		}
		int idx = (int)cJSON_GetArrayItem(fds, used++)->valuedouble;
		o->in_fd[side] = rpc_req_take_fd(req, (size_t)idx);
		if (o->in_fd[side] < 0 || fdio_prepare(o->in_fd[side], false) < 0 ||
		    idx == (int)fdi) {
			rpc_error(
				req, GPUPROF_ERR_BAD_FD, NULL,
				"\"fds\" must name descriptors open for reading, apart from \"fd\"");
			goto drop;
		}
	}
	if (used < nfds) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "unused descriptors in \"fds\"");
		goto drop;
	}
	if (o->loaded >= 0) {
		struct capentry *e = capreg_find(req->gpd->captures, o->ids[o->loaded]);
		capjob_submit(req, e, (int)fdi, true, render_run, o, ropts_free);
		return;
	}
	int out = rpc_req_take_fd(req, (size_t)fdi);
	if (out < 0 || fdio_prepare(out, true) < 0) {
		if (out >= 0)
			close(out);
		rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
			  "\"fd\" must be a descriptor open for writing");
		goto drop;
	}
	fdjob_submit(req, out, o);
	return;
drop:
	ropts_free(o);
}

static struct ropts *ropts_new(struct rpc_req *req, enum rkind kind)
{
	struct ropts *o = calloc(1, sizeof(*o));
	if (!o) {
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return NULL;
	}
	o->kind = kind;
	o->in_fd[0] = o->in_fd[1] = -1;
	return o;
}

#define FLAME_KEYS                                                                            \
	"fd", "fds", "title", "subtitle", "countname", "comm", "minwidth", "width", "icicle", \
		"kernel", "pid", "tid", "start_ns", "end_ns", "weight"

void method_capture_flamegraph(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", FLAME_KEYS, NULL};
	static const char *const keys[] = {"id"};
	if (!params_only(req, params, allowed))
		return;
	struct ropts *o = ropts_new(req, R_FLAME);
	if (!o)
		return;
	if (!flame_params(req, params, o)) {
		ropts_free(o);
		return;
	}
	submit_sources(req, params, o, 1, keys);
}

void method_capture_diff(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"a", "b", "normalize", FLAME_KEYS, NULL};
	static const char *const keys[] = {"a", "b"};
	if (!params_only(req, params, allowed))
		return;
	struct ropts *o = ropts_new(req, R_DIFF);
	if (!o)
		return;
	o->fo.diff = true;
	if (!flame_params(req, params, o) ||
	    !param_bool(req, params, "normalize", &o->fo.normalize)) {
		ropts_free(o);
		return;
	}
	submit_sources(req, params, o, 2, keys);
}

void method_capture_heatmap(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id",	"fd",	  "bucket_ns", "title",
					      "weight", "kernel", "max_bytes", NULL};
	static const char *const keys[] = {"id"};
	if (!params_only(req, params, allowed))
		return;
	struct ropts *o = ropts_new(req, R_HEAT);
	const char *title = NULL;
	bool kernel = true;
	if (!o)
		return;
	if (!param_u64(req, params, "bucket_ns", false, 1000000000, &o->ho.bucket_ns) ||
	    !param_u64(req, params, "max_bytes", false, MAX_HEATMAP_DATA, &o->ho.max_bytes) ||
	    !param_bool(req, params, "kernel", &kernel) ||
	    !copy_str(req, params, "title", o->title, sizeof(o->title), &title) ||
	    !param_u64(req, params, "id", true, UINT64_MAX >> 11, &o->ho.capture_id)) {
		ropts_free(o);
		return;
	}
	if (o->ho.bucket_ns && (o->ho.bucket_ns < 1000000 || 1000000000 % o->ho.bucket_ns)) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"bucket_ns\" must divide a second and be at least 1 ms");
		ropts_free(o);
		return;
	}
	o->ho.title = title;
	o->ho.no_kernel = !kernel;
	/* what the cells count: the weights of capture.folded, or the rows
	 * of the EU-stall section */
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(params, "weight");
	if (cJSON_IsString(w) && !strcmp(w->valuestring, "eu-stall")) {
		o->ho.eu_stall = true;
	} else if (!param_weight(req, params, &o->ho.weight)) {
		ropts_free(o);
		return;
	}
	submit_sources(req, params, o, 1, keys);
}

void method_capture_export(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id",   "fd",	"format", "period_ns",
					      "rank", "weight", NULL};
	static const char *const keys[] = {"id"};
	const char *fmt = NULL;
	if (!params_only(req, params, allowed) || !param_str(req, params, "format", 16, &fmt))
		return;
	enum rkind kind;
	if (fmt && !strcmp(fmt, "chrome"))
		kind = R_CHROME;
	else if (fmt && !strcmp(fmt, "pprof"))
		kind = R_PPROF;
	else {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"format\" must be \"chrome\" or \"pprof\"");
		return;
	}
	struct ropts *o = ropts_new(req, kind);
	if (!o)
		return;
	unsigned hz = req->gpd->cfg.sample_freq_hz;
	o->period_ns = hz ? 1000000000ull / hz : 0;
	uint64_t rank = UINT64_MAX;
	if (!param_u64(req, params, "period_ns", false, 1000000000000ull, &o->period_ns) ||
	    !param_u64(req, params, "rank", false, INT32_MAX, &rank) ||
	    !param_u64(req, params, "id", true, UINT64_MAX >> 11, &o->ids[0])) {
		ropts_free(o);
		return;
	}
	o->rank = rank == UINT64_MAX ? -1 : (int32_t)rank;
	o->typed = cJSON_GetObjectItemCaseSensitive(params, "weight") != NULL;
	if (o->typed && kind != R_PPROF) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"weight\" applies to format \"pprof\" only");
		ropts_free(o);
		return;
	}
	if (!param_weight(req, params, &o->fold.weight)) {
		ropts_free(o);
		return;
	}
	submit_sources(req, params, o, 1, keys);
}
