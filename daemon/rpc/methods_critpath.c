// SPDX-License-Identifier: MIT
/*
 * analyze.critical_path: build (or reuse) the critical-path graph of a
 * capture's rank and window in a worker, solve it, apply what-if edits and
 * optionally stream the overlay. Params in docs/protocol.md.
 *
 * Saved graphs: built graphs are kept in the daemon's graph cache
 * (analysis/critpath/cpcache.h, analysis.graph_cache_bytes) keyed by
 * (capture id, rank, window, build options), so repeated what-ifs skip the
 * timeline decode and the build. Nothing is persisted: a graph is cheap to
 * rebuild (bench/critpath) and a capture's bytes stay immutable.
 *
 * Overlay: the client passes the original trace as fds[0] (read) and the
 * output as fds[1] (write); the daemon streams one through to the other,
 * rewriting critical events by their traceEvents index (critpath.h), so it
 * never stores the trace text and uses bounded memory.
 *
 * Marking by index is only right on the very file that was imported: any
 * other trace would come out plausibly and wrongly marked. The import
 * records each file's byte count and XXH64; the overlay hashes what it
 * reads and fails unless both match (a regular file of the wrong size is
 * refused before anything is written; otherwise the client discards the
 * output of the failed request). Captures imported before digests were
 * recorded cannot be checked: refused unless "overlay_unverified".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capjob.h"
#include "analysis/critpath/cpcache.h"
#include "analysis/analysis.h"
#include "analysis/critpath/critpath.h"
#include "gpd.h"
#include "methods.h"
#include "import/xxh64.h"
#include "timeline/timeline.h"

struct cpopts {
	cJSON *params; /* what rq points into */
	struct cp_request rq;
	char key[1024]; /* capture id | rq.key */
	int in_fd;
};

static void free_cpopts(void *p)
{
	struct cpopts *x = p;

	if (x->in_fd >= 0)
		close(x->in_fd);
	cJSON_Delete(x->params);
	free(x);
}

/* The overlay's two descriptors behind one callback argument; what was
 * read is hashed to tell whether it is the imported file. */
struct ioctx {
	int in_fd, timeout_ms;
	struct fdout out;
	struct xxh64 digest;
};

static ssize_t io_read(void *arg, void *buf, size_t n)
{
	struct ioctx *io = arg;
	ssize_t r = fdio_read(io->in_fd, buf, n, io->timeout_ms);

	if (r > 0)
		xxh64_update(&io->digest, buf, (size_t)r);
	return r;
}

/* What the import recorded of the file behind one rank. */
struct imported_file {
	char xxh64[17]; /* 16 hex digits; "" when not recorded */
	uint64_t bytes;
};

static void imported_file(const struct capture *c, int32_t rank, struct imported_file *f)
{
	const struct capture_extra *ex = capture_find_extra(c, CAPSEC_IMPORT_INFO);
	cJSON *info = ex ? cJSON_ParseWithLength(ex->data, ex->len) : NULL;
	const cJSON *it;

	memset(f, 0, sizeof(*f));
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(info, "files"))
	{
		const cJSON *rk = cJSON_GetObjectItemCaseSensitive(it, "rank");
		const cJSON *sh = cJSON_GetObjectItemCaseSensitive(it, "xxh64");
		const cJSON *by = cJSON_GetObjectItemCaseSensitive(it, "bytes");

		if (!cJSON_IsNumber(rk) || rk->valuedouble != rank)
			continue;
		if (cJSON_IsString(sh) && strlen(sh->valuestring) == 16 && cJSON_IsNumber(by) &&
		    by->valuedouble >= 0) {
			snprintf(f->xxh64, sizeof(f->xxh64), "%s", sh->valuestring);
			f->bytes = (uint64_t)by->valuedouble;
		}
		break;
	}
	cJSON_Delete(info);
}

/* Before streaming: refuse what can be refused without output (no digest
 * recorded, a regular file of another size). false: j failed. */
static bool trace_precheck(struct capjob *j, const struct cpopts *x, const struct imported_file *f)
{
	struct stat st;
	off_t at;

	if (!f->xxh64[0]) {
		if (x->rq.unverified)
			return true;
		capjob_fail(j, -EINVAL, GPUPROF_ERR_BAD_INPUT,
			    "capture %llu's rank %d trace cannot be verified: its import recorded "
			    "no digest (imported by an older gpuprofd, or not a Kineto JSON "
			    "file); re-import the trace, or set \"overlay_unverified\": true to "
			    "mark events by position on trust",
			    (unsigned long long)j->id, x->rq.o.rank);
		return false;
	}
	if (fstat(x->in_fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (at = lseek(x->in_fd, 0, SEEK_CUR)) >= 0 && (uint64_t)(st.st_size - at) != f->bytes) {
		capjob_fail(j, -EINVAL, GPUPROF_ERR_BAD_INPUT,
			    "the original trace passed (%lld bytes) is not the file capture %llu's "
			    "rank %d was imported from (%llu bytes, xxh64 %s)",
			    (long long)(st.st_size - at), (unsigned long long)j->id, x->rq.o.rank,
			    (unsigned long long)f->bytes, f->xxh64);
		return false;
	}
	return true;
}

/* After streaming (or after the overlay gave up: the rest is read, up to
 * one byte past the recorded size, so the hash can say whether the file was
 * the wrong one). at_eof: the overlay read the whole input. false: j failed. */
static bool trace_matches(struct capjob *j, const struct cpopts *x, struct ioctx *io,
			  const struct imported_file *f, bool at_eof)
{
	char buf[1 << 14], got[64];
	uint64_t h;

	if (!f->xxh64[0])
		return true;
	while (!at_eof && io->digest.len <= f->bytes)
		at_eof = io_read(io, buf, sizeof(buf)) <= 0;
	h = xxh64_digest(&io->digest);
	if (io->digest.len == f->bytes) {
		char hex[17];

		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)h);
		if (!strcmp(hex, f->xxh64))
			return true;
	}
	if (at_eof)
		snprintf(got, sizeof(got), "%llu bytes, xxh64 %016llx",
			 (unsigned long long)io->digest.len, (unsigned long long)h);
	else
		snprintf(got, sizeof(got), "more than %llu bytes", (unsigned long long)f->bytes);
	capjob_fail(j, -EINVAL, GPUPROF_ERR_BAD_INPUT,
		    "the original trace passed (%s) is not the file capture %llu's rank %d was "
		    "imported from (%llu bytes, xxh64 %s)",
		    got, (unsigned long long)j->id, x->rq.o.rank, (unsigned long long)f->bytes,
		    f->xxh64);
	return false;
}

static int io_write(void *arg, const void *p, size_t n)
{
	return fdout_write(&((struct ioctx *)arg)->out, p, n);
}

static const struct cp_graph *graph_for(struct capjob *j, struct capture *c, struct cpopts *x,
					struct cp_cached **ce, bool *cached)
{
	const struct capture_extra *ex;
	const struct timeline *tl = NULL;
	struct cp_graph *g = NULL;
	char why[512] = "";
	int r;

	if (x->rq.o.rank < 0 && (ex = capture_find_extra(c, CAPSEC_IMPORT_INFO))) {
		/* default rank = the capture's lowest (HTA's ranks=None), resolved
		 * from the import info so the cache key names it */
		cJSON *info = cJSON_ParseWithLength(ex->data, ex->len);
		const cJSON *rk =
			cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(info, "ranks"), 0);
		char *bar = strchr(x->key, '|');

		if (cJSON_IsNumber(rk) && bar && !strncmp(bar, "|-1|", 4)) {
			char tmp[sizeof(x->key) + 16];
			int n = snprintf(tmp, sizeof(tmp), "%.*s|%d|%s", (int)(bar - x->key),
					 x->key, (int)rk->valuedouble, bar + 4);

			x->rq.o.rank = (int32_t)rk->valuedouble;
			if (n > 0 && (size_t)n < sizeof(x->key))
				memcpy(x->key, tmp, (size_t)n + 1);
		}
		cJSON_Delete(info);
	}
	*ce = cp_cache_get(j->req->gpd->cpcache, x->key);
	if (*ce) {
		*cached = true;
		return cp_cached_graph(*ce);
	}
	*cached = false;
	if (capjob_timeline(j, c, "an imported trace", &tl) < 0)
		return NULL;
	if (x->rq.o.rank < 0) /* default: the lowest rank, as HTA's ranks=None */
		x->rq.o.rank = timeline_nranks(tl) ? timeline_rank_at(tl, 0)->rank : 0;
	r = cp_build(tl, &x->rq.o, &g, why, sizeof(why));
	capjob_timeline_done(j, tl);
	if (r < 0) {
		capjob_fail(j, r,
			    r == -ENOMEM    ? 0
			    : r == -ENODATA ? GPUPROF_ERR_NO_DATA
					    : GPUPROF_ERR_INVALID_PARAMS,
			    "%s", why);
		return NULL;
	}
	*ce = cp_cache_put(j->req->gpd->cpcache, x->key, g);
	if (!*ce) {
		capjob_fail(j, -ENOMEM, 0, "out of memory");
		return NULL;
	}
	return g;
}

static void run(struct capjob *j, struct capture *c)
{
	struct cpopts *x = j->opts;
	struct cp_solved sv = {0};
	struct cp_cached *ce = NULL;
	char err[512] = "";
	bool cached;
	const struct cp_graph *g = graph_for(j, c, x, &ce, &cached);
	cJSON *res;
	int r;

	if (!g)
		return;
	r = cp_request_solve(g, &x->rq, &sv, &res, err, sizeof(err));
	if (r) {
		capjob_fail(j, r,
			    r == -ENOMEM ? 0
			    : r == -EDOM ? GPUPROF_ERR_BAD_INPUT
					 : GPUPROF_ERR_INVALID_PARAMS,
			    "%s", err);
		goto out;
	}
	cJSON_AddBoolToObject(res, "graph_cached", cached);
	cp_request_whatif_json(&x->rq, &sv, res);
	if (x->rq.overlay) {
		struct ioctx *io = malloc(sizeof(*io));
		struct imported_file f;
		uint64_t flows = 0;

		imported_file(c, x->rq.o.rank, &f);
		if (!trace_precheck(j, x, &f)) {
			free(io);
			cJSON_Delete(res);
			goto out;
		}
		if (!io) {
			cJSON_Delete(res);
			capjob_fail(j, -ENOMEM, 0, "out of memory");
			goto out;
		}
		io->in_fd = x->in_fd;
		io->timeout_ms = j->io_timeout_ms;
		xxh64_init(&io->digest);
		fdout_init(&io->out, j->fd, j->io_timeout_ms);
		r = cp_overlay_write(g, cp_solved_path(&sv, &x->rq),
				     &(struct cp_io){io_read, io_write, io}, x->rq.all_events,
				     &flows, err, sizeof(err));
		/* a wrong file is named as such, even where it did not parse */
		if ((!r || r == -EBADMSG || r == -E2BIG) && !trace_matches(j, x, io, &f, !r)) {
			free(io);
			cJSON_Delete(res);
			goto out;
		}
		if (!r)
			r = fdout_flush(&io->out);
		if (r) {
			free(io);
			cJSON_Delete(res);
			capjob_fail(j, r,
				    r == -EBADMSG || r == -E2BIG ? GPUPROF_ERR_BAD_INPUT
								 : GPUPROF_ERR_IO,
				    "overlay: %s", err[0] ? err : strerror(-r));
			goto out;
		}
		cJSON *ov = cJSON_AddObjectToObject(res, "overlay");
		cJSON_AddNumberToObject(ov, "bytes", (double)io->out.w.total);
		cJSON_AddNumberToObject(ov, "flow_events", (double)flows);
		cJSON_AddBoolToObject(ov, "verified", f.xxh64[0] != 0);
		free(io);
	}
	j->result = res;
out:
	cp_solved_finish(&sv);
	cp_cache_release(j->req->gpd->cpcache, ce);
}

/* The analysis table's critical-path parameters, its method-only ones (the
 * overlay) included, and the capture's "id". */
static bool critpath_key(const char *key, const void *unused)
{
	(void)unused;
	return !strcmp(key, "id") ||
	       analysis_param_known(analysis_find("critical_path"), key, true);
}

void method_analyze_critical_path(struct rpc_req *req, const cJSON *params)
{
	struct cpopts *x;
	struct capentry *e;
	char idkey[sizeof(x->key) + 32], err[512];
	int kn, out_idx = -1;

	if (params && !cJSON_IsObject(params)) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "params must be an object");
		return;
	}
	if (!params_known(req, params, critpath_key, NULL))
		return;
	x = calloc(1, sizeof(*x));
	if (!x || !(x->params = cJSON_Duplicate(params, 1))) {
		free(x);
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	x->in_fd = -1;
	if (cp_request_parse(x->params, &x->rq, err, sizeof(err)) < 0) {
		free_cpopts(x);
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "%s", err);
		return;
	}
	e = capture_for_req(req, params, false);
	if (!e) {
		free_cpopts(x);
		return;
	}
	kn = snprintf(idkey, sizeof(idkey), "%llu|%s", (unsigned long long)e->id, x->rq.key);
	if (kn < 0 || (size_t)kn >= sizeof(x->key)) {
		free_cpopts(x);
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL, "annotation too long");
		return;
	}
	memcpy(x->key, idkey, (size_t)kn + 1);
	if (x->rq.overlay) {
		/* "fds": [ORIGINAL, OUTPUT] (descriptor indices of this request) */
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(params, "fds");
		const cJSON *fi = cJSON_GetArrayItem(f, 0), *fo = cJSON_GetArrayItem(f, 1);

		if (cJSON_GetArraySize(f) != 2 || !cJSON_IsNumber(fi) || !cJSON_IsNumber(fo) ||
		    fi->valuedouble == fo->valuedouble) {
			free_cpopts(x);
			rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
				  "overlay needs \"fds\": [ORIGINAL, OUTPUT]: the original trace "
				  "(read) and the output (write)");
			return;
		}
		out_idx = (int)fo->valuedouble;
		x->in_fd = rpc_req_take_fd(req, (size_t)fi->valuedouble);
		if (x->in_fd < 0 || fdio_prepare(x->in_fd, false) < 0) {
			free_cpopts(x);
			rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
				  "the original trace descriptor must be open for reading");
			return;
		}
	}
	capjob_submit(req, e, out_idx, true, run, x, free_cpopts);
}
