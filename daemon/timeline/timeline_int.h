/* SPDX-License-Identifier: MIT */
/*
 * Internals shared by the timeline files: the string table, the timeline
 * struct, growable arrays and the per-rank builder the importer fills.
 */
#ifndef GPUPROF_TIMELINE_INT_H
#define GPUPROF_TIMELINE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "alloc/bigalloc.h"
#include "timeline.h"

/* CLOCK_MONOTONIC in ns (deadlines of the nsys reader, ages of kept
 * blocks). */
static inline uint64_t tl_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Interned strings: ids 0..n-1, id 0 is "". Every string is NUL-terminated
 * inside blob, so timeline_str() can return a C string. */
struct strtab {
	char *blob;
	size_t blob_len, blob_cap;
	uint64_t *off; /* per id: offset into blob */
	uint32_t *len; /* per id */
	uint32_t n, cap;
	uint32_t *slots;  /* open addressing: id + 1, 0 = empty */
	uint32_t *hashes; /* per id, low 32 bits of the hash */
	uint32_t nslots;  /* power of two */
};

#define STRTAB_MAX_IDS (UINT32_MAX / 2)

int strtab_init(struct strtab *st);
void strtab_finish(struct strtab *st);
/* Intern s[0..len): returns the id (> 0 unless len == 0), or -ENOMEM /
 * -E2BIG when the table is full. */
int64_t strtab_intern(struct strtab *st, const char *s, size_t len);
/* Existing id or 0. */
uint32_t strtab_find(const struct strtab *st, const char *s, size_t len);
static inline const char *strtab_get(const struct strtab *st, uint32_t id, size_t *len)
{
	if (id >= st->n) {
		if (len)
			*len = 0;
		return "";
	}
	if (len)
		*len = st->len[id];
	return st->blob + st->off[id];
}

struct timeline {
	struct strtab st;
	struct tl_rank **ranks; /* ascending rank; pointers stay put */
	uint32_t nranks, cap;
};

/* Allocate an empty rank (not yet in a timeline). */
struct tl_rank *tl_rank_alloc(int32_t rank);
void tl_rank_free(struct tl_rank *r);
/* Insert r into tl in rank order; -EEXIST if the rank is present. */
int tl_insert_rank(struct timeline *tl, struct tl_rank *r);
/* Drop a rank's indexes (before rebuilding). */
void tl_rank_drop_indexes(struct tl_rank *r);
/* Build indexes and links of one rank (index.c). */
int tl_rank_index(struct tl_rank *r);
struct tl_kp;
struct tl_bythread;
/* The same, given tl_corr_pairs()'s pairs (the caller frees them; their
 * block is used as scratch), and bt: NULL, or the per-thread sort started
 * earlier (its results are taken; the caller still frees bt). */
int tl_rank_index_pairs(struct tl_rank *r, struct tl_kp *pairs, uint32_t npairs,
			struct tl_bythread *bt);
/* The per-thread sort of a large rank started on a second thread (NULL:
 * small rank, one CPU, no memory or thread). No row may move or change
 * its pid, tid, ts_ns or flags until tl_bythread_wait() (0 or -ENOMEM). */
struct tl_bythread *tl_bythread_start(struct tl_rank *r);
int tl_bythread_wait(struct tl_bythread *b);
/* After the rows moved: np[old position] = new one, or UINT32_MAX for a
 * row dropped (the step filter's). After tl_bythread_wait(). */
void tl_bythread_remap(struct tl_bythread *b, const uint32_t *np);
void tl_bythread_free(struct tl_bythread *b); /* waits for it first */
/* The (correlation, position) pairs of the rows with a correlation,
 * sorted, in a bigalloc_malloc() block with room for r->nev pairs
 * (finalize.c). 0 or -ENOMEM. */
int tl_corr_pairs(const struct tl_rank *r, struct tl_kp **pairs, uint32_t *npairs);
/* Name-derived flags/kinds, needs the string (kinds.c). */
uint8_t tl_kind_from_cat(const char *s, size_t n);
uint32_t tl_flags_from_name(const char *s, size_t n);
uint8_t tl_sync_from_name(const char *s, size_t n);

/* (key, position) pair for tl_sort_kp() (finalize.c). */
struct tl_kp {
	int64_t key;
	uint32_t pos;
};
/* Sort pairs a[0..n), filled in ascending position order, into (key, pos)
 * order: with ts_ns or correlation keys, HTA's (ts, index) or
 * (correlation, index), ev[] being in index order. 0 or -ENOMEM. */
int tl_sort_kp(struct tl_kp *a, uint32_t n);
/* HTA's correlation link (index_correlation) of every rank not finalized,
 * without the indexes: all that tl_encode() needs (indexes are not stored;
 * decode rebuilds them). Idempotent. 0 or -ENOMEM. */
int tl_link_ranks(struct timeline *tl);
/* timeline_encode() without its check that every rank is finalized: the
 * caller ran tl_link_ranks() or timeline_finalize(). */
int tl_encode(const struct timeline *tl, void **buf, size_t *len);
/* Mark exact duplicates (TL_EV_DUPLICATE); returns how many, or -ENOMEM. */
int64_t tl_rank_mark_duplicates(struct tl_rank *r);
/* The same on nthreads (1 or 2) threads: the marks are the same. */
int64_t tl_rank_mark_duplicates_n(struct tl_rank *r, int nthreads);

/* Capacities tracked next to the public arrays while building. */
struct tl_build {
	uint32_t ev_cap, args_cap, meta_cap, dev_cap;
	size_t ev_pop, args_pop; /* bytes prefaulted (bigalloc_prefault) */
};

/*
 * Append a copy of e (and of a, if not NULL) to r for importers that build
 * events field by field (nsys.c, live.c): fills HTA's µs grid (ceil(ts),
 * (ts + dur) / 1000), link -1, index_correlation, args, TL_EV_DUR_NEG and
 * the rank's minimum times. 0, -ENOMEM, or -ERANGE (nothing pushed) when
 * ts + dur is past int64 ns.
 */
int tl_rank_push(struct tl_rank *r, struct tl_build *cap, const struct tl_event *e,
		 const struct tl_args *a);

#endif /* GPUPROF_TIMELINE_INT_H */
