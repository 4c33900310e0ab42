/* SPDX-License-Identifier: MIT */
/*
 * GPU launches matched to driver-side job intervals within one capture
 * (docs/collectors.md, "GPU jobs"); the engines are named in
 * store/gpu_engine.h.
 * Used by the live timeline (timeline/live.c) and `folded --weight gpu-time`.
 *
 * Matching: the driver sees submissions, not kernels, and shares no id with
 * the runtime's launch probes. So within each pid, launches and intervals are
 * put in time order (a launch by its ts, an interval by its submission time,
 * ts_ns - aux32), and an interval takes every launch of the same pid made
 * after the previous interval's submission and not after its own: the
 * launches that submission carried. An interval that already names a launch
 * by correlation (aux[1] = a launch's aux[1], same pid) takes exactly that
 * one. Limits: a process submitting on several queues at once interleaves
 * them, and a batch split over two submissions goes to the first.
 *
 * NVIDIA intervals from the CUPTI library (cpu >> 8 == GPU_ENGINE_CUPTI,
 * store.h) take no part in either rule: their correlation id is CUPTI's,
 * not the launch probe's. They name their launch through the API call of
 * the same pid whose CUPTI correlation they carry (STORE_REC_GPU_API; a
 * runtime call and the driver call it makes share one id: the call entered
 * first is the outer one). That call ran on thread T; its launch probe is
 * the latest launch of the same pid and thread at or before the entry of
 * the call's innermost record (the probe fires at the entry point, before
 * CUPTI's callback) and after the entry of the previous API call on that
 * thread. An interval whose call is missing gets no launch: it is counted,
 * never guessed by time. Several intervals may share a launch (a graph
 * launch's work); each carries its own time to it.
 *
 * A CUPTI sync interval that waits on a CUDA event (a cudaStreamWaitEvent
 * or cudaEventSynchronize: aux32 = the event id) is joined to the event
 * record it waits on (STORE_REC_GPU_EVENT) the way Kineto joins them: of
 * the same pid, context and event id, the record with the highest CUPTI
 * correlation id below the sync's own (one event is recorded again and
 * again; the wait is a later call).
 *
 * A sync interval names no device (CUPTI gives a sync none): its context's
 * is the device of that context's first kernel, copy, set, graph launch or
 * event record in the capture (of the same pid), 0 when there is none, as
 * Kineto maps it (gpu_match_sync_device).
 *
 * Kernel names for launches known only by handle (gpu_match_names): a
 * process that got its function handles before the launch probes attached
 * has launches named "0x<handle>" (collect/gpu_launch.h). Such a launch
 * joined to CUPTI kernel intervals takes their kernel name; and within one
 * pid (and owner uid: handles are addresses in one process, names are that
 * process's), a handle whose joined launches all had one name lends it to
 * the launches of that handle that joined nothing (outside CUPTI's window,
 * activity dropped). A launch or handle offered two different names keeps
 * its handle.
 */
#ifndef GPUPROF_CAPTURE_GPUMATCH_H
#define GPUPROF_CAPTURE_GPUMATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "store/store.h"

struct capture;

struct gpu_match {
	/* per record index: the launches of an interval are
	 * launch[first[i] .. first[i] + count[i]) (record indexes, in time
	 * order); 0 for every other record */
	uint32_t *first, *count;
	uint32_t *launch;
	size_t nmatched;	      /* intervals with at least one launch */
	size_t nintervals, nlaunches; /* in the capture */
	/*
	 * CUPTI records, NULL / 0 when the capture has none. call[i]: for a
	 * CUPTI interval, the record index + 1 of its outer API call; for an
	 * API call that shares its correlation with an outer one (a driver
	 * call made by a runtime call), the outer one's + 1; else 0.
	 */
	uint32_t *call;
	size_t ncupti;	      /* CUPTI intervals (also in nintervals) */
	size_t ncupti_call;   /* ... joined to their API call */
	size_t ncupti_launch; /* ... and through it to a launch probe (in nmatched) */
	size_t napi;	      /* STORE_REC_GPU_API records */
	/* wait[i]: for a CUPTI sync interval that waits on an event, the
	 * record index + 1 of that event's record, else 0; NULL when the
	 * capture has no event record */
	uint32_t *wait;
	size_t nevents;	      /* STORE_REC_GPU_EVENT records */
	size_t nwaits_linked; /* sync intervals with wait[i] set */
	/* (pid, context) -> device, sorted; NULL / 0 without CUPTI records */
	struct gpu_ctxdev *ctxdev;
	size_t nctxdev;
	/* name[i]: for a launch named by handle only, the string id of its
	 * kernel's name (above), else 0; NULL when no launch got one */
	uint32_t *name;
	size_t nnamed_join;   /* launches named by their own intervals */
	size_t nnamed_handle; /* ... by another launch of their handle */
};

struct gpu_ctxdev {
	uint32_t pid, ctx, dev, idx;
};

/* The device of a CUPTI sync interval r (gpumatch.h above). */
uint32_t gpu_match_sync_device(const struct gpu_match *m, const struct store_rec *r);

/* An interval from the CUPTI library (store.h). */
static inline bool gpu_is_cupti(const struct store_rec *r)
{
	return r->type == STORE_REC_GPU_INTERVAL && r->cpu >> 8 == GPU_ENGINE_CUPTI;
}

/* Build the match of c. 0, -ENOMEM or -E2BIG (over 2^32 records). */
int gpu_match_build(const struct capture *c, struct gpu_match *m);
void gpu_match_finish(struct gpu_match *m);

/* The kernel name to draw launch record i (r) with: m->name's, else its own. */
static inline uint32_t gpu_launch_name(const uint32_t *name, size_t i, const struct store_rec *r)
{
	return name && name[i] ? name[i] : r->name;
}

/*
 * Whether the kernel name s (len bytes, possibly followed by a NUL and the
 * launch geometry) is the launch collector's name for a kernel it knows
 * only by function handle, "0x<hex>" (collect/gpu_launch.h): the handle in
 * *h (h may be NULL). False for any other name, and for handle 0 (nothing
 * the driver hands out).
 */
bool gpu_name_handle(const char *s, size_t len, uint64_t *h);

/* Fill m->name from a built match (called by gpu_match_build). 0 or
 * -ENOMEM. */
int gpu_match_names(const struct capture *c, struct gpu_match *m);

/*
 * m->name alone, for outputs that need no other part of the match: *ret
 * (malloc'ed, c->nrecs + 1 entries, the caller frees it) or NULL when no
 * launch gets a name; without CUPTI records nothing is built. 0, -ENOMEM
 * or -E2BIG.
 */
int gpu_launch_names(const struct capture *c, uint32_t **ret);

/* A record position with its pid and a sort key (a time, a correlation). */
struct gpu_key {
	uint64_t key;
	uint32_t pid, idx;
};
/*
 * Stable sort of v[0..n) by (pid, key): items put in in ascending idx order
 * come out in (pid, key, idx) order. O(n): a check, a radix pass on the pid
 * and, for a pid whose keys are out of order, an insertion sort while the
 * disorder is local, else a radix sort of its run.
 * 0 or -ENOMEM.
 */
int gpu_sort_pid_key(struct gpu_key *v, size_t n);

#endif
