// SPDX-License-Identifier: MIT
/*
 * The store's string and stack table: one entry array and one
 * open-addressing index (linear probing, tombstones) for both kinds, so
 * they share one id space and one budget. Entries are refcounted by the
 * records (and callers) holding them; freed entries go on a free list and
 * their ids are reused. See docs/store.md.
 */
#include "store/store-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int store_tab_init(struct store *s)
{
	s->ents = calloc(INIT_ENTS, sizeof(struct ent));
	s->buckets = calloc(INIT_ENTS * 2, sizeof(uint32_t));
	if (!s->ents || !s->buckets)
		return -ENOMEM;
	s->ents_cap = INIT_ENTS;
	s->nbuckets = INIT_ENTS * 2;
	return 0;
}

void store_tab_finish(struct store *s)
{
	for (uint32_t i = 0; i < s->ents_used; i++)
		free(s->ents[i].data);
	free(s->ents);
	free(s->buckets);
}

/* A 64-bit multiply-xorshift hash over 8-byte words: much faster than
 * byte-wise FNV on 1 KiB stacks and good enough for a table whose keys an
 * attacker can at worst make collide into longer probes. */
static inline uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v * 0x9e3779b97f4a7c15ull;
	h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static uint64_t hash_bytes(uint64_t seed, const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = seed ^ (n * 0xff51afd7ed558ccdull);
	uint64_t w;

	while (n >= 8) {
		memcpy(&w, b, 8);
		h = mix(h, w);
		b += 8;
		n -= 8;
	}
	w = 0;
	memcpy(&w, b, n);
	return mix(h, w ^ ((uint64_t)n << 56));
}

static uint32_t *probe_find(struct store *s, uint32_t idx1)
{
	uint32_t mask = s->nbuckets - 1, i = (uint32_t)s->ents[idx1 - 1].hash & mask;

	while (s->buckets[i] != idx1)
		i = (i + 1) & mask;
	return &s->buckets[i];
}

static void index_insert(struct store *s, uint32_t idx1)
{
	uint32_t mask = s->nbuckets - 1, i = (uint32_t)s->ents[idx1 - 1].hash & mask;

	while (s->buckets[i] != 0 && s->buckets[i] != TOMB)
		i = (i + 1) & mask;
	if (s->buckets[i] == TOMB)
		s->bucket_tomb--;
	s->buckets[i] = idx1;
	s->bucket_live++;
}

/* Rebuild the index into a (possibly new) bucket array, dropping tombstones. */
static void reindex(struct store *s, uint32_t *buckets, uint32_t nbuckets)
{
	memset(buckets, 0, (size_t)nbuckets * sizeof(*buckets));
	s->buckets = buckets;
	s->nbuckets = nbuckets;
	s->bucket_live = s->bucket_tomb = 0;
	for (uint32_t i = 0; i < s->ents_used; i++)
		if (s->ents[i].kind != ENT_FREE)
			index_insert(s, i + 1);
}

static void ent_release(struct store *s, uint32_t idx1)
{
	struct ent *e = &s->ents[idx1 - 1];

	*probe_find(s, idx1) = TOMB;
	s->bucket_live--;
	s->bucket_tomb++;
	if (e->kind == ENT_STR) {
		s->payload_bytes -= payload_cost((size_t)e->len + 1);
		s->nstrs--;
	} else {
		s->payload_bytes -= payload_cost((size_t)e->len * sizeof(uint64_t));
		s->nstacks--;
	}
	free(e->data);
	memset(e, 0, sizeof(*e));
	e->len = s->free_head;
	s->free_head = idx1;
}

void store_ent_unref(struct store *s, uint32_t id, uint8_t kind)
{
	if (!ent_ok(s, id, kind))
		return;
	if (--s->ents[id - 1].refs == 0)
		ent_release(s, id);
}

/* Grow the entry array (x2, or x1.25 near the budget) and the index with
 * it, keeping the index at most 2/3 full of live entries. Fails when the
 * larger arrays plus `reserve` payload bytes would not fit the budget. */
static bool grow(struct store *s, size_t reserve)
{
	uint32_t steps[2] = {s->ents_cap, s->ents_cap / 4};

	for (int k = 0; k < 2; k++) {
		uint64_t ncap = (uint64_t)s->ents_cap + steps[k];
		uint64_t nb = s->nbuckets;
		struct ent *ents;
		uint32_t *buckets;

		if (steps[k] == 0 || ncap >= TOMB / 2)
			continue;
		while (nb * 2 < ncap * 3)
			nb *= 2;
		if (table_bytes(s) + (ncap - s->ents_cap) * sizeof(struct ent) +
			    (nb - s->nbuckets) * sizeof(uint32_t) + reserve >
		    s->table_budget)
			continue;
		/* New index first: if the entry array then fails to grow, the
		 * old arrays are both still consistent. */
		buckets = nb != s->nbuckets ? malloc(nb * sizeof(uint32_t)) : NULL;
		if (nb != s->nbuckets && !buckets)
			return false;
		ents = realloc(s->ents, ncap * sizeof(struct ent));
		if (!ents) {
			free(buckets);
			return false;
		}
		s->ents = ents;
		memset(ents + s->ents_cap, 0, (ncap - s->ents_cap) * sizeof(struct ent));
		s->ents_cap = (uint32_t)ncap;
		if (buckets) {
			free(s->buckets);
			reindex(s, buckets, (uint32_t)nb);
		}
		return true;
	}
	return false;
}

static uint32_t lookup(struct store *s, uint8_t kind, uint64_t h, const void *data, uint32_t len,
		       uint16_t nuser)
{
	uint32_t mask = s->nbuckets - 1, b;
	size_t bytes = kind == ENT_STR ? len : (size_t)len * sizeof(uint64_t);

	for (uint32_t i = (uint32_t)h & mask; (b = s->buckets[i]) != 0; i = (i + 1) & mask) {
		const struct ent *e;

		if (b == TOMB)
			continue;
		e = &s->ents[b - 1];
		if (e->hash == h && e->kind == kind && e->len == len && e->nuser == nuser &&
		    (bytes == 0 || memcmp(e->data, data, bytes) == 0))
			return b;
	}
	return 0;
}

static uint32_t intern(struct store *s, uint8_t kind, uint64_t h, const void *data, uint32_t len,
		       uint16_t nuser, uint16_t nkernel)
{
	size_t bytes = kind == ENT_STR ? (size_t)len + 1 : (size_t)len * sizeof(uint64_t);
	size_t cost = payload_cost(bytes);
	uint32_t id = lookup(s, kind, h, data, len, nuser);
	struct ent *e;
	void *copy = NULL;

	if (id) {
		if (s->ents[id - 1].refs == UINT32_MAX)
			goto drop;
		s->ents[id - 1].refs++;
		return id;
	}
	for (;;) {
		bool slot = s->free_head || s->ents_used < s->ents_cap;

		if (table_bytes(s) + cost <= s->table_budget && (slot || grow(s, cost)))
			break;
		if (!store_evict_one(s))
			goto drop;
	}
	if (bytes) {
		copy = malloc(bytes);
		if (!copy)
			goto drop;
		memcpy(copy, data, kind == ENT_STR ? len : bytes);
		if (kind == ENT_STR)
			((char *)copy)[len] = '\0';
	}
	if (s->free_head) {
		id = s->free_head;
		s->free_head = s->ents[id - 1].len;
	} else {
		id = ++s->ents_used;
	}
	e = &s->ents[id - 1];
	*e = (struct ent){.hash = h,
			  .data = copy,
			  .refs = 1,
			  .len = len,
			  .nuser = nuser,
			  .nkernel = nkernel,
			  .kind = kind};
	s->payload_bytes += cost;
	if (kind == ENT_STR)
		s->nstrs++;
	else
		s->nstacks++;
	/* Tombstones pile up as entries are reclaimed; sweep them before
	 * probes get long. Same-size rebuild: O(nbuckets) after at least
	 * nbuckets/12 deletions, so amortised O(1). */
	if ((s->bucket_live + s->bucket_tomb + 1) * 4 > s->nbuckets * 3)
		reindex(s, s->buckets, s->nbuckets);
	index_insert(s, id);
	return id;
drop:
	s->dropped++;
	return 0;
}

uint32_t store_str_intern(struct store *s, const char *str, size_t len)
{
	if (!s || (!str && len))
		return 0;
	if (len > STR_MAX)
		len = STR_MAX;
	return intern(s, ENT_STR, hash_bytes(0x5354520000000001ull, str, len), str, (uint32_t)len,
		      0, 0);
}

void store_str_unref(struct store *s, uint32_t id)
{
	if (s)
		store_ent_unref(s, id, ENT_STR);
}

uint32_t store_stack_intern(struct store *s, const uint64_t *ips, uint16_t nuser, uint16_t nkernel)
{
	uint32_t n = (uint32_t)nuser + nkernel;

	if (!s || nuser > STORE_MAX_FRAMES || nkernel > STORE_MAX_FRAMES || (!ips && n)) {
		if (s)
			s->dropped++;
		return 0;
	}
	/* The split is part of the key: the same ips cut differently into
	 * user and kernel frames is a different stack. */
	return intern(s, ENT_STACK,
		      hash_bytes(0x53544b0000000000ull | ((uint64_t)nuser << 16) | nkernel, ips,
				 n * sizeof(uint64_t)),
		      ips, n, nuser, nkernel);
}

void store_stack_unref(struct store *s, uint32_t id)
{
	if (s)
		store_ent_unref(s, id, ENT_STACK);
}

static uint32_t ent_ref(struct store *s, uint32_t id, uint8_t kind)
{
	if (!s || !ent_ok(s, id, kind) || s->ents[id - 1].refs == UINT32_MAX)
		return 0;
	s->ents[id - 1].refs++;
	return id;
}

uint32_t store_str_ref(struct store *s, uint32_t id)
{
	return ent_ref(s, id, ENT_STR);
}

uint32_t store_stack_ref(struct store *s, uint32_t id)
{
	return ent_ref(s, id, ENT_STACK);
}

const char *store_str(const struct store *s, uint32_t id, size_t *len)
{
	if (!s || !ent_ok(s, id, ENT_STR)) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = s->ents[id - 1].len;
	return s->ents[id - 1].data ? s->ents[id - 1].data : "";
}

const uint64_t *store_stack(const struct store *s, uint32_t id, uint16_t *nuser, uint16_t *nkernel)
{
	static const uint64_t none[1];
	const struct ent *e;

	if (!s || !ent_ok(s, id, ENT_STACK)) {
		if (nuser)
			*nuser = 0;
		if (nkernel)
			*nkernel = 0;
		return NULL;
	}
	e = &s->ents[id - 1];
	if (nuser)
		*nuser = e->nuser;
	if (nkernel)
		*nkernel = e->nkernel;
	return e->data ? e->data : none;
}
