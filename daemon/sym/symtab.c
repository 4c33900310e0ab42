// SPDX-License-Identifier: MIT
/* CAPSEC_SYMBOLS encoder and (hostile-input-safe) decoder; see symtab.h. */
#include "symtab.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct st_name {
	uint32_t off, len;
};

struct st_entry {
	uint32_t pid, stack, ref;
	uint16_t nuser, nkernel;
};

_Static_assert(sizeof(struct st_name) == 8, "wire layout");
_Static_assert(sizeof(struct st_entry) == 16, "wire layout");

#define HDR_LEN 32
#define MAP_LEN 40

struct sym_table {
	void *buf; /* owned copy; the arrays below point into it */
	uint32_t flags;
	uint32_t nnames, nentries, nrefs, blob_len;
	const struct st_name *names;
	const struct st_entry *entries;
	const uint32_t *refs, *lines, *fmaps;
	struct sym_mapping *maps; /* decoded (the wire entries are not u64-aligned) */
	uint32_t nmaps;
	const char *blob;
};

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return le64toh(v);
}

static uint16_t rd16(const unsigned char *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static void swap_arrays(struct sym_table *t)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	struct st_name *n = (struct st_name *)t->names;
	struct st_entry *e = (struct st_entry *)t->entries;
	uint32_t *r = (uint32_t *)t->refs, *fm = (uint32_t *)t->fmaps;
	uint64_t nr = (uint64_t)t->nrefs * (t->lines ? 2 : 1);
	for (uint32_t i = 0; i < t->nnames; i++) {
		n[i].off = le32toh(n[i].off);
		n[i].len = le32toh(n[i].len);
	}
	for (uint32_t i = 0; i < t->nentries; i++) {
		e[i].pid = le32toh(e[i].pid);
		e[i].stack = le32toh(e[i].stack);
		e[i].ref = le32toh(e[i].ref);
		e[i].nuser = le16toh(e[i].nuser);
		e[i].nkernel = le16toh(e[i].nkernel);
	}
	for (uint64_t i = 0; i < nr; i++)
		r[i] = le32toh(r[i]);
	for (uint32_t i = 0; fm && i < t->nrefs; i++)
		fm[i] = le32toh(fm[i]);
#else
	(void)t;
#endif
}

#define BAD(...)                                                                                   \
	do {                                                                                       \
		if (why && whylen)                                                                 \
			snprintf(why, whylen, __VA_ARGS__);                                        \
		goto bad;                                                                          \
	} while (0)

static int validate(const struct sym_table *t, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < t->nnames; i++)
		if (t->names[i].len > t->blob_len ||
		    t->names[i].off > t->blob_len - t->names[i].len)
			BAD("name %u out of the blob", i);
	if (t->names[0].len != 0)
		BAD("name 0 is not empty");
	uint64_t nr = (uint64_t)t->nrefs * (t->lines ? 2 : 1);
	for (uint64_t i = 0; i < nr; i++)
		if (t->refs[i] >= t->nnames)
			BAD("frame %llu names %u of %u", (unsigned long long)i, t->refs[i],
			    t->nnames);
	for (uint32_t i = 0; i < t->nentries; i++) {
		const struct st_entry *e = &t->entries[i];
		uint64_t n = (uint64_t)e->nuser + e->nkernel;
		if (e->ref > t->nrefs || n > t->nrefs - e->ref)
			BAD("entry %u frames out of range", i);
		if (i && (e[-1].pid > e->pid || (e[-1].pid == e->pid && e[-1].stack >= e->stack)))
			BAD("entry %u out of order", i);
	}
	for (uint32_t i = 0; i < t->nmaps; i++) {
		const struct sym_mapping *m = &t->maps[i];
		if (m->file >= t->nnames || m->build_id >= t->nnames || m->start > m->limit)
			BAD("mapping %u: bad name index or range", i);
	}
	for (uint32_t i = 0; t->fmaps && i < t->nrefs; i++)
		if (t->fmaps[i] > t->nmaps)
			BAD("frame %u names mapping %u of %u", i, t->fmaps[i], t->nmaps);
	return 0;
bad:
	return -EBADMSG;
}

int sym_table_decode(const void *buf, size_t len, struct sym_table **ret, char *why, size_t whylen)
{
	const unsigned char *p = buf;
	struct sym_table *t = NULL;
	int r = -EBADMSG;

	if (!buf || len < HDR_LEN)
		BAD("section too short (%zu bytes)", len);
	if (rd32(p) != SYMTAB_MAGIC)
		BAD("bad magic");
	uint16_t version = rd16(p + 4);
	if (version != 1 && version != SYMTAB_VERSION)
		BAD("unsupported version %u", version);
	uint32_t flags = rd16(p + 6);
	if (flags & ~(SYMTAB_F_LINES | (version >= 2 ? SYMTAB_F_MAPS : 0)))
		BAD("unknown flags 0x%x", flags);
	uint32_t nnames = rd32(p + 8), nentries = rd32(p + 12), nrefs = rd32(p + 16);
	uint32_t blob_len = rd32(p + 20), nmaps = (flags & SYMTAB_F_MAPS) ? rd32(p + 24) : 0;
	uint64_t need = HDR_LEN + (uint64_t)nnames * 8 + (uint64_t)nentries * 16 +
			(uint64_t)nrefs * 4 * ((flags & SYMTAB_F_LINES) ? 2 : 1) + blob_len;
	if (flags & SYMTAB_F_MAPS)
		need += (uint64_t)nmaps * MAP_LEN + (uint64_t)nrefs * 4;
	if (need != len)
		BAD("section is %zu bytes, counts say %llu", len, (unsigned long long)need);
	if (nnames == 0)
		BAD("no name table");

	r = -ENOMEM;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto fail;
	t->buf = malloc(len);
	if (!t->buf)
		goto fail;
	memcpy(t->buf, buf, len);
	unsigned char *q = (unsigned char *)t->buf + HDR_LEN;
	t->flags = flags;
	t->nnames = nnames;
	t->nentries = nentries;
	t->nrefs = nrefs;
	t->blob_len = blob_len;
	t->names = (const struct st_name *)q;
	q += (size_t)nnames * 8;
	t->entries = (const struct st_entry *)q;
	q += (size_t)nentries * 16;
	t->refs = (const uint32_t *)q;
	q += (size_t)nrefs * 4;
	if (flags & SYMTAB_F_LINES) {
		t->lines = (const uint32_t *)q;
		q += (size_t)nrefs * 4;
	}
	if (flags & SYMTAB_F_MAPS) {
		t->nmaps = nmaps;
		t->maps = malloc((nmaps ? nmaps : 1) * sizeof(*t->maps));
		if (!t->maps)
			goto fail;
		for (uint32_t i = 0; i < nmaps; i++, q += MAP_LEN)
			t->maps[i] = (struct sym_mapping){rd64(q), rd64(q + 8), rd64(q + 16),
							  rd32(q + 24), rd32(q + 28), rd32(q + 32),
							  rd32(q + 36)};
		t->fmaps = (const uint32_t *)q;
		q += (size_t)nrefs * 4;
	}
	t->blob = (const char *)q;
	swap_arrays(t);
	r = validate(t, why, whylen);
	if (r < 0)
		goto fail;
	*ret = t;
	return 0;
bad:
	return -EBADMSG;
fail:
	sym_table_free(t);
	return r;
}

void sym_table_free(struct sym_table *t)
{
	if (!t)
		return;
	free(t->buf);
	free(t->maps);
	free(t);
}

bool sym_table_find(const struct sym_table *t, uint32_t pid, uint32_t stack, struct sym_frames *out)
{
	size_t lo = 0, hi = t ? t->nentries : 0;
	uint64_t key = (uint64_t)pid << 32 | stack;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct st_entry *e = &t->entries[mid];
		uint64_t k = (uint64_t)e->pid << 32 | e->stack;
		if (k == key) {
			out->names = t->refs + e->ref;
			out->lines = t->lines ? t->lines + e->ref : NULL;
			out->maps = t->fmaps ? t->fmaps + e->ref : NULL;
			out->nuser = e->nuser;
			out->nkernel = e->nkernel;
			return true;
		}
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

const char *sym_table_name(const struct sym_table *t, uint32_t idx, size_t *len)
{
	if (!t || idx >= t->nnames) {
		*len = 0;
		return "";
	}
	*len = t->names[idx].len;
	return t->blob + t->names[idx].off;
}

size_t sym_table_entries(const struct sym_table *t)
{
	return t ? t->nentries : 0;
}

bool sym_table_has_lines(const struct sym_table *t)
{
	return t && t->lines;
}

size_t sym_table_nmaps(const struct sym_table *t)
{
	return t ? t->nmaps : 0;
}

const struct sym_mapping *sym_table_map(const struct sym_table *t, uint32_t idx)
{
	return t && idx && idx <= t->nmaps ? &t->maps[idx - 1] : NULL;
}

/* ---- builder ---- */

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
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
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
