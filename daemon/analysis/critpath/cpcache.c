// SPDX-License-Identifier: MIT
#include "cpcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "critpath.h"
#include "membudget.h"

#define CACHE_MAX_ENTRIES 32

struct cp_cached {
	char *key;
	struct cp_graph *g;
	size_t bytes;
	unsigned refs;
	uint64_t used;
	bool dead; /* out of the cache while in use: the last user frees it */
};

struct cp_cache {
	pthread_mutex_t lock;
	struct membudget mem; /* the bytes of the graphs kept */
	struct cp_cached *e[CACHE_MAX_ENTRIES];
	size_t n;
	uint64_t clock;
	struct cache_stats st; /* the counters; the rest filled when read */
};

int cp_cache_new(uint64_t budget_bytes, struct cp_cache **ret)
{
	struct cp_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->mem.max = budget_bytes;
	*ret = c;
	return 0;
}

static void entry_free(struct cp_cached *e)
{
	cp_graph_free(e->g);
	free(e->key);
	free(e);
}

void cp_cache_free(struct cp_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		entry_free(c->e[i]);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const struct cp_graph *cp_cached_graph(const struct cp_cached *h)
{
	return h->g;
}

struct cp_cached *cp_cache_get(struct cp_cache *c, const char *key)
{
	struct cp_cached *h = NULL;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->e[i]->key, key)) {
			h = c->e[i];
			h->refs++;
			h->used = ++c->clock;
			break;
		}
	if (h)
		c->st.hits++;
	else
		c->st.misses++;
	pthread_mutex_unlock(&c->lock);
	return h;
}

/* Take entry at out of the table: freed now, or by its last user. */
static void evict(struct cp_cache *c, size_t at)
{
	struct cp_cached *e = c->e[at];

	membudget_give(&c->mem, e->bytes);
	c->e[at] = c->e[--c->n];
	c->st.evicted++;
	if (e->refs)
		e->dead = true;
	else
		entry_free(e);
}

struct cp_cached *cp_cache_put(struct cp_cache *c, const char *key, struct cp_graph *g)
{
	struct cp_cached *e = calloc(1, sizeof(*e));

	if (!e || !(e->key = strdup(key))) {
		free(e);
		cp_graph_free(g);
		return NULL;
	}
	e->g = g;
	e->bytes = cp_graph_bytes(g);
	e->refs = 1;
	pthread_mutex_lock(&c->lock);
	e->used = ++c->clock;
	/* too large to keep (or a budget of 0): used once */
	e->dead = e->bytes > c->mem.max / 2;
	c->st.too_large += e->dead;
	while (!e->dead && c->n &&
	       (c->n == CACHE_MAX_ENTRIES || membudget_take(&c->mem, e->bytes) < 0)) {
		size_t lru = 0;

		for (size_t i = 1; i < c->n; i++)
			if (c->e[i]->used < c->e[lru]->used)
				lru = i;
		evict(c, lru);
	}
	/* the loop took the bytes unless it emptied the table first */
	if (!e->dead && !c->n)
		e->dead = membudget_take(&c->mem, e->bytes) < 0;
	if (!e->dead)
		c->e[c->n++] = e;
	pthread_mutex_unlock(&c->lock);
	return e;
}

void cp_cache_release(struct cp_cache *c, struct cp_cached *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&c->lock);
	if (--h->refs == 0 && h->dead)
		entry_free(h);
	pthread_mutex_unlock(&c->lock);
}

void cp_cache_get_stats(struct cp_cache *c, struct cache_stats *st)
{
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->entries = c->n;
	st->bytes = membudget_used(&c->mem);
	st->budget = c->mem.max;
	pthread_mutex_unlock(&c->lock);
}
