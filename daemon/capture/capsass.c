// SPDX-License-Identifier: MIT
/*
 * The CAPSEC_CUPTI_SASS section (capsass.h): its builder, encoder and a
 * decoder for untrusted bytes. Every length is compared with the bytes
 * left before it is used, the count is capped by what the payload can
 * hold before anything is allocated, and every reference into the capture
 * (a function's string id) is checked.
 */
#include "capture/capsass.h"
#include "capture/capture-int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static int key_cmp(const struct capsass_ent *x, uint64_t crc, uint32_t name, uint32_t pc)
{
	if (x->crc != crc)
		return x->crc < crc ? -1 : 1;
	if (x->name != name)
		return x->name < name ? -1 : 1;
	return x->pc < pc ? -1 : x->pc > pc;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct capsass_ent *y = b;

	return key_cmp(a, y->crc, y->name, y->pc);
}

int capsass_decode(const struct capture *c, const void *data, size_t len, struct capsass *out,
		   char *why, size_t whylen)
{
	const uint8_t *p = data;
	uint32_t count, nstrs = c ? c->nstrs : 0;
	size_t pos = CAPSASS_HDR_LEN;

	*out = (struct capsass){0};
	if (len < 4)
		return bad(why, whylen, "SASS section: %zu bytes, too short for its version", len);
	if (get32(p) != CAPSASS_VERSION)
		return 0; /* another version: not ours to read */
	if (len < CAPSASS_HDR_LEN)
		return bad(why, whylen, "SASS section: %zu bytes, too short for its header", len);
	if (len > CAPSASS_MAX_BYTES)
		return bad(why, whylen, "SASS section: %zu bytes, over the %u bytes allowed", len,
			   CAPSASS_MAX_BYTES);
	count = get32(p + 4);
	if (count > CAPSASS_MAX_ENTRIES || count > (len - pos) / CAPSASS_ENT_FIXED)
		return bad(why, whylen, "SASS section: count %u exceeds what %zu bytes can hold",
			   count, len);
	out->missing = get32(p + 8);
	out->capped = get32(p + 12);
	out->base = data;
	out->ents = malloc((count ? count : 1) * sizeof(*out->ents));
	if (!out->ents)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct capsass_ent *e = &out->ents[i];
		const uint8_t *q = p + pos;
		int r = 0;

		if (len - pos < CAPSASS_ENT_FIXED) {
			r = bad(why, whylen, "SASS section: truncated at entry %u", i);
			goto fail;
		}
		*e = (struct capsass_ent){.crc = get64(q),
					  .name = get32(q + 8),
					  .pc = get32(q + 12),
					  .len = get16(q + 16)};
		pos += CAPSASS_ENT_FIXED;
		e->off = (uint32_t)pos;
		if (!e->len || e->len > CAPSASS_MAX_TEXT || e->len > len - pos)
			r = bad(why, whylen, "SASS section: entry %u: text of %u bytes %s", i,
				e->len,
				e->len > CAPSASS_MAX_TEXT ? "over the limit"
				: e->len		  ? "past the end"
							  : "empty");
		else if (!e->name || e->name > nstrs)
			r = bad(why, whylen,
				"SASS section: entry %u: name id %u out of range (%u strings)", i,
				e->name, nstrs);
		else if (i && ent_cmp(&out->ents[i - 1], e) >= 0)
			r = bad(why, whylen, "SASS section: entry %u out of order", i);
		for (size_t k = 0; !r && k < e->len; k++)
			if (q[CAPSASS_ENT_FIXED + k] < 0x20 || q[CAPSASS_ENT_FIXED + k] == 0x7f)
				r = bad(why, whylen,
					"SASS section: entry %u: control byte in its text", i);
		if (r)
			goto fail;
		pos += e->len;
		out->n = i + 1;
	}
	if (pos != len) {
		bad(why, whylen, "SASS section: %zu trailing bytes", len - pos);
		goto fail;
	}
	return 0;
fail:
	capsass_finish(out);
	return -EBADMSG;
}

void capsass_finish(struct capsass *s)
{
	if (!s)
		return;
	free(s->ents);
	*s = (struct capsass){0};
}

const char *capsass_find(const struct capsass *s, uint64_t crc, uint32_t name, uint32_t pc,
			 size_t *len)
{
	size_t lo = 0, hi = s ? s->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int r = key_cmp(&s->ents[mid], crc, name, pc);

		if (!r) {
			*len = s->ents[mid].len;
			return s->base + s->ents[mid].off;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int capsass_of_capture(const struct capture *c, struct capsass *out, char *why, size_t whylen)
{
	const struct capture_extra *x = NULL;

	*out = (struct capsass){0};
	for (size_t i = 0; i < c->nextras; i++) {
		if (c->extras[i].type != CAPSEC_CUPTI_SASS)
			continue;
		if (x)
			return bad(why, whylen, "SASS section repeated");
		x = &c->extras[i];
	}
	return x ? capsass_decode(c, x->data, x->len, out, why, whylen) : 0;
}

/* ---- building ---- */

static size_t clean(const char *s, char *out)
{
	size_t n = 0;

	s += strspn(s, " \t");
	for (; *s && n < CAPSASS_MAX_TEXT; s++)
		out[n++] = (unsigned char)*s < 0x20 || *s == 0x7f ? ' ' : *s;
	while (n && out[n - 1] == ' ')
		n--;
	return n;
}

int capsass_add(struct capsass_builder *b, uint64_t crc, uint32_t name, uint32_t pc,
		const char *text)
{
	char t[CAPSASS_MAX_TEXT];
	size_t n = clean(text, t);
	size_t bytes = CAPSASS_HDR_LEN + b->n * CAPSASS_ENT_FIXED + b->text_len;

	if (!n || !name) {
		b->missing++;
		return 0;
	}
	if (b->n == CAPSASS_MAX_ENTRIES || bytes + CAPSASS_ENT_FIXED + n > CAPSASS_MAX_BYTES) {
		b->capped++;
		return 0;
	}
	if (b->n == b->cap) {
		size_t nc = b->cap ? 2 * b->cap : 256;
		struct capsass_ent *ne = realloc(b->ents, nc * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		b->ents = ne;
		b->cap = nc;
	}
	if (b->text_len + n > b->text_cap) {
		size_t nc = b->text_cap ? 2 * b->text_cap : 8192;
		char *nt;

		while (nc < b->text_len + n)
			nc *= 2;
		if (!(nt = realloc(b->text, nc)))
			return -ENOMEM;
		b->text = nt;
		b->text_cap = nc;
	}
	memcpy(b->text + b->text_len, t, n);
	b->ents[b->n++] = (struct capsass_ent){crc, name, pc, (uint32_t)b->text_len, (uint16_t)n};
	b->text_len += n;
	return 0;
}

/* Equal keys: the first added first (qsort is not stable; off says). */
static int build_cmp(const void *a, const void *b)
{
	const struct capsass_ent *x = a, *y = b;
	int r = ent_cmp(x, y);

	return r ? r : x->off < y->off ? -1 : x->off > y->off;
}

int capsass_encode(struct capsass_builder *b, void **buf, size_t *len)
{
	size_t total = CAPSASS_HDR_LEN, n = 0;
	uint8_t *out, *p;

	if (!b->n && !b->missing && !b->capped)
		return -ENODATA;
	if (b->n)
		qsort(b->ents, b->n, sizeof(*b->ents), build_cmp);
	for (size_t i = 0; i < b->n; i++) /* dedup in place */
		if (!n || ent_cmp(&b->ents[n - 1], &b->ents[i]))
			b->ents[n++] = b->ents[i];
	b->n = n;
	for (size_t i = 0; i < n; i++)
		total += CAPSASS_ENT_FIXED + b->ents[i].len;
	out = p = malloc(total);
	if (!out)
		return -ENOMEM;
	put32(&p, CAPSASS_VERSION);
	put32(&p, (uint32_t)n);
	put32(&p, b->missing);
	put32(&p, b->capped);
	for (size_t i = 0; i < n; i++) {
		put64(&p, b->ents[i].crc);
		put32(&p, b->ents[i].name);
		put32(&p, b->ents[i].pc);
		put16(&p, b->ents[i].len);
		memcpy(p, b->text + b->ents[i].off, b->ents[i].len);
		p += b->ents[i].len;
	}
	*buf = out;
	*len = total;
	return 0;
}

void capsass_builder_finish(struct capsass_builder *b)
{
	if (!b)
		return;
	free(b->ents);
	free(b->text);
	*b = (struct capsass_builder){0};
}
