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
};

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
	j->done(j->arg);
	free(j);
	if (!g->jobs_running && !g->stopping && g->cfg.idle_trim_ms)
		uv_timer_start(&g->trim_timer, on_idle_trim, g->cfg.idle_trim_ms, 0);
}

int job_submit(struct gpd *g, void (*work)(void *), void (*done)(void *), void *arg)
{
	if (g->stopping)
		return -ESHUTDOWN;
	if (g->jobs_running >= g->cfg.max_jobs)
		return -EBUSY;
	struct job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->g = g;
	j->work = work;
	j->done = done;
	j->arg = arg;
	j->w.data = j;
	int r = uv_queue_work(g->loop, &j->w, job_work, job_done);
	if (r < 0) {
		free(j);
		return r;
	}
	g->jobs_running++;
	return 0;
}

int fdio_prepare(int fd, bool for_write)
{
	int fl = fcntl(fd, F_GETFL);
	struct stat st;
	if (fl < 0 || fstat(fd, &st) < 0)
		return -EBADF;
	int acc = fl & O_ACCMODE;
	if (for_write ? acc == O_RDONLY : acc == O_WRONLY)
		return -EBADF;
	if (S_ISDIR(st.st_mode))
		return -EBADF;
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode)) {
		if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
			return -errno;
	}
	return 0;
}

static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = ev};
	for (;;) {
		int r = poll(&p, 1, timeout_ms > 0 ? timeout_ms : -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
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

void fdout_init(struct fdout *o, int fd, int timeout_ms)
{
	o->fd = fd;
	o->timeout_ms = timeout_ms;
	o->err = 0;
	o->total = 0;
	o->len = 0;
}

int fdout_flush(struct fdout *o)
{
	if (o->err || o->len == 0)
		return o->err;
	o->err = fdio_write_all(o->fd, o->buf, o->len, o->timeout_ms);
	if (!o->err)
		o->total += o->len;
	o->len = 0;
	return o->err;
}

int fdout_write(struct fdout *o, const void *p, size_t n)
{
	if (o->err)
		return o->err;
	if (n > sizeof(o->buf) - o->len) {
		if (fdout_flush(o))
			return o->err;
		if (n > sizeof(o->buf)) {
			o->err = fdio_write_all(o->fd, p, n, o->timeout_ms);
			if (!o->err)
				o->total += n;
			return o->err;
		}
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
	return 0;
}

int fdout_printf(struct fdout *o, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return o->err = -EINVAL;
	if ((size_t)n < sizeof(tmp))
		return fdout_write(o, tmp, (size_t)n);
	char *big = malloc((size_t)n + 1);
	if (!big)
		return o->err = -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	fdout_write(o, big, (size_t)n);
	free(big);
	return o->err;
}
