/* SPDX-License-Identifier: MIT */
/*
 * Importer input sources (src.c): a memory buffer (fed in place), a regular
 * file mapped a window at a time (SIGBUS-guarded, see src.c), or read()
 * (pipes, sockets, small files). The pipelined gunzip thread (gunzip.c)
 * reads a source on its own thread; the guard state is per thread.
 */
#ifndef GPUPROF_TIMELINE_SRC_H
#define GPUPROF_TIMELINE_SRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gz_dec; /* gzdec.c: the inflate backend's state */

struct src {
	int fd; /* -1: memory */
	const uint8_t *mem;
	size_t mem_len, mem_off;
	/* mapped regular file: window [win, win + win_len) at file offset
	 * win_off; pos = next byte in it; map_end = size seen at the start */
	bool mapped;
	bool regular; /* fd is a regular file (set by src_map_start) */
	uint64_t file_size; /* its size then */
	uint8_t *win;
	size_t win_len, pos;
	uint64_t win_off, map_end;
	/* regular file: offset up to which bytes were handed out, mapped
	 * or read (what a parse took when a thread read ahead: gunzip.c) */
	uint64_t file_hi;
	uint8_t *in, *out;
	size_t chunk;
	bool gz, gz_done;
	struct gz_dec *gzd; /* gz_begin() .. gz_end() */
	uint64_t bytes_in;
	uint32_t io_timeout_ms;
};

/* Regular file, SIGBUS handled, mmap works: map from the next window on
 * (else leave s->mapped false: read()). Sets s->regular. */
void src_map_start(struct src *s);
/* Unmap the current window (and drop this thread's guard). */
void src_unmap(struct src *s);
/* Go on with read() from where the mapping got to; the pieces it handed
 * out are then gone. 0 or a negative errno. */
int src_map_stop(struct src *s);
/* A regular file now shorter than its size at the start, or than what
 * was read of it: the bytes read may not be one file's. */
bool src_shrank(const struct src *s);
/* Next piece of raw input, at most n bytes: *at points into the caller's
 * buffer for a memory source (no copy), else at buf after a read().
 * Returns the byte count, 0 at the end, or a negative errno. */
ssize_t src_raw(struct src *s, uint8_t *buf, size_t n, const uint8_t **at);
/* Whether a mapped window read by *this thread* faulted (SIGBUS, the rest
 * of it then read as zeros) since the last call; clears the flag. */
bool src_guard_take(void);
/* Hand the current window's guard from one thread to another: the thread
 * that stops reading calls it with own = false, the one that goes on
 * reading the same window with own = true (the guard is per thread, and a
 * fault in a window no thread claims kills the process). */
void src_guard_own(const struct src *s, bool own);

#endif /* GPUPROF_TIMELINE_SRC_H */
