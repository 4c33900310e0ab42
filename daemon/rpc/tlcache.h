/* SPDX-License-Identifier: MIT */
/*
 * Decoded timelines kept between analysis requests (config
 * analysis.cache_bytes; docs/operations.md): an import leaves its timeline
 * here, otherwise the first analysis of a capture loads and decodes its
 * timeline section; the next ones on the same capture reuse it. Captures never change once written, so an entry
 * is valid until its capture is deleted. Least recently used entries go
 * first; a timeline larger than the budget is used once and not kept.
 * Entries are shared read-only by concurrent jobs (reference counts).
 * Thread-safe (jobs run on worker threads, deletes on the loop).
 */
#ifndef GPUPROF_RPC_TLCACHE_H
#define GPUPROF_RPC_TLCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cachestats.h"

struct timeline;
struct tlcache;

int tlcache_new(uint64_t budget_bytes, struct tlcache **ret); /* 0 or -ENOMEM */
void tlcache_free(struct tlcache *c);			      /* NULL: no-op */

/* The timeline of capture id with a reference for the caller, or NULL. */
const struct timeline *tlcache_get(struct tlcache *c, uint64_t id);

/* Hand over a freshly decoded timeline of capture id; the caller keeps a
 * reference (release it with tlcache_release). Within the budget it is
 * kept for later requests (older entries go); otherwise it is freed at its
 * release. */
const struct timeline *tlcache_put(struct tlcache *c, uint64_t id, struct timeline *tl);

/* Drop a reference from tlcache_get / tlcache_put. */
void tlcache_release(struct tlcache *c, const struct timeline *tl);

/* Capture id is gone: forget its timeline (freed once no job uses it).
 * c NULL: no-op. */
void tlcache_drop(struct tlcache *c, uint64_t id);

void tlcache_get_stats(struct tlcache *c, struct cache_stats *st);

#endif
