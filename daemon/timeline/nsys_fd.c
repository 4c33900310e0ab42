// SPDX-License-Identifier: MIT
/*
 * nsys importer: getting the export off a descriptor. It is read whole into
 * memory (bounded) for sqlite3_deserialize(), and timeline_import_any_fd()
 * tells an export from JSON by peeking at its first bytes without consuming
 * them.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nsys_int.h"

#define DEF_MAX_BYTES (64ull << 30)

/* Read fd to EOF into a malloc'ed buffer, at most max bytes. */
static int slurp(int fd, uint64_t max, uint32_t timeout_ms, uint8_t **out, size_t *outlen,
		 struct import_result *res)
{
	size_t len = 0, cap = 1 << 20;
	uint8_t *b = malloc(cap), *nb;
	struct stat st;

	if (!b)
		return -ENOMEM;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= max)
		cap = (size_t)st.st_size + 1; /* one read, no realloc */
	if ((nb = realloc(b, cap)))
		b = nb;
	for (;;) {
		ssize_t r;

		if (len == cap) {
			if (cap >= max + 1)
				goto too_big;
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			if (!(nb = realloc(b, cap))) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) { /* a client's non-blocking pipe */
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int pr = poll(&p, 1, timeout_ms ? (int)timeout_ms : -1);

			if (pr == 0) {
				free(b);
				return -ETIMEDOUT;
			}
			continue;
		}
		if (r < 0) {
			int e = -errno;

			free(b);
			return e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max)
			goto too_big;
	}
	*out = b;
	*outlen = len;
	return 0;
too_big:
	free(b);
	snprintf(res->error_msg, sizeof(res->error_msg),
		 "export larger than the import cap of %llu bytes", (unsigned long long)max);
	return -EFBIG;
}

int timeline_import_nsys_fd(int fd, const struct import_opts *o, struct timeline *tl,
			    struct import_result *res)
{
	struct import_result dummy;
	uint64_t max = o && o->max_bytes ? o->max_bytes : DEF_MAX_BYTES;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	err = slurp(fd, max, o ? o->io_timeout_ms : 0, &buf, &len, res);
	if (err) {
		if (!res->error_msg[0])
			snprintf(res->error_msg, sizeof(res->error_msg), "reading the export: %s",
				 strerror(-err));
		return res->error = err;
	}
	res->bytes_in = len;
	if (!timeline_is_sqlite(buf, len)) {
		free(buf);
		snprintf(res->error_msg, sizeof(res->error_msg), "not an SQLite database");
		return res->error = -EBADMSG;
	}
	err = nsys_import_db(buf, len, o, tl, res);
	res->bytes_in = len;
	free(buf);
	return err;
}

/*
 * Look at the first 16 bytes without consuming them: pread on a file,
 * MSG_PEEK on a socket, tee(2) into a private pipe on a pipe (tee copies
 * without consuming). 1 = SQLite, 0 = something else, <0 error.
 */
static int peek_sqlite(int fd, uint32_t timeout_ms)
{
	uint8_t h[16];
	struct stat st;
	ssize_t n = -1;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		off_t at = lseek(fd, 0, SEEK_CUR);

		n = pread(fd, h, sizeof(h), at < 0 ? 0 : at);
	} else if (S_ISSOCK(st.st_mode)) {
		n = recv(fd, h, sizeof(h), MSG_PEEK | MSG_WAITALL);
	} else if (S_ISFIFO(st.st_mode)) {
		int p[2];
		uint64_t end =
		    tl_mono_ns() + (uint64_t)(timeout_ms ? timeout_ms : 30000) * 1000000ull;

		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
			return -errno;
		for (;;) {
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			ssize_t t;

			if (poll(&pf, 1, 100) < 0 && errno != EINTR)
				break;
			t = tee(fd, p[1], sizeof(h), SPLICE_F_NONBLOCK);
			/* tee copies what is buffered now: fewer than 16 bytes means
			 * the writer is still going (or done, with a tiny file) */
			if (t >= (ssize_t)sizeof(h) || (t == 0 && (pf.revents & POLLHUP)) ||
			    (t < 0 && errno != EAGAIN && errno != EINTR) || tl_mono_ns() > end) {
				n = t > 0 ? read(p[0], h, (size_t)t) : t;
				break;
			}
			if (t > 0 && (pf.revents & POLLHUP)) {
				n = read(p[0], h, (size_t)t);
				break;
			}
			if (t > 0) {
				char drain[16];

				if (read(p[0], drain, (size_t)t) < 0)
					break;
				usleep(1000);
			}
		}
		close(p[0]);
		close(p[1]);
	} else {
		return 0;
	}
	return n >= (ssize_t)sizeof(h) && timeline_is_sqlite(h, (size_t)n);
}

int timeline_import_any_fd(int fd, const struct import_opts *o, struct timeline *tl,
			   struct import_result *res)
{
	int k = peek_sqlite(fd, o ? o->io_timeout_ms : 0);

	if (k > 0)
		return timeline_import_nsys_fd(fd, o, tl, res);
	return timeline_import_fd(fd, o, tl, res); /* JSON, plain or gzip */
}
