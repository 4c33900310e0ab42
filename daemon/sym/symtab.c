// SPDX-License-Identifier: MIT
/* CAPSEC_SYMBOLS (hostile-input-safe) decoder and lookups; see symtab.h.
 * The builder and encoder are in symtab_build.c. */
#include "symtab.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symtab_wire.h"

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

#define BAD(...)                                            \
	do {                                                \
		if (why && whylen)                          \
			snprintf(why, whylen, __VA_ARGS__); \
		goto bad;                                   \
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
			t->maps[i] = (struct sym_mapping){rd64(q),	rd64(q + 8),  rd64(q + 16),
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
