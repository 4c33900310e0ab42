// SPDX-License-Identifier: MIT
#include "framing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gpuprof/protocol.h>

#define READ_CHUNK 65536

void frame_buf_init(struct frame_buf *fb, size_t max)
{
	memset(fb, 0, sizeof(*fb));
	fb->max = max;
}

void frame_buf_finish(struct frame_buf *fb)
{
	free(fb->data);
	memset(fb, 0, sizeof(*fb));
}

int frame_buf_reserve(struct frame_buf *fb, char **p, size_t *avail)
{
	/* Drop consumed bytes first so the buffer never holds more than one
	 * partial message plus one read. */
	if (fb->off > 0) {
		memmove(fb->data, fb->data + fb->off, fb->len - fb->off);
		fb->len -= fb->off;
		fb->off = 0;
	}
	size_t want = fb->len + READ_CHUNK;
	size_t limit = fb->max + 1 + READ_CHUNK;
	if (want > limit)
		want = limit;
	if (want <= fb->len)
		return -EMSGSIZE;
	if (want > fb->cap) {
		/* Grow geometrically: a large message arriving in READ_CHUNK
		 * pieces must not cost a realloc (and a copy) per piece. */
		if (want < fb->cap * 2)
			want = fb->cap * 2 < limit ? fb->cap * 2 : limit;
		char *n = realloc(fb->data, want);
		if (!n)
			return -ENOMEM;
		fb->data = n;
		fb->cap = want;
	}
	*p = fb->data + fb->len;
	*avail = fb->cap - fb->len;
	return 0;
}

void frame_buf_commit(struct frame_buf *fb, size_t n)
{
	fb->len += n;
}

int frame_buf_next(struct frame_buf *fb, char **msg, size_t *len)
{
	char *start = fb->data + fb->off;
	size_t have = fb->len - fb->off;
	char *nl = have > fb->scanned
			   ? memchr(start + fb->scanned, GPUPROF_MSG_DELIM, have - fb->scanned)
			   : NULL;
	if (!nl) {
		fb->scanned = have;
		return have > fb->max ? -EMSGSIZE : 0;
	}
	size_t n = (size_t)(nl - start);
	if (n > fb->max)
		return -EMSGSIZE;
	*nl = '\0';
	*msg = start;
	*len = n;
	fb->off += n + 1;
	fb->scanned = 0;
	return 1;
}

size_t frame_buf_pending(const struct frame_buf *fb)
{
	return fb->len - fb->off;
}

bool json_nesting_ok(const char *text, size_t len, int max_depth)
{
	int depth = 0;
	bool in_str = false;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			break;
		case '[':
		case '{':
			if (++depth > max_depth)
				return false;
			break;
		case ']':
		case '}':
			depth--;
			break;
		default:
			break;
		}
	}
	return true;
}

/* Index just past the JSON value starting at i (whitespace skipped first). */
static size_t skip_value(const char *t, size_t len, size_t i)
{
	while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
		i++;
	int depth = 0;
	bool in_str = false;
	for (; i < len; i++) {
		char c = t[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"') {
				in_str = false;
				if (depth == 0)
					return i + 1;
			}
			continue;
		}
		if (c == '"') {
			in_str = true;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return i; /* end of the enclosing container */
			if (--depth == 0)
				return i + 1;
		} else if (depth == 0 &&
			   (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
			return i;
		}
	}
	return i;
}

bool json_member_span(const char *t, size_t len, const char *key, size_t *start, size_t *span)
{
	size_t klen = strlen(key), i = 0;
	while (i < len && t[i] != '{')
		i++;
	i++;
	while (i < len) {
		while (i < len && t[i] != '"' && t[i] != '}')
			i++;
		if (i >= len || t[i] == '}')
			return false;
		size_t kstart = i + 1;
		size_t kend = skip_value(t, len, i) - 1; /* the closing quote */
		i = kend + 1;
		while (i < len && t[i] != ':')
			i++;
		i++;
		while (i < len && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
			i++;
		size_t vend = skip_value(t, len, i);
		if (kend - kstart == klen && !memcmp(t + kstart, key, klen)) {
			*start = i;
			*span = vend - i;
			return true;
		}
		i = vend;
		while (i < len && t[i] != ',' && t[i] != '}')
			i++;
		if (i < len && t[i] == ',')
			i++;
	}
	return false;
}

ssize_t fd_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * GPUPROF_MAX_FDS_PER_MSG)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds > GPUPROF_MAX_FDS_PER_MSG)
		return -EINVAL;
	if (nfds > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	ssize_t r;
	do
		r = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

ssize_t fd_recv(int sock, void *buf, size_t len, int *fds, size_t *nfds, size_t maxfds,
		bool *truncated, int flags)
{
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	union {
		/* Room for more than we accept so excess fds are received
		 * (and closed) rather than silently leaked by the kernel's
		 * truncation. */
		char buf[CMSG_SPACE(sizeof(int) * (GPUPROF_MAX_FDS_PER_MSG + 8))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = u.buf,
		.msg_controllen = sizeof(u.buf),
	};
	ssize_t r;
	do
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (mh.msg_flags & MSG_CTRUNC)
		*truncated = true;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int got[GPUPROF_MAX_FDS_PER_MSG + 8];
		if (n > GPUPROF_MAX_FDS_PER_MSG + 8)
			n = GPUPROF_MAX_FDS_PER_MSG + 8;
		memcpy(got, CMSG_DATA(cm), n * sizeof(int));
		for (size_t i = 0; i < n; i++) {
			if (*nfds < maxfds) {
				fds[(*nfds)++] = got[i];
			} else {
				close(got[i]);
				*truncated = true;
			}
		}
	}
	return r;
}
