/* SPDX-License-Identifier: MIT */
/* Internals shared by core.c (kernel table, attribution, deferral) and
 * prof.c (aggregation rows, export). */
#ifndef GPUPROF_XE_INT_H
#define GPUPROF_XE_INT_H

#include <pthread.h>

#include "xe.h"

#define XE_MAX_IBAS 16

struct xe_kent {
	uint64_t start, end, iba; /* [start, end) masked VA */
	uint32_t id;		  /* slot + 1; 0 = free slot */
	uint32_t pid, uid;
	uint32_t last_iv; /* newest interval it was added or hit in */
	bool active;	  /* in the address index (not replaced, not exited) */
	bool weak;	  /* xe_kernel_info.weak: a batch-buffer KSP, not named */
	uint16_t nustack;
	char *name, *file, *comm, *cgroup;
	uint64_t *ustack;
};

/* One aggregation row: 64 bytes, counters of one (interval, kernel,
 * offset). kid 0 = unattributed, off = IBA-relative address (ip << 3). */
struct xe_row {
	uint32_t iv, kid, off, used;
	uint32_t cnt[XE_NREASONS];
	uint32_t pad[2];
};
_Static_assert(sizeof(struct xe_row) == 64, "row stays one cache line");

/*
 * The hot cache in front of the rows (prof.c): the current interval's
 * (kernel, offset) counters in a small table that stays in L2, merged into
 * the big table when the interval ends, when an entry is pushed out, or
 * before anyone reads the rows. Without it every sample costs a cache (and
 * TLB) miss in the 32 MiB table: each interval hashes to fresh rows.
 * u16 counters: a record adds at most 255 per reason, and an entry is
 * merged after XE_HOT_MAX_ADDS adds, so they never wrap.
 */
#define XE_HOT_BITS 14	     /* 16384 entries of 32 bytes: 512 KiB */
#define XE_HOT_PROBE 4	     /* entries looked at before one is pushed out */
#define XE_HOT_MAX_ADDS 256u /* 256 * 255 < 65536 */
struct xe_hot {
	uint32_t kid, off;
	uint16_t cnt[XE_NREASONS];
	uint16_t nadd; /* 0 = free */
	uint16_t pad;
};
_Static_assert(sizeof(struct xe_hot) == 32, "two entries per cache line");

struct xe_dsample {
	uint64_t ip;
	uint32_t iv;
	uint8_t cnt[XE_NREASONS];
	uint8_t shift; /* 3: ip counts 8-byte units */
	uint8_t pad;
};

struct xe {
	pthread_mutex_t lock;
	struct xe_config cfg;
	uint64_t epoch_ns;

	/* kernel table: slots by id, plus an index of active slots sorted by
	 * start for the O(log n) interval look-up */
	struct xe_kent *k;
	uint32_t kcap, kused;
	uint32_t *freeslots;
	uint32_t nfree;
	uint32_t *idx;
	uint32_t nidx;
	uint64_t ibas[XE_MAX_IBAS];
	unsigned nibas;
	uint32_t last_hit; /* slot + 1 of the last kernel a sample hit */

	/* rows: open addressing, linear probing, power-of-two capacity */
	struct xe_row *rows;
	uint32_t rcap, nrows;
	uint32_t min_iv, max_iv;
	struct xe_hot *hot; /* 1 << XE_HOT_BITS entries, all of interval hot_iv */
	uint32_t hot_iv, nhot;

	/* deferred samples: ring */
	struct xe_dsample *d;
	uint32_t dhead, dn;

	struct xe_stats st;
};

static inline uint32_t xe_iv(const struct xe *x, uint64_t ns)
{
	return ns <= x->epoch_ns ? 0 : (uint32_t)((ns - x->epoch_ns) / x->cfg.interval_ns);
}

/* prof.c; called with the lock held */
int xe_rows_init(struct xe *x);
void xe_rows_add(struct xe *x, uint32_t iv, uint32_t kid, uint32_t off, const uint8_t *cnt);
/* The hot path: counters of the newest interval go through the hot cache.
 * xe_hot_begin(iv) first (merges the cache when the interval changed);
 * xe_rows_flush merges it into the rows, and every reader of x->rows
 * calls it first. */
void xe_rows_flush(struct xe *x);
void xe_hot_merge(struct xe *x, struct xe_hot *h);

static inline void xe_hot_begin(struct xe *x, uint32_t iv)
{
	if (iv != x->hot_iv) {
		xe_rows_flush(x);
		x->hot_iv = iv;
	}
}

static inline uint32_t xe_hot_hash(uint32_t kid, uint32_t off)
{
	uint64_t h = ((uint64_t)kid << 32 | off) * 0x9E3779B97F4A7C15ull;

	return (uint32_t)(h >> (64 - XE_HOT_BITS));
}

/* Add one sample's counters to (kid, off) of interval hot_iv; home is
 * xe_hot_hash(kid, off) (the caller computed it to prefetch the line). */
static inline void xe_hot_add(struct xe *x, uint32_t home, uint32_t kid, uint32_t off,
			      const uint8_t *cnt)
{
	const uint32_t mask = (1u << XE_HOT_BITS) - 1;
	struct xe_hot *h = NULL;
	uint32_t i = home;

	/* Bounded linear probe: a hit, else the first free entry, else the
	 * home entry is pushed out to the rows (a cache, not a table). */
	for (unsigned p = 0; p < XE_HOT_PROBE; p++, i = (i + 1) & mask) {
		struct xe_hot *c = &x->hot[i];

		if (c->nadd && c->kid == kid && c->off == off) {
			h = c;
			break;
		}
		if (!c->nadd && !h)
			h = c;
	}
	if (!h) {
		h = &x->hot[home];
		xe_hot_merge(x, h);
	}
	if (!h->nadd) {
		h->kid = kid;
		h->off = off;
		x->nhot++;
	}
	for (int r = 0; r < XE_NREASONS; r++)
		h->cnt[r] = (uint16_t)(h->cnt[r] + cnt[r]);
	if (++h->nadd == XE_HOT_MAX_ADDS)
		xe_hot_merge(x, h);
}

/* core.c; called with the lock held */
struct xe_kent *xe_kfind(struct xe *x, uint64_t ip, uint64_t *addr);
void xe_retry_locked(struct xe *x, uint32_t now_iv, bool give_up);

#endif
