// SPDX-License-Identifier: MIT
/*
 * Blocking calls: wait for one reply with poll(), optionally moving bulk
 * bytes between the caller's pipe/terminal and a pipe of our own that the
 * daemon gets instead (the daemon switches passed pipes to O_NONBLOCK,
 * which would break a caller that shares that pipe, e.g. a shell's stdout).
 */
#include "client-private.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

/* After a successful output reply the daemon has written everything; allow
 * it this long to close its end of our pipe before we stop draining. */
#define OUTPUT_EOF_GRACE_MS 5000

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool pump_done(const struct pump *p)
{
	return p->src_eof && p->off == p->len;
}

/* Move what is ready. Returns 1 on progress, 0 on none, -errno on failure. */
static int pump_run(struct pump *p, short src_ev, short dst_ev)
{
	int progress = 0;
	ssize_t n;

	if (p->off == p->len && !p->src_eof && (src_ev & (POLLIN | POLLHUP | POLLERR))) {
		n = read(p->src, p->buf, sizeof(p->buf));
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n == 0) {
			p->src_eof = true;
			progress = 1;
		} else if (n > 0) {
			p->off = 0;
			p->len = (size_t)n;
			progress = 1;
		}
	}
	if (p->off < p->len && (dst_ev & (POLLOUT | POLLERR | POLLHUP))) {
		n = write(p->dst, p->buf + p->off, p->len - p->off);
		if (n < 0 && errno == EPIPE && p->close_dst_at_eof) {
			/* The daemon stopped reading (it failed the request);
			 * its reply says why. */
			p->off = p->len = 0;
			p->src_eof = true;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return -errno;
		} else if (n > 0) {
			p->off += (size_t)n;
			progress = 1;
		}
	}
	if (pump_done(p) && p->close_dst_at_eof && p->dst >= 0) {
		close(p->dst);
		p->dst = -1;
	}
	return progress;
}

struct reply *client_wait_reply(struct gpuprof_client *c, uint64_t id, struct pump *pump, int *err)
{
	int64_t deadline = c->timeout_ms ? now_ms() + c->timeout_ms : -1;
	int64_t grace = -1;
	struct reply *r = NULL;
	int ret;

	for (;;) {
		struct pollfd pfd[3];
		nfds_t n = 0;
		int sock_i = -1, src_i = -1, dst_i = -1, tmo = -1;

		if (!r)
			r = client_take_reply(c, id);
		if (r) {
			/* Output pumps drain until the daemon closes its end;
			 * input pumps and failed requests are done. */
			if (!pump || r->code || pump->close_dst_at_eof || pump_done(pump))
				return r;
			if (grace < 0)
				grace = now_ms() + OUTPUT_EOF_GRACE_MS;
		} else if (c->dead) {
			ret = c->dead;
			goto fail;
		}

		if (!r) {
			sock_i = (int)n;
			pfd[n].fd = c->fd;
			pfd[n++].events = POLLIN | (c->out_pending ? POLLOUT : 0);
		}
		if (pump && !pump_done(pump)) {
			if (pump->off == pump->len && !pump->src_eof) {
				src_i = (int)n;
				pfd[n].fd = pump->src;
				pfd[n++].events = POLLIN;
			} else if (pump->off < pump->len) {
				dst_i = (int)n;
				pfd[n].fd = pump->dst;
				pfd[n++].events = POLLOUT;
			}
		}
		int64_t until = deadline;
		if (grace >= 0 && (until < 0 || grace < until))
			until = grace;
		if (until >= 0) {
			int64_t left = until - now_ms();
			if (left <= 0) {
				if (r) /* grace over: the output is complete */
					return r;
				ret = -ETIMEDOUT;
				c->dead = ret;
				goto fail;
			}
			tmo = left > 1000000 ? 1000000 : (int)left;
		}
		if (poll(pfd, n, tmo) < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto fail;
		}
		if (sock_i >= 0) {
			if (pfd[sock_i].revents & POLLOUT) {
				ret = gpuprof_client_flush(c);
				if (ret < 0)
					goto fail;
			}
			if (pfd[sock_i].revents & (POLLIN | POLLHUP | POLLERR)) {
				ret = gpuprof_client_process(c);
				if (ret < 0 && !c->nreplies)
					goto fail;
			}
		}
		if (src_i >= 0 || dst_i >= 0) {
			ret = pump_run(pump, src_i >= 0 ? pfd[src_i].revents : 0,
				       dst_i >= 0 ? pfd[dst_i].revents : 0);
			if (ret < 0) {
				/* We abandon a request in flight: the stream is
				 * out of step from here on. */
				c->dead = ret;
				goto fail;
			}
			if (ret > 0 && grace >= 0)
				grace = now_ms() + OUTPUT_EOF_GRACE_MS;
		}
	}
fail:
	client_reply_free(r);
	*err = ret;
	return NULL;
}

int client_finish_call(struct gpuprof_client *client, struct reply *r, char **result_json)
{
	int ret = 0;

	if (r->code) {
		client->err_code = r->code;
		client->err_message = r->message;
		client->err_data = r->data;
		r->message = r->data = NULL;
		ret = -EREMOTEIO;
	} else if (result_json) {
		*result_json = r->result;
		r->result = NULL;
	}
	client_reply_free(r);
	return ret;
}

static int call_pumped(struct gpuprof_client *client, const char *method, const char *params_json,
		       const int *fds, size_t nfds, struct pump *pump, char **result_json)
{
	struct reply *r;
	uint64_t id;
	int ret;

	if (!client)
		return -EINVAL;
	client_clear_error(client);
	ret = gpuprof_client_send(client, method, params_json, fds, nfds, &id);
	if (ret < 0)
		return ret;
	r = client_wait_reply(client, id, pump, &ret);
	if (!r)
		return ret;
	return client_finish_call(client, r, result_json);
}

GPUPROF_EXPORT int gpuprof_client_call(struct gpuprof_client *client, const char *method,
				       const char *params_json, const int *fds, size_t nfds,
				       char **result_json)
{
	return call_pumped(client, method, params_json, fds, nfds, NULL, result_json);
}

/* params_json (object or NULL) plus "fd": 0, as new JSON text. */
static int params_with_fd(const char *params_json, char **out)
{
	cJSON *p = params_json ? cJSON_ParseWithOpts(params_json, NULL, 1) : cJSON_CreateObject();
	int r = -EINVAL;

	if (!cJSON_IsObject(p) || cJSON_GetObjectItemCaseSensitive(p, "fd"))
		goto out;
	r = -ENOMEM;
	if (!cJSON_AddNumberToObject(p, "fd", 0))
		goto out;
	*out = cJSON_PrintUnformatted(p);
	if (*out)
		r = 0;
out:
	cJSON_Delete(p);
	return r;
}

static int call_with_fd(struct gpuprof_client *client, const char *method, const char *params_json,
			int fd, bool output, char **result_json)
{
	struct stat st;
	char *params = NULL;
	struct pump *pump = NULL;
	int pipefd[2];
	int pass = fd, r;
	bool pass_ours = false;
	uint64_t id;

	if (!client)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	r = params_with_fd(params_json, &params);
	if (r < 0)
		return r;
	if (!S_ISREG(st.st_mode)) {
		pump = calloc(1, sizeof(*pump));
		if (!pump) {
			r = -ENOMEM;
			goto out;
		}
		/* Our ends are non-blocking; the caller's fd keeps its mode. */
		if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) < 0) {
			r = -errno;
			free(pump);
			pump = NULL;
			goto out;
		}
		pump->close_dst_at_eof = !output;
		pump->src = output ? pipefd[0] : fd;
		pump->dst = output ? fd : pipefd[1];
		pass = output ? pipefd[1] : pipefd[0];
		pass_ours = true;
	}
	client_clear_error(client);
	r = gpuprof_client_send(client, method, params, &pass, 1, &id);
	if (r < 0)
		goto out;
	/* Only the daemon may hold the far end now, so EOF reaches us (output)
	 * or it (input, once the pump closes its write end). */
	if (pass_ours) {
		close(pass);
		pass_ours = false;
	}
	struct reply *rep = client_wait_reply(client, id, pump, &r);
	if (rep)
		r = client_finish_call(client, rep, result_json);
out:
	if (pass_ours)
		close(pass);
	if (pump && output)
		close(pump->src);
	else if (pump && pump->dst >= 0)
		close(pump->dst);
	free(pump);
	free(params);
	return r;
}

GPUPROF_EXPORT int gpuprof_call_with_output(struct gpuprof_client *client, const char *method,
					    const char *params_json, int out_fd, char **result_json)
{
	return call_with_fd(client, method, params_json, out_fd, true, result_json);
}

GPUPROF_EXPORT int gpuprof_call_with_input(struct gpuprof_client *client, const char *method,
					   const char *params_json, int in_fd, char **result_json)
{
	return call_with_fd(client, method, params_json, in_fd, false, result_json);
}
