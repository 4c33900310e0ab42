/* SPDX-License-Identifier: MIT */
/*
 * Worker jobs: work that may take long (persisting, importing, analysing,
 * writing to a client's fd) runs on libuv's thread pool, at most
 * limits.max_jobs at once, never on the loop thread. done() runs on the
 * loop thread. Plus fd I/O helpers for workers that bound every wait on a
 * client-passed descriptor by limits.io_timeout.
 */
#ifndef GPUPROF_JOBS_H
#define GPUPROF_JOBS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wbuf.h"

struct gpd;

/* Whom a job runs for: the peer whose request started it, or the owner of
 * the capture it saves. */
struct job_owner {
	uid_t uid;
	bool privileged;
	bool saving; /* saves a capture whose id went out: runs even while stopping */
};

/*
 * Start work(arg) in a worker; done(arg) follows on the loop thread.
 * A job may take a slot only while limits.reserved_jobs stay free for
 * privileged peers and its uid runs fewer than limits.user_jobs
 * (unprivileged owners); a privileged owner's while any is free. who ==
 * NULL is the daemon's own work, bound by limits.max_jobs only. Returns
 * 0; -EBUSY when refused (job_busy_reason() names the limit); -ESHUTDOWN
 * when stopping (except for saving).
 */
int job_submit(struct gpd *g, const struct job_owner *who, void (*work)(void *arg),
	       void (*done)(void *arg), void *arg);

/*
 * Right after job_submit(g, who, ...) returned -EBUSY: a message naming
 * the limit that refused it (the same loop turn, so the counts are those
 * it saw), for the -32004 reply.
 */
void job_busy_reason(const struct gpd *g, const struct job_owner *who, char *buf, size_t n);

/* Jobs uid runs now (what limits.user_jobs counts). */
unsigned job_count_uid(const struct gpd *g, uid_t uid);

/* Check a client fd's type and access mode (O_WRONLY/O_RDWR for output,
 * O_RDONLY/O_RDWR for input) and switch pipes, sockets and character devices
 * to O_NONBLOCK. Only what can carry a byte stream passes: regular files,
 * FIFOs, connected sockets, character and block devices; never O_PATH,
 * directories, listening sockets or anon-inode descriptors (eventfd, timerfd,
 * signalfd, inotify, epoll, pidfd, ...), whose reads block or never end.
 * -EBADF otherwise. */
int fdio_prepare(int fd, bool for_write);

/*
 * Cancelling a job that waits on a client's descriptor. The job's argument
 * struct embeds a struct job_cancel; the handler arms it on the loop thread
 * before job_submit() (job_cancel_watch) and disarms it in done()
 * (job_cancel_unwatch). It is set when the request's client hangs up
 * (checked on the loop every JOB_CANCEL_POLL_MS) and when the daemon stops
 * (jobs_cancel_all). Workers see it through job_cancel_enter(): every
 * fdio_* wait on that thread then ends with -ECANCELED within
 * JOB_CANCEL_POLL_MS, and code with its own waits (the importers) reads
 * the flag directly.
 */
#define JOB_CANCEL_POLL_MS 100

/* Whether the job's requester went away (its client hung up): asked on the
 * loop thread every JOB_CANCEL_POLL_MS. */
typedef bool (*job_gone_fn)(void *arg);

struct job_cancel {
	_Atomic bool cancelled;
	job_gone_fn gone; /* loop thread only; NULL: cancelled only at shutdown */
	void *gone_arg;
	struct job_cancel *next; /* loop thread only */
	bool watched;
};

void job_cancel_watch(struct gpd *g, struct job_cancel *c, job_gone_fn gone, void *gone_arg);
void job_cancel_unwatch(struct job_cancel *c);
/* Cancel every watched job and make every fdio_* wait end (shutdown). */
void jobs_cancel_all(struct gpd *g);
/* On a worker: this thread's fdio_* waits obey c (NULL: only shutdown). */
void job_cancel_enter(struct job_cancel *c);
/* -ECANCELED when this thread's job was cancelled or the daemon stops, else 0. */
int job_cancelled(void);

/* The buffered writer (wbuf.h) on a client fd, for renderers running in a
 * job: each full buffer goes out with fdio_write_all() within timeout_ms. */
struct fdout {
	struct wbuf w; /* w.err, w.total: first error, bytes written */
	int fd;
	int timeout_ms;
};

void fdout_init(struct fdout *o, int fd, int timeout_ms);
/* Append bytes; flushes when the buffer fills. Returns o->w.err. */
static inline int fdout_write(struct fdout *o, const void *p, size_t n)
{
	return wb_put(&o->w, p, n);
}
static inline int fdout_flush(struct fdout *o)
{
	return wb_flush(&o->w);
}

/* Write all of buf, waiting at most timeout_ms for each bit of progress. */
int fdio_write_all(int fd, const void *buf, size_t len, int timeout_ms);
/* Read up to len bytes, waiting at most timeout_ms for data: bytes, 0 at EOF, -errno. */
ssize_t fdio_read(int fd, void *buf, size_t len, int timeout_ms);

#endif
