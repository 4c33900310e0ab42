// SPDX-License-Identifier: MIT
/*
 * Internal to daemon/rpc: the connection and server records shared by
 * server.c (accept, peer credentials, timers, close) and conn_io.c (reading,
 * framing into dispatch, buffered replies).
 */
#ifndef GPD_RPC_SERVER_INT_H
#define GPD_RPC_SERVER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "framing.h"
#include "rpc.h"

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
	bool eof;     /* peer shut down its write side */
	bool close_after_flush;
	uid_t uid;
	pid_t pid;
	gid_t gid; /* SO_PEERCRED, fixed at connect() */
	bool privileged;
	struct frame_buf in;
	int fdq[FDQ_MAX];
	size_t nfdq;
	char *out;
	size_t out_len, out_off, out_cap;
	int inflight;
	uint64_t last_activity_ns;
	uint64_t partial_since_ns;     /* 0 = no partial message buffered */
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
	uint64_t refused_logged_ns; /* last refused connection logged */
};

struct config;
/* peer.c: root, or a member of access.admin_group, by the credentials fixed
 * at connect() (fd is the accepted socket). */
bool rpc_peer_privileged(int fd, uid_t uid, gid_t gid, const struct config *cfg);

/* Starts closing both handles; the last close callback drops the reference. */
void rpc_conn_close_now(struct rpc_conn *c);
/* Re-arms the poll handle for what the connection waits on now. */
void rpc_conn_update_poll(struct rpc_conn *c);
/* Sends an error with a null id, then closes once it is flushed. */
void rpc_conn_fatal(struct rpc_conn *c, int code, const char *msg);
/* uv_poll_t callback of a connection: flush, read, hang-up. */
void rpc_conn_on_event(uv_poll_t *h, int status, int events);

#endif
