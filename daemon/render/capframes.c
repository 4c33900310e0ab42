// SPDX-License-Identifier: MIT
/*
 * What the exports need from a capture that folded stacks cannot give
 * (per-sample time for Chrome traces, addresses for pprof): the frames of
 * one (pid, stack), resolved through CAPSEC_SYMBOLS exactly as folded.c
 * resolves them (same section, same fallback to raw addresses), plus a
 * small interning map for the exports' tables.
 */
#include "render_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "symtab.h"

void capframes_init(struct capframes *f, const struct capture *c, const struct render_view *view)
{
	f->c = c;
	f->view = view ? *view : (struct render_view){0};
	f->syms = NULL;
	f->n = 0;
	const struct capture_extra *ex = capture_find_extra(c, CAPSEC_SYMBOLS);
	if (ex && sym_table_decode(ex->data, ex->len, &f->syms, NULL, 0) < 0)
		f->syms = NULL; /* damaged: raw addresses, as folded.c does */
}

void capframes_finish(struct capframes *f)
{
	sym_table_free(f->syms);
	f->syms = NULL;
}

static void push(struct capframes *f, const struct sym_frames *fr, const uint64_t *ips, size_t i,
		 bool kernel)
{
	size_t k = f->n++, len = 0;
	const char *s = fr ? sym_table_name(f->syms, fr->names[i], &len) : NULL;
	if ((!s || !len) && !kernel && ips[i] == SYMTAB_IP_TRUNCATED) {
		s = SYMTAB_TRUNCATED_NAME;
		len = sizeof(SYMTAB_TRUNCATED_NAME) - 1;
	} else if (!s || !len) {
		len = (size_t)snprintf(f->raw[k], sizeof(f->raw[k]), "0x%" PRIx64, ips[i]);
		s = f->raw[k];
	}
	f->name[k] = s;
	f->len[k] = len;
	f->ip[k] = ips[i];
	f->kernel[k] = kernel;
	f->map[k] = fr && fr->maps ? fr->maps[i] : 0;
	f->linelen[k] = 0;
	f->line[k] = fr && fr->lines ? sym_table_name(f->syms, fr->lines[i], &f->linelen[k]) : "";
}

/* The one frame standing for a run of kernel frames the peer may not see:
 * no name from the symbols, no address, no mapping. */
static void push_hidden_kernel(struct capframes *f)
{
	size_t k = f->n++;

	f->name[k] = RENDER_KERNEL_FRAME;
	f->len[k] = sizeof(RENDER_KERNEL_FRAME) - 1;
	f->ip[k] = 0;
	f->kernel[k] = true;
	f->map[k] = 0;
	f->line[k] = "";
	f->linelen[k] = 0;
}

size_t capframes_get(struct capframes *f, uint32_t pid, uint32_t stack)
{
	uint16_t nu = 0, nk = 0;
	struct sym_frames fr;
	const struct sym_frames *pf = NULL;
	f->n = 0;
	const uint64_t *ips = stack ? capture_stack(f->c, stack, &nu, &nk) : NULL;
	if (!ips)
		return 0;
	if (f->syms && sym_table_find(f->syms, pid, stack, &fr) && fr.nuser == nu &&
	    fr.nkernel == nk)
		pf = &fr;
	/* the arrays hold STORE_MAX_FRAMES of each; a capture file could
	 * claim more, keep the root-most ones */
	size_t cu = nu > STORE_MAX_FRAMES ? STORE_MAX_FRAMES : nu;
	size_t ck = nk > STORE_MAX_FRAMES ? STORE_MAX_FRAMES : nk;
	for (size_t i = nu; i-- > nu - cu;)
		push(f, pf, ips, i, false);
	if (ck && f->view.kernel_hidden) {
		push_hidden_kernel(f);
		return f->n;
	}
	for (size_t i = (size_t)nu + nk; i-- > (size_t)nu + nk - ck;)
		push(f, pf, ips, i, true);
	return f->n;
}

size_t capframes_raw(struct capframes *f, const uint64_t *ips, size_t n)
{
	f->n = 0;
	for (size_t i = n; i-- > (n > STORE_MAX_FRAMES ? n - STORE_MAX_FRAMES : 0);)
		push(f, NULL, ips, i, false);
	return f->n;
}

void bmap_init(struct bmap *m)
{
	memset(m, 0, sizeof(*m));
}

void bmap_finish(struct bmap *m)
{
	free(m->slots);
	free(m->offs);
	free(m->lens);
	free(m->hashes);
	free(m->arena);
	memset(m, 0, sizeof(*m));
}

static int bmap_grow(struct bmap *m)
{
	size_t nc = m->cap ? m->cap * 2 : 1024;
	uint32_t *ns = calloc(nc, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t id = 1; id <= m->n; id++) {
		size_t s = m->hashes[id - 1] & (nc - 1);
		while (ns[s])
			s = (s + 1) & (nc - 1);
		ns[s] = (uint32_t)id;
	}
	free(m->slots);
	m->slots = ns;
	m->cap = nc;
	return 0;
}

static int bmap_reserve(struct bmap *m, size_t len)
{
	if (m->n == m->ncap) {
		size_t nc = m->ncap ? m->ncap * 2 : 1024;
		uint64_t *o = realloc(m->offs, nc * sizeof(*o));
		if (o)
			m->offs = o;
		uint32_t *l = realloc(m->lens, nc * sizeof(*l));
		if (l)
			m->lens = l;
		uint64_t *h = realloc(m->hashes, nc * sizeof(*h));
		if (h)
			m->hashes = h;
		if (!o || !l || !h)
			return -ENOMEM;
		m->ncap = nc;
	}
	if (!m->arena || m->alen + len > m->acap) {
		size_t nc = m->acap ? m->acap : 1 << 16;
		while (nc < m->alen + len)
			nc *= 2;
		char *a = realloc(m->arena, nc);
		if (!a)
			return -ENOMEM;
		m->arena = a;
		m->acap = nc;
	}
	return 0;
}

uint32_t bmap_intern(struct bmap *m, const void *key, size_t len, bool *added)
{
	uint64_t h = name_hash(key, len);
	h ^= h >> 31;
	if (added)
		*added = false;
	if ((m->n + 1) * 2 > m->cap && bmap_grow(m) < 0)
		return 0;
	size_t mask = m->cap - 1, s = h & mask;
	for (; m->slots[s]; s = (s + 1) & mask) {
		uint32_t id = m->slots[s];
		if (m->hashes[id - 1] == h && m->lens[id - 1] == len &&
		    !memcmp(m->arena + m->offs[id - 1], key, len))
			return id;
	}
	if (len > UINT32_MAX || bmap_reserve(m, len) < 0)
		return 0;
	memcpy(m->arena + m->alen, key, len);
	m->offs[m->n] = m->alen;
	m->lens[m->n] = (uint32_t)len;
	m->hashes[m->n] = h;
	m->alen += len;
	m->slots[s] = (uint32_t)++m->n;
	if (added)
		*added = true;
	return (uint32_t)m->n;
}

const char *bmap_key(const struct bmap *m, uint32_t id, size_t *len)
{
	if (!id || id > m->n) {
		*len = 0;
		return "";
	}
	*len = m->lens[id - 1];
	return m->arena + m->offs[id - 1];
}
