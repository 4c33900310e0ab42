/* SPDX-License-Identifier: MIT */
/*
 * A fresh cgroup v2 directory for a test (tests/gpu): made under the
 * cgroup2 mount cgpath_init() finds, entered by a child before it execs,
 * removed at the end. Needs root and a writable cgroup2 mount; callers skip
 * with the reason cgtest_make() gives otherwise.
 */
#ifndef GPUPROF_TESTS_CGTEST_H
#define GPUPROF_TESTS_CGTEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/cgpath.h"

struct cgtest {
	char abs[512]; /* MNT/gpuprof-test-PID-N */
	char rel[128]; /* /gpuprof-test-PID-N: the path cgpath reports */
	uint64_t id;   /* its cgroup id (inode) */
};

/* Make one; 0, or -errno with why[] saying what is missing. */
static inline int cgtest_make(struct cgtest *t, const char *tag, char *why, size_t wlen)
{
	static unsigned n;
	struct cgpath cg;
	struct stat st;

	if (cgpath_init(&cg, NULL) < 0)
		return -ENOMEM;
	if (cg.mnt_fd < 0) {
		snprintf(why, wlen, "%s", cg.reason);
		return -ENODEV;
	}
	snprintf(t->rel, sizeof(t->rel), "/gpuprof-test-%s-%d-%u", tag, (int)getpid(), n++);
	snprintf(t->abs, sizeof(t->abs), "%s%s", cg.mnt, t->rel);
	cgpath_finish(&cg, NULL);
	if (mkdir(t->abs, 0755) < 0 || stat(t->abs, &st) < 0) {
		int err = errno;

		snprintf(why, wlen, "cannot make a cgroup at %.200s: %s", t->abs, strerror(err));
		return -err;
	}
	t->id = (uint64_t)st.st_ino;
	return 0;
}

/* Move the calling process into t (in a child, before exec). */
static inline int cgtest_enter(const struct cgtest *t)
{
	char path[600];
	int fd, r;

	snprintf(path, sizeof(path), "%s/cgroup.procs", t->abs);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write(fd, "0\n", 2) == 2 ? 0 : -errno;
	close(fd);
	return r;
}

/* Remove t; its processes must have exited (reaped). */
static inline int cgtest_remove(const struct cgtest *t)
{
	/* The exit of the last task is noticed asynchronously. */
	for (int i = 0; i < 100; i++) {
		if (!rmdir(t->abs))
			return 0;
		if (errno != EBUSY)
			return -errno;
		usleep(10000);
	}
	return -EBUSY;
}

#endif
