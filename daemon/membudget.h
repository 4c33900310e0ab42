/* SPDX-License-Identifier: MIT */
/*
 * The memory budget all jobs share (memory.jobs_max): a job reserves what
 * it is about to hold (an import as its timeline grows) and gives it back
 * when it ends, so that limits.max_jobs large jobs at once cannot take
 * the daemon past its unit's MemoryMax. Thread-safe (jobs reserve from
 * worker threads).
 */
#ifndef GPUPROF_MEMBUDGET_H
#define GPUPROF_MEMBUDGET_H

#include <stdatomic.h>
#include <stdint.h>

struct membudget {
	_Atomic uint64_t used;
	uint64_t max; /* 0: no limit */
};

/* Reserve bytes: 0, or -ENOSPC (nothing reserved) when that would pass max. */
int membudget_take(struct membudget *b, uint64_t bytes);
void membudget_give(struct membudget *b, uint64_t bytes);
static inline uint64_t membudget_used(struct membudget *b)
{
	return atomic_load(&b->used);
}

#endif
