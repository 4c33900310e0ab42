/* SPDX-License-Identifier: MIT */
/*
 * The fake daemon of the client tests (test_client*.c): the far end of a
 * socketpair() speaking the real framing (common/framing.h) from a thread
 * that runs a per-test script.
 */
#ifndef GPUPROF_TESTS_CLIENT_FAKE_SRV_H
#define GPUPROF_TESTS_CLIENT_FAKE_SRV_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "client-private.h"
#include "framing.h"
#include "test.h"

struct srv {
	int fd;
	struct frame_buf fb;
	int fds[16];
	size_t nfds;
	void (*script)(struct srv *s);
	pthread_t thread;
	char method[128];
	int64_t id;
	cJSON *params;
};

/* Read the next request; false at EOF. Received fds queue in s->fds. */
static inline bool srv_read(struct srv *s)
{
	char *msg, *p;
	size_t len, avail;
	bool trunc = false;

	cJSON_Delete(s->params);
	s->params = NULL;
	for (;;) {
		if (frame_buf_next(&s->fb, &msg, &len) == 1)
			break;
		if (frame_buf_reserve(&s->fb, &p, &avail) < 0)
			return false;
		ssize_t n = fd_recv(s->fd, p, avail, s->fds, &s->nfds, 16, &trunc, 0);
		if (n <= 0)
			return false;
		frame_buf_commit(&s->fb, (size_t)n);
	}
	cJSON *req = cJSON_Parse(msg);
	cJSON *m = cJSON_GetObjectItem(req, "method");
	snprintf(s->method, sizeof(s->method), "%s", cJSON_IsString(m) ? m->valuestring : "?");
	s->id = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "id"));
	if (!cJSON_IsString(cJSON_GetObjectItem(req, "jsonrpc")))
		s->id = -1;
	s->params = cJSON_DetachItemFromObject(req, "params");
	cJSON_Delete(req);
	return true;
}

static inline void srv_send(struct srv *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void srv_send(struct srv *s, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	fd_send(s->fd, buf, (size_t)n, NULL, 0, 0);
}

static inline int srv_take_fd(struct srv *s)
{
	if (!s->nfds)
		return -1;
	int fd = s->fds[0];
	memmove(s->fds, s->fds + 1, --s->nfds * sizeof(int));
	return fd;
}

static inline void *srv_main(void *arg)
{
	struct srv *s = arg;

	s->script(s);
	return NULL;
}

/* A client wired to a server running script in a thread. */
static inline struct gpuprof_client *start(struct srv *s, void (*script)(struct srv *s))
{
	struct gpuprof_client *c = NULL;
	int sv[2];

	memset(s, 0, sizeof(*s));
	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s->fd = sv[1];
	frame_buf_init(&s->fb, 1 << 20);
	CHECK_EQ_INT(client_new_fd(sv[0], &c), 0);
	s->script = script;
	if (script)
		pthread_create(&s->thread, NULL, srv_main, s);
	return c;
}

static inline void stop(struct srv *s, struct gpuprof_client *c)
{
	gpuprof_client_free(c);
	if (s->script)
		pthread_join(s->thread, NULL);
	while (s->nfds)
		close(srv_take_fd(s));
	cJSON_Delete(s->params);
	frame_buf_finish(&s->fb);
	close(s->fd);
}

#endif
