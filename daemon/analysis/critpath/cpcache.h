/* SPDX-License-Identifier: MIT */
/*
 * Built critical-path graphs kept between requests (config
 * analysis.graph_cache_bytes, docs/operations.md), so repeated what-ifs on
 * one capture skip the timeline decode and the build. Keyed by a string
 * naming everything a graph depends on (capture id and cp_request.key).
 * Least recently used entries go first; a graph over half the budget is
 * used once and not kept. The bytes kept are taken from a membudget, so
 * they never pass the configured bound. Entries are shared read-only by
 * concurrent jobs (reference counts); thread-safe.
 */
#ifndef GPUPROF_CRITPATH_CPCACHE_H
#define GPUPROF_CRITPATH_CPCACHE_H

#include <stdint.h>

#include "cachestats.h"

struct cp_cache;
struct cp_graph;

int cp_cache_new(uint64_t budget_bytes, struct cp_cache **ret); /* 0 or -ENOMEM */
/* Every graph freed; none may still be in use (jobs are over). NULL: no-op. */
void cp_cache_free(struct cp_cache *c);

/* A reference to a graph of the cache: the graph stays until released. */
struct cp_cached;
const struct cp_graph *cp_cached_graph(const struct cp_cached *h);

/* The graph of key with a reference for the caller, or NULL. */
struct cp_cached *cp_cache_get(struct cp_cache *c, const char *key);
/* Hand over a freshly built graph of key and get a reference to it; within
 * the budget it is kept for later requests (older entries go), otherwise
 * it is freed at its release. NULL (g freed): out of memory. */
struct cp_cached *cp_cache_put(struct cp_cache *c, const char *key, struct cp_graph *g);
/* Drop a reference from cp_cache_get / cp_cache_put (h NULL: no-op). */
void cp_cache_release(struct cp_cache *c, struct cp_cached *h);
/* Its figures now, for status. */
void cp_cache_get_stats(struct cp_cache *c, struct cache_stats *st);

#endif
