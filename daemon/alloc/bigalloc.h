/* SPDX-License-Identifier: MIT */
/*
 * Big allocations: the per-event arrays of a timeline and the scratch
 * arrays of the analyses, many MiB each. Blocks from 4 MiB on are
 * 2 MiB-aligned and advised MADV_HUGEPAGE; arrays grown in order move to
 * such blocks instead of realloc(); big scratch blocks a caller frees with
 * bigalloc_free() are kept for a later request of about the same size.
 *
 * The cache of kept blocks is the one piece of state, and it is
 * process-wide on purpose, as malloc()'s own arenas are: the blocks are
 * taken and given back on any thread (imports, analyses on the job pool),
 * and a block one analysis frees is what the next one wants. Its owner is
 * the program's main(): it sets the cap and age once at start
 * (bigalloc_cache_config), trims it on its periodic timer (bigalloc_trim) and
 * reads its figures for status (bigalloc_stats). Everything else only
 * allocates and frees. All functions are thread-safe.
 */
#ifndef GPUPROF_ALLOC_BIGALLOC_H
#define GPUPROF_ALLOC_BIGALLOC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* malloc() for per-event scratch arrays: from 4 MiB on, 2 MiB-aligned and
 * advised MADV_HUGEPAGE (a fault per 2 MiB written instead of 512 4 KiB
 * ones, each costly in a VM), or a block of about that size kept by
 * bigalloc_free(); free() or bigalloc_free() frees it. */
void *bigalloc_malloc(size_t bytes);
/* free() for a bigalloc_malloc() block that a later bigalloc_malloc() of about
 * the same size may reuse: from 4 MiB on it is kept, within a cap on all
 * kept bytes, for at most an age (bigalloc_cache_config); NULL is a no-op. */
void bigalloc_free(void *p);
/* bigalloc_malloc() for room sized by an upper bound, of which only a part
 * may be written: not populated ahead (bigalloc_malloc() populates all it
 * gives, MADV_POPULATE_WRITE); pages come as they are written. */
void *bigalloc_malloc_room(size_t bytes);
/* calloc() for the big arrays: bigalloc_malloc(), zeroed. */
void *bigalloc_calloc(size_t n, size_t sz);
#define BIGALLOC_CACHE_DEFAULT (256u << 20)
/* Cap on the bytes kept (0: keep none, free what is kept) and their age. */
void bigalloc_cache_config(size_t cap, uint64_t age_ns);
/* Free kept blocks older than the age (all: every kept block); returns
 * the bytes freed. */
size_t bigalloc_trim(bool all);
struct bigalloc_stats {
	size_t cached, cap;	/* bytes kept now, cap */
	uint64_t reused, fresh; /* big allocations served from the cache / not */
	uint64_t trimmed;	/* bytes freed from the cache (age, room, trim) */
};
void bigalloc_stats(struct bigalloc_stats *st);

/* Populate the pages of base[*done .. upto + a few MiB) (within alloc
 * bytes) ahead of sequential writes; *done tracks the progress. */
void bigalloc_prefault(void *base, size_t alloc, size_t *done, size_t upto);
/* Grow *arr (element size sz) so that it can hold need elements. */
int bigalloc_grow(void **arr, uint32_t *cap, uint32_t need, size_t sz);
/* bigalloc_grow() for an array filled in order whose first n elements are in
 * use: from BIGALLOC_HUGE_MIN bytes on, a new huge-page array with 4 times the
 * room (address space only until it fills) gets those n copied, instead
 * of realloc(). realloc() moves a large
 * block with mremap(), and on a VM with shadow page tables every 4 KiB
 * page moved then costs microseconds on its next touch: the first pass
 * over 310 MB of rows after such a grow takes 350-460 ms, the second
 * 10-14 ms (bench/import/bench_grow). The passes after an import (finalize,
 * duplicates, indexes) find the rows unmoved and on huge pages. */
int bigalloc_grow_huge(void **arr, uint32_t *cap, uint32_t n, uint32_t need, size_t sz);
/* Room for want elements in one move, for a builder that can estimate its
 * final count early: the appends up to want then neither copy the array
 * nor populate the blocks it would have grown through (address space
 * only until written). Under BIGALLOC_HUGE_MIN bytes a realloc() to want
 * (what bigalloc_grow would have reached through doublings, each a copy). No-op
 * when want fits; -ENOMEM leaves *arr as it was. */
int bigalloc_reserve(void **arr, uint32_t *cap, uint32_t n, uint32_t want, size_t sz);

/* Room for `add` more elements after the n in *arr, for a builder that
 * prefaults ahead of its writes (bigalloc_prefault, *pop its bookkeeping: reset
 * to what was copied when the array moved; NULL: no prefault). */
static inline int bigalloc_grow_pop(void **arr, uint32_t *cap, size_t *pop, uint32_t n,
				    uint32_t add, size_t sz)
{
	if ((uint64_t)n + add > *cap) {
		void *old = *arr;
		int err = bigalloc_grow_huge(arr, cap, n, n + add, sz);

		if (err < 0)
			return err;
		if (pop && *arr != old)	       /* moved: what was populated moved with it, */
			*pop = (size_t)n * sz; /* or was copied */
	}
	if (pop)
		bigalloc_prefault(*arr, (size_t)*cap * sz, pop, (size_t)(n + add) * sz);
	return 0;
}

/* bigalloc_reserve() for a bigalloc_grow_pop() array (*pop reset when it moved). */
static inline int bigalloc_reserve_pop(void **arr, uint32_t *cap, size_t *pop, uint32_t n,
				       uint32_t want, size_t sz)
{
	void *old = *arr;
	int err = bigalloc_reserve(arr, cap, n, want, sz);

	if (!err && pop && *arr != old)
		*pop = (size_t)n * sz;
	return err;
}

/* pthread_create() for the importer's helper threads: they take no
 * asynchronous signals (those stay the application's threads'); faults
 * (SIGSEGV, SIGBUS, ...) stay deliverable. 0 or an errno. */
int bigalloc_thread_start(pthread_t *th, void *(*fn)(void *), void *arg);
/* Whether this process may run on two CPUs or more. */
bool bigalloc_two_cpus(void);

/*
 * Populates, on a thread of the lowest priority (SCHED_IDLE: only CPU time
 * nothing else wants, as when the import's second thread waits for the
 * parser), the room of up to two arrays a builder reserved
 * (bigalloc_reserve), so that the builder's own writes find most of it
 * present: fresh memory is about half the cost of a large import on a
 * VM. The arrays must not move or be freed while it runs: stop it first.
 */
struct bigalloc_popper {
	pthread_t th;
	char *base[2];
	size_t len[2];
	_Atomic bool stop;
	bool running, idle;
};
/* a[a_from .. a_to) and b[b_from .. b_to) bytes (b may be NULL); whole
 * huge pages inside those ranges. Nothing when one CPU or no thread.
 * idle: SCHED_IDLE (the importer); else an ordinary thread (tests). */
void bigalloc_popper_start(struct bigalloc_popper *p, bool idle, void *a, size_t a_from,
			   size_t a_to, void *b, size_t b_from, size_t b_to);
void bigalloc_popper_stop(struct bigalloc_popper *p); /* waits for it; a no-op when not running */
/* Gives back the populated pages of base[used .. cap) bytes (whole huge
 * pages only): the room a popper populated past the rows in use. */
void bigalloc_room_release(void *base, size_t used, size_t cap);

#endif /* GPUPROF_ALLOC_BIGALLOC_H */
