/* SPDX-License-Identifier: MIT */
/* Inside the store: shared by store.c (the ring) and strtab.c (the
 * string/stack table). Not for other parts. */
#ifndef GPUPROF_STORE_INT_H
#define GPUPROF_STORE_INT_H

#include "store/store.h"

#define STR_MAX 4095
#define MIN_BUDGET (64u * 1024)
#define INIT_ENTS 64u
#define TOMB UINT32_MAX
#define NCHECKPOINTS 64

enum { ENT_FREE = 0, ENT_STR = 1, ENT_STACK = 2 };

struct ent {
	uint64_t hash;
	void *data; /* NUL-terminated string, or nuser+nkernel ips */
	uint32_t refs;
	uint32_t len; /* string bytes / frames; free list link (index + 1) when free */
	uint16_t nuser, nkernel;
	uint8_t kind;
	uint8_t pad[3];
};

/* Eviction history for store_evicted_since(): running maximum of evicted
 * timestamps sampled every cp_every evictions. */
struct checkpoint {
	uint64_t max_ts;
	uint64_t evicted;
};

struct store {
	struct store_rec *ring;
	size_t cap, head, count;

	struct ent *ents;
	uint32_t ents_cap, ents_used; /* used: high-water mark of initialised slots */
	uint32_t free_head;	      /* index + 1, 0 = empty */
	uint32_t *buckets;	      /* entry index + 1, 0 = empty, TOMB = deleted */
	uint32_t nbuckets, bucket_live, bucket_tomb;
	size_t payload_bytes;
	size_t nstrs, nstacks;

	size_t budget, table_budget;
	uint64_t appended, dropped, evicted;

	uint64_t ev_max_ts;
	uint64_t cp_every, cp_since;
	struct checkpoint cp_base; /* last one dropped from cps[]: {0, 0} until the log wraps */
	struct checkpoint cps[NCHECKPOINTS];
	unsigned ncps, cp_next;
};

/* What a payload costs: malloc rounds to 16 bytes and keeps a header, so
 * count that too; otherwise millions of tiny strings would overshoot the
 * budget in real memory while looking fine on paper. */
static inline size_t payload_cost(size_t n)
{
	return n ? ((n + 15) & ~(size_t)15) + 16 : 0;
}

static inline size_t table_bytes(const struct store *s)
{
	return (size_t)s->ents_cap * sizeof(struct ent) + (size_t)s->nbuckets * sizeof(uint32_t) +
	       s->payload_bytes;
}

static inline bool ent_ok(const struct store *s, uint32_t id, uint8_t kind)
{
	return id != 0 && id <= s->ents_used && s->ents[id - 1].kind == kind;
}

/* strtab.c */
int store_tab_init(struct store *s);
void store_tab_finish(struct store *s);
void store_ent_unref(struct store *s, uint32_t id, uint8_t kind);

/* store.c: push the oldest record out; false when the ring is empty. */
bool store_evict_one(struct store *s);

#endif
