/* SPDX-License-Identifier: MIT */
/*
 * Message framing shared by gpuprofd and libgpuprof-client: a bounded
 * byte buffer split on GPUPROF_MSG_DELIM, a JSON nesting pre-check, and
 * SCM_RIGHTS send/receive helpers. Internal (static library), never
 * exported from the client library.
 */
#ifndef GPUPROF_COMMON_FRAMING_H
#define GPUPROF_COMMON_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct frame_buf {
	char *data;
	size_t len;	/* bytes held */
	size_t off;	/* start of unconsumed bytes */
	size_t scanned; /* bytes after off already searched for the delimiter */
	size_t cap;
	size_t max; /* largest message accepted, delimiter excluded */
};

/* Initialise an empty buffer that accepts messages up to max bytes. */
void frame_buf_init(struct frame_buf *fb, size_t max);
void frame_buf_finish(struct frame_buf *fb);

/*
 * Make room for reading: on success *p points at free space of *avail
 * (>= 1) bytes. Fails with -ENOMEM. Never grows past max + a read chunk.
 */
int frame_buf_reserve(struct frame_buf *fb, char **p, size_t *avail);
void frame_buf_commit(struct frame_buf *fb, size_t n);

/*
 * Pop the next complete message. Returns 1 with *msg and *len set (the
 * delimiter is replaced by '\0', so *msg is a C string of length *len;
 * valid until the next reserve), 0 if no complete message is buffered,
 * -EMSGSIZE if the buffered partial message is already longer than max.
 */
int frame_buf_next(struct frame_buf *fb, char **msg, size_t *len);

/* Bytes buffered but not yet returned as messages. */
size_t frame_buf_pending(const struct frame_buf *fb);

/*
 * Scan JSON text for nesting deeper than max_depth, outside strings.
 * Returns true when the nesting stays within max_depth. Cheap (one pass),
 * run before the real parser so a hostile message cannot recurse deeply.
 */
bool json_nesting_ok(const char *text, size_t len, int max_depth);

/*
 * Find the value of top-level member `key` of the JSON object `text` (which
 * must already be known to be valid JSON) and return its byte span, so it
 * can be handed on verbatim: re-printing through cJSON would round 64-bit
 * integers. Returns true when found.
 */
bool json_member_span(const char *text, size_t len, const char *key, size_t *start, size_t *span);

/*
 * sendmsg() with optional fds as SCM_RIGHTS and MSG_NOSIGNAL | flags.
 * Returns bytes sent or -errno.
 */
ssize_t fd_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags);

/*
 * recvmsg() with MSG_CMSG_CLOEXEC | flags. Received fds are appended to
 * fds[*nfds..maxfds); any beyond maxfds are closed and *truncated set.
 * Returns bytes read (0 = EOF) or -errno.
 */
ssize_t fd_recv(int sock, void *buf, size_t len, int *fds, size_t *nfds, size_t maxfds,
		bool *truncated, int flags);

#endif
