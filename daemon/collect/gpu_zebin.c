// SPDX-License-Identifier: MIT
/*
 * NEO's level_zero:compile_kernel USDT: after a module link NEO
 * writes a debug zebin (kernel names + ISA) and fires the probe with its
 * path. The file is opened through /proc/PID/root (the process's mount
 * namespace) and read on the thread pool; the zebin hook (hooks.c) parses
 * it there and adds its kernels to the EU-stall kernel table on the loop.
 */
#include "gpu_launch_int.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>
#include "gpu_launch_abi.h"
#include "gpd.h"
#include "log.h"

struct zebin_work {
	uv_work_t w;
	struct gl_priv *p;
	struct gpu_launch_zebin_hook hook; /* as when queued */
	uint32_t pid;
	int err;
	void *state;
	char path[GPU_ZEBIN_PATH_LEN];
	char why[160];
};

/* Absolute, no ".." component: resolved under /proc/PID/root only. */
static bool path_ok(const char *path)
{
	if (path[0] != '/')
		return false;
	for (const char *s = path; (s = strstr(s, "..")); s += 2)
		if (s[-1] == '/' && (s[2] == '/' || !s[2]))
			return false;
	return true;
}

/*
 * Open z->path inside the process's root: openat2(RESOLVE_IN_ROOT) keeps
 * every symlink on the way inside that root (a plain open of
 * /proc/PID/root/PATH would follow an absolute symlink into the daemon's
 * own tree); kernels before 5.6 fall back to O_NOFOLLOW on the last
 * component. The file must belong to the process's owner (NEO writes it as
 * that user): a root daemon never parses another user's files for it.
 */
static int open_in_root(uint32_t pid, const char *path, uid_t *owner)
{
	char dir[48];
	struct stat st;
	int dfd, fd;

	snprintf(dir, sizeof(dir), "/proc/%" PRIu32, pid);
	if (stat(dir, &st) < 0)
		return -errno;
	*owner = st.st_uid;
	snprintf(dir, sizeof(dir), "/proc/%" PRIu32 "/root", pid);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	struct open_how how = {
		/* O_NONBLOCK: a FIFO planted there must not hang the worker. */
		.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = openat(dfd, path + 1, (int)how.flags);
	if (fd < 0)
		fd = -errno;
	close(dfd);
	return fd;
}

static int open_zebin(struct zebin_work *z)
{
	struct stat st;
	uid_t owner = 0;
	int fd, r;

	fd = open_in_root(z->pid, z->path, &owner);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		snprintf(z->why, sizeof(z->why), "not a regular file");
	} else if (st.st_uid != owner) {
		r = -EPERM;
		snprintf(z->why, sizeof(z->why), "owned by uid %u, not the process's uid %u",
			 (unsigned)st.st_uid, (unsigned)owner);
	} else if ((uint64_t)st.st_size > z->hook.max_bytes) {
		r = -EFBIG;
		snprintf(z->why, sizeof(z->why), "file over %zu bytes", z->hook.max_bytes);
	} else {
		return fd;
	}
	close(fd);
	return r;
}

static void zebin_run(uv_work_t *w)
{
	struct zebin_work *z = (struct zebin_work *)w;
	int fd = open_zebin(z);

	if (fd < 0) {
		z->err = fd;
		return;
	}
	z->err = z->hook.read(fd, &z->state, z->why, sizeof(z->why));
	close(fd);
}

static void zebin_failed(struct gl_priv *p, const struct zebin_work *z, int err)
{
	p->zebins_failed++;
	/* cut: the error says which file first */
	if (snprintf(p->zebin_error, sizeof(p->zebin_error), "%s (pid %" PRIu32 "): %s", z->path,
		     z->pid, z->why[0] ? z->why : strerror(-err)) < 0)
		p->zebin_error[0] = 0;
	log_debug("gpu: zebin %s", p->zebin_error);
}

static void zebin_done(uv_work_t *w, int status)
{
	struct zebin_work *z = (struct zebin_work *)w;
	struct gl_priv *p = z->p;
	int r = z->err;

	p->zebins_pending--;
	p->inflight--;
	if (status < 0 && !r)
		r = status;
	if (!r && p->c && p->zebin_hook.load == z->hook.load) {
		z->why[0] = 0;
		r = z->hook.load(z->hook.arg, z->state, z->pid, z->path, z->why, sizeof(z->why));
		z->state = NULL;
		if (r >= 0)
			p->zebins_loaded++;
		else if (r == -ENODEV)
			p->zebins_skipped++;
		else
			zebin_failed(p, z, r);
	} else if (r) {
		zebin_failed(p, z, r);
	}
	if (z->state)
		z->hook.discard(z->state);
	free(z);
	if (p->freeing && !p->inflight)
		gl_priv_release(p);
}

void gl_on_zebin(struct gl_priv *p, const struct gpu_zebin_rec *r)
{
	uv_loop_t *loop = p->c && p->c->gpd ? p->c->gpd->loop : NULL;
	size_t n = strnlen(r->path, sizeof(r->path));
	struct zebin_work *z;

	p->zebins_seen++;
	if (!p->zebin_hook.load || !loop) {
		p->zebins_skipped++;
		return;
	}
	if (n == sizeof(r->path) || !path_ok(r->path)) {
		p->zebins_failed++;
		snprintf(p->zebin_error, sizeof(p->zebin_error),
			 "pid %" PRIu32 ": path refused (relative, \"..\" or over %d bytes)",
			 r->pid, GPU_ZEBIN_PATH_LEN - 1);
		return;
	}
	if (p->zebins_pending >= GL_ZEBIN_PENDING || !(z = calloc(1, sizeof(*z)))) {
		p->zebins_dropped++;
		return;
	}
	z->p = p;
	z->hook = p->zebin_hook;
	z->pid = r->pid;
	memcpy(z->path, r->path, n + 1);
	if (uv_queue_work(loop, &z->w, zebin_run, zebin_done) < 0) {
		free(z);
		p->zebins_dropped++;
		return;
	}
	p->zebins_pending++;
	p->inflight++;
}

void gl_zebin_status(struct gl_priv *p, cJSON *obj)
{
	cJSON_AddNumberToObject(obj, "zebins_seen", (double)p->zebins_seen);
	cJSON_AddNumberToObject(obj, "zebins_loaded", (double)p->zebins_loaded);
	cJSON_AddNumberToObject(obj, "zebins_failed", (double)p->zebins_failed);
	cJSON_AddNumberToObject(obj, "zebins_skipped", (double)p->zebins_skipped);
	cJSON_AddNumberToObject(obj, "zebins_dropped", (double)p->zebins_dropped);
	cJSON_AddNumberToObject(obj, "zebins_pending", p->zebins_pending);
	if (p->zebin_error[0])
		cJSON_AddStringToObject(obj, "zebin_error", p->zebin_error);
}
