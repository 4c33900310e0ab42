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
 */
#ifndef GPUPROF_CAPTURE_GPUMATCH_H
#define GPUPROF_CAPTURE_GPUMATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "store/gpu_engine.h"

struct capture;

struct gpu_match {
	/* per record index: the launches of an interval are
	 * launch[first[i] .. first[i] + count[i]) (record indexes, in time
	 * order); 0 for every other record */
	uint32_t *first, *count;
	uint32_t *launch;
	size_t nmatched;	      /* intervals with at least one launch */
	size_t nintervals, nlaunches; /* in the capture */
};

/* Build the match of c. 0, -ENOMEM or -E2BIG (over 2^32 records). */
int gpu_match_build(const struct capture *c, struct gpu_match *m);
void gpu_match_finish(struct gpu_match *m);

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
