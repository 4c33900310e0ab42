/* SPDX-License-Identifier: MIT */
/*
 * Pairing of GPU job-lifecycle events into intervals (docs/collectors.md,
 * "GPU jobs"): a pure module with no BPF, loop or store, so the host unit
 * tests drive it with synthetic event sequences.
 *
 * A job is keyed by its fence (context, seqno) or, until the fence is known
 * (xe: the job is created before its fence is armed), by the job's address.
 * A START that carries both re-keys a job found by address to its fence.
 *
 *   SUBMIT  new pending job (pid/tid/uid/comm/stack of the submitter). An
 *           existing job with the same key that was already submitted is
 *           stale (its end was lost, or the seqno wrapped onto it): it is
 *           released and counted in `stale`. A job that only had a START
 *           (events reordered) takes the submitter.
 *   START   sets the start of the job; creates a start-only job when none
 *           is pending (submitted before we attached). A second START is
 *           counted in `dup_start` and ignored.
 *   END     emits the interval and forgets the job. No pending job (a
 *           duplicate signal, a job from before attach, a late event of an
 *           evicted job) is counted in `unmatched_end`.
 *   FREE    forgets a job still pending (never completed), `abandoned`.
 *
 * An interval begins at START when there was one, else at SUBMIT (flag
 * GJ_IV_NO_START); it ends at END (clamped to its beginning, `negative`).
 *
 * Memory: a fixed table of `capacity` jobs allocated at creation. A SUBMIT or
 * START into a full table evicts the oldest pending job (`evicted`).
 *
 * Ownership: comm and stack are opaque ids (store references in the
 * collector). A job hands them either to emit() with the interval, or to
 * release() when it is dropped without one; each exactly once.
 * Not thread-safe; one pairer per event stream.
 */
#ifndef GPUPROF_COLLECT_GPU_JOB_PAIR_H
#define GPUPROF_COLLECT_GPU_JOB_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gj_ev { GJ_SUBMIT = 1, GJ_START = 2, GJ_END = 3, GJ_FREE = 4 };

struct gj_event {
	uint8_t ev;	/* enum gj_ev */
	uint8_t group;	/* enum gpu_job_group, carried to the interval */
	uint8_t engine; /* engine class, 0xff unknown */
	bool obj_key;	/* ctx/seqno not known: key by obj only */
	uint64_t ts_ns;
	uint64_t obj; /* job / request / fence address, 0 = none */
	uint64_t ctx, seqno;
	uint64_t tag; /* opaque (the fence's ops): the job keeps the first non-zero */
	/* submitter (SUBMIT only; ignored otherwise) */
	uint32_t pid, tid, uid;
	uint32_t comm, stack; /* owned ids, passed to emit() or release() */
};

enum gj_iv_flags {
	GJ_IV_NO_START = 1u << 0,  /* no START seen: begins at SUBMIT */
	GJ_IV_NO_SUBMIT = 1u << 1, /* no SUBMIT seen: no submitter known */
};

struct gj_interval {
	uint64_t submit_ns, start_ns, end_ns; /* submit_ns = start_ns without SUBMIT */
	uint64_t ctx, seqno, tag;
	uint32_t pid, tid, uid, comm, stack;
	uint8_t group, engine;
	uint16_t flags; /* enum gj_iv_flags */
};

struct gj_stats {
	uint64_t submitted, started, intervals;
	uint64_t stale, dup_start, unmatched_end, abandoned, evicted, negative;
	uint64_t pending; /* jobs in the table now */
};

struct gj_pair_ops {
	void (*emit)(void *arg, const struct gj_interval *iv);
	void (*release)(void *arg, uint32_t comm, uint32_t stack); /* may be NULL */
	void *arg;
};

struct gj_pair;

/* capacity: pending jobs kept (>= 1). 0, -EINVAL or -ENOMEM. */
int gj_pair_new(size_t capacity, const struct gj_pair_ops *ops, struct gj_pair **ret);
/* Releases every pending job (release()), frees; NULL is a no-op. */
void gj_pair_free(struct gj_pair *p);
/* Feed one event; may call emit()/release() before returning. */
void gj_pair_feed(struct gj_pair *p, const struct gj_event *e);
void gj_pair_stats(const struct gj_pair *p, struct gj_stats *st);

#endif
