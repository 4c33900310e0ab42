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

/* core.c; called with the lock held */
struct xe_kent *xe_kfind(struct xe *x, uint64_t ip, uint64_t *addr);
void xe_retry_locked(struct xe *x, uint32_t now_iv, bool give_up);

#endif
