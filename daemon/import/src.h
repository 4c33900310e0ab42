/* SPDX-License-Identifier: MIT */
/*
 * Importer input sources (src.c): a memory buffer (fed in place) or an fd
 * read() (regular files, pipes, sockets). The pipelined gunzip thread
 * (gunzip.c) reads a source on its own thread.
 */
#ifndef GPUPROF_IMPORT_SRC_H
#define GPUPROF_IMPORT_SRC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xxh64.h"

struct gz_dec; /* gzdec.c: the inflate backend's state */

struct src {
	int fd; /* -1: memory */
	const uint8_t *mem;
	size_t mem_len, mem_off;
	bool regular;	    /* fd is a regular file (set by src_probe) */
	uint64_t file_size; /* its size then */
	/* regular file: offset up to which bytes were read (what a parse
	 * took when a thread read ahead: gunzip.c) */
	uint64_t file_hi;
	uint8_t *in, *out;
	size_t chunk;
	bool gz, gz_done;
	struct gz_dec *gzd; /* gz_begin() .. gz_end() */
	uint64_t bytes_in;
	/* NULL, or every raw byte handed out is hashed into it, in order
	 * (import_opts.digest) */
	struct xxh64 *digest;
	uint32_t io_timeout_ms;
	const _Atomic bool *cancel; /* import_opts.cancel */
};

/* Wait until fd is readable: 0; -ETIMEDOUT after timeout_ms (0: no limit)
 * without; -ECANCELED within SRC_CANCEL_POLL_MS of *cancel being set. */
#define SRC_CANCEL_POLL_MS 100
int src_wait_in(int fd, uint32_t timeout_ms, const _Atomic bool *cancel);

/* A regular file: set s->regular, its size now and the file offset. */
void src_probe(struct src *s);
/* A regular file now shorter than its size at the start, or than what
 * was read of it: the bytes read may not be one file's. */
bool src_shrank(const struct src *s);
/* Next piece of raw input, at most n bytes: *at points into the memory
 * source (no copy), else at buf after a read().
 * Returns the byte count, 0 at the end, or a negative errno. */
ssize_t src_raw(struct src *s, uint8_t *buf, size_t n, const uint8_t **at);

#endif /* GPUPROF_IMPORT_SRC_H */
