// SPDX-License-Identifier: MIT
/*
 * cgroup v2 id -> path, cached (cgpath.h).
 */
#include "cgpath.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"

/* Undo mountinfo's octal escapes ("\040" for a space) in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* The first cgroup2 mount point in mountinfo, into mnt. */
static bool find_mount(const char *path, char *mnt, size_t size)
{
	FILE *f = fopen(path ? path : "/proc/self/mountinfo", "re");
	char line[1024], root[512], point[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		/* id parent major:minor root mount-point ... */
		if (sscanf(line, "%*s %*s %*s %511s %511s", root, point) != 2)
			continue;
		unescape(point);
		if (strlen(point) < size) {
			snprintf(mnt, size, "%s", point);
			found = true;
		}
	}
	fclose(f);
	return found;
}

int cgpath_init(struct cgpath *cg, const char *mountinfo_path)
{
	struct {
		struct file_handle fh;
		unsigned char buf[MAX_HANDLE_SZ];
	} h;
	int mount_id;

	memset(cg, 0, sizeof(*cg));
	cg->mnt_fd = -1;
	cg->handle_type = -1;
	if (!find_mount(mountinfo_path, cg->mnt, sizeof(cg->mnt))) {
		snprintf(cg->reason, sizeof(cg->reason),
			 "no cgroup2 mount (cgroup v1-only host): launches carry no cgroup");
		return 0;
	}
	cg->mnt_fd = open(cg->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->mnt_fd < 0) {
		snprintf(cg->reason, sizeof(cg->reason), "cannot open the cgroup2 mount %.100s: %s",
			 cg->mnt, strerror(errno));
		return 0;
	}
	/* The handle type kernfs gives (FILEID_KERNFS, 0xfe, since 5.5):
	 * learned from the mount's own root, not assumed. */
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (!name_to_handle_at(cg->mnt_fd, "", &h.fh, &mount_id, AT_EMPTY_PATH) &&
	    h.fh.handle_bytes == sizeof(uint64_t))
		cg->handle_type = h.fh.handle_type;
	return 0;
}

void cgpath_clear(struct cgpath *cg, struct store *s)
{
	if (cg->slot && s)
		for (unsigned i = 0; i < CGPATH_SLOTS; i++)
			if (cg->slot[i].str)
				store_str_unref(s, cg->slot[i].str);
	free(cg->slot);
	cg->slot = NULL;
}

void cgpath_finish(struct cgpath *cg, struct store *s)
{
	cgpath_clear(cg, s);
	if (cg->mnt_fd >= 0)
		close(cg->mnt_fd);
	cg->mnt_fd = -1;
}

/* abs, a path under the mount, relative to it ("/" for the mount itself). */
static int relative(const struct cgpath *cg, const char *abs, char *buf, size_t size)
{
	size_t n = strlen(cg->mnt);

	if (n == 1) /* mounted on "/" */
		n = 0;
	if (strncmp(abs, cg->mnt, n) || (abs[n] && abs[n] != '/'))
		return -ENOENT;
	if (snprintf(buf, size, "%s", abs[n] ? abs + n : "/") >= (int)size)
		return -ENAMETOOLONG;
	return 0;
}

static int by_handle(struct cgpath *cg, uint64_t id, char *buf, size_t size)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = {.fh = {.handle_bytes = sizeof(uint64_t), .handle_type = cg->handle_type}, .id = id};
	char link[64], abs[4096];
	ssize_t n;
	int fd, err;

	if (cg->handle_type < 0)
		return -EOPNOTSUPP;
	fd = open_by_handle_at(cg->mnt_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ESTALE ? -ENOENT : -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, abs, sizeof(abs) - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	if ((size_t)n >= sizeof(abs) - 1)
		return -ENAMETOOLONG;
	abs[n] = '\0';
	/* rmdir'ed while open */
	if (n > 10 && !strcmp(abs + n - 10, " (deleted)"))
		return -ENOENT;
	return relative(cg, abs, buf, size);
}

static int by_proc(struct cgpath *cg, uint64_t id, uint32_t pid, char *buf, size_t size)
{
	char path[64], line[4096 + 8], abs[sizeof(cg->mnt) + sizeof(line)];
	struct stat st;
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		if (strncmp(line, "0::/", 4))
			continue;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len - 3 >= size) {
			err = -ENAMETOOLONG;
			break;
		}
		/* Same id means same directory: the task has not moved. */
		snprintf(abs, sizeof(abs), "%s%s", cg->mnt, line + 3);
		if (stat(abs, &st) == 0 && (uint64_t)st.st_ino == id) {
			memcpy(buf, line + 3, len - 2);
			err = 0;
		}
		break;
	}
	fclose(f);
	return err;
}

int cgpath_resolve(struct cgpath *cg, uint64_t id, uint32_t pid, char *buf, size_t size)
{
	int r;

	if (cg->mnt_fd < 0)
		return -ENODEV;
	if (!size)
		return -ENAMETOOLONG;
	r = by_handle(cg, id, buf, size);
	if (!r) {
		cg->by_handle++;
		return 0;
	}
	if (r == -ENAMETOOLONG || !pid)
		return r;
	r = by_proc(cg, id, pid, buf, size);
	if (!r)
		cg->by_proc++;
	return r;
}

uint32_t cgpath_get(struct cgpath *cg, struct store *s, uint64_t id, uint32_t pid, uint64_t now_ns)
{
	uint32_t set =
		(uint32_t)((id * 0x9E3779B97F4A7C15ull) >> 40) % (CGPATH_SLOTS / CGPATH_WAYS);
	struct cgpath_slot *w, *victim;
	char path[4096];

	if (cg->mnt_fd < 0 || !id)
		return 0;
	if (!cg->slot && !(cg->slot = calloc(CGPATH_SLOTS, sizeof(*cg->slot))))
		return 0;
	w = &cg->slot[set * CGPATH_WAYS];
	victim = w;
	cg->clock++;
	for (unsigned i = 0; i < CGPATH_WAYS; i++) {
		if (w[i].id == id) {
			w[i].used = cg->clock;
			if (w[i].str)
				return store_str_ref(s, w[i].str);
			/* (records from other CPUs may be a little older) */
			if (now_ns < w[i].failed_ns + CGPATH_RETRY_NS)
				return 0;
			victim = &w[i];
			goto resolve;
		}
		if (!w[i].id)
			victim = &w[i];
		else if (victim->id && (int32_t)(w[i].used - victim->used) < 0)
			victim = &w[i];
	}
resolve:
	if (victim->str)
		store_str_unref(s, victim->str);
	*victim = (struct cgpath_slot){.id = id, .used = cg->clock};
	if (cgpath_resolve(cg, id, pid, path, sizeof(path)) < 0 ||
	    !(victim->str = store_str_intern(s, path, strlen(path)))) {
		victim->failed_ns = now_ns;
		cg->failed++;
		return 0;
	}
	cg->resolved++;
	return store_str_ref(s, victim->str);
}
