/* SPDX-License-Identifier: MIT */
/*
 * The memory an import holds, checked against import_opts.max_mem and
 * reserved through import_opts.mem_reserve as it grows (memcap.c), so that
 * a trace whose timeline would not fit fails while it is read, not after.
 */
#ifndef GPUPROF_IMPORT_MEMCAP_H
#define GPUPROF_IMPORT_MEMCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "import.h"
#include "timeline_int.h"

struct tl_memcap {
	const struct import_opts *o;
	uint64_t reserved; /* what mem_reserve granted so far */
	uint64_t base;	   /* what the timeline held before this import */
	uint64_t st0;	   /* its string table's bytes then */
};

uint64_t tl_rank_mem(const struct tl_rank *r);
uint64_t tl_strtab_mem(const struct strtab *st);
/* Start accounting an import into tl (o may be NULL: no limit). */
void tl_memcap_init(struct tl_memcap *m, const struct import_opts *o, const struct timeline *tl);
/* The import now needs bytes in all: 0, or -EFBIG with msg set (over
 * max_mem, or mem_reserve refused). */
int tl_mem_charge(struct tl_memcap *m, uint64_t bytes, char *msg, size_t msg_len);
/* Bytes a rank being built into tl's string table needs now: what the
 * timeline held before, the rank, the strings added since, plus extra
 * (a copy about to be made). */
static inline uint64_t tl_memcap_now(const struct tl_memcap *m, const struct tl_rank *r,
				     const struct strtab *st, uint64_t extra)
{
	uint64_t s = tl_strtab_mem(st);

	return m->base + (r ? tl_rank_mem(r) : 0) + (s > m->st0 ? s - m->st0 : 0) + extra;
}

#endif /* GPUPROF_IMPORT_MEMCAP_H */
