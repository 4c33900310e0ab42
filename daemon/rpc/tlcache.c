// SPDX-License-Identifier: MIT
/* The decoded-timeline cache (tlcache.h). A short list: entries are whole
 * timelines of MiB to GiB, so there are few of them. */
#include "tlcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "timeline/timeline.h"

struct tlent {
	struct tlent *next;
	uint64_t id;
	struct timeline *tl;
	size_t bytes;
	uint32_t refs;
	bool kept;     /* counted in the budget, findable by id */
	uint64_t used; /* tick of the last get/put */
};

struct tlcache {
	pthread_mutex_t mu;
	struct tlent *head;
	uint64_t budget, bytes, tick;
	struct cache_stats st;
};

int tlcache_new(uint64_t budget_bytes, struct tlcache **ret)
{
	struct tlcache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	c->budget = budget_bytes;
	*ret = c;
	return 0;
}

void tlcache_free(struct tlcache *c)
{
	if (!c)
		return;
	while (c->head) {
		struct tlent *e = c->head;

		c->head = e->next;
		timeline_free(e->tl);
		free(e);
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Unlink and free e (its references are gone). Lock held. */
static void ent_free(struct tlcache *c, struct tlent *e)
{
	for (struct tlent **p = &c->head; *p; p = &(*p)->next) {
		if (*p == e) {
			*p = e->next;
			break;
		}
	}
	if (e->kept)
		c->bytes -= e->bytes;
	timeline_free(e->tl);
	free(e);
}

/* No longer findable; freed now or at its last release. Lock held. */
static void ent_forget(struct tlcache *c, struct tlent *e)
{
	if (e->kept) {
		e->kept = false;
		c->bytes -= e->bytes;
	}
	if (!e->refs)
		ent_free(c, e);
}

/* The kept entry of capture id, or NULL. Lock held. */
static struct tlent *find_kept(struct tlcache *c, uint64_t id)
{
	struct tlent *e = c->head;

	while (e && !(e->kept && e->id == id))
		e = e->next;
	return e;
}

const struct timeline *tlcache_get(struct tlcache *c, uint64_t id)
{
	const struct timeline *tl = NULL;
	struct tlent *e;

	pthread_mutex_lock(&c->mu);
	if ((e = find_kept(c, id))) {
		e->refs++;
		e->used = ++c->tick;
		tl = e->tl;
		c->st.hits++;
	} else {
		c->st.misses++;
	}
	pthread_mutex_unlock(&c->mu);
	return tl;
}

const struct timeline *tlcache_put(struct tlcache *c, uint64_t id, struct timeline *tl)
{
	struct tlent *e = calloc(1, sizeof(*e)), *old;

	if (!e) {
		/* not tracked: the caller's release frees it as unknown */
		return tl;
	}
	e->id = id;
	e->tl = tl;
	e->bytes = timeline_mem_bytes(tl);
	e->refs = 1;
	pthread_mutex_lock(&c->mu);
	e->used = ++c->tick;
	if ((old = find_kept(c, id))) /* a racing decode of the same id */
		ent_forget(c, old);
	if (e->bytes <= c->budget) {
		while (c->bytes + e->bytes > c->budget) { /* least recently used first */
			struct tlent *lru = NULL;

			for (struct tlent *o = c->head; o; o = o->next)
				if (o->kept && (!lru || o->used < lru->used))
					lru = o;
			if (!lru)
				break;
			ent_forget(c, lru);
			c->st.evicted++;
		}
		e->kept = true;
		c->bytes += e->bytes;
	} else {
		c->st.too_large++;
	}
	e->next = c->head;
	c->head = e;
	pthread_mutex_unlock(&c->mu);
	return tl;
}

void tlcache_release(struct tlcache *c, const struct timeline *tl)
{
	struct tlent *e;

	if (!tl)
		return;
	pthread_mutex_lock(&c->mu);
	for (e = c->head; e && e->tl != tl; e = e->next)
		;
	if (e && !--e->refs && !e->kept)
		ent_free(c, e);
	pthread_mutex_unlock(&c->mu);
	if (!e) /* never tracked (tlcache_put out of memory) */
		timeline_free((struct timeline *)tl);
}

void tlcache_drop(struct tlcache *c, uint64_t id)
{
	struct tlent *e;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	if ((e = find_kept(c, id)))
		ent_forget(c, e);
	pthread_mutex_unlock(&c->mu);
}

void tlcache_get_stats(struct tlcache *c, struct cache_stats *st)
{
	pthread_mutex_lock(&c->mu);
	*st = c->st;
	st->budget = c->budget;
	st->bytes = c->bytes;
	st->entries = 0;
	for (struct tlent *e = c->head; e; e = e->next)
		st->entries += e->kept;
	pthread_mutex_unlock(&c->mu);
}
