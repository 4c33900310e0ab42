/* SPDX-License-Identifier: MIT */
/*
 * Stack sampling of the GPU launch collector, userspace half: the stack last
 * seen per (pid, tid, kernel handle, call site). The BPF side walks the user
 * stack for one launch in gpu.stack_sample per such site and sends the others
 * without one (GPU_LAUNCH_F_NOSTACK); each of those gets the store stack
 * remembered here, so every launch still has a stack and folded counts stay
 * exact. Bounded: a fixed table, 4-way, least recently used replaced. Holds
 * one store reference per remembered stack.
 */
#ifndef GPUPROF_COLLECT_GPU_SITES_H
#define GPUPROF_COLLECT_GPU_SITES_H

#include <stdint.h>

struct store;

struct gpu_site_slot {
	uint32_t pid, tid;
	uint64_t handle, caller;
	uint32_t stack; /* store stack id (one reference), 0 = empty slot */
	uint32_t used;	/* clock of the last use */
};

struct gpu_sites {
	struct gpu_site_slot *slot; /* GPU_SITES_SLOTS, allocated on first put */
	uint32_t clock;
	uint64_t taken;	 /* launches that came with a stack */
	uint64_t reused; /* launches given a remembered stack */
	uint64_t misses; /* launches without a stack and none remembered */
};

#define GPU_SITES_SLOTS 4096u
#define GPU_SITES_WAYS 4u

/* Remember stack as the one last seen at the site (takes its own reference;
 * the caller keeps its own). Allocation failure only forgets. */
void gpu_sites_put(struct gpu_sites *t, struct store *s, uint32_t pid, uint32_t tid,
		   uint64_t handle, uint64_t caller, uint32_t stack);

/* A new reference to the stack last seen at the site, or 0 (counted as a
 * miss) when none is remembered. */
uint32_t gpu_sites_get(struct gpu_sites *t, struct store *s, uint32_t pid, uint32_t tid,
		       uint64_t handle, uint64_t caller);

/* Forget pid's sites (it exited or exec'd). */
void gpu_sites_drop_pid(struct gpu_sites *t, struct store *s, uint32_t pid);

/* Forget everything and free the table; counters are kept. */
void gpu_sites_clear(struct gpu_sites *t, struct store *s);

#endif
