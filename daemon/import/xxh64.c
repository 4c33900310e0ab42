// SPDX-License-Identifier: MIT
/* XXH64 of an import's bytes, through libxxhash (xxh64.h). */
#include "xxh64.h"

void xxh64_init(struct xxh64 *s)
{
	XXH64_reset(&s->st, 0);
	s->len = 0;
}

void xxh64_update(struct xxh64 *s, const void *p, size_t n)
{
	XXH64_update(&s->st, p, n);
	s->len += n;
}

uint64_t xxh64_digest(const struct xxh64 *s)
{
	return XXH64_digest(&s->st);
}
