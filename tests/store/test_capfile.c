// SPDX-License-Identifier: MIT
/* Captures on disk: save/load, damage detection, symlinks, leftovers, a
 * full file system. Real files in a private temp dir. */
#include "capture/capture.h"
#include "capture_util.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];
static int dirfd_ = -1;

static void write_file(const char *name, const void *p, size_t n)
{
	int fd = openat(dirfd_, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, p, n) != (ssize_t)n)
		abort();
	close(fd);
}

static bool exists(const char *name)
{
	struct stat st;

	return fstatat(dirfd_, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void test_save_load(void)
{
	struct capture *c = sample_capture(), *d = NULL;

	CHECK_EQ_INT(capture_save(c, dirfd_), 0);
	CHECK(exists("42.gpc"));
	CHECK(!exists("42.gpc.tmp"));
	CHECK(c->file_bytes > 0);
	CHECK_EQ_INT(capture_load(dirfd_, 42, &d), 0);
	CHECK(d && captures_equal(c, d));
	CHECK_EQ_U64(d ? d->file_bytes : 0, c->file_bytes);
	capture_free(d);
	d = NULL;
	CHECK_EQ_INT(capture_load(dirfd_, 41, &d), -ENOENT);
	CHECK(d == NULL);
	/* A file whose META names another capture is damaged. */
	CHECK_EQ_INT(renameat(dirfd_, "42.gpc", dirfd_, "43.gpc"), 0);
	CHECK_EQ_INT(capture_load(dirfd_, 43, &d), -EBADMSG);
	CHECK(d && d->state == CAPTURE_DAMAGED && d->id == 43);
	CHECK(d && strstr(d->damage, "holds capture 42"));
	capture_free(d);
	CHECK_EQ_INT(capture_unlink(dirfd_, 43), 0);
	CHECK_EQ_INT(capture_unlink(dirfd_, 43), -ENOENT);
	capture_free(c);
}

/* Every single-byte change either loads back the same capture or is
 * reported as damage; three patterns per byte (low bit, high bit, all). */
static void test_byte_flips(void)
{
	static const uint8_t pats[] = { 0x01, 0x80, 0xff };
	struct capture *c = sample_capture();
	uint8_t *buf = NULL;
	size_t len = 0, same = 0, damaged = 0;

	CHECK_EQ_INT(capture_encode(c, (void **)&buf, &len), 0);
	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k < sizeof(pats); k++) {
			struct capture *d = NULL;
			int r;

			buf[i] ^= pats[k];
			write_file("42.gpc", buf, len);
			buf[i] ^= pats[k];
			r = capture_load(dirfd_, 42, &d);
			if (r == 0 && captures_equal(c, d)) {
				same++;
			} else if (r == -EBADMSG && d && d->state == CAPTURE_DAMAGED &&
				   d->id == 42 && d->damage[0] && d->nrecs == 0) {
				damaged++;
			} else {
				TEST_FAIL_AT("byte %zu ^ 0x%02x: r=%d", i, pats[k], r);
			}
			capture_free(d);
		}
	}
	CHECK_EQ_U64(same + damaged, len * sizeof(pats));
	/* CRCs and zero checks cover every byte. */
	CHECK_EQ_U64(same, 0);
	free(buf);
	capture_free(c);
}

static void test_truncation(void)
{
	struct capture *c = sample_capture();
	uint8_t *buf = NULL;
	size_t len = 0;

	CHECK_EQ_INT(capture_encode(c, (void **)&buf, &len), 0);
	for (size_t n = 0; n < len; n++) {
		struct capture *d = NULL;

		write_file("42.gpc", buf, n);
		if (capture_load(dirfd_, 42, &d) != -EBADMSG)
			TEST_FAIL_AT("truncated to %zu bytes: not -EBADMSG", n);
		capture_free(d);
	}
	unlinkat(dirfd_, "42.gpc", 0);
	free(buf);
	capture_free(c);
}

static void test_symlinks(void)
{
	struct capture *c = sample_capture(), *d = NULL;
	struct stat st;

	/* A symlink at the final name is not followed on load... */
	c->id = 50;
	CHECK_EQ_INT(capture_save(c, dirfd_), 0);
	CHECK_EQ_INT(symlinkat("50.gpc", dirfd_, "51.gpc"), 0);
	CHECK_EQ_INT(capture_load(dirfd_, 51, &d), -ELOOP);
	CHECK(d == NULL);
	/* ...nor at the temp name on save: the target stays untouched. */
	write_file("victim", "keep", 4);
	CHECK_EQ_INT(symlinkat("victim", dirfd_, "52.gpc.tmp"), 0);
	c->id = 52;
	CHECK_EQ_INT(capture_save(c, dirfd_), -ELOOP);
	CHECK_EQ_INT(fstatat(dirfd_, "victim", &st, 0), 0);
	CHECK_EQ_INT(st.st_size, 4);
	CHECK(!exists("52.gpc"));
	/* Not a regular file. */
	CHECK_EQ_INT(mkfifoat(dirfd_, "53.gpc", 0600), 0);
	CHECK_EQ_INT(capture_load(dirfd_, 53, &d), -EINVAL);
	CHECK_EQ_INT(mkdirat(dirfd_, "54.gpc", 0700), 0);
	CHECK_EQ_INT(capture_load(dirfd_, 54, &d), -EINVAL);
	CHECK(d == NULL);
	unlinkat(dirfd_, "50.gpc", 0);
	unlinkat(dirfd_, "51.gpc", 0);
	unlinkat(dirfd_, "53.gpc", 0);
	unlinkat(dirfd_, "54.gpc", AT_REMOVEDIR);
	capture_free(c);
}

static void test_clean_tmp(void)
{
	write_file("1.gpc.tmp", "x", 1);
	write_file("2.gpc.tmp", "", 0);
	write_file("keep.gpc", "x", 1);
	write_file(".gpc.tmp", "x", 1); /* no id: still a leftover of ours */
	CHECK_EQ_INT(mkdirat(dirfd_, "d.gpc.tmp", 0700), 0);
	/* 52.gpc.tmp -> victim from test_symlinks: the link goes, not victim. */
	CHECK_EQ_INT(capture_clean_tmp(dirfd_), 4);
	CHECK(!exists("1.gpc.tmp") && !exists("2.gpc.tmp") && !exists("52.gpc.tmp"));
	CHECK(exists("keep.gpc") && exists("victim") && exists("d.gpc.tmp"));
	CHECK_EQ_INT(capture_clean_tmp(dirfd_), 0);
	unlinkat(dirfd_, "keep.gpc", 0);
	unlinkat(dirfd_, "victim", 0);
	unlinkat(dirfd_, "d.gpc.tmp", AT_REMOVEDIR);
}

static void test_enospc(void)
{
	char path[128];
	struct capture *c = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/full", tmpdir);
	mkdir(path, 0700);
	if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0700") < 0) {
		fprintf(stderr, "SKIP test_enospc: cannot mount a tmpfs (%s)\n", strerror(errno));
		rmdir(path);
		return;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd >= 0);
	capture_new(&c);
	c->id = 7;
	c->nrecs = 40000; /* 2.5 MB on disk */
	c->recs = calloc(c->nrecs, sizeof(*c->recs));
	CHECK_EQ_INT(capture_save(c, fd), -ENOSPC);
	CHECK(faccessat(fd, "7.gpc.tmp", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
	CHECK(faccessat(fd, "7.gpc", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
	/* The space came back: a small capture still fits. */
	c->nrecs = 100;
	CHECK_EQ_INT(capture_save(c, fd), 0);
	close(fd);
	umount2(path, MNT_DETACH);
	rmdir(path);
	capture_free(c);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gpuprof-capfile-XXXXXX");
	if (!mkdtemp(tmpdir))
		TEST_SKIP("mkdtemp: %s", strerror(errno));
	dirfd_ = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	RUN(test_save_load);
	RUN(test_byte_flips);
	RUN(test_truncation);
	RUN(test_symlinks);
	RUN(test_clean_tmp);
	RUN(test_enospc);
	close(dirfd_);
	if (rmdir(tmpdir) < 0)
		fprintf(stderr, "leftovers in %s\n", tmpdir);
	return test_summary();
}
