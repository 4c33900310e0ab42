// SPDX-License-Identifier: MIT
/*
 * Connections. Sockets are raw non-blocking fds on uv_poll_t handles rather
 * than uv_pipe_t: libuv's pipe reader only surfaces SCM_RIGHTS fds it can
 * wrap as stream handles, and we accept regular files too.
 */
#include "rpc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include "framing.h"
#include "gpd.h"
#include "log.h"

#define FDQ_MAX (2 * GPUPROF_MAX_FDS_PER_MSG)
#define READ_BUDGET (256 * 1024) /* bytes per readable callback, for fairness */

struct rpc_conn {
	struct rpc_server *srv;
	struct rpc_conn *prev, *next;
	uv_poll_t poll;
	uv_timer_t timer;
	int fd;
	int refs;
	int handles_open;
	bool closing; /* handles being closed */
	bool eof; /* peer shut down its write side */
	bool close_after_flush;
	uid_t uid;
	pid_t pid;
	bool privileged;
	struct frame_buf in;
	int fdq[FDQ_MAX];
	size_t nfdq;
	char *out;
	size_t out_len, out_off, out_cap;
	int inflight;
	uint64_t last_activity_ns;
	uint64_t partial_since_ns; /* 0 = no partial message buffered */
	uint64_t out_stalled_since_ns; /* 0 = output drained */
	int poll_events;
};

struct rpc_server {
	struct gpd *g;
	uv_poll_t listen_poll;
	int listen_fd;
	bool listening;
	bool owns_path;
	char path[108];
	struct rpc_conn *conns;
	unsigned nconns;
};

static void conn_close(struct rpc_conn *c);
static void conn_update_poll(struct rpc_conn *c);

struct gpd *rpc_conn_gpd(const struct rpc_conn *conn)
{
	return conn->srv->g;
}

void rpc_conn_ref(struct rpc_conn *conn)
{
	conn->refs++;
}

void rpc_conn_unref(struct rpc_conn *conn)
{
	if (--conn->refs > 0)
		return;
	frame_buf_finish(&conn->in);
	for (size_t i = 0; i < conn->nfdq; i++)
		close(conn->fdq[i]);
	free(conn->out);
	free(conn);
}

bool rpc_conn_alive(const struct rpc_conn *conn)
{
	return !conn->closing;
}

void rpc_conn_peer(const struct rpc_conn *conn, uid_t *uid, pid_t *pid, bool *privileged)
{
	*uid = conn->uid;
	*pid = conn->pid;
	*privileged = conn->privileged;
}

size_t rpc_conn_take_fds(struct rpc_conn *conn, int *fds, size_t n)
{
	size_t k = n < conn->nfdq ? n : conn->nfdq;
	memcpy(fds, conn->fdq, k * sizeof(int));
	memmove(conn->fdq, conn->fdq + k, (conn->nfdq - k) * sizeof(int));
	conn->nfdq -= k;
	return k;
}

void rpc_conn_inflight(struct rpc_conn *conn, int delta)
{
	conn->inflight += delta;
	conn->last_activity_ns = gpd_now_ns();
	if (conn->inflight == 0 && conn->eof && conn->out_len == conn->out_off)
		conn_close(conn);
}

unsigned rpc_server_clients(const struct rpc_server *s)
{
	return s->nconns;
}

/* Privileged: uid 0, or CAP_PERFMON (38) / CAP_SYS_ADMIN (21) effective. */
static bool peer_privileged(uid_t uid, pid_t pid)
{
	if (uid == 0)
		return true;
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool priv = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long caps;
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			priv = (caps & (1ull << 38)) || (caps & (1ull << 21));
			break;
		}
	}
	fclose(f);
	return priv;
}

static void handle_closed(uv_handle_t *h)
{
	struct rpc_conn *c = h->data;
	if (--c->handles_open > 0)
		return;
	close(c->fd);
	c->fd = -1;
	rpc_conn_unref(c);
}

static void conn_close(struct rpc_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	struct rpc_server *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	log_debug("client uid=%u pid=%d disconnected", (unsigned)c->uid, (int)c->pid);
	uv_poll_stop(&c->poll);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->poll, handle_closed);
	uv_close((uv_handle_t *)&c->timer, handle_closed);
}

void rpc_conn_close_after_flush(struct rpc_conn *conn)
{
	conn->close_after_flush = true;
	if (conn->out_len == conn->out_off)
		conn_close(conn);
	else
		conn_update_poll(conn);
}

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
			conn_close(c);
			return;
		}
		c->out_off += (size_t)n;
		c->out_stalled_since_ns = 0;
	}
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		c->out_stalled_since_ns = 0;
		if (c->close_after_flush || (c->eof && c->inflight == 0)) {
			conn_close(c);
			return;
		}
	}
	conn_update_poll(c);
}

void rpc_conn_send(struct rpc_conn *c, const char *line, size_t len)
{
	if (c->closing)
		return;
	size_t need = c->out_len - c->out_off + len + 1;
	if (need > c->srv->g->cfg.max_conn_out_bytes + GPUPROF_MAX_MSG_SIZE) {
		log_warn("client uid=%u pid=%d does not read its replies: disconnecting",
			 (unsigned)c->uid, (int)c->pid);
		conn_close(c);
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
			conn_close(c);
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

static void on_conn_event(uv_poll_t *h, int status, int events);

static void conn_update_poll(struct rpc_conn *c)
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
		uv_poll_start(&c->poll, ev, on_conn_event);
	}
}

static void fatal_error(struct rpc_conn *c, int code, const char *msg)
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
			fatal_error(c, GPUPROF_ERR_TOO_LARGE, "message exceeds the maximum size");
			return;
		}
		bool trunc = false;
		ssize_t n = fd_recv(c->fd, p, avail, c->fdq, &c->nfdq, FDQ_MAX, &trunc,
				    MSG_DONTWAIT);
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			break;
		if (n < 0) {
			conn_close(c);
			return;
		}
		if (trunc) {
			fatal_error(c, GPUPROF_ERR_TOO_LARGE, "too many file descriptors queued");
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
			fatal_error(c, GPUPROF_ERR_TOO_LARGE, m);
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
			conn_close(c);
		else
			conn_update_poll(c);
	}
}

static void on_conn_event(uv_poll_t *h, int status, int events)
{
	struct rpc_conn *c = h->data;
	rpc_conn_ref(c);
	if (status < 0) {
		conn_close(c);
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

static void on_conn_timer(uv_timer_t *t)
{
	struct rpc_conn *c = t->data;
	const struct config *cfg = &c->srv->g->cfg;
	uint64_t now = gpd_now_ns();
	if (c->partial_since_ns && now - c->partial_since_ns > cfg->request_timeout_ms * 1000000ull) {
		log_info("client uid=%u pid=%d too slow sending a request: disconnecting",
			 (unsigned)c->uid, (int)c->pid);
		fatal_error(c, GPUPROF_ERR_TIMEOUT, "request not completed in time");
		return;
	}
	if (c->out_stalled_since_ns &&
	    now - c->out_stalled_since_ns > cfg->io_timeout_ms * 1000000ull) {
		log_info("client uid=%u pid=%d stopped reading: disconnecting", (unsigned)c->uid,
			 (int)c->pid);
		conn_close(c);
		return;
	}
	if (c->inflight == 0 && c->out_off == c->out_len &&
	    now - c->last_activity_ns > cfg->idle_timeout_ms * 1000000ull) {
		log_debug("client uid=%u pid=%d idle: disconnecting", (unsigned)c->uid,
			  (int)c->pid);
		fatal_error(c, GPUPROF_ERR_TIMEOUT, "idle timeout");
	}
}

static void conn_new(struct rpc_server *s, int fd)
{
	struct gpd *g = s->g;
	struct ucred cred = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
	socklen_t clen = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		close(fd);
		return;
	}
	if (s->nconns >= g->cfg.max_clients || g->stopping) {
		char line[160];
		int n = snprintf(line, sizeof(line),
				 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,"
				 "\"message\":\"%s\"}}\n",
				 g->stopping ? GPUPROF_ERR_SHUTTING_DOWN : GPUPROF_ERR_BUSY,
				 g->stopping ? "daemon is stopping" : "too many clients");
		(void)!send(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	struct rpc_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->srv = s;
	c->fd = fd;
	c->refs = 1;
	c->uid = cred.uid;
	c->pid = cred.pid;
	c->privileged = peer_privileged(cred.uid, cred.pid);
	c->last_activity_ns = gpd_now_ns();
	frame_buf_init(&c->in, g->cfg.max_msg_bytes);
	uv_poll_init(g->loop, &c->poll, fd);
	uv_timer_init(g->loop, &c->timer);
	c->poll.data = c->timer.data = c;
	c->handles_open = 2;
	unsigned min_ms = g->cfg.idle_timeout_ms < g->cfg.request_timeout_ms
				  ? g->cfg.idle_timeout_ms
				  : g->cfg.request_timeout_ms;
	uint64_t tick = min_ms / 4;
	tick = tick < 50 ? 50 : tick > 1000 ? 1000 : tick;
	uv_timer_start(&c->timer, on_conn_timer, tick, tick);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	log_debug("client uid=%u pid=%d connected%s", (unsigned)c->uid, (int)c->pid,
		  c->privileged ? " (privileged)" : "");
	conn_update_poll(c);
}

static void on_listen(uv_poll_t *h, int status, int events)
{
	struct rpc_server *s = h->data;
	if (status < 0)
		return;
	for (int i = 0; i < 64; i++) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				log_warn("accept: %s", strerror(errno));
			return;
		}
		conn_new(s, fd);
	}
}

int rpc_server_new(struct gpd *g, struct rpc_server **ret)
{
	struct rpc_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->g = g;
	s->listen_fd = -1;
	*ret = s;
	return 0;
}

int rpc_server_listen_fd(struct rpc_server *s, int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	s->listen_fd = fd;
	int r = uv_poll_init(s->g->loop, &s->listen_poll, fd);
	if (r < 0)
		return r;
	s->listen_poll.data = s;
	s->listening = true;
	return uv_poll_start(&s->listen_poll, UV_READABLE, on_listen);
}

int rpc_server_bind(struct rpc_server *s, const char *path, unsigned mode)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Replace a stale socket, never another kind of file. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			close(fd);
			return -EEXIST;
		}
		unlink(path);
	}
	mode_t old = umask(0777 & ~mode);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(path, mode) < 0 || listen(fd, 128) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->owns_path = true;
	return rpc_server_listen_fd(s, fd);
}

static void listen_closed(uv_handle_t *h)
{
	struct rpc_server *s = h->data;
	close(s->listen_fd);
	s->listen_fd = -1;
}

void rpc_server_close(struct rpc_server *s)
{
	if (s->listening) {
		s->listening = false;
		uv_poll_stop(&s->listen_poll);
		uv_close((uv_handle_t *)&s->listen_poll, listen_closed);
		if (s->owns_path)
			unlink(s->path);
	}
	while (s->conns)
		conn_close(s->conns);
}

void rpc_server_free(struct rpc_server *s)
{
	free(s);
}
