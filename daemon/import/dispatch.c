// SPDX-License-Identifier: MIT
/*
 * The import dispatcher: timeline_import_any_fd() tells an Nsight Systems
 * SQLite export from Kineto JSON (plain or gzip) by peeking at the first
 * bytes of a descriptor without consuming them, then hands it to that
 * format's reader (nsys/, kineto/).
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import.h"
#include "timeline_int.h"

/*
 * Look at the first 16 bytes without consuming them: pread on a file,
 * MSG_PEEK on a socket, tee(2) into a private pipe on a pipe (tee copies
 * without consuming). 1 = SQLite, 0 = something else, <0 error: -ETIMEDOUT
 * when a pipe brought no byte in timeout_ms (the import that would follow
 * would only wait as long again), -ECANCELED.
 */
static int peek_sqlite(int fd, uint32_t timeout_ms, const _Atomic bool *cancel)
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
		ssize_t seen = 0;

		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
			return -errno;
		for (;;) {
			struct pollfd pf = {.fd = fd, .events = POLLIN};
			ssize_t t;

			if (cancel && atomic_load(cancel)) {
				n = -ECANCELED;
				break;
			}
			if (poll(&pf, 1, 100) < 0 && errno != EINTR)
				break;
			t = tee(fd, p[1], sizeof(h), SPLICE_F_NONBLOCK);
			/* tee copies what is buffered now: fewer than 16 bytes means
			 * the writer is still going (or done, with a tiny file) */
			if (t >= (ssize_t)sizeof(h) || (t == 0 && (pf.revents & POLLHUP)) ||
			    (t < 0 && errno != EAGAIN && errno != EINTR)) {
				n = t > 0 ? read(p[0], h, (size_t)t) : t;
				break;
			}
			if (tl_mono_ns() > end) {
				/* nothing at all: the writer stalled */
				n = t > 0 ? read(p[0], h, (size_t)t) : seen > 0 ? 0 : -ETIMEDOUT;
				break;
			}
			if (t > 0 && (pf.revents & POLLHUP)) {
				n = read(p[0], h, (size_t)t);
				break;
			}
			if (t > 0) {
				char drain[16];

				seen = t;
				if (read(p[0], drain, (size_t)t) < 0)
					break;
				usleep(1000);
			}
		}
		close(p[0]);
		close(p[1]);
		if (n == -ETIMEDOUT || n == -ECANCELED)
			return (int)n;
	} else {
		return 0;
	}
	return n >= (ssize_t)sizeof(h) && timeline_is_sqlite(h, (size_t)n);
}

int timeline_import_any_fd(int fd, const struct import_opts *o, struct timeline *tl,
			   struct import_result *res)
{
	int k = peek_sqlite(fd, o ? o->io_timeout_ms : 0, o ? o->cancel : NULL);

	if (k < 0) {
		if (res) {
			memset(res, 0, sizeof(*res));
			snprintf(res->error_msg, sizeof(res->error_msg), "%s",
				 k == -ETIMEDOUT ? "no data" : strerror(-k));
			res->error = k;
		}
		return k;
	}
	if (k > 0)
		return timeline_import_nsys_fd(fd, o, tl, res);
	return timeline_import_fd(fd, o, tl, res); /* JSON, plain or gzip */
}
