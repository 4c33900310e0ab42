// SPDX-License-Identifier: MIT
/*
 * The SASS texts earlier captures of one viewer resolved (cupti_sass.h,
 * struct cupti_sass_memo): (cubin CRC, function, offset) -> text, or none.
 * Open addressing; emptied, not evicted piecemeal, when a bound is
 * reached: the keys a workload's PC samples name are few and recur, so
 * the next window refills it.
 */
#include "cupti_sassmemo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capsass.h"

struct memo_ent {
	uint64_t crc;
	uint32_t pc, used; /* used: 0 = empty slot */
	uint64_t gen;	   /* the window it was resolved in */
	char *name, *text; /* text NULL: resolved to none */
};

struct cupti_sass_memo {
	struct memo_ent *v;
	size_t mask, n, bytes;
	uint64_t gen;
};

static uint64_t hash(uint64_t crc, const char *name, uint32_t pc)
{
	uint64_t h = 0xcbf29ce484222325ull ^ crc ^ ((uint64_t)pc << 32);

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static struct memo_ent *slot(const struct cupti_sass_memo *m, uint64_t crc, const char *name,
			     uint32_t pc)
{
	size_t s = (size_t)hash(crc, name, pc) & m->mask;

	while (m->v[s].used &&
	       (m->v[s].crc != crc || m->v[s].pc != pc || strcmp(m->v[s].name, name)))
		s = (s + 1) & m->mask;
	return &m->v[s];
}

static void clear(struct cupti_sass_memo *m)
{
	for (size_t i = 0; m->v && i <= m->mask; i++) {
		free(m->v[i].name);
		free(m->v[i].text);
	}
	memset(m->v, 0, (m->mask + 1) * sizeof(*m->v));
	m->n = m->bytes = 0;
}

int cupti_sass_memo_new(struct cupti_sass_memo **ret)
{
	struct cupti_sass_memo *m = calloc(1, sizeof(*m));
	size_t cap = 2 * (size_t)CAPSASS_MAX_ENTRIES; /* at most half full */

	if (!m || !(m->v = calloc(cap, sizeof(*m->v)))) {
		free(m);
		return -ENOMEM;
	}
	m->mask = cap - 1;
	*ret = m;
	return 0;
}

void cupti_sass_memo_free(struct cupti_sass_memo *m)
{
	if (!m)
		return;
	clear(m);
	free(m->v);
	free(m);
}

void cupti_sass_memo_next(struct cupti_sass_memo *m)
{
	m->gen++;
}

bool cupti_sass_memo_find(const struct cupti_sass_memo *m, uint64_t crc, const char *name,
			  uint32_t pc, const char **text)
{
	const struct memo_ent *e = slot(m, crc, name, pc);

	if (!e->used || (!e->text && m->gen - e->gen >= CUPTI_SASS_MEMO_RETRY))
		return false;
	*text = e->text;
	return true;
}

int cupti_sass_memo_add(struct cupti_sass_memo *m, uint64_t crc, const char *name, uint32_t pc,
			const char *text)
{
	size_t add = strlen(name) + (text ? strlen(text) : 0) + 2;
	struct memo_ent *e;

	if (m->n + 1 > CAPSASS_MAX_ENTRIES || m->bytes + add > CAPSASS_MAX_BYTES)
		clear(m);
	e = slot(m, crc, name, pc);
	if (e->used) { /* a retried key: its new answer */
		m->bytes -= e->text ? strlen(e->text) + 1 : 0;
		free(e->text);
		e->text = NULL;
	} else {
		*e = (struct memo_ent){.crc = crc, .pc = pc, .used = 1};
		if (!(e->name = strdup(name))) {
			e->used = 0;
			return -ENOMEM;
		}
		m->n++;
		m->bytes += strlen(name) + 1;
	}
	e->gen = m->gen;
	if (text && !(e->text = strdup(text)))
		return -ENOMEM; /* kept as none, retried later */
	m->bytes += text ? strlen(text) + 1 : 0;
	return 0;
}
