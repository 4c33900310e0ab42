// SPDX-License-Identifier: MIT
/*
 * Connection I/O: non-blocking reads with SCM_RIGHTS fds split into
 * messages for rpc_dispatch(), and the buffered, back-pressured reply queue.
 */
#include "server_int.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpd.h"
#include "log.h"

static void flush_out(struct rpc_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (!c->out_stalled_since_ns)
					c->out_stalled_since_ns = gpd_now_ns();
				break;
			}
			rpc_conn_close_now(c);
			return;
		}
		c->out_off += (size_t)n;
		c->out_stalled_since_ns = 0;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		c->out_stalled_since_ns = 0;
		if (c->close_after_flush || (c->eof && c->inflight == 0)) {
			rpc_conn_close_now(c);
			return;
		}
	}
	rpc_conn_update_poll(c);
}

void rpc_conn_send(struct rpc_conn *c, const char *line, size_t len)
{
	if (c->closing)
		return;
	/* What the client has not read yet, before this reply: one large reply
	 * to a client that reads is fine (up to GPUPROF_MAX_REPLY_SIZE, which
	 * send_json() enforces); a backlog over the limit is a client that
	 * does not read. */
	if (c->out_len - c->out_off > c->srv->g->cfg.max_conn_out_bytes) {
		log_warn("client uid=%u pid=%d does not read its replies: disconnecting",
			 (unsigned)c->uid, (int)c->pid);
		rpc_conn_close_now(c);
		return;
	}
	if (c->out_off > 0 && c->out_len + len + 1 > c->out_cap) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_len + len + 1 > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + len + 1)
			cap *= 2;
		char *n = realloc(c->out, cap);
		if (!n) {
			rpc_conn_close_now(c);
			return;
		}
		c->out = n;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, line, len);
	c->out[c->out_len + len] = GPUPROF_MSG_DELIM;
	c->out_len += len + 1;
	flush_out(c);
}

void rpc_conn_update_poll(struct rpc_conn *c)
{
	if (c->closing)
		return;
	int ev = UV_DISCONNECT;
	if (!c->eof && !c->close_after_flush)
		ev |= UV_READABLE;
	if (c->out_off < c->out_len)
		ev |= UV_WRITABLE;
	if (ev != c->poll_events) {
		c->poll_events = ev;
		uv_poll_start(&c->poll, ev, rpc_conn_on_event);
	}
}

void rpc_conn_fatal(struct rpc_conn *c, int code, const char *msg)
{
	rpc_send_error_line(c, NULL, code, msg);
	rpc_conn_close_after_flush(c);
}

static void conn_read(struct rpc_conn *c)
{
	size_t budget = READ_BUDGET;
	while (budget > 0 && !c->closing && !c->close_after_flush && !c->eof) {
		char *p;
		size_t avail;
		int r = frame_buf_reserve(&c->in, &p, &avail);
		if (r < 0) {
			rpc_conn_fatal(c, GPUPROF_ERR_TOO_LARGE,
				       "message exceeds the maximum size");
			return;
		}
		bool trunc = false;
		ssize_t n =
			fd_recv(c->fd, p, avail, c->fdq, &c->nfdq, FDQ_MAX, &trunc, MSG_DONTWAIT);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			break;
		if (n < 0) {
			rpc_conn_close_now(c);
			return;
		}
		if (trunc) {
			rpc_conn_fatal(c, GPUPROF_ERR_TOO_LARGE,
				       "too many file descriptors queued");
			return;
		}
		if (n == 0) {
			c->eof = true;
			break;
		}
		frame_buf_commit(&c->in, (size_t)n);
		budget -= (size_t)n < budget ? (size_t)n : budget;
		c->last_activity_ns = gpd_now_ns();

		char *msg;
		size_t len;
		while (!c->closing && !c->close_after_flush &&
		       (r = frame_buf_next(&c->in, &msg, &len)) == 1) {
			rpc_conn_inflight(c, 1);
			rpc_dispatch(c, msg, len);
			rpc_conn_inflight(c, -1);
		}
		if (c->closing)
			return;
		if (r == -EMSGSIZE) {
			char m[96];
			snprintf(m, sizeof(m), "message exceeds %zu bytes",
				 c->srv->g->cfg.max_msg_bytes);
			rpc_conn_fatal(c, GPUPROF_ERR_TOO_LARGE, m);
			return;
		}
		size_t pend = frame_buf_pending(&c->in);
		if (pend == 0) {
			c->partial_since_ns = 0;
			/* Descriptors that arrived with no message left to claim them. */
			for (size_t i = 0; i < c->nfdq; i++)
				close(c->fdq[i]);
			c->nfdq = 0;
		} else if (!c->partial_since_ns) {
			c->partial_since_ns = gpd_now_ns();
		}
	}
	if (c->eof && !c->closing) {
		if (c->inflight == 0 && c->out_off == c->out_len)
			rpc_conn_close_now(c);
		else
			rpc_conn_update_poll(c);
	}
}

bool rpc_conn_hungup(const struct rpc_conn *c)
{
	struct pollfd p = {.fd = c->fd, .events = 0};

	if (c->closing || c->fd < 0)
		return true;
	if (!c->eof)
		return false;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
}

bool rpc_conn_gone(void *conn)
{
	return rpc_conn_hungup(conn);
}

void rpc_conn_on_event(uv_poll_t *h, int status, int events)
{
	struct rpc_conn *c = h->data;
	rpc_conn_ref(c);
	if (status < 0) {
		rpc_conn_close_now(c);
	} else {
		if (events & UV_WRITABLE)
			flush_out(c);
		if (!c->closing && (events & UV_READABLE))
			conn_read(c);
		if (!c->closing && (events & UV_DISCONNECT) && !(events & UV_READABLE))
			c->eof = true, conn_read(c);
	}
	rpc_conn_unref(c);
}
