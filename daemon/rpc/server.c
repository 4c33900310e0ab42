// SPDX-License-Identifier: MIT
/*
 * Connections: the listening socket, accept, peer credentials, per-connection
 * timeouts and the close/reference lifecycle (reads and replies: conn_io.c).
 * Sockets are raw non-blocking fds on uv_poll_t handles rather than
 * uv_pipe_t: libuv's pipe reader only surfaces SCM_RIGHTS fds it can wrap as
 * stream handles, and we accept regular files too.
 */
#include "server_int.h"

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

gid_t rpc_conn_peer_gid(const struct rpc_conn *conn)
{
	return conn->gid;
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
		rpc_conn_close_now(conn);
}

unsigned rpc_server_clients(const struct rpc_server *s)
{
	return s->nconns;
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

void rpc_conn_close_now(struct rpc_conn *c)
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
		rpc_conn_close_now(conn);
	else
		rpc_conn_update_poll(conn);
}

static void on_conn_timer(uv_timer_t *t)
{
	struct rpc_conn *c = t->data;
	const struct config *cfg = &c->srv->g->cfg;
	uint64_t now = gpd_now_ns();
	if (c->partial_since_ns &&
	    now - c->partial_since_ns > cfg->request_timeout_ms * 1000000ull) {
		log_info("client uid=%u pid=%d too slow sending a request: disconnecting",
			 (unsigned)c->uid, (int)c->pid);
		rpc_conn_fatal(c, GPUPROF_ERR_TIMEOUT, "request not completed in time");
		return;
	}
	if (c->out_stalled_since_ns &&
	    now - c->out_stalled_since_ns > cfg->io_timeout_ms * 1000000ull) {
		log_info("client uid=%u pid=%d stopped reading: disconnecting", (unsigned)c->uid,
			 (int)c->pid);
		rpc_conn_close_now(c);
		return;
	}
	if (c->inflight == 0 && c->out_off == c->out_len &&
	    now - c->last_activity_ns > cfg->idle_timeout_ms * 1000000ull) {
		log_debug("client uid=%u pid=%d idle: disconnecting", (unsigned)c->uid,
			  (int)c->pid);
		rpc_conn_fatal(c, GPUPROF_ERR_TIMEOUT, "idle timeout");
	}
}

/* Answer a connection we will not serve with one error line, and close it. */
static void refuse(int fd, int code, const char *msg)
{
	char line[512];
	int n = snprintf(line, sizeof(line),
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,"
			 "\"message\":\"%s\"}}\n",
			 code, msg);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!send(fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

/*
 * Whether a new peer may stay: limits.max_clients for everyone; for an
 * unprivileged peer, limits.reserved_clients of them kept free for
 * privileged ones (as PostgreSQL keeps superuser_reserved_connections)
 * and at most limits.user_clients of its own uid, so one member holding
 * connections open locks out neither root nor the other members. Writes
 * the refusal, naming the limit, into msg (no quotes or backslashes: it
 * goes into JSON as is).
 */
static bool conn_admit(const struct rpc_server *s, uid_t uid, bool privileged, char *msg, size_t n)
{
	const struct config *cfg = &s->g->cfg;
	unsigned share = (unsigned)config_unpriv_max(cfg->max_clients, cfg->reserved_clients);
	unsigned cap = (unsigned)config_user_max(cfg->max_clients, cfg->reserved_clients,
						 cfg->user_clients);
	unsigned mine = 0;

	if (s->nconns >= cfg->max_clients) {
		snprintf(msg, n, "too many clients (limits.max_clients = %u)", cfg->max_clients);
		return false;
	}
	if (privileged)
		return true;
	if (s->nconns >= share) {
		snprintf(msg, n,
			 "too many clients: the last %u of limits.max_clients (%u) are kept for "
			 "privileged users (limits.reserved_clients)",
			 cfg->max_clients - share, cfg->max_clients);
		return false;
	}
	for (const struct rpc_conn *c = s->conns; c; c = c->next)
		mine += c->uid == uid;
	if (mine >= cap) {
		snprintf(msg, n, "too many connections from uid %u (limits.user_clients = %u)",
			 (unsigned)uid, cap);
		return false;
	}
	return true;
}

static void conn_new(struct rpc_server *s, int fd)
{
	struct gpd *g = s->g;
	struct ucred cred = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
	socklen_t clen = sizeof(cred);
	char why[256];
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		close(fd);
		return;
	}
	if (g->stopping) {
		refuse(fd, GPUPROF_ERR_SHUTTING_DOWN, "daemon is stopping");
		return;
	}
	bool privileged = rpc_peer_privileged(fd, cred.uid, cred.gid, &g->cfg);
	if (!conn_admit(s, cred.uid, privileged, why, sizeof(why))) {
		/* once in 10 s: a peer retrying in a loop must not flood the log */
		uint64_t now = gpd_now_ns();
		if (!s->refused_logged_ns || now - s->refused_logged_ns > 10000000000ull) {
			s->refused_logged_ns = now;
			log_warn("client uid=%u pid=%d refused: %s", (unsigned)cred.uid,
				 (int)cred.pid, why);
		}
		refuse(fd, GPUPROF_ERR_BUSY, why);
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
	c->gid = cred.gid;
	c->privileged = privileged;
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
	rpc_conn_update_poll(c);
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
		rpc_conn_close_now(s->conns);
}

void rpc_server_free(struct rpc_server *s)
{
	free(s);
}
