// SPDX-License-Identifier: MIT
/*
 * Import memory accounting (memcap.h). The daemon sets import_opts.max_mem
 * to memory.capture_max and reserves from the budget all jobs share
 * (memory.jobs_max); the importers call tl_mem_charge() before each step
 * that grows what they keep, so a refused import never held more than the
 * limit plus its fixed buffers (docs/import.md, "Memory").
 */
#include <errno.h>
#include <stdio.h>

#include "memcap.h"

/* Reservations grow by at least this much (or an eighth of the total), so
 * that the shared budget is not touched on every event. */
#define RESERVE_STEP (4ull << 20)

uint64_t tl_rank_mem(const struct tl_rank *r)
{
	return (uint64_t)r->nev * sizeof(*r->ev) + (uint64_t)r->nargs * sizeof(*r->args) +
	       (uint64_t)r->nmeta * sizeof(*r->meta) + (uint64_t)r->ndevices * sizeof(*r->devices);
}

uint64_t tl_strtab_mem(const struct strtab *st)
{
	return (uint64_t)st->blob_cap +
	       (uint64_t)st->cap * (sizeof(*st->off) + sizeof(*st->len) + sizeof(*st->hashes)) +
	       (uint64_t)st->nslots * sizeof(*st->slots);
}

void tl_memcap_init(struct tl_memcap *m, const struct import_opts *o, const struct timeline *tl)
{
	m->o = o && (o->max_mem || o->mem_reserve) ? o : NULL;
	m->reserved = 0;
	m->base = tl ? timeline_mem_bytes(tl) : 0;
	m->st0 = tl ? tl_strtab_mem(&tl->st) : 0;
}

int tl_mem_charge(struct tl_memcap *m, uint64_t bytes, char *msg, size_t msg_len)
{
	const struct import_opts *o = m->o;
	uint64_t want;

	if (!o || bytes <= m->reserved)
		return 0;
	if (o->max_mem && bytes > o->max_mem) {
		snprintf(msg, msg_len, "the trace needs more memory than %s (%llu bytes) allows",
			 o->max_mem_name ? o->max_mem_name : "the import's memory limit",
			 (unsigned long long)o->max_mem);
		return -EFBIG;
	}
	if (!o->mem_reserve) {
		m->reserved = bytes;
		return 0;
	}
	want = bytes + (bytes / 8 > RESERVE_STEP ? bytes / 8 : RESERVE_STEP);
	if (o->max_mem && want > o->max_mem)
		want = o->max_mem;
	if (o->mem_reserve(o->mem_arg, want, msg, msg_len) < 0)
		return -EFBIG;
	m->reserved = want;
	return 0;
}
