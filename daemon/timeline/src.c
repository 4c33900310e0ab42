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

void src_probe(struct src *s)
{
	struct stat st;
	off_t cur;

	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (cur = lseek(s->fd, 0, SEEK_CUR)) < 0)
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
			struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
			int pr = poll(&pfd, 1, s->io_timeout_ms > 0 ? (int)s->io_timeout_ms : -1);
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0)
				return -ETIMEDOUT;
			if (pr < 0)
				return -errno;
			continue;
		}
		if (r > 0) {
			s->bytes_in += (uint64_t)r;
			s->file_hi += (uint64_t)r;
		}
		return r < 0 ? -errno : r;
	}
}
