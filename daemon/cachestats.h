/* SPDX-License-Identifier: MIT */
/*
 * The figures a cache kept under a byte budget reports, the same for every
 * such cache so that status shows them alike (the decoded timelines, the
 * critical-path graphs).
 */
#ifndef GPUPROF_CACHESTATS_H
#define GPUPROF_CACHESTATS_H

#include <stdint.h>

struct cache_stats {
	uint64_t entries, bytes, budget; /* kept now, their bytes, the bound */
	uint64_t hits, misses;		 /* lookups that found an entry / not */
	uint64_t evicted;		 /* entries dropped to make room */
	uint64_t too_large;		 /* entries over what one may take: used once */
};

#endif
