// SPDX-License-Identifier: MIT
#include "gpd.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <time.h>

uint64_t gpd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t gpd_mono_to_realtime_ns(void)
{
	struct timespec m, r;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000ll +
	       ((int64_t)r.tv_nsec - (int64_t)m.tv_nsec);
}

int gpd_read_text(const char *path, size_t max, char **out, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *b = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r;

		if (!b || n + 1 >= cap) {
			char *nb;

			if (b)
				cap *= 2;
			if (cap > max + 1)
				break;
			nb = realloc(b, cap);
			if (!nb)
				break;
			b = nb;
		}
		r = read(fd, b + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (!b)
		return -ENOMEM;
	if (!n) {
		free(b);
		return -ESRCH;
	}
	b[n] = '\0';
	*out = b;
	if (len)
		*len = n;
	return 0;
}
