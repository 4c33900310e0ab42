// SPDX-License-Identifier: MIT
/*
 * Importer input sources (moved out of import.c): a memory buffer, handed
 * out in place, or an fd read() into the caller's buffer, regular files
 * included. Those were mapped 16 MiB at a time behind a SIGBUS guard until
 * 2026-11-26; on this project's VMs reading out of the mapping cost more
 * than read()'s copy into a buffer that stays in cache, on every input
 * (docs/import.md "Reading files"). A file cut while it is read (an early
 * end, or shorter at the end than what was read) fails the import
 * (src_shrank()).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src.h"
#include "timeline_int.h"

int src_wait_in(int fd, uint32_t timeout_ms, const _Atomic bool *cancel)
{
	uint64_t end = timeout_ms ? tl_mono_ns() + (uint64_t)timeout_ms * 1000000ull : UINT64_MAX;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	for (;;) {
		uint64_t now = tl_mono_ns(), left;
		int pr;

		if (cancel && atomic_load(cancel))
			return -ECANCELED;
		if (now >= end)
			return -ETIMEDOUT;
		left = (end - now + 999999) / 1000000;
		pr = poll(&pfd, 1, left < SRC_CANCEL_POLL_MS ? (int)left : SRC_CANCEL_POLL_MS);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr > 0)
			return 0; /* data, EOF or an error: read() tells */
	}
}

void src_probe(struct src *s)
{
	struct stat st;
	off_t cur;

	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode) || (cur = lseek(s->fd, 0, SEEK_CUR)) < 0)
		return;
	s->regular = true;
	s->file_size = (uint64_t)st.st_size;
	s->file_hi = (uint64_t)cur;
}

bool src_shrank(const struct src *s)
{
	struct stat st;

	return s->regular && fstat(s->fd, &st) == 0 &&
	       ((uint64_t)st.st_size < s->file_hi || (uint64_t)st.st_size < s->file_size);
}

ssize_t src_raw(struct src *s, uint8_t *buf, size_t n, const uint8_t **at)
{
	if (s->fd < 0) {
		size_t k = s->mem_len - s->mem_off;

		if (k > n)
			k = n;
		*at = s->mem + s->mem_off;
		s->mem_off += k;
		s->bytes_in += k;
		if (s->digest)
			xxh64_update(s->digest, *at, k);
		return (ssize_t)k;
	}
	*at = buf;
	for (;;) {
		ssize_t r = read(s->fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			/* A client's pipe, switched to O_NONBLOCK by the daemon:
			 * wait for data, but never longer than io_timeout_ms. */
			int err = src_wait_in(s->fd, s->io_timeout_ms, s->cancel);

			if (err < 0)
				return err;
			continue;
		}
		if (r > 0) {
			s->bytes_in += (uint64_t)r;
			s->file_hi += (uint64_t)r;
			if (s->digest)
				xxh64_update(s->digest, buf, (size_t)r);
		}
		return r < 0 ? -errno : r;
	}
}
