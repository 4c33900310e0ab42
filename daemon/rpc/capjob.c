// SPDX-License-Identifier: MIT
#include "capjob.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpd.h"
#include "timeline/timeline.h"
#include "tlcache.h"

void capjob_fail(struct capjob *j, int err, int code, const char *fmt, ...)
{
	j->err = err ? err : -EIO;
	j->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->msg, sizeof(j->msg), fmt, ap);
	va_end(ap);
}

void capjob_fail_submit(struct capjob *j, int r)
{
	if (r == -EBUSY) {
		struct job_owner who = {j->req->uid, j->req->privileged};
		char why[256];

		job_busy_reason(j->req->gpd, &who, why, sizeof(why));
		capjob_fail(j, r, GPUPROF_ERR_BUSY, "%s", why);
	} else
		capjob_fail(j, r, 0, "starting the job");
}

int capjob_timeline(struct capjob *j, struct capture *c, const char *need,
		    const struct timeline **tl)
{
	struct timeline *dec = NULL;
	char why[512] = "";
	int r;

	if (j->tl) { /* found by capjob_work(), which then passed no capture */
		*tl = j->tl;
		j->tl = NULL;
		return 0;
	}
	/* (capjob_work() already looked for a timeline_only job) */
	if (j->cache && !j->timeline_only && (*tl = tlcache_get(j->cache, j->id)))
		return 0;
	const struct capture_extra *x = capture_find_extra(c, CAPSEC_TIMELINE);
	if (!x) {
		capjob_fail(j, -ENODATA, GPUPROF_ERR_NO_DATA,
			    "capture %llu has no timeline: analyses need %s",
			    (unsigned long long)j->id, need);
		return -ENODATA;
	}
	r = timeline_decode(x->data, x->len, &dec, why, sizeof(why));
	if (r < 0) {
		capjob_fail(j, r, r == -ENOMEM ? 0 : GPUPROF_ERR_DAMAGED,
			    "capture %llu: timeline section: %s", (unsigned long long)j->id,
			    why[0] ? why : strerror(-r));
		return r;
	}
	*tl = j->cache ? tlcache_put(j->cache, j->id, dec) : dec;
	return 0;
}

void capjob_timeline_done(struct capjob *j, const struct timeline *tl)
{
	if (j->cache)
		tlcache_release(j->cache, tl);
	else
		timeline_free((struct timeline *)tl);
}

static void capjob_run(struct capjob *j);

static void capjob_work(void *arg)
{
	struct capjob *j = arg;

	job_cancel_enter(j->cancel.watched ? &j->cancel : NULL);
	capjob_run(j);
	job_cancel_enter(NULL);
}

/* Loading a capture holds its file's bytes, and about as much again for
 * what run() decodes from it (a timeline, stacks): reserve that from the
 * budget all jobs share. A file that is gone is capture_load()'s to say. */
static int capjob_reserve(struct capjob *j)
{
	struct membudget *b = &j->req->gpd->jobs_mem;
	char name[32];
	struct stat st;
	uint64_t want;

	snprintf(name, sizeof(name), "%llu.gpc", (unsigned long long)j->id);
	if (fstatat(j->dirfd, name, &st, 0) < 0)
		return 0;
	want = 2 * (uint64_t)st.st_size;
	if (membudget_take(b, want) < 0) {
		capjob_fail(j, -ENOSPC, GPUPROF_ERR_TOO_LARGE,
			    "the memory all jobs share is exhausted (memory.jobs_max = %llu bytes, "
			    "%llu reserved by running jobs); retry later",
			    (unsigned long long)b->max, (unsigned long long)membudget_used(b));
		return -ENOSPC;
	}
	j->mem_reserved = want;
	return 0;
}

static void capjob_run(struct capjob *j)
{
	struct capture *c = NULL;
	if (j->timeline_only && j->cache && (j->tl = tlcache_get(j->cache, j->id))) {
		j->run(j, NULL); /* cached: no need to load the capture */
		if (j->tl) {	 /* run() did not take it */
			tlcache_release(j->cache, j->tl);
			j->tl = NULL;
		}
		return;
	}
	if (capjob_reserve(j) < 0)
		return;
	int r = capture_load(j->dirfd, j->id, &c);
	if (r == -EBADMSG) {
		capjob_fail(j, r, GPUPROF_ERR_DAMAGED, "capture %llu is damaged: %s",
			    (unsigned long long)j->id, c ? c->damage : "");
	} else if (r == -ENOENT) {
		capjob_fail(j, r, GPUPROF_ERR_NOT_FOUND, "capture %llu was deleted",
			    (unsigned long long)j->id);
	} else if (r < 0) {
		capjob_fail(j, r, GPUPROF_ERR_IO, "loading capture %llu: %s",
			    (unsigned long long)j->id, strerror(-r));
	} else {
		j->run(j, c);
	}
	capture_free(c);
}

static void capjob_done(void *arg)
{
	struct capjob *j = arg;
	job_cancel_unwatch(&j->cancel);
	membudget_give(&j->req->gpd->jobs_mem, j->mem_reserved);
	if (j->fd >= 0)
		close(j->fd); /* before replying: the client waits for EOF on pipes */
	j->fd = -1;
	if (j->err) {
		if (j->code)
			rpc_error(j->req, j->code, NULL, "%s", j->msg);
		else
			rpc_error_errno(j->req, j->err, j->msg[0] ? j->msg : "capture job");
		cJSON_Delete(j->result);
	} else {
		rpc_reply(j->req, j->result);
	}
	if (j->free_opts)
		j->free_opts(j->opts);
	free(j);
}

static void submit(struct rpc_req *req, struct capentry *e, int fd_idx, bool for_write,
		   void (*run)(struct capjob *, struct capture *), void *opts,
		   void (*free_opts)(void *), bool timeline_only)
{
	struct gpd *g = req->gpd;
	struct capjob *j = calloc(1, sizeof(*j));
	if (!j) {
		if (free_opts)
			free_opts(opts);
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	j->req = req;
	j->id = e->id;
	j->dirfd = capreg_dirfd(g->captures);
	j->io_timeout_ms = (int)g->cfg.io_timeout_ms;
	rpc_peer_view(req, &j->view);
	j->fd = -1;
	j->run = run;
	j->opts = opts;
	j->free_opts = free_opts;
	j->timeline_only = timeline_only;
	j->cache = g->tlcache;
	if (e->sum->state == CAPTURE_RECORDING) {
		capjob_fail(j, -EAGAIN, GPUPROF_ERR_BUSY, "capture %llu is still recording",
			    (unsigned long long)e->id);
		capjob_done(j);
		return;
	}
	if (fd_idx >= 0) {
		j->fd = rpc_req_take_fd(req, (size_t)fd_idx);
		int r = j->fd < 0 ? -EBADF : fdio_prepare(j->fd, for_write);
		if (r < 0) {
			capjob_fail(j, r, GPUPROF_ERR_BAD_FD,
				    "\"fd\" must be a descriptor open for %s",
				    for_write ? "writing" : "reading");
			capjob_done(j);
			return;
		}
		job_cancel_watch(g, &j->cancel, rpc_conn_gone, req->conn);
	}
	int r = job_submit(g, &(struct job_owner){req->uid, req->privileged}, capjob_work,
			   capjob_done, j);
	if (r < 0) {
		capjob_fail_submit(j, r);
		capjob_done(j);
	}
}

void capjob_submit(struct rpc_req *req, struct capentry *e, int fd_idx, bool for_write,
		   void (*run)(struct capjob *, struct capture *), void *opts,
		   void (*free_opts)(void *))
{
	submit(req, e, fd_idx, for_write, run, opts, free_opts, false);
}

void capjob_submit_timeline(struct rpc_req *req, struct capentry *e, int fd_idx, bool for_write,
			    void (*run)(struct capjob *, struct capture *), void *opts,
			    void (*free_opts)(void *))
{
	submit(req, e, fd_idx, for_write, run, opts, free_opts, true);
}
