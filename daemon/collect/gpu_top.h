/* SPDX-License-Identifier: MIT */
/*
 * The hottest GPU kernels of a recent window, counted from the launch
 * records in the store (gpu.top, docs/protocol.md): launches per kernel,
 * the processes and the call sites (return addresses) that launch them,
 * ranked. Loop thread (it reads the store); bounded by the window and by
 * GPU_TOP_MAX_SCAN records.
 */
#ifndef GPUPROF_COLLECT_GPU_TOP_H
#define GPUPROF_COLLECT_GPU_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct capture;
struct store;

#define GPU_TOP_MAX_PIDS 64
#define GPU_TOP_MAX_KERNELS 4096 /* distinct kernels counted per request */
#define GPU_TOP_SITES 32	 /* distinct call sites kept per kernel */

struct gpu_top_site {
	uint32_t pid;
	uint64_t ip;
	uint64_t count;
	char name[160]; /* the caller's to fill (a symbolizer), "" here */
};

struct gpu_top_kernel {
	char name[256];
	char geometry[64]; /* of the latest launch seen */
	uint64_t count;
	uint32_t pids[4];
	unsigned npids;
	bool more_pids;
	struct gpu_top_site sites[GPU_TOP_SITES]; /* most launches first */
	unsigned nsites;
	uint64_t other_sites; /* launches from sites beyond GPU_TOP_SITES */
};

struct gpu_top_query {
	uint64_t t0_ns;	      /* launches at or after this time */
	const uint32_t *pids; /* only these (npids 0: all) */
	size_t npids;
	bool all_uids; /* else only uid's launches */
	uid_t uid;
	size_t limit; /* kernels kept */
};

struct gpu_top {
	struct gpu_top_kernel *k; /* most launches first */
	size_t nk;
	uint64_t total; /* launches counted, over all kernels */
	/* gpu_top_count(): some launch counted is known only by its function
	 * handle ("0x<hex>") and the window holds CUPTI kernels that may name
	 * it: gpu_top_count_capture() on the window names it */
	bool nameable;
};

/* Count and rank. 0, or -ENOMEM (*out untouched). Free with gpu_top_free(). */
int gpu_top_count(const struct store *s, const struct gpu_top_query *q, struct gpu_top *out);

/*
 * The same from a capture of the window (any thread: it reads only c),
 * each launch i named names[i] when that is set (gpu_launch_names(), the
 * names saved captures give launches known only by handle; names may be
 * NULL). The records of c are filtered by q as the store's are; c should
 * hold the window's launches, CUPTI API calls and intervals for the
 * requester's uid (capture_filter.types). 0 or -ENOMEM (*out untouched).
 */
int gpu_top_count_capture(const struct capture *c, const uint32_t *names,
			  const struct gpu_top_query *q, struct gpu_top *out);
void gpu_top_free(struct gpu_top *t);

#endif
