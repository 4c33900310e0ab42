/* SPDX-License-Identifier: MIT */
/*
 * libgpuprof-client internals shared by the library's own files. Nothing
 * here is exported: the library is built with -fvisibility=hidden and a
 * version script, and only functions marked GPUPROF_EXPORT are public.
 */
#ifndef GPUPROF_CLIENT_PRIVATE_H
#define GPUPROF_CLIENT_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gpuprof/client.h>

#include "framing.h"

#define GPUPROF_EXPORT __attribute__((visibility("default")))

/*
 * Largest reply accepted: the protocol's cap (the daemon never sends more),
 * which still bounds a misbehaving peer.
 */
#define CLIENT_MAX_REPLY GPUPROF_MAX_REPLY_SIZE

/* A request not yet (fully) written to the socket. */
struct out_msg {
	struct out_msg *next;
	char *buf;
	size_t len;
	size_t off;
	/* Our own duplicates, sent with the first byte, then closed. */
	int fds[GPUPROF_MAX_FDS_PER_MSG];
	size_t nfds;
};

/* A parsed reply waiting to be claimed by id. */
struct reply {
	struct reply *next;
	uint64_t id;  /* 0 for an error reply with "id": null */
	char *result; /* JSON text, NULL for an error */
	int code;     /* 0 for a result */
	char *message;
	char *data; /* error "data" as JSON text, may be NULL */
};

struct gpuprof_client {
	int fd;
	int timeout_ms;
	uint64_t next_id;
	/* Sticky failure (-ECONNRESET, -EPROTO, -ETIMEDOUT, ...): once the
	 * stream is out of step every later call reports it. */
	int dead;

	struct frame_buf in;
	struct out_msg *out_head, *out_tail;
	size_t out_pending;
	struct reply *replies_head, *replies_tail;
	size_t nreplies;

	/* Details of the last -EREMOTEIO. */
	int err_code;
	char *err_message;
	char *err_data;
};

/*
 * An extra copy loop run while a blocking call waits for its reply: bytes
 * move from src to dst through buf. Used to stand between the daemon and a
 * caller's pipe or terminal.
 */
struct pump {
	int src;
	int dst;
	bool src_eof;
	bool close_dst_at_eof; /* input pumps: EOF to the daemon */
	size_t len, off;
	char buf[65536];
};

/*
 * A client over an already connected stream socket (taken over, set
 * non-blocking). Internal: the unit test drives a socketpair() with it.
 */
int client_new_fd(int fd, struct gpuprof_client **ret);

/* Build "{...,"method":..}\n" with params validated; -EINVAL on bad input. */
int client_build_request(uint64_t id, const char *method, const char *params_json, char **msg,
			 size_t *len);

/* Remove the reply for id (or an id-less error) from the queue; NULL if none. */
struct reply *client_take_reply(struct gpuprof_client *client, uint64_t id);
void client_reply_free(struct reply *r);

/*
 * Wait until the reply to id is queued, flushing output and running the
 * optional pump meanwhile. Returns the reply (caller frees) or NULL with
 * *err set.
 */
struct reply *client_wait_reply(struct gpuprof_client *client, uint64_t id, struct pump *pump,
				int *err);

/* Turn a reply into the blocking-call result (sets error details). */
int client_finish_call(struct gpuprof_client *client, struct reply *r, char **result_json);

/* Forget the details of the previous -EREMOTEIO. */
void client_clear_error(struct gpuprof_client *client);

#endif
