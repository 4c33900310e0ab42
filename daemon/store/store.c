// SPDX-License-Identifier: MIT
/*
 * The ring store (this file: the ring, eviction, stats; strtab.c: the
 * string and stack table). docs/store.md explains the layout and the budget rules;
 * the short version:
 *
 *  - the record ring is one array allocated in store_new() and never
 *    resized;
 *  - strings and stacks share one entry table (one id space, one hash
 *    index) so a burst of one kind cannot strand capacity the other kind
 *    needs later; each entry has a kind and a refcount, ids are index + 1;
 *  - the entry array and the open-addressing index grow geometrically but
 *    only while everything (entries, buckets, payload) stays within the
 *    table budget; they never shrink, and freed entries go on a free list,
 *    so after warm-up the footprint is flat;
 *  - when an intern does not fit, the oldest records are evicted until
 *    the references they held free enough room.
 */
#include "store/store-int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void checkpoint_push(struct store *s)
{
	if (s->ncps == NCHECKPOINTS)
		s->cp_base = s->cps[s->cp_next];
	else
		s->ncps++;
	s->cps[s->cp_next] = (struct checkpoint){.max_ts = s->ev_max_ts, .evicted = s->evicted};
	s->cp_next = (s->cp_next + 1) % NCHECKPOINTS;
	s->cp_since = 0;
}

bool store_evict_one(struct store *s)
{
	struct store_rec *r;

	if (s->count == 0)
		return false;
	r = &s->ring[s->head];
	if (++s->head == s->cap)
		s->head = 0;
	s->count--;
	s->evicted++;
	if (r->ts_ns > s->ev_max_ts)
		s->ev_max_ts = r->ts_ns;
	if (++s->cp_since >= s->cp_every)
		checkpoint_push(s);
	store_ent_unref(s, r->comm, ENT_STR);
	store_ent_unref(s, r->name, ENT_STR);
	store_ent_unref(s, store_rec_cgroup(r), ENT_STR);
	store_ent_unref(s, store_rec_detail(r), ENT_STR);
	store_ent_unref(s, r->stack, ENT_STACK);
	return true;
}

int store_new(const struct store_config *cfg, struct store **ret)
{
	struct store *s;

	if (!cfg || cfg->budget_bytes < MIN_BUDGET || cfg->budget_bytes > SIZE_MAX / 4)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->budget = cfg->budget_bytes;
	s->cap = cfg->budget_bytes / 2 / sizeof(struct store_rec);
	s->table_budget = cfg->budget_bytes - s->cap * sizeof(struct store_rec);
	s->cp_every = s->cap / 32 ? s->cap / 32 : 1;
	s->ring = malloc(s->cap * sizeof(struct store_rec));
	if (!s->ring || store_tab_init(s) < 0) {
		store_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

void store_free(struct store *s)
{
	if (!s)
		return;
	store_tab_finish(s);
	free(s->ring);
	free(s);
}

int store_append(struct store *s, const struct store_rec *rec)
{
	struct store_rec *r;
	size_t tail;

	if (!s || !rec)
		return -EINVAL;
	if (s->count == s->cap)
		store_evict_one(s);
	tail = s->head + s->count;
	if (tail >= s->cap)
		tail -= s->cap;
	r = &s->ring[tail];
	*r = *rec;
	/* An id the store does not know (or of the wrong kind) carries no
	 * reference we could drop later: keep the record, lose the id. */
	if (r->comm && !ent_ok(s, r->comm, ENT_STR))
		r->comm = 0;
	if (r->name && !ent_ok(s, r->name, ENT_STR))
		r->name = 0;
	if (r->type == STORE_REC_GPU_LAUNCH) {
		r->cgroup_rsv = 0;
		if (r->cgroup && !ent_ok(s, r->cgroup, ENT_STR))
			r->cgroup = 0;
	}
	if (store_rec_detail(r) && !ent_ok(s, store_rec_detail(r), ENT_STR))
		r->aux[1] &= UINT32_MAX;
	if (r->stack && !ent_ok(s, r->stack, ENT_STACK))
		r->stack = 0;
	s->count++;
	s->appended++;
	return 0;
}

size_t store_count(const struct store *s)
{
	return s ? s->count : 0;
}

const struct store_rec *store_at(const struct store *s, size_t i)
{
	size_t k;

	if (!s || i >= s->count)
		return NULL;
	k = s->head + i;
	if (k >= s->cap)
		k -= s->cap;
	return &s->ring[k];
}

uint32_t store_id_limit(const struct store *s)
{
	return s ? s->ents_used + 1 : 1;
}

uint64_t store_evicted_since(const struct store *s, uint64_t ts_ns)
{
	uint64_t base;

	if (!s || s->evicted == 0 || s->ev_max_ts < ts_ns)
		return 0;
	/* Start from the last checkpoint dropped from the log; when even it
	 * is as new as ts, the log no longer knows: all evictions count. */
	if (s->cp_base.evicted && s->cp_base.max_ts >= ts_ns)
		return s->evicted;
	base = s->cp_base.evicted;
	for (unsigned k = 0; k < s->ncps; k++) {
		const struct checkpoint *cp =
			&s->cps[(s->cp_next + NCHECKPOINTS - s->ncps + k) % NCHECKPOINTS];

		if (cp->max_ts >= ts_ns)
			break;
		base = cp->evicted;
	}
	return s->evicted - base;
}

void store_get_stats(const struct store *s, struct store_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	st->appended = s->appended;
	st->dropped = s->dropped;
	st->evicted = s->evicted;
	st->records = s->count;
	st->capacity = s->cap;
	st->strings = s->nstrs;
	st->stacks = s->nstacks;
	st->table_bytes = table_bytes(s);
	st->table_budget = s->table_budget;
	st->budget_bytes = s->budget;
	if (s->count) {
		st->oldest_ts_ns = store_at(s, 0)->ts_ns;
		st->newest_ts_ns = store_at(s, s->count - 1)->ts_ns;
	}
}
