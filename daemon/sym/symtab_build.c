// SPDX-License-Identifier: MIT
/* CAPSEC_SYMBOLS builder and encoder; see symtab.h (decoder: symtab.c). */
#include "symtab.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "symtab_wire.h"
#include "util.h" /* gpd_grow */

struct sym_table_builder {
	bool lines;
	struct st_name *names;
	uint32_t nnames, names_cap;
	char *blob;
	size_t blob_len, blob_cap;
	uint32_t *hash;	   /* name index + 1; 0 = empty slot */
	uint32_t hash_cap; /* power of two */
	struct st_entry *entries;
	size_t nentries, entries_cap;
	uint32_t *refs, *lrefs, *mrefs;
	size_t nrefs, refs_cap, lrefs_cap, mrefs_cap;
	struct sym_mapping *maps;
	size_t nmaps, maps_cap;
};

static uint32_t fnv1a(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	return gpd_grow(p, cap, need, elem, 64);
}

static int rehash(struct sym_table_builder *b, uint32_t cap)
{
	uint32_t *h = calloc(cap, sizeof(*h));
	if (!h)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->nnames; i++) {
		uint32_t s = fnv1a(b->blob + b->names[i].off, b->names[i].len) & (cap - 1);
		while (h[s])
			s = (s + 1) & (cap - 1);
		h[s] = i + 1;
	}
	free(b->hash);
	b->hash = h;
	b->hash_cap = cap;
	return 0;
}

int sym_tb_new(bool lines, struct sym_table_builder **ret)
{
	struct sym_table_builder *b = calloc(1, sizeof(*b));
	uint32_t idx;
	if (!b)
		return -ENOMEM;
	b->lines = lines;
	if (rehash(b, 1024) < 0 || sym_tb_name(b, "", 0, &idx) < 0) {
		sym_tb_free(b);
		return -ENOMEM;
	}
	*ret = b;
	return 0;
}

void sym_tb_free(struct sym_table_builder *b)
{
	if (!b)
		return;
	free(b->names);
	free(b->blob);
	free(b->hash);
	free(b->entries);
	free(b->refs);
	free(b->lrefs);
	free(b->mrefs);
	free(b->maps);
	free(b);
}

int sym_tb_name(struct sym_table_builder *b, const char *s, size_t len, uint32_t *idx)
{
	if (len > SYMTAB_MAX_NAME)
		len = SYMTAB_MAX_NAME;
	uint32_t mask = b->hash_cap - 1, slot = fnv1a(s, len) & mask;
	for (; b->hash[slot]; slot = (slot + 1) & mask) {
		const struct st_name *n = &b->names[b->hash[slot] - 1];
		if (n->len == len && memcmp(b->blob + n->off, s, len) == 0) {
			*idx = b->hash[slot] - 1;
			return 0;
		}
	}
	if (b->nnames >= UINT32_MAX / 4 || b->blob_len + len > UINT32_MAX)
		return -E2BIG;
	size_t ncap = b->names_cap;
	if (grow((void **)&b->names, &ncap, b->nnames + 1, sizeof(*b->names)) < 0 ||
	    grow((void **)&b->blob, &b->blob_cap, b->blob_len + len + 1, 1) < 0)
		return -ENOMEM;
	b->names_cap = (uint32_t)ncap;
	memcpy(b->blob + b->blob_len, s, len);
	b->names[b->nnames] = (struct st_name){(uint32_t)b->blob_len, (uint32_t)len};
	b->blob_len += len;
	b->hash[slot] = ++b->nnames;
	*idx = b->nnames - 1;
	if ((uint64_t)b->nnames * 2 > b->hash_cap && rehash(b, b->hash_cap * 2) < 0)
		return -ENOMEM; /* the name is in; the table just stays fuller */
	return 0;
}

int sym_tb_add(struct sym_table_builder *b, uint32_t pid, uint32_t stack, const uint32_t *names,
	       const uint32_t *lines, uint16_t nuser, uint16_t nkernel)
{
	return sym_tb_add_maps(b, pid, stack, names, lines, NULL, nuser, nkernel);
}

int sym_tb_map(struct sym_table_builder *b, const struct sym_mapping *m, uint32_t *idx)
{
	if (b->nmaps >= UINT32_MAX / 64)
		return -E2BIG;
	if (grow((void **)&b->maps, &b->maps_cap, b->nmaps + 1, sizeof(*b->maps)) < 0)
		return -ENOMEM;
	b->maps[b->nmaps] = *m;
	if (m->file >= b->nnames)
		b->maps[b->nmaps].file = 0;
	if (m->build_id >= b->nnames)
		b->maps[b->nmaps].build_id = 0;
	if (m->limit < m->start)
		b->maps[b->nmaps].limit = m->start;
	*idx = (uint32_t)++b->nmaps;
	return 0;
}

int sym_tb_add_maps(struct sym_table_builder *b, uint32_t pid, uint32_t stack,
		    const uint32_t *names, const uint32_t *lines, const uint32_t *maps,
		    uint16_t nuser, uint16_t nkernel)
{
	size_t n = (size_t)nuser + nkernel;
	if (b->nrefs + n > UINT32_MAX || b->nentries >= UINT32_MAX / 32)
		return -E2BIG;
	if (grow((void **)&b->entries, &b->entries_cap, b->nentries + 1, sizeof(*b->entries)) < 0 ||
	    grow((void **)&b->refs, &b->refs_cap, b->nrefs + n, 4) < 0 ||
	    grow((void **)&b->mrefs, &b->mrefs_cap, b->nrefs + n, 4) < 0 ||
	    (b->lines && grow((void **)&b->lrefs, &b->lrefs_cap, b->nrefs + n, 4) < 0))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		b->refs[b->nrefs + i] = names[i] < b->nnames ? names[i] : 0;
		b->mrefs[b->nrefs + i] = maps && maps[i] <= b->nmaps ? maps[i] : 0;
		if (b->lines)
			b->lrefs[b->nrefs + i] = lines && lines[i] < b->nnames ? lines[i] : 0;
	}
	b->entries[b->nentries++] =
		(struct st_entry){pid, stack, (uint32_t)b->nrefs, nuser, nkernel};
	b->nrefs += n;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct st_entry *x = a, *y = b;
	uint64_t kx = (uint64_t)x->pid << 32 | x->stack, ky = (uint64_t)y->pid << 32 | y->stack;
	return kx < ky ? -1 : kx > ky;
}

static unsigned char *put32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
	return p + 4;
}

static unsigned char *put64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
	return p + 8;
}

static unsigned char *put16(unsigned char *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
	return p + 2;
}

int sym_tb_encode(struct sym_table_builder *b, void **buf, size_t *len)
{
	if (b->nentries)
		qsort(b->entries, b->nentries, sizeof(*b->entries), entry_cmp);
	for (size_t i = 1; i < b->nentries; i++)
		if (entry_cmp(&b->entries[i - 1], &b->entries[i]) == 0)
			return -EEXIST;
	/* Without mappings the section is written as version 1, which older
	 * readers still take. */
	bool maps = b->nmaps > 0;
	size_t n = HDR_LEN + (size_t)b->nnames * 8 + b->nentries * 16 +
		   b->nrefs * 4 * (b->lines ? 2 : 1) + b->blob_len;
	if (maps)
		n += b->nmaps * MAP_LEN + b->nrefs * 4;
	unsigned char *out = malloc(n), *p = out;
	if (!out)
		return -ENOMEM;
	p = put32(p, SYMTAB_MAGIC);
	p = put16(p, maps ? SYMTAB_VERSION : 1);
	p = put16(p, (b->lines ? SYMTAB_F_LINES : 0) | (maps ? SYMTAB_F_MAPS : 0));
	p = put32(p, b->nnames);
	p = put32(p, (uint32_t)b->nentries);
	p = put32(p, (uint32_t)b->nrefs);
	p = put32(p, (uint32_t)b->blob_len);
	p = put32(p, (uint32_t)b->nmaps);
	p = put32(p, 0);
	for (uint32_t i = 0; i < b->nnames; i++) {
		p = put32(p, b->names[i].off);
		p = put32(p, b->names[i].len);
	}
	for (size_t i = 0; i < b->nentries; i++) {
		const struct st_entry *e = &b->entries[i];
		p = put32(p, e->pid);
		p = put32(p, e->stack);
		p = put32(p, e->ref);
		p = put16(p, e->nuser);
		p = put16(p, e->nkernel);
	}
	for (size_t i = 0; i < b->nrefs; i++)
		p = put32(p, b->refs[i]);
	for (size_t i = 0; b->lines && i < b->nrefs; i++)
		p = put32(p, b->lrefs[i]);
	for (size_t i = 0; maps && i < b->nmaps; i++) {
		const struct sym_mapping *m = &b->maps[i];
		p = put64(p, m->start);
		p = put64(p, m->limit);
		p = put64(p, m->offset);
		p = put32(p, m->pid);
		p = put32(p, m->file);
		p = put32(p, m->build_id);
		p = put32(p, m->flags);
	}
	for (size_t i = 0; maps && i < b->nrefs; i++)
		p = put32(p, b->mrefs[i]);
	if (b->blob_len)
		memcpy(p, b->blob, b->blob_len);
	*buf = out;
	*len = n;
	return 0;
}
