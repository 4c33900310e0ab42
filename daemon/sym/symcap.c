// SPDX-License-Identifier: MIT
/*
 * Symbolize a capture: every (record pid, stack id) pair it uses, and the
 * pairs sections refer to (capture.stackrefs), once, into a CAPSEC_SYMBOLS
 * section, with the file mapping (path, range, build id) of each frame.
 * The same user address means different things in different processes, so
 * user frames are resolved per pid; kernel frames are the same everywhere
 * but stored per entry too, which keeps the reader a single look-up per
 * line.
 */
#include "sym_priv.h"
#include "symtab.h"
#include "demangle.h"

#include "capture/capture.h"
#include "unwind/unwind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(SYMTAB_IP_TRUNCATED == UNWIND_IP_TRUNCATED,
	       "the renderers and the unwinder must agree on the truncation frame");

struct pair {
	uint32_t pid, stack, uid, pad;
};

static int pair_cmp(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* The unique (pid, stack) pairs of c's records and stackrefs, sorted,
 * with a uid each. */
static int collect_pairs(const struct capture *c, struct pair **ret, size_t *n)
{
	struct pair *p = malloc((c->nrecs + c->nstackrefs + 1) * sizeof(*p));
	size_t k = 0;
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->stack && r->stack <= c->nstacks)
			p[k++] = (struct pair){r->pid, r->stack, r->uid, 0};
	}
	for (size_t i = 0; i < c->nstackrefs; i++) {
		const struct capture_stackref *r = &c->stackrefs[i];
		if (r->stack && r->stack <= c->nstacks)
			p[k++] = (struct pair){r->pid, r->stack, r->uid, 0};
	}
	if (k)
		qsort(p, k, sizeof(*p), pair_cmp);
	size_t w = 0;
	for (size_t i = 0; i < k; i++)
		if (!w || pair_cmp(&p[w - 1], &p[i]))
			p[w++] = p[i];
	*ret = p;
	*n = w;
	return 0;
}

struct pass {
	struct symbolizer *s;
	const struct capture *c;
	struct sym_table_builder *tb;
	struct ksyms *ks;
	uint32_t *names, *lines, *fmaps;
	uint32_t *mapids; /* per mapping of the current pid: table index, 0 = not yet */
	uint32_t kmap;	  /* the kernel's mapping, 0 = not yet */
	/* Demangling cache: raw user names interned in raw; dm[raw index] is
	 * the demangled name's index in tb + 1 (0 = not yet). */
	struct sym_table_builder *raw;
	uint32_t *dm;
	size_t dm_cap;
	char buf[SYMTAB_MAX_NAME + 1], line[1024];
};

static int add_map(struct pass *ps, struct sym_mapping *sm, const char *path, const uint8_t *bid,
		   size_t bidlen, uint32_t *id)
{
	char hex[2 * SYM_BUILD_ID_MAX + 1];
	size_t n = 0;
	for (size_t k = 0; k < bidlen && k < SYM_BUILD_ID_MAX; k++)
		n += (size_t)snprintf(hex + n, sizeof(hex) - n, "%02x", bid[k]);
	int r = sym_tb_name(ps->tb, path, strlen(path), &sm->file);
	if (r == 0)
		r = sym_tb_name(ps->tb, hex, n, &sm->build_id);
	if (r == 0)
		r = sym_tb_map(ps->tb, sm, id);
	return r;
}

/* The kernel's mapping (every kernel frame's), with the running kernel's
 * build id, added on first use. */
static int kernel_map(struct pass *ps, uint32_t *id)
{
	uint8_t bid[SYM_BUILD_ID_MAX];
	size_t len = 0;
	struct sym_mapping sm = {.limit = UINT64_MAX};
	int r = 0;
	if (!ps->kmap) {
		ksyms_build_id(ps->s->notes_path, bid, &len);
		if (ps->ks && ps->ks->n && !ps->ks->restricted)
			sm.flags |= SYMTAB_MAPF_SYMBOLS;
		r = add_map(ps, &sm, "[kernel.kallsyms]", bid, len, &ps->kmap);
	}
	*id = ps->kmap;
	return r;
}

/* The table's mapping for pc->maps->m[i], added on first use. */
static int map_id(struct pass *ps, struct sym_pctx *pc, size_t i, uint32_t *id)
{
	if (ps->mapids[i]) {
		*id = ps->mapids[i];
		return 0;
	}
	const struct sym_map *m = &pc->maps->m[i];
	const struct sym_obj *o = pc->objs && pc->objs[i] != SYM_OBJ_NONE ? pc->objs[i] : NULL;
	struct sym_mapping sm = {.start = m->start,
				 .limit = m->end,
				 .offset = m->off,
				 .pid = pc->pid};
	if (o && o->nsyms)
		sm.flags |= SYMTAB_MAPF_SYMBOLS;
	if (m->exe)
		sm.flags |= SYMTAB_MAPF_MAIN;
	int r = add_map(ps, &sm, sym_map_path(pc->maps, m), o ? o->build_id : NULL,
			o ? o->build_id_len : 0, &ps->mapids[i]);
	*id = ps->mapids[i];
	return r;
}

/* Intern user name ps->buf into tb, demangled ("_Z..." names, once per
 * distinct name: the demangler is slow next to a hash look-up). */
static int user_name(struct pass *ps, uint32_t *idx)
{
	size_t len = strlen(ps->buf);
	uint32_t ri;
	if (!ps->raw || strncmp(ps->buf, "_Z", 2) != 0)
		return sym_tb_name(ps->tb, ps->buf, len, idx);
	int r = sym_tb_name(ps->raw, ps->buf, len, &ri);
	if (r < 0)
		return r;
	if (ri >= ps->dm_cap) {
		size_t nc = ps->dm_cap ? ps->dm_cap * 2 : 256;
		while (nc <= ri)
			nc *= 2;
		uint32_t *n = realloc(ps->dm, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + ps->dm_cap, 0, (nc - ps->dm_cap) * sizeof(*n));
		ps->dm = n;
		ps->dm_cap = nc;
	}
	if (ps->dm[ri]) {
		*idx = ps->dm[ri] - 1;
		return 0;
	}
	char d[SYMTAB_MAX_NAME + 1];
	const char *s = sym_demangle(ps->buf, d, sizeof(d)) ? d : ps->buf;
	r = sym_tb_name(ps->tb, s, strlen(s), idx);
	if (r == 0)
		ps->dm[ri] = *idx + 1;
	return r;
}

static int add_stack(struct pass *ps, struct sym_pctx *pc, uint32_t pid, uint32_t stack)
{
	uint16_t nu, nk;
	const uint64_t *ips = capture_stack(ps->c, stack, &nu, &nk);
	int r = 0;

	if (!ips)
		nu = nk = 0;
	for (size_t i = 0; i < (size_t)nu + nk; i++) {
		bool user = i < nu;
		/* Below the leaf, frames are return addresses: look up ip - 1
		 * so a call that ends a function names that function. */
		unsigned adj = (user ? i : i - nu) ? 1 : 0;
		size_t mi = SIZE_MAX;
		ps->line[0] = '\0';
		ps->fmaps[i] = 0;
		if (user) /* names the truncation frame too */
			sym_resolve_user(pc, ips[i], adj, ps->buf, sizeof(ps->buf),
					 ps->lines ? ps->line : NULL, sizeof(ps->line), &mi);
		else
			sym_resolve_kernel(ps->ks, ips[i], adj, ps->buf, sizeof(ps->buf));
		if (!user)
			r = kernel_map(ps, &ps->fmaps[i]);
		else if (mi != SIZE_MAX)
			r = map_id(ps, pc, mi, &ps->fmaps[i]);
		if (r < 0)
			return r;
		r = user ? user_name(ps, &ps->names[i])
			 : sym_tb_name(ps->tb, ps->buf, strlen(ps->buf), &ps->names[i]);
		if (r < 0)
			return r;
		if (ps->lines) {
			r = sym_tb_name(ps->tb, ps->line, strlen(ps->line), &ps->lines[i]);
			if (r < 0)
				return r;
		}
	}
	return sym_tb_add_maps(ps->tb, pid, stack, ps->names, ps->lines, ps->fmaps, nu, nk);
}

/* Replace an older symbols section, else add one (capture_add_extra copies). */
static int attach(struct capture *c, void *buf, size_t len)
{
	for (size_t i = 0; i < c->nextras; i++) {
		if (c->extras[i].type != CAPSEC_SYMBOLS)
			continue;
		free(c->extras[i].data);
		c->extras[i].data = buf;
		c->extras[i].len = len;
		return 0;
	}
	int r = capture_add_extra(c, CAPSEC_SYMBOLS, buf, len);
	free(buf);
	return r;
}

int sym_symbolize_capture(struct symbolizer *s, struct capture *c)
{
	struct pass ps = {.s = s, .c = c};
	struct pair *pairs = NULL;
	size_t npairs = 0, maxframes = 1;
	void *out = NULL;
	size_t outlen;
	int r;

	sym_sweep(s, sym_now_ns());
	r = collect_pairs(c, &pairs, &npairs);
	if (r < 0)
		return r;
	bool kernel = false;
	for (size_t i = 0; i < c->nstacks; i++) {
		size_t n = (size_t)c->stacks[i].nuser + c->stacks[i].nkernel;
		kernel |= c->stacks[i].nkernel > 0;
		if (n > maxframes)
			maxframes = n;
	}
	r = -ENOMEM;
	ps.names = malloc(maxframes * sizeof(*ps.names));
	ps.fmaps = malloc(maxframes * sizeof(*ps.fmaps));
	/* Python frames carry their line whatever symbols.lines says (it
	 * governs the DWARF of native objects, which costs memory and time) */
	bool lines = s->lines || s->py_name;
	if (!ps.names || !ps.fmaps || sym_tb_new(lines, &ps.tb) < 0)
		goto out;
	if (s->demangle && sym_tb_new(false, &ps.raw) < 0)
		goto out;
	if (lines && !(ps.lines = malloc(maxframes * sizeof(*ps.lines))))
		goto out;
	if (kernel)
		ps.ks = sym_kernel_get(s);

	for (size_t i = 0; i < npairs;) {
		struct sym_pctx pc;
		uint32_t pid = pairs[i].pid;
		r = sym_pctx_begin(s, pid, pairs[i].uid, &pc);
		if (r < 0)
			goto out;
		size_t nmaps = pc.maps ? pc.maps->n : 0;
		ps.mapids = calloc(nmaps ? nmaps : 1, sizeof(*ps.mapids));
		for (r = ps.mapids ? 0 : -ENOMEM; r == 0 && i < npairs && pairs[i].pid == pid; i++)
			r = add_stack(&ps, &pc, pid, pairs[i].stack);
		free(ps.mapids);
		ps.mapids = NULL;
		sym_pctx_end(&pc);
		if (r < 0)
			goto out;
	}
	r = sym_tb_encode(ps.tb, &out, &outlen);
	if (r < 0)
		goto out;
	r = attach(c, out, outlen);
	if (r == 0) {
		pthread_mutex_lock(&s->lock);
		s->captures++;
		pthread_mutex_unlock(&s->lock);
	}
out:
	if (r < 0)
		log_warn("Failed to symbolize capture %llu: %s", (unsigned long long)c->id,
			 strerror(-r));
	sym_objs_trim(s);
	sym_kernel_put(s, ps.ks);
	sym_tb_free(ps.tb);
	sym_tb_free(ps.raw);
	free(ps.dm);
	free(ps.names);
	free(ps.fmaps);
	free(ps.lines);
	free(pairs);
	return r;
}
