// SPDX-License-Identifier: MIT
/*
 * Timeline core: string table (interning with an open-addressing hash),
 * rank bookkeeping and the read accessors.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "timeline_int.h"

static uint64_t hash_bytes(const char *s, size_t n)
{
	/* 8 bytes at a time, multiply-xorshift mix: fast on long kernel names. */
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, 8);
		h ^= w;
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	if (i < n) {
		uint64_t w = 0;

		memcpy(&w, s + i, n - i);
		h ^= w;
		h *= 0x94d049bb133111ebull;
		h ^= h >> 29;
	}
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

static int strtab_rehash(struct strtab *st, uint32_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 1; id < st->n; id++) {
		uint32_t i = st->hashes[id] & (nslots - 1);

		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = id + 1;
	}
	free(st->slots);
	st->slots = slots;
	st->nslots = nslots;
	return 0;
}

int strtab_init(struct strtab *st)
{
	memset(st, 0, sizeof(*st));
	if (strtab_intern(st, "", 0) < 0) {
		strtab_finish(st);
		return -ENOMEM;
	}
	return 0;
}

void strtab_finish(struct strtab *st)
{
	free(st->blob);
	free(st->off);
	free(st->len);
	free(st->slots);
	free(st->hashes);
	memset(st, 0, sizeof(*st));
}

uint32_t strtab_find(const struct strtab *st, const char *s, size_t len)
{
	uint32_t h, i;

	if (!len || !st->nslots)
		return 0;
	h = (uint32_t)hash_bytes(s, len);
	for (i = h & (st->nslots - 1); st->slots[i]; i = (i + 1) & (st->nslots - 1)) {
		uint32_t id = st->slots[i] - 1;

		if (st->hashes[id] == h && st->len[id] == len &&
		    !memcmp(st->blob + st->off[id], s, len))
			return id;
	}
	return 0;
}

int64_t strtab_intern(struct strtab *st, const char *s, size_t len)
{
	uint32_t h, i, id;
	int err;

	if (len > UINT32_MAX - 1)
		return -E2BIG;
	if (st->n && !len)
		return 0;
	h = (uint32_t)hash_bytes(s, len);
	if (st->nslots) {
		for (i = h & (st->nslots - 1); st->slots[i]; i = (i + 1) & (st->nslots - 1)) {
			id = st->slots[i] - 1;
			if (st->hashes[id] == h && st->len[id] == len &&
			    !memcmp(st->blob + st->off[id], s, len))
				return id;
		}
	}
	if (st->n >= STRTAB_MAX_IDS)
		return -E2BIG;
	if (st->n == st->cap) {
		uint32_t ncap = st->cap ? st->cap * 2 : 256;
		uint64_t *off = realloc(st->off, ncap * sizeof(*off));

		if (!off)
			return -ENOMEM;
		st->off = off;
		uint32_t *l = realloc(st->len, ncap * sizeof(*l));
		if (!l)
			return -ENOMEM;
		st->len = l;
		uint32_t *hs = realloc(st->hashes, ncap * sizeof(*hs));
		if (!hs)
			return -ENOMEM;
		st->hashes = hs;
		st->cap = ncap;
	}
	if (st->blob_len + len + 1 > st->blob_cap) {
		size_t ncap = st->blob_cap ? st->blob_cap * 2 : 4096;
		char *b;

		while (ncap < st->blob_len + len + 1)
			ncap *= 2;
		b = realloc(st->blob, ncap);
		if (!b)
			return -ENOMEM;
		st->blob = b;
		st->blob_cap = ncap;
	}
	id = st->n;
	st->off[id] = st->blob_len;
	st->len[id] = (uint32_t)len;
	st->hashes[id] = h;
	if (len)
		memcpy(st->blob + st->blob_len, s, len);
	st->blob[st->blob_len + len] = '\0';
	st->blob_len += len + 1;
	st->n++;
	if (id == 0)
		return 0; /* "" is never hashed */
	if ((uint64_t)st->n * 2 > st->nslots) {
		err = strtab_rehash(st, st->nslots ? st->nslots * 2 : 1024);
		if (err < 0) {
			st->n--;
			st->blob_len -= len + 1;
			return err;
		}
		return id;
	}
	for (i = h & (st->nslots - 1); st->slots[i]; i = (i + 1) & (st->nslots - 1))
		;
	st->slots[i] = id + 1;
	return id;
}

/* ---- ranks ------------------------------------------------------------ */

struct tl_rank *tl_rank_alloc(int32_t rank)
{
	struct tl_rank *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->rank = rank;
	r->min_ts_ns = INT64_MAX;
	r->hta_min_ts_us = INT64_MAX;
	r->step_cutoff_hta_us = -1;
	r->step_cutoff_ns = -1;
	r->base_time_ns = -1;
	return r;
}

void tl_rank_drop_indexes(struct tl_rank *r)
{
	free(r->by_stream);
	free(r->streams);
	free(r->by_thread);
	free(r->threads);
	free(r->by_corr);
	free(r->corr_keys);
	free(r->corr_start);
	r->corr_keys = NULL;
	r->corr_start = NULL;
	r->corr_span = r->corr_shift = 0;
	r->by_stream = r->by_thread = r->by_corr = NULL;
	r->streams = NULL;
	r->threads = NULL;
	r->nstreams = r->nby_stream = r->nthreads = r->nby_corr = 0;
	r->flags &= ~TL_RANK_FINALIZED;
}

void tl_rank_free(struct tl_rank *r)
{
	if (!r)
		return;
	tl_rank_drop_indexes(r);
	free(r->ev);
	free(r->args);
	free(r->meta);
	free(r->devices);
	free(r->tail);
	free(r->tail_args);
	free(r);
}

int tl_insert_rank(struct timeline *tl, struct tl_rank *r)
{
	uint32_t i;
	int err;

	for (i = 0; i < tl->nranks && tl->ranks[i]->rank < r->rank; i++)
		;
	if (i < tl->nranks && tl->ranks[i]->rank == r->rank)
		return -EEXIST;
	err = bigalloc_grow((void **)&tl->ranks, &tl->cap, tl->nranks + 1, sizeof(*tl->ranks));
	if (err < 0)
		return err;
	memmove(tl->ranks + i + 1, tl->ranks + i, (tl->nranks - i) * sizeof(*tl->ranks));
	tl->ranks[i] = r;
	tl->nranks++;
	return 0;
}

int timeline_new(struct timeline **ret)
{
	struct timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return -ENOMEM;
	if (strtab_init(&tl->st) < 0) {
		free(tl);
		return -ENOMEM;
	}
	*ret = tl;
	return 0;
}

void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	for (uint32_t i = 0; i < tl->nranks; i++)
		tl_rank_free(tl->ranks[i]);
	free(tl->ranks);
	strtab_finish(&tl->st);
	free(tl);
}

uint32_t timeline_nranks(const struct timeline *tl)
{
	return tl->nranks;
}

const struct tl_rank *timeline_rank_at(const struct timeline *tl, uint32_t i)
{
	return i < tl->nranks ? tl->ranks[i] : NULL;
}

const struct tl_rank *timeline_rank(const struct timeline *tl, int32_t rank)
{
	for (uint32_t i = 0; i < tl->nranks; i++)
		if (tl->ranks[i]->rank == rank)
			return tl->ranks[i];
	return NULL;
}

const char *timeline_str(const struct timeline *tl, uint32_t id, size_t *len)
{
	return strtab_get(&tl->st, id, len);
}

void timeline_shrink(struct timeline *tl)
{
	for (uint32_t i = 0; i < tl->nranks; i++) {
		struct tl_rank *r = tl->ranks[i];
		void *p;

		if (r->nev && (p = realloc(r->ev, (size_t)r->nev * sizeof(*r->ev))))
			r->ev = p;
		if (r->nargs && (p = realloc(r->args, (size_t)r->nargs * sizeof(*r->args))))
			r->args = p;
	}
}

size_t timeline_mem_bytes(const struct timeline *tl)
{
	const struct strtab *st = &tl->st;
	size_t n = sizeof(*tl) + st->blob_cap +
		   (size_t)st->cap * (sizeof(*st->off) + sizeof(*st->len) + sizeof(*st->hashes)) +
		   (size_t)st->nslots * sizeof(*st->slots) + (size_t)tl->cap * sizeof(*tl->ranks);

	for (uint32_t i = 0; i < tl->nranks; i++) {
		const struct tl_rank *r = tl->ranks[i];

		n += sizeof(*r) + (size_t)r->nev * (sizeof(*r->ev) + 2 * sizeof(uint32_t)) +
		     (size_t)r->nargs * sizeof(*r->args) + (size_t)r->ntail * sizeof(*r->tail) +
		     (size_t)r->ntail_args * sizeof(*r->tail_args) +
		     (size_t)r->nmeta * sizeof(*r->meta) +
		     (size_t)r->ndevices * sizeof(*r->devices) +
		     (size_t)r->nby_stream * sizeof(*r->by_stream) +
		     (size_t)r->nby_corr * (sizeof(*r->by_corr) + sizeof(*r->corr_keys)) +
		     (r->corr_start ? ((size_t)r->corr_span + 1) * sizeof(*r->corr_start) : 0) +
		     (size_t)r->nstreams * sizeof(*r->streams) +
		     (size_t)r->nthreads * sizeof(*r->threads);
	}
	return n;
}

uint32_t timeline_nstrs(const struct timeline *tl)
{
	return tl->st.n;
}

uint32_t timeline_str_find(const struct timeline *tl, const char *s, size_t len)
{
	return strtab_find(&tl->st, s, len);
}

int64_t timeline_min_ts_ns(const struct timeline *tl)
{
	int64_t m = INT64_MAX;

	for (uint32_t i = 0; i < tl->nranks; i++)
		if (tl->ranks[i]->min_ts_ns < m)
			m = tl->ranks[i]->min_ts_ns;
	return m == INT64_MAX ? 0 : m;
}

int64_t timeline_hta_min_ts_us(const struct timeline *tl)
{
	int64_t m = INT64_MAX;

	for (uint32_t i = 0; i < tl->nranks; i++)
		if (tl->ranks[i]->hta_min_ts_us < m)
			m = tl->ranks[i]->hta_min_ts_us;
	return m == INT64_MAX ? 0 : m;
}

uint32_t tl_rank_corr(const struct tl_rank *r, int64_t correlation, uint32_t *first)
{
	const int64_t *k = r->corr_keys;
	uint32_t lo = 0, hi = 0, start;

	if (r->corr_start) {
		uint64_t b = ((uint64_t)correlation - (uint64_t)r->corr_lo) >> r->corr_shift;

		if (b < r->corr_span) {
			lo = r->corr_start[b];
			hi = r->corr_start[b + 1];
		}
		if (!r->corr_shift) { /* a bucket is one id */
			if (first)
				*first = lo;
			return hi - lo;
		}
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (k[mid] < correlation)
			lo = mid + 1;
		else
			hi = mid;
	}
	start = lo;
	while (k && lo < r->nby_corr && k[lo] == correlation)
		lo++;
	if (first)
		*first = start;
	return lo - start;
}

const struct tl_stream *tl_rank_stream(const struct tl_rank *r, int64_t stream, int64_t pid)
{
	uint32_t lo = 0, hi = r->nstreams;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct tl_stream *s = &r->streams[mid];

		if (s->stream < stream || (s->stream == stream && pid >= 0 && s->pid < pid))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nstreams && r->streams[lo].stream == stream &&
	    (pid < 0 || r->streams[lo].pid == pid))
		return &r->streams[lo];
	return NULL;
}

int tl_rank_push(struct tl_rank *r, struct tl_build *cap, const struct tl_event *e,
		 const struct tl_args *a)
{
	struct tl_event *ev, x = *e;

	/* µs grid for HTA-style consumers: ceil(ts), (ts + dur) / 1000 */
	if (!tl_ev_set_hta(&x, e->ts_ns / 1000 + (e->ts_ns % 1000 > 0),
			   (int64_t)(((__int128)e->ts_ns + e->dur_ns) / 1000)))
		return -ERANGE;
	if (bigalloc_grow((void **)&r->ev, &cap->ev_cap, r->nev + 1, sizeof(*r->ev)) ||
	    (a && bigalloc_grow((void **)&r->args, &cap->args_cap, r->nargs + 1, sizeof(*r->args))))
		return -ENOMEM;
	ev = &r->ev[r->nev++];
	*ev = x;
	ev->link = -1;
	ev->index_corr = e->correlation == -1 ? TL_NO_INDEX : 0;
	ev->args = TL_NO_ARGS;
	if (a) {
		ev->args = r->nargs;
		r->args[r->nargs++] = *a;
	}
	if (e->dur_ns < 0)
		ev->flags |= TL_EV_DUR_NEG;
	if (e->ts_ns < r->min_ts_ns)
		r->min_ts_ns = e->ts_ns;
	if (tl_ev_hta_ts_us(ev) < r->hta_min_ts_us)
		r->hta_min_ts_us = tl_ev_hta_ts_us(ev);
	return 0;
}
