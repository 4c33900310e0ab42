/* SPDX-License-Identifier: MIT */
/*
 * The engine of a GPU job interval record (STORE_REC_GPU_INTERVAL: cpu = group
 * << 8 | engine), named as the gpu_jobs collector writes it and as the
 * timeline and the renderers read it (docs/collectors.md, "GPU jobs").
 */
#ifndef GPUPROF_STORE_GPU_ENGINE_H
#define GPUPROF_STORE_GPU_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The tracepoint group of an interval (cpu >> 8): bpf/gpu_job_abi.h values. */
enum gpu_engine_group {
	GPU_ENGINE_XE = 0,
	GPU_ENGINE_I915 = 1,
	GPU_ENGINE_FENCE = 2,
	GPU_ENGINE_CUPTI = 3, /* NVIDIA activity from the CUPTI library (store.h) */
};

/* The engine of a GPU_ENGINE_CUPTI interval: the activity's kind. */
enum gpu_cupti_kind {
	GPU_CUPTI_KERNEL = 0,
	GPU_CUPTI_MEMCPY = 1,
	GPU_CUPTI_MEMSET = 2,
	GPU_CUPTI_SYNC = 3,
	GPU_CUPTI_GRAPH = 4,
};

/*
 * Engine class names: xe numbers them as the kernel's enum xe_engine_class
 * (xe_hw_engine_types.h), i915 as its uAPI (I915_ENGINE_CLASS_*); CUPTI's
 * "engines" are the activity kinds (enum gpu_cupti_kind).
 */
static inline const char *gpu_engine_class(unsigned group, unsigned engine)
{
	static const char *const xe[] = {"rcs", "vcs", "vecs", "bcs", "other", "ccs"};
	static const char *const i915[] = {"rcs", "bcs", "vcs", "vecs", "ccs"};
	static const char *const cupti[] = {"kernel", "memcpy", "memset", "sync", "graph"};
	if (group == GPU_ENGINE_XE && engine < sizeof(xe) / sizeof(xe[0]))
		return xe[engine];
	if (group == GPU_ENGINE_I915 && engine < sizeof(i915) / sizeof(i915[0]))
		return i915[engine];
	if (group == GPU_ENGINE_CUPTI && engine < sizeof(cupti) / sizeof(cupti[0]))
		return cupti[engine];
	return NULL;
}

/* A copy (blitter) engine: its work is memory movement. Intel only: CUPTI
 * names its copies itself ("Memcpy HtoD ..."). */
static inline bool gpu_engine_is_copy(unsigned group, unsigned engine)
{
	const char *n = gpu_engine_class(group, engine);
	return group != GPU_ENGINE_CUPTI && n && n[0] == 'b';
}

/* "xe/ccs", "i915/bcs", "cuda/kernel", "xe/class9" into buf (fence
 * intervals are named by the collector after their ops symbol). Returns
 * buf. */
static inline const char *gpu_engine_name(unsigned group, unsigned engine, char *buf, size_t len)
{
	const char *drv = group == GPU_ENGINE_XE      ? "xe"
			  : group == GPU_ENGINE_I915  ? "i915"
			  : group == GPU_ENGINE_CUPTI ? "cuda"
						      : "fence";
	const char *n = gpu_engine_class(group, engine);
	if (n)
		snprintf(buf, len, "%s/%s", drv, n);
	else
		snprintf(buf, len, "%s/class%u", drv, engine);
	return buf;
}

#endif
