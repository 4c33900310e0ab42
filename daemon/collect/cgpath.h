/* SPDX-License-Identifier: MIT */
/*
 * cgroup v2 id -> cgroup path, for per-container attribution.
 *
 * BPF records carry bpf_get_current_cgroup_id(): the kernfs node id of the
 * task's cgroup on the unified (v2) hierarchy, which is also the inode
 * number of its directory under the cgroup2 mount. The path, relative to
 * that mount ("/system.slice/foo.service", "/" for the root), is found
 *   1. by file handle: open_by_handle_at() on the mount with the id as a
 *      kernfs handle (exact, needs CAP_DAC_READ_SEARCH), then the fd's
 *      /proc/self/fd link;
 *   2. else from /proc/PID/cgroup's "0::" line, accepted only when the
 *      directory there still has the id as its inode (the task may have
 *      moved since the record was taken).
 * A host without a cgroup2 mount (cgroup v1 only) reports no cgroup.
 *
 * The cache maps ids to store strings (one store reference held per
 * entry), so a record costs one look-up; resolution runs only on a miss.
 * Bounded: CGPATH_SLOTS entries, CGPATH_WAYS-way, least recently used
 * replaced; a failed resolution is remembered and retried at most once per
 * CGPATH_RETRY_NS. Single-threaded (the event loop).
 */
#ifndef GPUPROF_COLLECT_CGPATH_H
#define GPUPROF_COLLECT_CGPATH_H

#include <stddef.h>
#include <stdint.h>

struct store;

#define CGPATH_SLOTS 1024u
#define CGPATH_WAYS 4u
#define CGPATH_RETRY_NS 1000000000ull

struct cgpath_slot {
	uint64_t id;	    /* 0 = empty slot */
	uint32_t str;	    /* store string id (one reference), 0 = not resolved */
	uint32_t used;	    /* clock of the last use */
	uint64_t failed_ns; /* when resolution last failed (str 0) */
};

struct cgpath {
	int mnt_fd;		  /* the cgroup2 mount, -1 when none */
	char mnt[256];		  /* its mount point */
	char reason[160];	  /* why there are no paths (mnt_fd -1) */
	int handle_type;	  /* kernfs file-handle type, learned from the mount */
	struct cgpath_slot *slot; /* CGPATH_SLOTS, allocated on first use */
	uint32_t clock;
	uint64_t resolved, failed, by_handle, by_proc; /* counters for status */
};

/* Find the cgroup2 mount (mountinfo: mountinfo_path, NULL for
 * /proc/self/mountinfo). Without one, cg->mnt_fd is -1 and cg->reason says
 * why; lookups then give 0. Returns 0 or -ENOMEM. */
int cgpath_init(struct cgpath *cg, const char *mountinfo_path);

/* Drop the cached strings' references (s NULL: the store is going away,
 * only free) and close the mount. */
void cgpath_finish(struct cgpath *cg, struct store *s);

/* Forget the cache (references dropped as for cgpath_finish), keep the
 * mount. */
void cgpath_clear(struct cgpath *cg, struct store *s);

/*
 * The path of cgroup id into buf (NUL-terminated), pid a task believed to
 * be in it (0: none, only the file handle is tried). Slow: syscalls.
 * Returns 0, -ENODEV without a cgroup2 mount, -ENOENT when the cgroup is
 * gone or pid has left it, -ENAMETOOLONG, or another -errno.
 */
int cgpath_resolve(struct cgpath *cg, uint64_t id, uint32_t pid, char *buf, size_t size);

/*
 * A new store reference to the path string of cgroup id (cached), or 0 when
 * it is unknown (no mount, not resolvable, store tables full). now_ns
 * (CLOCK_MONOTONIC) paces retries of failed ids.
 */
uint32_t cgpath_get(struct cgpath *cg, struct store *s, uint64_t id, uint32_t pid, uint64_t now_ns);

#endif
