/* SPDX-License-Identifier: MIT */
/*
 * GPU launches matched to driver-side job intervals within one capture, and
 * the engine naming of interval records (docs/collectors.md, "GPU jobs").
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
#include <stdio.h>

struct capture;

/* The tracepoint group of an interval (cpu >> 8): bpf/gpu_job_abi.h values. */
enum gpu_engine_group { GPU_ENGINE_XE = 0, GPU_ENGINE_I915 = 1, GPU_ENGINE_FENCE = 2 };

/*
 * Engine class names: xe numbers them as the kernel's enum xe_engine_class
 * (xe_hw_engine_types.h), i915 as its uAPI (I915_ENGINE_CLASS_*).
 */
static inline const char *gpu_engine_class(unsigned group, unsigned engine)
{
	static const char *const xe[] = {"rcs", "vcs", "vecs", "bcs", "other", "ccs"};
	static const char *const i915[] = {"rcs", "bcs", "vcs", "vecs", "ccs"};
	if (group == GPU_ENGINE_XE && engine < sizeof(xe) / sizeof(xe[0]))
		return xe[engine];
	if (group == GPU_ENGINE_I915 && engine < sizeof(i915) / sizeof(i915[0]))
		return i915[engine];
	return NULL;
}

/* A copy (blitter) engine: its work is memory movement. */
static inline bool gpu_engine_is_copy(unsigned group, unsigned engine)
{
	const char *n = gpu_engine_class(group, engine);
	return n && n[0] == 'b';
}

/* "xe/ccs", "i915/bcs", "xe/class9" into buf (fence intervals are named by
 * the collector after their ops symbol). Returns buf. */
static inline const char *gpu_engine_name(unsigned group, unsigned engine, char *buf, size_t len)
{
	const char *drv = group == GPU_ENGINE_XE     ? "xe"
			  : group == GPU_ENGINE_I915 ? "i915"
						     : "fence";
	const char *n = gpu_engine_class(group, engine);
	if (n)
		snprintf(buf, len, "%s/%s", drv, n);
	else
		snprintf(buf, len, "%s/class%u", drv, engine);
	return buf;
}

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
