// SPDX-License-Identifier: MIT
/*
 * The directory sink (push_int.h): each window's profile as
 * "gpuprof-<from ms>-<until ms>.pb.gz" in push.dir, for hosts without a
 * network store (something else ships or reads the files).
 *
 * The daemon is root and the directory's path may run through places an
 * unprivileged user can write (/tmp, /var/tmp): it is opened one component
 * at a time with O_NOFOLLOW, created (0750) only as its last component, and
 * refused unless it is ours and writable by nobody else, so no one can
 * make us write or delete through a symlink they planted. Files are
 * created O_EXCL | O_NOFOLLOW, mode 0640, written under a temporary name,
 * fsync()ed and renamed into place, so a reader never sees half a file.
 * After each write the oldest profiles go until the rest fit
 * push.dir_max_bytes; the names sort by time, so oldest is first by name.
 * A profile larger than the cap by itself is not written (and counted).
 */
#include "push_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "log.h"

#define PREFIX "gpuprof-"
#define SUFFIX ".pb.gz"
#define TMP_PREFIX ".tmp-"
#define MAX_FILES 100000 /* more are not rotated (far above any sane cap) */

struct dirsink {
	int dfd;
	size_t max_bytes;
	pthread_mutex_t mu; /* counters: written by the builder, read by status */
	uint64_t written, failures, removed, files, bytes, over_cap;
	char last_error[256];
};

struct entry {
	char name[64];
	uint64_t size;
};

static int open_safely(const char *path, char *why, size_t whylen)
{
	char buf[4096], *save = NULL;
	int fd, r;

	if (strlen(path) >= sizeof(buf) || path[0] != '/') {
		snprintf(why, whylen, "not an absolute path");
		return -EINVAL;
	}
	strcpy(buf, path);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		bool last = save == NULL || *save == '\0';
		if (!strcmp(c, "..")) {
			snprintf(why, whylen, "'..' in the path");
			close(fd);
			return -EINVAL;
		}
		int nfd = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && last) {
			if (mkdirat(fd, c, 0750) < 0 && errno != EEXIST) {
				r = -errno;
				snprintf(why, whylen, "creating it: %s", strerror(errno));
				close(fd);
				return r;
			}
			nfd = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (nfd < 0) {
			r = -errno;
			snprintf(why, whylen, "%s: %s%s", c, strerror(errno),
				 errno == ENOTDIR ? " (or a symbolic link, which is not followed)"
						  : "");
			close(fd);
			return r;
		}
		close(fd);
		fd = nfd;
	}
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = dfd < 0 ? -errno : 0;
	close(fd);
	if (r < 0) {
		snprintf(why, whylen, "%s", strerror(-r));
		return r;
	}
	struct stat st;
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(why, whylen,
			 "owned by uid %u, mode %03o: it must belong to the daemon's user and be "
			 "writable by nobody else",
			 (unsigned)st.st_uid, (unsigned)st.st_mode & 0777);
		close(dfd);
		return -EPERM;
	}
	return dfd;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && !strcmp(s + n - m, suf);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* Our profiles in the directory, oldest first; temporary leftovers removed
 * when clean_tmp. Returns the count or a negative errno; *ret malloc()ed. */
static int list(struct dirsink *d, struct entry **ret, bool clean_tmp)
{
	int fd = openat(d->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(dir)) && n < MAX_FILES) {
		struct stat st;
		if (clean_tmp &&
		    !strncmp(de->d_name, TMP_PREFIX PREFIX, strlen(TMP_PREFIX PREFIX))) {
			(void)unlinkat(d->dfd, de->d_name, 0);
			continue;
		}
		if (strncmp(de->d_name, PREFIX, strlen(PREFIX)) || !ends_with(de->d_name, SUFFIX) ||
		    strlen(de->d_name) >= sizeof(v->name) ||
		    fstatat(d->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct entry *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				free(v);
				closedir(dir);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
		v[n++].size = (uint64_t)st.st_size;
	}
	closedir(dir);
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	*ret = v;
	return (int)n;
}

/* Remove the oldest until the rest fit; update the counters. */
static void rotate(struct dirsink *d, bool clean_tmp)
{
	struct entry *v = NULL;
	int n = list(d, &v, clean_tmp);
	uint64_t total = 0, removed = 0;
	size_t i = 0;

	if (n < 0)
		return;
	for (int k = 0; k < n; k++)
		total += v[k].size;
	for (; i < (size_t)n && total > d->max_bytes; i++) {
		if (unlinkat(d->dfd, v[i].name, 0) == 0 || errno == ENOENT) {
			total -= v[i].size;
			removed++;
		}
	}
	pthread_mutex_lock(&d->mu);
	d->removed += removed;
	d->files = (uint64_t)n - i;
	d->bytes = total;
	pthread_mutex_unlock(&d->mu);
	free(v);
}

int dirsink_open(const char *path, size_t max_bytes, struct dirsink **ret, char *why, size_t whylen)
{
	int dfd = open_safely(path, why, whylen);
	if (dfd < 0)
		return dfd;
	struct dirsink *d = calloc(1, sizeof(*d));
	if (!d) {
		close(dfd);
		return -ENOMEM;
	}
	d->dfd = dfd;
	d->max_bytes = max_bytes;
	pthread_mutex_init(&d->mu, NULL);
	rotate(d, true);
	*ret = d;
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int dirsink_write(struct dirsink *d, const struct push_item *it)
{
	char name[64], tmp[80];
	int r = 0;

	snprintf(name, sizeof(name), PREFIX "%013" PRIu64 "-%013" PRIu64 SUFFIX,
		 it->from_ns / 1000000, it->until_ns / 1000000);
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%s", name);
	if (it->len > d->max_bytes) {
		/* it would only push every other profile out, then itself */
		pthread_mutex_lock(&d->mu);
		if (!d->over_cap++)
			log_warn("push: a %zu-byte profile exceeds push.dir_max_bytes (%zu): not "
				 "written (counted as over_cap)",
				 it->len, d->max_bytes);
		pthread_mutex_unlock(&d->mu);
		return -EFBIG;
	}
	int fd = openat(d->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		r = -errno;
	/* the umask must not decide who reads profiles */
	if (r == 0 && fchmod(fd, 0640) < 0)
		r = -errno;
	if (r == 0)
		r = write_all(fd, it->body, it->len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(d->dfd, tmp, d->dfd, name) < 0)
		r = -errno;
	if (r == 0)
		(void)fsync(d->dfd);
	else if (fd >= 0)
		(void)unlinkat(d->dfd, tmp, 0);
	pthread_mutex_lock(&d->mu);
	if (r == 0) {
		d->written++;
	} else {
		d->failures++;
		snprintf(d->last_error, sizeof(d->last_error), "%s: %s", name, strerror(-r));
	}
	pthread_mutex_unlock(&d->mu);
	if (r < 0)
		log_warn("push: writing %s into push.dir failed: %s", name, strerror(-r));
	rotate(d, false);
	return r;
}

void dirsink_status(struct dirsink *d, cJSON *o, bool privileged)
{
	pthread_mutex_lock(&d->mu);
	json_add_u64(o, "written", d->written);
	json_add_u64(o, "write_failures", d->failures);
	json_add_u64(o, "removed", d->removed);
	json_add_u64(o, "over_cap", d->over_cap);
	json_add_u64(o, "files", d->files);
	json_add_u64(o, "bytes", d->bytes);
	json_add_u64(o, "max_bytes", d->max_bytes);
	if (privileged) /* it names a file in push.dir */
		cJSON_AddStringToObject(o, "last_error", d->last_error);
	pthread_mutex_unlock(&d->mu);
}

void dirsink_free(struct dirsink *d)
{
	if (!d)
		return;
	close(d->dfd);
	pthread_mutex_destroy(&d->mu);
	free(d);
}
