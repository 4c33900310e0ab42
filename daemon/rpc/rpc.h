/* SPDX-License-Identifier: MIT */
/*
 * JSON-RPC 2.0 server on a Unix socket: connections, framing, limits, peer
 * credentials, fd passing (server.c) and request dispatch (dispatch.c).
 * Handlers live in methods_*.c, one function per method, listed in one
 * table in dispatch.c.
 */
#ifndef GPUPROF_RPC_H
#define GPUPROF_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include <gpuprof/protocol.h>

#include "capreg.h" /* struct capwaiter */

struct gpd;
struct rpc_server;
struct rpc_conn;

#define RPC_MAX_REQ_FDS GPUPROF_MAX_FDS_PER_MSG

/*
 * One request being handled. Created by the dispatcher, completed exactly
 * once by rpc_reply() or rpc_error() (now or later, from a timer or a job's
 * completion callback on the loop thread), which frees it. If the
 * connection went away meanwhile the reply is dropped.
 */
struct rpc_req {
	struct rpc_conn *conn; /* holds a reference */
	struct gpd *gpd;
	cJSON *id; /* owned copy; NULL for a notification */
	char method[64];
	uid_t uid;
	pid_t pid;
	gid_t gid; /* the peer's SO_PEERCRED gid */
	bool privileged;
	int fds[RPC_MAX_REQ_FDS]; /* taken from the connection's queue; -1 = none */
	size_t nfds;
	struct capwaiter wait; /* waiting for a capture to be saved (rpc_wait_saved) */
};

/* Reply with result (ownership moves; NULL means JSON null). */
void rpc_reply(struct rpc_req *req, cJSON *result);
/* Reply with an error; data (may be NULL) ownership moves. */
void rpc_error(struct rpc_req *req, int code, cJSON *data, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Map a negative errno from a part of the daemon to a JSON-RPC error. */
void rpc_error_errno(struct rpc_req *req, int err, const char *what);
/* Take fd number idx of the request (ownership moves to the caller), or -1. */
int rpc_req_take_fd(struct rpc_req *req, size_t idx);

/* The result of the status method as a peer of uid, privileged or not, sees it (a
 * new tree, owned by the caller). Loop thread only. */
cJSON *rpc_status_json(struct gpd *g, uid_t uid, bool privileged);

/* Handler: must eventually call rpc_reply()/rpc_error() exactly once. */
typedef void (*rpc_handler_fn)(struct rpc_req *req, const cJSON *params);

struct rpc_method {
	const char *name;
	rpc_handler_fn fn;
};

/* server.c */
int rpc_server_new(struct gpd *g, struct rpc_server **ret);
/* Listen on an inherited fd (socket activation) or bind cfg.socket_path. */
int rpc_server_listen_fd(struct rpc_server *s, int fd);
int rpc_server_bind(struct rpc_server *s, const char *path, unsigned mode);
/* Close the listener and every connection; pending requests are dropped
 * when their jobs finish. Handles close through the loop. */
void rpc_server_close(struct rpc_server *s);
void rpc_server_free(struct rpc_server *s);
unsigned rpc_server_clients(const struct rpc_server *s);

/* dispatch.c (called by server.c for each complete message) */
void rpc_dispatch(struct rpc_conn *conn, char *msg, size_t len);
/* Send a fully formed reply line on a connection (server.c). */
void rpc_conn_send(struct rpc_conn *conn, const char *line, size_t len);
/* Peer identity of a connection (server.c). */
void rpc_conn_peer(const struct rpc_conn *conn, uid_t *uid, pid_t *pid, bool *privileged);
gid_t rpc_conn_peer_gid(const struct rpc_conn *conn);
struct gpd *rpc_conn_gpd(const struct rpc_conn *conn);
void rpc_conn_ref(struct rpc_conn *conn);
void rpc_conn_unref(struct rpc_conn *conn);
bool rpc_conn_alive(const struct rpc_conn *conn);
/* The peer is gone: the connection closed, or it read EOF and the socket
 * hung up both ways (a peer that only shut down its write side still
 * waits for its replies). Loop thread. */
bool rpc_conn_hungup(const struct rpc_conn *conn);
/* rpc_conn_hungup() as a job_gone_fn (jobs.h): arg is the connection. */
bool rpc_conn_gone(void *conn);
/* Take up to n fds from the head of the connection's queue. */
size_t rpc_conn_take_fds(struct rpc_conn *conn, int *fds, size_t n);
/* Track requests in flight (idle timeout does not apply while > 0). */
void rpc_conn_inflight(struct rpc_conn *conn, int delta);
/* Close the connection after flushing what is queued (fatal framing errors). */
void rpc_conn_close_after_flush(struct rpc_conn *conn);
/* Send an error reply line with a null id (used before a request is parsed). */
void rpc_send_error_line(struct rpc_conn *conn, const cJSON *id, int code, const char *msg);

#endif
