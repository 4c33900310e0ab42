/* SPDX-License-Identifier: MIT */
/*
 * Trace importers: a Kineto / Chrome-trace JSON file (plain or gzip,
 * kineto/) or an Nsight Systems SQLite export (nsys/) read from a
 * descriptor into the timeline model (timeline/timeline.h). The
 * dispatcher (dispatch.c) tells the formats apart; docs/import.md
 * describes each reader and every limit below.
 */
#ifndef GPUPROF_IMPORT_H
#define GPUPROF_IMPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "timeline/timeline.h"

/* ---- import (Kineto / Chrome trace JSON, plain or gzip) --------------- */

enum import_warn {
	IMPORT_W_MISSING_TS = 0, /* event with dur+cat but no usable ts: dropped */
	IMPORT_W_BAD_NUMBER,	 /* NaN/Inf/out of range/non-numeric where a number was expected */
	IMPORT_W_NEG_DUR,	 /* negative dur in the file (kept, as HTA) */
	IMPORT_W_UNKNOWN_PH,	 /* ph not in the Chrome trace set (kept if dur+cat) */
	IMPORT_W_BAD_UTF8,	 /* invalid UTF-8 in a string (replaced by U+FFFD) */
	IMPORT_W_STR_TRUNC,	 /* string longer than max_string (truncated) */
	IMPORT_W_DUPLICATE,	 /* exact duplicate event (kept, as HTA) */
	IMPORT_W_BAD_FIELD,	 /* field of the wrong JSON type (ignored) */
	IMPORT_W_TOO_MANY,	 /* events beyond UINT32 positions / max_events (dropped) */
	IMPORT_W_COUNT
};

struct import_opts {
	int32_t rank;		 /* used when the file has no distributedInfo.rank; -1 → 0 */
	uint64_t max_bytes;	 /* cap on uncompressed JSON bytes; 0 = 64 GiB */
	uint32_t max_depth;	 /* JSON nesting limit; 0 = 64 */
	uint32_t max_string;	 /* longest string kept, bytes; 0 = 64 KiB */
	uint32_t max_events;	 /* 0 = no cap below UINT32_MAX - 1 */
	uint32_t chunk_size;	 /* read() size; 0 = 64 KiB (tests use 1) */
	unsigned finalize_flags; /* passed to timeline_finalize() */
	bool no_finalize;	 /* multi-rank: import all, then timeline_finalize() once */
	/* gzip input of 64 KiB or more from memory or a regular file is
	 * inflated on a second thread, pipelined with the parse (a large
	 * plain one is read and partly parsed there, and the event arrays
	 * of a large plain input are populated ahead on an idle-priority
	 * thread); true: all of it on the calling thread (same results
	 * either way). */
	bool no_inflate_thread;
	/* gzip: inflate with zlib even in a build with ISA-L (which is ~3x
	 * faster and the default where meson found libisal). Same timelines
	 * and error texts; the compressed offset of a corrupt-data error and
	 * what was parsed before a gzip error may differ. */
	bool inflate_zlib;
	/* With the second thread (gzip inflate, or copying a plain source
	 * of 1 MiB or more): 0 = it also parses whole events of the pieces
	 * it fills while the parser is busy (same results), 1 = it does not,
	 * 2 = it tries every piece (tests). */
	uint8_t spec;
	/* A non-blocking fd (a client's pipe): longest wait for data, ms;
	 * 0 = wait forever. Past it the import fails with -ETIMEDOUT. */
	uint32_t io_timeout_ms;
	/* Set (by another thread) to stop the import: waits for data end
	 * within 100 ms and the import fails with -ECANCELED. NULL: never. */
	const _Atomic bool *cancel;
	/* NULL, or a struct xxh64 (xxh64.h) the raw bytes of a Kineto JSON
	 * file (gzip or not) are hashed into as they are read, for the
	 * critical-path overlay to tell the file again. Not an nsys export. */
	struct xxh64 *digest;
	/* Memory the import may hold: the events, args and strings it keeps
	 * (with what tl held before), an SQLite export read into memory. Past
	 * it the import fails with -EFBIG, error_msg naming max_mem_name.
	 * 0 = no limit. */
	uint64_t max_mem;
	const char *max_mem_name; /* NULL: "the import's memory limit" */
	/* Called from the importing thread as that memory grows past what was
	 * reserved so far: bytes is the new total to reserve (at most max_mem
	 * when set). 0 goes on; < 0 fails the import with -EFBIG and msg as
	 * error_msg. NULL: nothing to reserve from. */
	int (*mem_reserve)(void *arg, uint64_t bytes, char *msg, size_t msg_len);
	void *mem_arg;
	/* Optional progress callback: uncompressed bytes parsed so far. */
	void (*progress)(void *arg, uint64_t bytes);
	void *progress_arg;
};

struct import_result {
	int32_t rank; /* the rank the events went to */
	bool gzip;
	uint64_t bytes_in;   /* bytes read from the fd */
	uint64_t bytes_json; /* uncompressed JSON bytes parsed */
	/* of those, bytes whose events the inflate thread parsed */
	uint64_t bytes_spec;
	uint64_t events_raw;  /* elements of traceEvents */
	uint64_t events_kept; /* after the step filter (if finalized) */
	/* flow events (ph s/t/f with an id) seen; counted, not kept: HTA drops
	 * them at load and no analysis reads them */
	uint64_t flows;
	uint64_t warnings[IMPORT_W_COUNT];
	uint64_t warnings_total;
	int error;	       /* 0 or negative errno (also the return value) */
	uint64_t error_offset; /* byte offset in the uncompressed JSON */
	char error_msg[256];   /* "" or e.g. "nesting deeper than 64 at byte 1234" */
	/* Added for the Nsight Systems importer (zero for Kineto JSON). */
	uint32_t format; /* enum import_format */
	uint32_t nranks; /* ranks added: an nsys export may hold several (rank..rank+n-1) */
	/* nsys: NCCL kernels, and those whose message size / communicator id
	 * the export does not give (no NVTX payload: exported without
	 * --include-blobs, NCCL < 2.25, NCCL NVTX off); never guessed */
	uint32_t nccl_kernels, nccl_no_bytes, nccl_no_comm;
};

enum import_format { IMPORT_FMT_KINETO = 0, IMPORT_FMT_NSYS = 1 };

/*
 * Import one trace file (one rank) from fd (read until EOF; the fd is not
 * closed) into tl, which may already hold other ranks (importing a rank that
 * is already present fails with -EEXIST). gzip is detected by its magic.
 * Returns 0, or a negative errno with res->error_msg / error_offset set:
 * -EBADMSG malformed JSON / gzip, -EFBIG over max_bytes, -ELOOP too deep,
 * -EEXIST rank present, -ENOMEM, or a read() error. On failure tl is left as
 * it was. Thread-safe for distinct timelines. res and o may be NULL.
 */
int timeline_import_fd(int fd, const struct import_opts *o, struct timeline *tl,
		       struct import_result *res);
/* Same from memory (tests, fuzzing). */
int timeline_import_buf(const void *buf, size_t len, const struct import_opts *o,
			struct timeline *tl, struct import_result *res);

const char *import_warn_name(enum import_warn w);
/* The inflate backend a gzip import uses by default: "isa-l" or "zlib". */
const char *import_inflate_backend(void);

/* ---- import (Nsight Systems SQLite export, nsys.c) --------------------- */

/*
 * `nsys export --type sqlite` files into the same model (docs/import.md):
 * one rank per (process, CUDA device) with GPU work, numbered from o->rank,
 * or when that is < 0 from one past the highest rank already in tl; kernels,
 * memcpy/memset, CUDA syncs, runtime/driver calls, NVTX ranges; NCCL kernels
 * get the collective args (name, bytes as "Byte" elements, group size,
 * communicator id as pg_name) from NCCL's NVTX ranges and payloads.
 * Times are absolute: session start (utcEpochNs) + start. The file is read
 * into memory (o->max_bytes cap) and opened read-only with
 * sqlite3_deserialize. Errors as timeline_import_fd (-EBADMSG: not SQLite or
 * corrupt, -EFBIG, -EEXIST, -ETIMEDOUT, -ENOMEM); tl unchanged on failure.
 */
int timeline_import_nsys_fd(int fd, const struct import_opts *o, struct timeline *tl,
			    struct import_result *res);
int timeline_import_nsys_buf(const void *buf, size_t len, const struct import_opts *o,
			     struct timeline *tl, struct import_result *res);
/* buf starts with the SQLite magic "SQLite format 3\0". */
bool timeline_is_sqlite(const void *buf, size_t len);
/* Detect the format from the first bytes without consuming them (pread on a
 * file, MSG_PEEK on a socket, tee(2) on a pipe), then import nsys or JSON. */
int timeline_import_any_fd(int fd, const struct import_opts *o, struct timeline *tl,
			   struct import_result *res);

#endif /* GPUPROF_IMPORT_H */
