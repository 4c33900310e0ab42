// SPDX-License-Identifier: MIT
/*
 * cgroup id -> path (daemon/collect/cgpath.c) on this host's real cgroup2
 * mount: the mountinfo parse (escapes, v1-only hosts), the file-handle path
 * and the /proc/PID/cgroup fallback against a fresh cgroup, a cgroup that is
 * gone, and the cache's store references and retry pacing.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgtest.h"
#include "collect/cgpath.h"
#include "store/store.h"
#include "test.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f);
	fputs(text, f);
	fclose(f);
}

static void mountinfo_parse(void)
{
	char path[] = "/tmp/gpuprof-mountinfo-XXXXXX";
	int fd = mkstemp(path);
	struct cgpath cg;

	CHECK(fd >= 0);
	close(fd);
	/* v1 only (and a tmpfs named like it): no paths, a reason */
	write_file(path, "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
			 "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n");
	CHECK_EQ_INT(cgpath_init(&cg, path), 0);
	CHECK_EQ_INT(cg.mnt_fd, -1);
	CHECK(strstr(cg.reason, "no cgroup2 mount"));
	CHECK_EQ_U64(cgpath_get(&cg, NULL, 1234, 1, 0), 0);
	char buf[64];
	CHECK_EQ_INT(cgpath_resolve(&cg, 1234, 1, buf, sizeof(buf)), -ENODEV);
	cgpath_finish(&cg, NULL);
	/* hybrid: the first cgroup2 line, octal escapes undone */
	write_file(path, "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
			 "41 31 0:38 / /nonexistent/un\\040ified rw shared:9 - cgroup2 cgroup2 rw\n"
			 "42 31 0:39 / /other rw - cgroup2 cgroup2 rw\n");
	CHECK_EQ_INT(cgpath_init(&cg, path), 0);
	CHECK_STREQ(cg.mnt, "/nonexistent/un ified");
	CHECK_EQ_INT(cg.mnt_fd, -1);
	CHECK(strstr(cg.reason, "cannot open the cgroup2 mount"));
	cgpath_finish(&cg, NULL);
	unlink(path);
}

/* This process's cgroup as /proc/self/cgroup names it (its v2 line) into
 * want, and that directory under cg's mount stat()ed into st. */
static void own_path(const struct cgpath *cg, char *want, size_t wlen, struct stat *st)
{
	char line[4096], abs[4400];
	FILE *f = fopen("/proc/self/cgroup", "r");

	want[0] = '\0';
	CHECK(f);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(want, wlen, "%s", line + 3);
		}
	if (f)
		fclose(f);
	CHECK(want[0] == '/');
	snprintf(abs, sizeof(abs), "%s%s", cg->mnt, want);
	CHECK_EQ_INT(stat(abs, st), 0);
}

/* This process's own cgroup: what /proc/self/cgroup says, by inode. */
static void own_cgroup(void)
{
	char want[4096], got[4096];
	struct cgpath cg;
	struct stat st;

	CHECK_EQ_INT(cgpath_init(&cg, NULL), 0);
	if (cg.mnt_fd < 0) {
		printf("skipped: %s\n", cg.reason);
		return;
	}
	own_path(&cg, want, sizeof(want), &st);
	CHECK_EQ_INT(cgpath_resolve(&cg, st.st_ino, (uint32_t)getpid(), got, sizeof(got)), 0);
	CHECK_STREQ(got, want);
	/* too small a buffer is an error, not a cut path */
	CHECK_EQ_INT(cgpath_resolve(&cg, st.st_ino, (uint32_t)getpid(), got, strlen(want)),
		     -ENAMETOOLONG);
	/* an id no cgroup has */
	CHECK(cgpath_resolve(&cg, 0x7fffffffffff0001ull, (uint32_t)getpid(), got, sizeof(got)) < 0);
	printf("own cgroup %s (id %llu) under %s, file handles %s\n", want,
	       (unsigned long long)st.st_ino, cg.mnt, cg.handle_type >= 0 ? "usable" : "unusable");
	cgpath_finish(&cg, NULL);
}

/* A fresh cgroup: by handle, by /proc/PID/cgroup of a task inside, and
 * gone after rmdir; then the cache over it. */
static void fresh_cgroup(void)
{
	struct store_config sc = {.budget_bytes = 1u << 20};
	struct store_stats ss;
	struct cgtest t;
	struct cgpath cg;
	struct store *s;
	char why[256], got[512];
	int ready[2], r;
	size_t len;
	pid_t pid;

	if (geteuid() != 0) {
		printf("skipped: needs root to make a cgroup\n");
		return;
	}
	r = cgtest_make(&t, "cgpath", why, sizeof(why));
	if (r < 0) {
		printf("skipped: %s\n", why);
		return;
	}
	CHECK_EQ_INT(cgpath_init(&cg, NULL), 0);
	CHECK(cg.mnt_fd >= 0);
	if (cg.handle_type >= 0) {
		CHECK_EQ_INT(cgpath_resolve(&cg, t.id, 0, got, sizeof(got)), 0);
		CHECK_STREQ(got, t.rel);
		CHECK_EQ_U64(cg.by_handle, 1);
	}
	/* The fallback, with file handles off: a task inside names it. */
	int saved = cg.handle_type;
	cg.handle_type = -1;
	CHECK_EQ_INT(cgpath_resolve(&cg, t.id, 0, got, sizeof(got)), -EOPNOTSUPP);
	CHECK_EQ_INT(pipe(ready), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char c = cgtest_enter(&t) == 0 ? 'y' : 'n';

		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c = 0;
	CHECK_EQ_INT((int)read(ready[0], &c, 1), 1);
	CHECK_EQ_INT(c, 'y');
	CHECK_EQ_INT(cgpath_resolve(&cg, t.id, (uint32_t)pid, got, sizeof(got)), 0);
	CHECK_STREQ(got, t.rel);
	CHECK_EQ_U64(cg.by_proc, 1);
	/* a task elsewhere does not vouch for the id */
	CHECK_EQ_INT(cgpath_resolve(&cg, t.id, (uint32_t)getpid(), got, sizeof(got)), -ENOENT);
	cg.handle_type = saved;

	/* The cache: one resolution, then references to the same string. */
	CHECK_EQ_INT(store_new(&sc, &s), 0);
	uint32_t a = cgpath_get(&cg, s, t.id, (uint32_t)pid, 1000);
	uint32_t b = cgpath_get(&cg, s, t.id, (uint32_t)pid, 2000);
	const char *p = store_str(s, a, &len);

	CHECK(a && a == b);
	CHECK(p && len == strlen(t.rel) && !memcmp(p, t.rel, len));
	CHECK_EQ_U64(cg.resolved, 1);
	kill(pid, SIGKILL);
	CHECK_EQ_INT(waitpid(pid, &r, 0), pid);
	close(ready[0]);
	close(ready[1]);
	CHECK_EQ_INT(cgtest_remove(&t), 0);
	/* gone: a new resolution fails (the cache still answers for it) */
	CHECK(cgpath_resolve(&cg, t.id, 0, got, sizeof(got)) < 0);
	CHECK_EQ_U64(cgpath_get(&cg, s, t.id, 0, 3000), a);
	store_str_unref(s, a);
	store_str_unref(s, a);
	store_str_unref(s, a);
	/* failures are remembered, and retried once the pacing allows */
	CHECK_EQ_U64(cgpath_get(&cg, s, 0x7fffffffffff0001ull, 0, 10), 0);
	CHECK_EQ_U64(cgpath_get(&cg, s, 0x7fffffffffff0001ull, 0, 20), 0);
	CHECK_EQ_U64(cg.failed, 1);
	CHECK_EQ_U64(cgpath_get(&cg, s, 0x7fffffffffff0001ull, 0, 20 + CGPATH_RETRY_NS), 0);
	CHECK_EQ_U64(cg.failed, 2);
	/* the cache's own reference is all that holds the path */
	store_get_stats(s, &ss);
	CHECK_EQ_U64(ss.strings, 1);
	cgpath_finish(&cg, s);
	store_get_stats(s, &ss);
	CHECK_EQ_U64(ss.strings, 0);
	store_free(s);
	printf("fresh cgroup %s (id %llu) resolved by %s and by /proc\n", t.rel,
	       (unsigned long long)t.id, saved >= 0 ? "file handle" : "(no handle)");
}

/* More distinct ids than slots: the table stays CGPATH_SLOTS, every
 * reference it drops on replacement really goes. */
static void bounded(void)
{
	struct store_config sc = {.budget_bytes = 4u << 20};
	char want[4096];
	struct store_stats ss;
	struct cgpath cg;
	struct store *s;
	struct stat st;

	CHECK_EQ_INT(cgpath_init(&cg, NULL), 0);
	if (cg.mnt_fd < 0) {
		printf("skipped: %s\n", cg.reason);
		return;
	}
	own_path(&cg, want, sizeof(want), &st);
	CHECK_EQ_INT(store_new(&sc, &s), 0);
	uint32_t own = cgpath_get(&cg, s, st.st_ino, (uint32_t)getpid(), 1);

	CHECK(own);
	store_str_unref(s, own);
	for (uint64_t i = 0; i < 4 * CGPATH_SLOTS; i++)
		CHECK_EQ_U64(cgpath_get(&cg, s, 0x7fff000000000000ull + i, 0, 5), 0);
	CHECK_EQ_U64(cg.failed, 4 * CGPATH_SLOTS);
	/* the real one was pushed out by the failures: its string went */
	store_get_stats(s, &ss);
	CHECK_EQ_U64(ss.strings, 0);
	cgpath_finish(&cg, s);
	store_free(s);
}

int main(void)
{
	RUN(mountinfo_parse);
	RUN(own_cgroup);
	RUN(fresh_cgroup);
	RUN(bounded);
	return test_summary();
}
