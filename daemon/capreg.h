/* SPDX-License-Identifier: MIT */
/*
 * The capture registry: ids, the list the daemon serves, forward
 * recordings (a timer per open window), persistence through worker jobs,
 * and reload of the state directory at start. Lives on the loop thread.
 *
 * Memory: a ready capture is kept only as its summary (struct capture with
 * the data arrays freed); users of its data load it from disk in a job.
 */
#ifndef GPUPROF_CAPREG_H
#define GPUPROF_CAPREG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "capture/capture.h"

struct gpd;
struct capreg;

/* Adds cov as "gpu_coverage" to o when a pid was duty-cycled (else
 * nothing): capture info and the analyses' results carry it. */
void capreg_coverage_json(cJSON *o, const struct capture_coverage *cov);

struct capentry {
	struct capentry *next;
	struct capreg *reg;
	uint64_t id;
	struct capture *sum; /* header fields and counts; data arrays only while in flight */
	uint64_t by_type[STORE_REC_TYPE_MAX];
	struct capture_coverage cov; /* kept past strip(), as by_type */
	uint64_t duration_ns;	     /* requested forward window */
	struct capture_filter filter;
	int32_t filter_pids[CAPTURE_MAX_PIDS];
	uv_timer_t *timer; /* while recording */
	bool persisting;
	bool deleted;	       /* delete requested while persisting */
	bool owner_privileged; /* the peer that made it was (exempt from per-uid quotas) */
	bool id_given;	       /* its info went out while it was not ready yet */
	bool waiting;	       /* taken, waiting for a job slot to be saved (capreg.c's queue) */
	struct capentry *wait_next;
	uint64_t data_bytes;	   /* its data held in memory while waiting or persisting */
	struct capwaiter *waiters; /* told once it is saved, or not */
	char *info_json;	   /* CAPSEC_IMPORT_INFO text kept past strip(), or NULL */
};

struct capreg_start {
	const int32_t *pids;
	size_t npids;
	uint64_t duration_ms, last_ms;
	/* or the window [start_ns, end_ns] in the past on CLOCK_MONOTONIC
	 * (the caller checked it); 0, 0 when duration_ms or last_ms is set */
	uint64_t start_ns, end_ns;
	const char *name;
	uint32_t owner_uid;
	bool privileged; /* the peer: exempt from per-uid quotas, may use the reserve */
	bool uid_filter; /* restrict records to owner_uid (unprivileged peer) */
};

/* Room for the messages the registry writes when it refuses something. */
#define CAPREG_WHY_MAX 256

/*
 * Called in a worker before a capture is persisted (symbolization), and the
 * argument it gets. May be NULL.
 */
typedef void (*capreg_prepare_fn)(void *arg, struct capture *c);

int capreg_new(struct gpd *g, struct capreg **ret);
void capreg_set_prepare(struct capreg *r, capreg_prepare_fn fn, void *arg);
/* Stop timers, fail waiters; call before the loop's final run. */
void capreg_close(struct capreg *r);
void capreg_free(struct capreg *r);
int capreg_dirfd(const struct capreg *r);

/*
 * Start a capture; *ret is its entry (state RECORDING until ready). On
 * failure why (CAPREG_WHY_MAX bytes) says what refused it, naming the
 * limit: -EBUSY for a count (limits.captures, its privileged reserve,
 * limits.user_captures, limits.persist_queue), -EDQUOT for
 * limits.user_disk, -EFBIG for memory.capture_max.
 */
int capreg_start(struct capreg *r, const struct capreg_start *o, struct capentry **ret, char *why);
/* End a forward window now (no-op unless recording). */
void capreg_stop(struct capentry *e);
/*
 * Someone waiting for a capture to be saved (a request to answer with its
 * info). done() is called once, on the loop thread, and is the registry's
 * last use of w (the waiter's memory is its owner's):
 *   CAPWAIT_SAVED      saved; e is ready, err 0, what NULL
 *   CAPWAIT_GONE       deleted, or the daemon stops: err, and what was lost
 *                      ("capture deleted", "capture")
 *   CAPWAIT_NOT_SAVED  saving failed: err, and why; e->id names it
 */
enum capwait_end { CAPWAIT_SAVED, CAPWAIT_GONE, CAPWAIT_NOT_SAVED };
struct capwaiter {
	void (*done)(struct capwaiter *w, struct capentry *e, enum capwait_end end, int err,
		     const char *what);
	struct capwaiter *next; /* the registry's */
};
void capreg_wait(struct capentry *e, struct capwaiter *w);
/* Remove the capture and its file. */
int capreg_delete(struct capentry *e);

/* Add a finished capture made elsewhere (imports): persists it in a job and
 * takes ownership of c (on success only); *ret and why as for
 * capreg_start. privileged: the peer's, as there. */
int capreg_add(struct capreg *r, struct capture *c, bool privileged, struct capentry **ret,
	       char *why);

/* Whether uid may add a capture now (capreg_start() and capreg_add()
 * check it too): 0, or -EBUSY / -EDQUOT with why as for capreg_start. */
int capreg_admit(struct capreg *r, uid_t uid, bool privileged, char *why);

struct capentry *capreg_find(struct capreg *r, uint64_t id);
struct capentry *capreg_first(struct capreg *r);
bool capreg_visible(const struct capentry *e, uid_t uid, bool privileged);
size_t capreg_count(const struct capreg *r);
uint64_t capreg_bytes(const struct capreg *r);

/* The capture's info object (docs/protocol.md, capture.info). A capture
 * whose info went out before it was ready is known to a client by its id
 * from then on: if it cannot be saved it stays listed, failed. */
cJSON *capreg_info(struct capentry *e);

#endif
