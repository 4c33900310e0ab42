// SPDX-License-Identifier: MIT
/*
 * Connection, request queue and reply queue: the non-blocking core that
 * both the event-loop API and the blocking calls (call.c) are built on.
 */
#include "client-private.h"
#include "framing.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "gpuprof-build.h"

GPUPROF_EXPORT int gpuprof_client_connect(const char *path, struct gpuprof_client **ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, r;

	if (!ret)
		return -EINVAL;
	if (!path || !*path)
		path = getenv(GPUPROF_SOCKET_ENV);
	if (!path || !*path)
		path = GPUPROF_DEFAULT_SOCKET;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Connect blocking (a Unix connect only waits for backlog room), then
	 * switch to non-blocking: every later wait goes through poll(). */
	do
		r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	while (r < 0 && errno == EINTR);
	r = r < 0 ? -errno : client_new_fd(fd, ret);
	if (r < 0)
		close(fd);
	return r;
}

int client_new_fd(int fd, struct gpuprof_client **ret)
{
	struct gpuprof_client *c;

	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
		return -errno;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->next_id = 1;
	frame_buf_init(&c->in, CLIENT_MAX_REPLY);
	*ret = c;
	return 0;
}

static void out_msg_free(struct out_msg *m)
{
	for (size_t i = 0; i < m->nfds; i++)
		close(m->fds[i]);
	free(m->buf);
	free(m);
}

GPUPROF_EXPORT void gpuprof_client_free(struct gpuprof_client *client)
{
	if (!client)
		return;
	while (client->out_head) {
		struct out_msg *m = client->out_head;
		client->out_head = m->next;
		out_msg_free(m);
	}
	while (client->replies_head) {
		struct reply *r = client->replies_head;
		client->replies_head = r->next;
		client_reply_free(r);
	}
	client_clear_error(client);
	frame_buf_finish(&client->in);
	close(client->fd);
	free(client);
}

GPUPROF_EXPORT void gpuprof_client_set_timeout(struct gpuprof_client *client, int timeout_ms)
{
	client->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
}

void client_clear_error(struct gpuprof_client *client)
{
	client->err_code = 0;
	free(client->err_message);
	free(client->err_data);
	client->err_message = NULL;
	client->err_data = NULL;
}

GPUPROF_EXPORT int gpuprof_client_error_code(const struct gpuprof_client *client)
{
	return client->err_code;
}

GPUPROF_EXPORT const char *gpuprof_client_error_message(const struct gpuprof_client *client)
{
	return client->err_message;
}

GPUPROF_EXPORT const char *gpuprof_client_error_data(const struct gpuprof_client *client)
{
	return client->err_data;
}

GPUPROF_EXPORT int gpuprof_client_get_fd(const struct gpuprof_client *client)
{
	return client->fd;
}

int client_build_request(uint64_t id, const char *method, const char *params_json, char **msg,
			 size_t *len)
{
	cJSON *req, *params = NULL;
	char *text;
	int r = -ENOMEM;

	if (!method || !*method)
		return -EINVAL;
	if (params_json) {
		params = cJSON_ParseWithOpts(params_json, NULL, 1);
		if (!params || !(cJSON_IsObject(params) || cJSON_IsArray(params))) {
			cJSON_Delete(params);
			return -EINVAL;
		}
	}
	req = cJSON_CreateObject();
	if (!req)
		goto out;
	if (!cJSON_AddStringToObject(req, "jsonrpc", "2.0") ||
	    !cJSON_AddNumberToObject(req, "id", (double)id) ||
	    !cJSON_AddStringToObject(req, "method", method))
		goto out;
	if (params) {
		cJSON_AddItemToObject(req, "params", params);
		params = NULL;
	}
	/* Unformatted output escapes control characters, so the message holds
	 * no raw delimiter. */
	text = cJSON_PrintUnformatted(req);
	if (!text)
		goto out;
	size_t n = strlen(text);
	if (n > GPUPROF_MAX_MSG_SIZE) {
		free(text);
		r = -EMSGSIZE;
		goto out;
	}
	char *buf = realloc(text, n + 2);
	if (!buf) {
		free(text);
		goto out;
	}
	buf[n] = GPUPROF_MSG_DELIM;
	buf[n + 1] = '\0';
	*msg = buf;
	*len = n + 1;
	r = 0;
out:
	cJSON_Delete(params);
	cJSON_Delete(req);
	return r;
}

static int queue_out(struct gpuprof_client *c, char *buf, size_t len, size_t off, const int *fds,
		     size_t nfds)
{
	struct out_msg *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	/* The caller may close its fds once we return: keep our own. */
	for (size_t i = 0; i < nfds; i++) {
		m->fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
		if (m->fds[i] < 0) {
			r = -errno;
			goto err;
		}
		m->nfds++;
	}
	m->buf = buf;
	m->len = len;
	m->off = off;
	if (c->out_tail)
		c->out_tail->next = m;
	else
		c->out_head = m;
	c->out_tail = m;
	c->out_pending += len - off;
	return 0;
err:
	m->buf = NULL;
	out_msg_free(m);
	return r;
}

static int broken_pipe(struct gpuprof_client *c, int err)
{
	if (err == -EPIPE || err == -ECONNRESET)
		err = -ECONNRESET;
	c->dead = err;
	return err;
}

GPUPROF_EXPORT int gpuprof_client_flush(struct gpuprof_client *client)
{
	while (client->out_head) {
		struct out_msg *m = client->out_head;
		ssize_t n = fd_send(client->fd, m->buf + m->off, m->len - m->off, m->fds,
				    m->off == 0 ? m->nfds : 0, MSG_DONTWAIT);
		if (n == -EAGAIN)
			return 0;
		if (n < 0)
			return broken_pipe(client, (int)n);
		/* The fds went with the first byte: ours can go. */
		for (size_t i = 0; i < m->nfds; i++)
			close(m->fds[i]);
		m->nfds = 0;
		m->off += (size_t)n;
		client->out_pending -= (size_t)n;
		if (m->off < m->len)
			return 0;
		client->out_head = m->next;
		if (!client->out_head)
			client->out_tail = NULL;
		out_msg_free(m);
	}
	return 0;
}

GPUPROF_EXPORT size_t gpuprof_client_pending_output(const struct gpuprof_client *client)
{
	return client->out_pending;
}

GPUPROF_EXPORT int gpuprof_client_send(struct gpuprof_client *client, const char *method,
				       const char *params_json, const int *fds, size_t nfds,
				       uint64_t *id)
{
	char *msg;
	size_t len, off = 0;
	int r;

	if (!client)
		return -EINVAL;
	if (nfds > GPUPROF_MAX_FDS_PER_MSG || (nfds && !fds))
		return -EINVAL;
	for (size_t i = 0; i < nfds; i++)
		if (fcntl(fds[i], F_GETFD) < 0)
			return -EBADF;
	if (client->dead)
		return client->dead;
	r = client_build_request(client->next_id, method, params_json, &msg, &len);
	if (r < 0)
		return r;

	if (!client->out_head) {
		ssize_t n = fd_send(client->fd, msg, len, fds, nfds, MSG_DONTWAIT);
		if (n < 0 && n != -EAGAIN) {
			free(msg);
			return broken_pipe(client, (int)n);
		}
		if (n == (ssize_t)len) {
			free(msg);
			goto sent;
		}
		if (n > 0) {
			/* The fds already left with the first chunk. */
			off = (size_t)n;
			nfds = 0;
		}
	}
	r = queue_out(client, msg, len, off, fds, nfds);
	if (r < 0) {
		free(msg);
		/* A partly written message cannot be taken back. */
		return off ? broken_pipe(client, r) : r;
	}
sent:
	if (id)
		*id = client->next_id;
	client->next_id++;
	return 0;
}

void client_reply_free(struct reply *r)
{
	if (!r)
		return;
	free(r->result);
	free(r->message);
	free(r->data);
	free(r);
}

static int parse_reply(struct gpuprof_client *c, const char *text, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	struct reply *r = NULL;
	int err = -EPROTO;

	if (!cJSON_IsObject(root))
		goto out;
	cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "id");
	cJSON *result = cJSON_GetObjectItemCaseSensitive(root, "result");
	cJSON *error = cJSON_GetObjectItemCaseSensitive(root, "error");
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		goto out;
	}
	if (cJSON_IsNumber(id) && id->valuedouble >= 1)
		r->id = (uint64_t)id->valuedouble;
	else if (!(error && cJSON_IsNull(id)))
		goto out;
	if (cJSON_IsObject(error)) {
		cJSON *code = cJSON_GetObjectItemCaseSensitive(error, "code");
		cJSON *msg = cJSON_GetObjectItemCaseSensitive(error, "message");
		cJSON *data = cJSON_GetObjectItemCaseSensitive(error, "data");
		r->code = cJSON_IsNumber(code) ? code->valueint : GPUPROF_ERR_INTERNAL;
		if (r->code == 0)
			r->code = GPUPROF_ERR_INTERNAL;
		r->message = strdup(cJSON_IsString(msg) ? msg->valuestring : "unknown error");
		if (data)
			r->data = cJSON_PrintUnformatted(data);
		if (!r->message || (data && !r->data)) {
			err = -ENOMEM;
			goto out;
		}
	} else if (result) {
		/* Hand the result on verbatim: a cJSON round trip would round
		 * 64-bit integers such as nanosecond timestamps. */
		size_t start, span;
		if (json_member_span(text, len, "result", &start, &span))
			r->result = strndup(text + start, span);
		else
			r->result = cJSON_PrintUnformatted(result);
		if (!r->result) {
			err = -ENOMEM;
			goto out;
		}
	} else {
		goto out;
	}
	if (c->replies_tail)
		c->replies_tail->next = r;
	else
		c->replies_head = r;
	c->replies_tail = r;
	c->nreplies++;
	r = NULL;
	err = 0;
out:
	client_reply_free(r);
	cJSON_Delete(root);
	return err;
}

GPUPROF_EXPORT int gpuprof_client_process(struct gpuprof_client *client)
{
	int r;

	while (!client->dead) {
		char *p, *msg;
		size_t avail, len;
		int fds[GPUPROF_MAX_FDS_PER_MSG];
		size_t nfds = 0;
		bool trunc = false;

		r = frame_buf_reserve(&client->in, &p, &avail);
		if (r < 0) {
			client->dead = r;
			break;
		}
		ssize_t n = fd_recv(client->fd, p, avail, fds, &nfds, GPUPROF_MAX_FDS_PER_MSG,
				    &trunc, MSG_DONTWAIT);
		/* The daemon never sends descriptors; do not leak stray ones. */
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (n == -EAGAIN)
			break;
		if (n < 0) {
			broken_pipe(client, (int)n);
			break;
		}
		if (n == 0)
			client->dead = -ECONNRESET;
		frame_buf_commit(&client->in, (size_t)n);
		while ((r = frame_buf_next(&client->in, &msg, &len)) > 0) {
			r = parse_reply(client, msg, len);
			if (r < 0) {
				client->dead = r;
				break;
			}
		}
		if (r < 0 && !client->dead)
			client->dead = r;
	}
	/* Replies that arrived before the failure are still delivered; the
	 * error shows once they have been taken. */
	if (client->nreplies)
		return (int)client->nreplies;
	return client->dead;
}

GPUPROF_EXPORT int gpuprof_client_next_reply(struct gpuprof_client *client, uint64_t *id,
					     char **result_json, int *err_code, char **err_message)
{
	struct reply *r = client->replies_head;

	if (!r)
		return 0;
	client->replies_head = r->next;
	if (!client->replies_head)
		client->replies_tail = NULL;
	client->nreplies--;
	if (id)
		*id = r->id;
	if (err_code)
		*err_code = r->code;
	if (result_json) {
		*result_json = r->result;
		r->result = NULL;
	}
	if (err_message) {
		*err_message = r->message;
		r->message = NULL;
	}
	client_reply_free(r);
	return 1;
}

struct reply *client_take_reply(struct gpuprof_client *client, uint64_t id)
{
	struct reply **pp, *prev = NULL;

	for (pp = &client->replies_head; *pp; prev = *pp, pp = &(*pp)->next) {
		struct reply *r = *pp;
		/* An error without id (the daemon could not read our request,
		 * or refused the connection) answers whoever waits. */
		if (r->id != id && r->id != 0)
			continue;
		*pp = r->next;
		if (client->replies_tail == r)
			client->replies_tail = prev;
		client->nreplies--;
		r->next = NULL;
		return r;
	}
	return NULL;
}
