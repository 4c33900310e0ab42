// SPDX-License-Identifier: MIT
/* Snapshots of a process's executable mappings (/proc/PID/maps). */
#include "sym_internal.h"

#include "procmapq.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sym_read_all(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *b = malloc(cap + 1);
	if (!b)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {
			if (cap >= max) {
				free(b);
				return -EFBIG;
			}
			cap = cap * 2 > max ? max : cap * 2;
			char *nb = realloc(b, cap + 1);
			if (!nb) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		ssize_t r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;
			free(b);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct sym_map *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static int add_map(struct sym_maps *ms, size_t *cap, size_t *pcap, const struct sym_map *m,
		   const char *path, size_t plen)
{
	if (ms->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct sym_map *nm = realloc(ms->m, nc * sizeof(*nm));
		if (!nm)
			return -ENOMEM;
		ms->m = nm;
		*cap = nc;
	}
	if (ms->paths_len + plen + 1 > *pcap) {
		size_t nc = *pcap ? *pcap : 1024;
		while (nc < ms->paths_len + plen + 1)
			nc *= 2;
		char *np = realloc(ms->paths, nc);
		if (!np)
			return -ENOMEM;
		ms->paths = np;
		*pcap = nc;
	}
	ms->m[ms->n] = *m;
	ms->m[ms->n].path = (uint32_t)ms->paths_len;
	memcpy(ms->paths + ms->paths_len, path, plen);
	ms->paths[ms->paths_len + plen] = '\0';
	ms->paths_len += plen + 1;
	ms->n++;
	return 0;
}

/* One executable mapping, its kind and deletion told from its name as
 * /proc/PID/maps shows it. */
static int add_named(struct sym_maps *ms, size_t *cap, size_t *pcap, struct sym_map *m,
		     const char *path)
{
	static const char del[] = " (deleted)";
	size_t plen = strlen(path);

	if (plen > sizeof(del) - 1 && !strcmp(path + plen - (sizeof(del) - 1), del)) {
		plen -= sizeof(del) - 1;
		m->deleted = true;
	}
	if (!plen || strncmp(path, "[anon", 5) == 0)
		m->kind = SYM_MAP_ANON;
	else if (path[0] == '[')
		m->kind = SYM_MAP_SPECIAL;
	else if (path[0] != '/')
		m->kind = SYM_MAP_ANON; /* "memfd:..." has no usable path */
	else
		m->kind = SYM_MAP_FILE;
	return add_map(ms, cap, pcap, m, path, plen);
}

int procmaps_parse(const char *text, size_t len, uint32_t pid, struct sym_maps **ret)
{
	struct sym_maps *ms = calloc(1, sizeof(*ms));
	size_t cap = 0, pcap = 0;
	const char *p = text, *end = text + len;
	char line[4352];
	int r;

	if (!ms)
		return -ENOMEM;
	ms->pid = pid;
	while (p < end && ms->n < SYM_MAX_MAPPINGS) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (ll >= sizeof(line))
			ll = sizeof(line) - 1; /* PATH_MAX-bounded by the kernel anyway */
		memcpy(line, p, ll);
		line[ll] = '\0';
		p = nl ? nl + 1 : end;

		uint64_t start, stop, off, ino;
		unsigned maj, min;
		char perms[8];
		int n = -1;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &start, &stop, perms, &off, &maj, &min, &ino, &n) < 7 ||
		    n < 0)
			continue;
		if (strlen(perms) < 3 || perms[2] != 'x' || stop <= start)
			continue;
		struct sym_map m = {
			.start = start,
			.end = stop,
			.off = off,
			.ino = ino,
			.dev_major = maj,
			.dev_minor = min,
		};
		r = add_named(ms, &cap, &pcap, &m, line + n);
		if (r < 0)
			goto fail;
	}
	if (ms->n)
		qsort(ms->m, ms->n, sizeof(*ms->m), map_cmp);
	*ret = ms;
	return 0;
fail:
	procmaps_free(ms);
	return r;
}

/* The executable's mappings: those whose path is what /proc/PID/exe links
 * to (both print the path the same way, " (deleted)" and all), which pprof
 * needs for its main mapping. */
static void mark_exe(const char *proc_dir, uint32_t pid, struct sym_maps *ms)
{
	static const char del[] = " (deleted)";
	char path[256], exe[4352];
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/exe", proc_dir, pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	if ((size_t)n > sizeof(del) - 1 && !strcmp(exe + n - (sizeof(del) - 1), del))
		exe[n - (sizeof(del) - 1)] = '\0';
	for (size_t i = 0; i < ms->n; i++)
		ms->m[i].exe = ms->m[i].kind == SYM_MAP_FILE &&
			       !strcmp(sym_map_path(ms, &ms->m[i]), exe);
}

/*
 * The executable mappings through PROCMAP_QUERY (procmapq.h): the kernel
 * neither prints the mappings that are not executable nor their paths, and
 * nothing is parsed. -ENOTTY where it has no such ioctl. The text's
 * [vsyscall] line, the kernel's gate page, is no mapping of the process and
 * not listed (nothing runs there: glibc has not called it since 2.22).
 */
static int procmaps_query(int fd, uint32_t pid, struct sym_maps **ret)
{
	struct sym_maps *ms = calloc(1, sizeof(*ms));
	size_t cap = 0, pcap = 0;
	uint64_t addr = 0;
	char name[4352];
	int r = 0;

	if (!ms)
		return -ENOMEM;
	ms->pid = pid;
	while (ms->n < SYM_MAX_MAPPINGS) {
		struct pmq_map q;

		r = pmq_next(fd, addr, PMQ_EXEC, &q, name, sizeof(name));
		if (r == -ENOENT) {
			r = addr ? 0 : -ESRCH; /* none at all: no address space */
			break;
		}
		if (r < 0)
			break;
		if (q.end <= addr)
			break;
		addr = q.end;
		struct sym_map m = {
			.start = q.start,
			.end = q.end,
			.off = q.off,
			.ino = q.ino,
			.dev_major = q.dev_major,
			.dev_minor = q.dev_minor,
		};
		r = add_named(ms, &cap, &pcap, &m, name);
		if (r < 0)
			break;
	}
	if (r < 0) {
		procmaps_free(ms);
		return r;
	}
	*ret = ms; /* in address order, as the kernel walks them */
	return 0;
}

int procmaps_read(const char *proc_dir, uint32_t pid, struct sym_maps **ret)
{
	char path[256], *buf;
	size_t len;
	int fd, r;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", proc_dir, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = procmaps_query(fd, pid, ret);
	if (r != -ENOTTY && r != -EINVAL) {
		close(fd);
		if (r == 0)
			mark_exe(proc_dir, pid, *ret);
		return r;
	}
	/* a kernel before 6.11 (or a proc_dir that is not procfs): the text */
	r = sym_read_all(fd, SYM_MAX_MAPS_BYTES, &buf, &len);
	close(fd);
	if (r < 0)
		return r;
	if (len == 0) { /* a zombie, or a kernel thread: nothing to keep */
		free(buf);
		return -ESRCH;
	}
	r = procmaps_parse(buf, len, pid, ret);
	free(buf);
	if (r == 0)
		mark_exe(proc_dir, pid, *ret);
	return r;
}

void procmaps_free(struct sym_maps *m)
{
	if (!m)
		return;
	free(m->m);
	free(m->paths);
	free(m);
}

const struct sym_map *procmaps_find(const struct sym_maps *ms, uint64_t addr)
{
	size_t lo = 0, hi = ms ? ms->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ms->m[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= ms->m[lo - 1].end)
		return NULL;
	return &ms->m[lo - 1];
}
