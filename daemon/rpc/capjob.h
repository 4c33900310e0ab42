/* SPDX-License-Identifier: MIT */
/*
 * A request that reads a persisted capture in a worker job and answers with
 * a result (and optionally bulk output on a client-passed fd): outputs,
 * renderers and analyses all go through here, so the event loop never
 * touches capture data.
 */
#ifndef GPUPROF_RPC_CAPJOB_H
#define GPUPROF_RPC_CAPJOB_H

#include <stdbool.h>
#include "capreg.h"
#include "jobs.h"
#include "rpc.h"
#include "render/folded.h" /* struct render_view */

struct tlcache;

struct capjob {
	struct rpc_req *req;
	uint64_t id;
	int dirfd;
	int fd; /* client fd for output/input, -1 if none */
	int io_timeout_ms;
	/* what the peer may see in outputs (rpc_peer_view()): run() passes
	 * it to the renderers */
	struct render_view view;
	/* set by run() */
	int err;  /* negative errno, or 0 */
	int code; /* JSON-RPC code when err != 0 (0: derived from err) */
	char msg[512];
	cJSON *result;
	void *opts; /* owned by the method; freed by free_opts */
	void (*run)(struct capjob *j, struct capture *c);
	void (*free_opts)(void *opts);
	/* capjob_submit_timeline(): run() needs only the timeline, so a
	 * cached one spares loading the capture (run gets c == NULL) */
	bool timeline_only;
	const struct timeline *tl; /* found in the cache before run() */
	struct tlcache *cache;
	/* with a client fd: its waits end when the client hangs up (jobs.h) */
	struct job_cancel cancel;
	/* taken from memory.jobs_max for loading the capture (worker
	 * thread), given back in done */
	uint64_t mem_reserved;
};

/*
 * Load capture e in a job and call run(); then reply with j->result or the
 * error. fd_idx >= 0 takes that fd from the request (checked writable when
 * for_write, readable otherwise). On failure to submit, the request is
 * answered here. Returns nothing: the request is always completed.
 */
void capjob_submit(struct rpc_req *req, struct capentry *e, int fd_idx, bool for_write,
		   void (*run)(struct capjob *, struct capture *), void *opts,
		   void (*free_opts)(void *));
/* The same for a run() that only calls capjob_timeline() on c: when the
 * decoded timeline is cached, the capture is not loaded and c is NULL. */
void capjob_submit_timeline(struct rpc_req *req, struct capentry *e, int fd_idx, bool for_write,
			    void (*run)(struct capjob *, struct capture *), void *opts,
			    void (*free_opts)(void *));

/*
 * What req's peer may see in outputs (peer.c): privileged peers everything;
 * others kernel frames only where the kernel would show that user its own
 * symbols (kptr_restrict 0 and perf_event_paranoid <= 1, read now).
 */
void rpc_peer_view(const struct rpc_req *req, struct render_view *v);

/* Helper for run(): set an error with a message. */
void capjob_fail(struct capjob *j, int err, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Helper when job_submit() failed with r: a busy or a generic error. */
void capjob_fail_submit(struct capjob *j, int r);

struct timeline;
/*
 * Helper for run(): capture c's decoded timeline in *tl, from the
 * decoded-timeline cache (tlcache.h) or decoded now and offered to it (c
 * is NULL only for a capjob_submit_timeline() job whose timeline
 * capjob_work() found cached). Read-only, shared with
 * other jobs; give it back with capjob_timeline_done(). Without a timeline
 * section, or when it does not decode, fails j (need says what an analysis
 * needs: "an imported trace") and returns a negative errno.
 */
int capjob_timeline(struct capjob *j, struct capture *c, const char *need,
		    const struct timeline **tl);
void capjob_timeline_done(struct capjob *j, const struct timeline *tl);

#endif
