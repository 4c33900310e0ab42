/* SPDX-License-Identifier: MIT */
/*
 * A capture: a window of the store (or an imported trace) plus the filters
 * that cut it and its owner. Self-contained once taken: it holds copies of
 * the records, strings and stacks it uses, with ids renumbered locally, and
 * never points into the ring. Immutable once complete, so analyses may read
 * it from worker threads.
 *
 * On disk (docs/capture-format.md): "GPUPROFC" magic, version, then typed
 * sections each with its own length and CRC-32; written to a temporary file,
 * fsync()ed, renamed into place and the directory fsync()ed.
 */
#ifndef GPUPROF_CAPTURE_H
#define GPUPROF_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* 2: a launch record's bytes 8..15 hold its cgroup string id (was dur_ns,
 * always 0 for launches); version 1 files still load (no cgroup).
 * 3: the high half of aux[1] is a string id in the records that have
 * store_rec_detail() (CUPTI intervals, marks); older files load without it. */
#define CAPTURE_FORMAT_VERSION 3
#define CAPTURE_MAX_PIDS 64
#define CAPTURE_NAME_MAX 128

enum capture_kind {
	CAPTURE_LIVE = 0,   /* cut from the store */
	CAPTURE_IMPORT = 1, /* created from a trace file */
};

enum capture_state {
	CAPTURE_RECORDING = 0, /* forward window still open (in memory only) */
	CAPTURE_READY = 1,     /* complete and persisted */
	CAPTURE_DAMAGED = 2,   /* persisted file failed validation */
	CAPTURE_FAILED = 3,    /* could not be saved (in memory only, no data) */
};

/* Section types of the file format. Unknown types found on load are kept
 * as opaque extra sections and written back unchanged. */
enum capture_section_type {
	CAPSEC_META = 1, /* fixed little-endian header fields, see capfile.c */
	CAPSEC_STRINGS = 2,
	CAPSEC_STACKS = 3,
	CAPSEC_RECORDS = 4,
	CAPSEC_SYMBOLS = 5,	/* reserved: resolved frames (CPU-stacks issue) */
	CAPSEC_TIMELINE = 6,	/* imported timeline (timeline_encode) */
	CAPSEC_IMPORT_INFO = 7, /* JSON text: what an import read (files, ranks, warnings) */
	CAPSEC_TYPE_MAX = 0x10000,
};

struct capture_extra {
	uint32_t type;
	void *data; /* owned */
	size_t len;
};

struct capture_str {
	uint32_t off; /* into capture.str_blob */
	uint32_t len;
};

struct capture_stack {
	uint32_t off; /* into capture.ips */
	uint16_t nuser, nkernel;
};

/* A stack a section other than RECORDS refers to, with the process it was
 * taken in (the EU-stall profile's kernel launch stacks). */
struct capture_stackref {
	uint32_t pid, uid, stack;
};

/* Input of capture_add_stacks(): frames leaf first, user then kernel. */
struct capture_newstack {
	uint32_t pid, uid;
	const uint64_t *ips;
	uint16_t nuser, nkernel;
};

struct capture {
	uint64_t id;
	uint32_t owner_uid;
	enum capture_kind kind;
	enum capture_state state;
	char name[CAPTURE_NAME_MAX]; /* user label, NUL-terminated, may be "" */
	char damage[256];	     /* why, when state == CAPTURE_DAMAGED or CAPTURE_FAILED */

	uint64_t created_realtime_ns; /* CLOCK_REALTIME when taken */
	uint64_t t0_ns, t1_ns;	      /* window, CLOCK_MONOTONIC */
	int64_t mono_to_realtime_ns;  /* add to a monotonic ts for wall time */

	/* filters */
	int32_t pids[CAPTURE_MAX_PIDS];
	uint32_t npids;	 /* 0 = all processes the owner may see */
	bool uid_filter; /* only records with rec.uid == filter_uid */
	uint32_t filter_uid;

	/* counters */
	uint64_t store_evicted_in_window; /* records the ring lost before the cut */
	uint64_t warnings;

	/* data; string/stack ids in records index these tables (id - 1) */
	char *str_blob;
	size_t str_blob_len;
	struct capture_str *strs;
	uint32_t nstrs;
	uint64_t *ips;
	size_t nips;
	struct capture_stack *stacks;
	uint32_t nstacks;
	struct store_rec *recs;
	size_t nrecs;

	struct capture_extra *extras;
	size_t nextras;

	/* not persisted */
	size_t file_bytes;
	/* capture_add_stacks()'s references, for the symbolizer, which runs
	 * before the capture is saved (a loaded capture has none) */
	struct capture_stackref *stackrefs;
	size_t nstackrefs;
};

/* Filters applied by capture_take(). */
struct capture_filter {
	const int32_t *pids;
	size_t npids; /* 0 = all */
	bool uid_filter;
	uint32_t uid;
	/* only records whose type t has bit (1u << t) set; 0 = every type
	 * (a view that needs a few kinds of record copies no others) */
	uint32_t types;
};

/* Empty capture (for imports and tests). */
int capture_new(struct capture **ret);
void capture_free(struct capture *c);

/*
 * Copy the records in [t0_ns, t1_ns] matching f out of the store, with the
 * strings and stacks they use. Leaves id/owner/name to the caller.
 */
int capture_take(const struct store *s, const struct capture_filter *f, uint64_t t0_ns,
		 uint64_t t1_ns, struct capture **ret);

/* Lookups into a capture's own tables (NULL / 0 frames for id 0 or bad id). */
const char *capture_str(const struct capture *c, uint32_t id, size_t *len);
const uint64_t *capture_stack(const struct capture *c, uint32_t id, uint16_t *nuser,
			      uint16_t *nkernel);

/*
 * Give n stacks that a section refers to an id in c's stack table (an equal
 * stack already there is reused; ids[i] receives stack i's id) and note each
 * (pid, uid, id) in c->stackrefs, so that the symbolizer resolves them like
 * the records' stacks. Returns 0, -ENOMEM or -E2BIG (c unchanged then).
 */
int capture_add_stacks(struct capture *c, const struct capture_newstack *in, size_t n,
		       uint32_t *ids);

/* Add an opaque extra section; data is copied. */
int capture_add_extra(struct capture *c, uint32_t type, const void *data, size_t len);
/* Same, taking ownership of data (malloc'd, not NULL) on success; on
 * failure (-EINVAL, -ENOMEM) the caller still owns it. */
int capture_adopt_extra(struct capture *c, uint32_t type, void *data, size_t len);
const struct capture_extra *capture_find_extra(const struct capture *c, uint32_t type);

/* How much of a capture's window duty-cycled CUPTI libraries collected
 * (their STORE_REC_GPU_WINDOW records): pids = the pids that sent windows
 * (0: none did, every GPU record is all there was), covered_ns = the sum
 * over those pids of their windows within [t0, t1], fraction = covered_ns
 * / (pids * (t1 - t0)). */
struct capture_coverage {
	uint32_t pids, duty, period_ms; /* duty, period: of the last window */
	uint64_t windows, covered_ns;
	double fraction;
};
void capture_gpu_coverage(const struct capture *c, struct capture_coverage *cov);

/*
 * Persist atomically as "<id>.gpc" in dirfd: write "<id>.gpc.tmp"
 * (O_NOFOLLOW), fsync, renameat, fsync(dirfd). Sets c->file_bytes.
 * Returns 0 or -errno (-ENOSPC on a full disk; no partial file is left).
 */
int capture_save(struct capture *c, int dirfd);

/*
 * Load "<id>.gpc" from dirfd (never following symlinks). Returns 0, or
 * -EBADMSG with *ret holding a capture in state CAPTURE_DAMAGED (id, and
 * whatever header fields could be read, plus the reason in ->damage) when
 * the file fails validation, or another -errno with *ret untouched.
 */
int capture_load(int dirfd, uint64_t id, struct capture **ret);

/* Decode a capture from memory (the loader's core, also fuzzed). */
int capture_decode(const void *buf, size_t len, struct capture **ret, char *why, size_t whylen);
/* Encode to a malloc()ed buffer. */
int capture_encode(const struct capture *c, void **buf, size_t *len);

/* Unlink "<id>.gpc" from dirfd. */
int capture_unlink(int dirfd, uint64_t id);

/* Remove leftover "*.gpc.tmp" files (after a crash). Returns how many. */
int capture_clean_tmp(int dirfd);

#endif
