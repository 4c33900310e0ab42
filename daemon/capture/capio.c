// SPDX-License-Identifier: MIT
/*
 * Captures on disk: atomic save, careful load, crash leftovers. All paths
 * are relative to the state directory's fd and never follow symlinks: the
 * directory is ours, but a file planted in it must not make the daemon
 * (root) read or clobber something else.
 */
#include "capture/capture-int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOAD_MAX ((uint64_t)4 << 30)
#define TMP_SUFFIX ".gpc.tmp"

static void file_name(char *buf, size_t n, uint64_t id, bool tmp)
{
	snprintf(buf, n, "%" PRIu64 "%s", id, tmp ? TMP_SUFFIX : ".gpc");
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO; /* not expected from a regular file; do not spin */
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int capture_save(struct capture *c, int dirfd)
{
	char tmp[64], final[64];
	void *buf = NULL;
	size_t len = 0;
	int fd = -1, r;

	if (!c)
		return -EINVAL;
	r = capture_encode(c, &buf, &len);
	if (r < 0)
		return r;
	file_name(tmp, sizeof(tmp), c->id, true);
	file_name(final, sizeof(final), c->id, false);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, buf, len);
	if (r < 0)
		goto fail;
	/* Data on disk before the rename publishes it, or a crash could
	 * leave a complete-looking name over an empty file. */
	if (fsync(fd) < 0) {
		r = -errno;
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto fail;
	}
	fd = -1;
	if (renameat(dirfd, tmp, dirfd, final) < 0) {
		r = -errno;
		goto fail;
	}
	/* The rename itself is durable only once the directory is synced.
	 * Failing here leaves a valid file in place; report, keep it. */
	if (fsync(dirfd) < 0 && errno != EINVAL) {
		r = -errno;
		goto out;
	}
	c->file_bytes = len;
	r = 0;
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
out:
	free(buf);
	return r;
}

static int read_all(int fd, uint8_t *p, size_t n, size_t *got)
{
	*got = 0;
	while (*got < n) {
		ssize_t rd = read(fd, p + *got, n - *got);

		if (rd < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (rd == 0)
			break; /* shrank under us: decode what is there */
		*got += (size_t)rd;
	}
	return 0;
}

int capture_load(int dirfd, uint64_t id, struct capture **ret)
{
	char name[64], why[sizeof(((struct capture *)0)->damage)];
	struct capture *c = NULL;
	uint8_t *buf = NULL;
	struct stat st;
	size_t got;
	int fd, r;

	if (!ret)
		return -EINVAL;
	file_name(name, sizeof(name), id, false);
	/* O_NONBLOCK: a FIFO planted under our name must not hang us. */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > LOAD_MAX || (uint64_t)st.st_size > SIZE_MAX) {
		r = -EFBIG;
		goto out;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	r = buf ? capture_new(&c) : -ENOMEM;
	if (r < 0)
		goto out;
	r = read_all(fd, buf, (size_t)st.st_size, &got);
	if (r < 0)
		goto out;
	r = capture_decode_into(c, buf, got, why, sizeof(why));
	if (r == 0 && c->id != id) {
		capture_free_data(c);
		snprintf(why, sizeof(why), "file %s holds capture %" PRIu64, name, c->id);
		r = -EBADMSG;
	}
	if (r == -EBADMSG) {
		c->id = id;
		c->state = CAPTURE_DAMAGED;
		snprintf(c->damage, sizeof(c->damage), "%s", why);
	}
	if (r == 0 || r == -EBADMSG) {
		c->file_bytes = got;
		*ret = c;
		c = NULL;
	}
out:
	capture_free(c);
	free(buf);
	close(fd);
	return r;
}

int capture_unlink(int dirfd, uint64_t id)
{
	char name[64];

	file_name(name, sizeof(name), id, false);
	return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
}

int capture_clean_tmp(int dirfd)
{
	size_t sl = strlen(TMP_SUFFIX);
	struct dirent *de;
	int n = 0, fd;
	DIR *d;

	/* A fresh fd for the directory: fdopendir() takes ownership and
	 * readdir() moves the offset, neither of which the caller's fd
	 * should suffer. */
	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l < sl || strcmp(de->d_name + l - sl, TMP_SUFFIX) != 0)
			continue;
		if (de->d_type == DT_DIR)
			continue;
		/* unlinkat() removes a symlink itself, never its target. */
		if (unlinkat(dirfd, de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}
