// SPDX-License-Identifier: MIT
#include "jobs.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "gpd.h"

struct job {
	uv_work_t w;
	struct gpd *g;
	void (*work)(void *);
	void (*done)(void *);
	void *arg;
	bool for_peer; /* counted in g->job_uids under uid */
	uid_t uid;
};

static struct gpd_job_uid *uid_entry(struct gpd *g, uid_t uid, bool add)
{
	struct gpd_job_uid *free_slot = NULL;
	for (size_t i = 0; i < GPD_MAX_JOBS; i++) {
		struct gpd_job_uid *u = &g->job_uids[i];
		if (u->n && u->uid == uid)
			return u;
		if (!u->n && !free_slot)
			free_slot = u;
	}
	if (add && free_slot)
		free_slot->uid = uid;
	return add ? free_slot : NULL;
}

unsigned job_count_uid(const struct gpd *g, uid_t uid)
{
	for (size_t i = 0; i < GPD_MAX_JOBS; i++)
		if (g->job_uids[i].n && g->job_uids[i].uid == uid)
			return g->job_uids[i].n;
	return 0;
}

/* Slots a peer's job may fill: all for privileged peers, all but the
 * reserve for the others. */
static unsigned peer_slots(const struct gpd *g, const struct job_owner *who)
{
	if (who->privileged)
		return g->cfg.max_jobs;
	return (unsigned)config_unpriv_max(g->cfg.max_jobs, g->cfg.reserved_jobs);
}

static unsigned user_slots(const struct gpd *g)
{
	return (unsigned)config_user_max(g->cfg.max_jobs, g->cfg.reserved_jobs, g->cfg.user_jobs);
}

/* 0 when who may start a job now, else -EBUSY. */
static int job_admit(const struct gpd *g, const struct job_owner *who)
{
	if (!who)
		return g->jobs_running < g->cfg.max_jobs ? 0 : -EBUSY;
	if (g->jobs_running >= peer_slots(g, who))
		return -EBUSY;
	if (!who->privileged && job_count_uid(g, who->uid) >= user_slots(g))
		return -EBUSY;
	return 0;
}

void job_busy_reason(const struct gpd *g, const struct job_owner *who, char *buf, size_t n)
{
	const struct config *cfg = &g->cfg;

	if (g->jobs_running >= cfg->max_jobs || !who || who->privileged)
		snprintf(buf, n, "all %u job slots are busy (limits.max_jobs); retry later",
			 cfg->max_jobs);
	else if (g->jobs_running >= peer_slots(g, who))
		snprintf(buf, n,
			 "all %u job slots open to unprivileged users are busy (limits.max_jobs = "
			 "%u less limits.reserved_jobs = %u kept for privileged users); retry later",
			 peer_slots(g, who), cfg->max_jobs, cfg->reserved_jobs);
	else
		snprintf(buf, n, "uid %u already runs %u jobs (limits.user_jobs = %u); retry later",
			 (unsigned)who->uid, job_count_uid(g, who->uid), user_slots(g));
}

static void job_work(uv_work_t *w)
{
	struct job *j = w->data;
	j->work(j->arg);
}

/*
 * An import or analysis of a large trace frees hundreds of MiB that glibc
 * keeps in the worker threads' arenas (a 1 GB trace imported 8 times in
 * one process: 600 MB resident after every timeline was freed, 28 MB after
 * malloc_trim(0)). When no job has run for memory.idle_trim, give the free
 * pages back; the next job pays page faults for what it needs again.
 */
static void on_idle_trim(uv_timer_t *t)
{
	struct gpd *g = t->data;

	if (g->jobs_running || g->stopping)
		return; /* a job started since: its end re-arms the timer */
	g->heap_trims++;
	g->heap_trims_released += malloc_trim(0) != 0;
}

static void job_done(uv_work_t *w, int status)
{
	struct job *j = w->data;
	struct gpd *g = j->g;

	g->jobs_running--;
	if (j->for_peer) {
		struct gpd_job_uid *u = uid_entry(g, j->uid, false);
		if (u)
			u->n--;
	}
	/* Waiting persists take the slot before anything done() may start. */
	if (g->job_slot_free)
		g->job_slot_free(g->job_slot_arg);
	j->done(j->arg);
	free(j);
	if (!g->jobs_running && !g->stopping && g->cfg.idle_trim_ms)
		uv_timer_start(&g->trim_timer, on_idle_trim, g->cfg.idle_trim_ms, 0);
}

int job_submit(struct gpd *g, const struct job_owner *who, void (*work)(void *),
	       void (*done)(void *), void *arg)
{
	/* An acknowledged capture is saved even while stopping: losing it
	 * would be worse than the moment its write takes. The daemon's own
	 * work (who == NULL) is not accepted then. */
	if (g->stopping && !(who && who->saving))
		return -ESHUTDOWN;
	int r = job_admit(g, who);
	if (r < 0)
		return r;
	struct gpd_job_uid *u = who ? uid_entry(g, who->uid, true) : NULL;
	if (who && !u)
		return -EBUSY; /* not reached: no more uids than slots */
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->g = g;
	j->work = work;
	j->done = done;
	j->arg = arg;
	j->w.data = j;
	r = uv_queue_work(g->loop, &j->w, job_work, job_done);
	if (r < 0) {
		free(j);
		return r;
	}
	g->jobs_running++;
	if (who) {
		j->for_peer = true;
		j->uid = who->uid;
		u->n++;
	}
	return 0;
}

/* An anon-inode descriptor (eventfd, timerfd, signalfd, inotify, epoll,
 * pidfd, userfaultfd, io_uring...): /proc/self/fd/N reads "anon_inode:[...]"
 * for every one of them, whatever st_mode a kernel gives the inode. */
static bool is_anon_inode(int fd)
{
	char path[64], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false; /* no /proc: the st_mode check still applies */
	target[n] = '\0';
	return !strncmp(target, "anon_inode:", 11);
}

static bool is_listening(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);

	return getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on;
}

int fdio_prepare(int fd, bool for_write)
{
	int fl = fcntl(fd, F_GETFL);
	struct stat st;
	if (fl < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	/* O_PATH: no I/O at all (read() fails with EBADF much later) */
	if (fl & O_PATH)
		return -EBADF;
	int acc = fl & O_ACCMODE;
	if (for_write ? acc == O_RDONLY : acc == O_WRONLY)
		return -EBADF;
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFCHR:
		break;
	case S_IFSOCK: /* a listening socket's read() waits for ever */
		if (is_listening(fd))
			return -EBADF;
		break;
	default: /* directories, and anon inodes without type bits */
		return -EBADF;
	}
	if (is_anon_inode(fd))
		return -EBADF;
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode)) {
		if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
			return -errno;
	}
	return 0;
}

/* ---- cancellation ------------------------------------------------------ */

/* Watched jobs and the timer that looks for their clients hanging up: loop
 * thread only (one daemon per process). */
static struct job_cancel *watched;
static uv_timer_t watch_timer;
static bool watch_timer_init;
/* Set at shutdown: every fdio_* wait of every job ends. */
static _Atomic bool all_cancelled;
static _Thread_local struct job_cancel *cur_cancel;

static void on_watch_timer(uv_timer_t *t)
{
	for (struct job_cancel *c = watched; c; c = c->next)
		if (c->gone && !atomic_load(&c->cancelled) && c->gone(c->gone_arg))
			atomic_store(&c->cancelled, true);
	if (!watched)
		uv_timer_stop(t);
}

void job_cancel_watch(struct gpd *g, struct job_cancel *c, job_gone_fn gone, void *gone_arg)
{
	atomic_store(&c->cancelled, g->stopping);
	c->gone = gone;
	c->gone_arg = gone_arg;
	c->next = watched;
	c->watched = true;
	watched = c;
	if (!gone || g->stopping)
		return;
	if (!watch_timer_init) {
		uv_timer_init(g->loop, &watch_timer);
		watch_timer_init = true;
	}
	if (!uv_is_active((uv_handle_t *)&watch_timer))
		uv_timer_start(&watch_timer, on_watch_timer, JOB_CANCEL_POLL_MS,
			       JOB_CANCEL_POLL_MS);
}

void job_cancel_unwatch(struct job_cancel *c)
{
	if (!c->watched)
		return;
	for (struct job_cancel **p = &watched; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	c->watched = false;
	c->next = NULL;
}

void jobs_cancel_all(struct gpd *g)
{
	(void)g;
	atomic_store(&all_cancelled, true);
	for (struct job_cancel *c = watched; c; c = c->next)
		atomic_store(&c->cancelled, true);
	if (watch_timer_init) {
		uv_timer_stop(&watch_timer);
		if (!uv_is_closing((uv_handle_t *)&watch_timer))
			uv_close((uv_handle_t *)&watch_timer, NULL);
	}
}

void job_cancel_enter(struct job_cancel *c)
{
	cur_cancel = c;
}

int job_cancelled(void)
{
	if (atomic_load(&all_cancelled) || (cur_cancel && atomic_load(&cur_cancel->cancelled)))
		return -ECANCELED;
	return 0;
}

/* Wait for ev on fd at most timeout_ms (<= 0: no limit), in slices short
 * enough that a cancelled job stops within JOB_CANCEL_POLL_MS. */
static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = ev};
	uint64_t end = UINT64_MAX;
	if (timeout_ms > 0)
		end = gpd_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		int err = job_cancelled();
		if (err)
			return err;
		uint64_t now = gpd_now_ns();
		if (now >= end)
			return -ETIMEDOUT;
		uint64_t left_ms = (end - now + 999999) / 1000000;
		int slice = left_ms < JOB_CANCEL_POLL_MS ? (int)left_ms : JOB_CANCEL_POLL_MS;
		int r = poll(&p, 1, slice);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		if ((p.revents & (POLLERR | POLLNVAL)) && !(p.revents & ev))
			return -EPIPE;
		return 0;
	}
}

int fdio_write_all(int fd, const void *buf, size_t len, int timeout_ms)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				int r = wait_fd(fd, POLLOUT, timeout_ms);
				if (r < 0)
					return r;
				continue;
			}
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t fdio_read(int fd, void *buf, size_t len, int timeout_ms)
{
	for (;;) {
		ssize_t n = read(fd, buf, len);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		int r = wait_fd(fd, POLLIN, timeout_ms);
		if (r < 0)
			return r;
	}
}

static int fdout_sink(void *ctx, const void *buf, size_t len)
{
	struct fdout *o = ctx;

	return fdio_write_all(o->fd, buf, len, o->timeout_ms);
}

void fdout_init(struct fdout *o, int fd, int timeout_ms)
{
	wb_init(&o->w, fdout_sink, o);
	o->fd = fd;
	o->timeout_ms = timeout_ms;
}
