// SPDX-License-Identifier: MIT
/*
 * Symbolize a capture: every (record pid, stack id) pair it uses, once,
 * into a CAPSEC_SYMBOLS section. The same user address means different
 * things in different processes, so user frames are resolved per pid;
 * kernel frames are the same everywhere but stored per entry too, which
 * keeps the reader a single look-up per line.
 */
#include "sym_priv.h"
#include "symtab.h"

#include "capture/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* The unique (pid, stack) pairs of c's records, sorted, with a uid each. */
static int collect_pairs(const struct capture *c, struct pair **ret, size_t *n)
{
	struct pair *p = malloc((c->nrecs ? c->nrecs : 1) * sizeof(*p));
	size_t k = 0;
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
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
	uint32_t *names, *lines;
	char buf[SYMTAB_MAX_NAME + 1], line[1024];
};

static int add_stack(struct pass *ps, struct sym_pctx *pc, uint32_t pid, uint32_t stack)
{
	uint16_t nu, nk;
	const uint64_t *ips = capture_stack(ps->c, stack, &nu, &nk);
	int r;

	if (!ips)
		nu = nk = 0;
	for (size_t i = 0; i < (size_t)nu + nk; i++) {
		bool user = i < nu;
		/* Below the leaf, frames are return addresses: look up ip - 1
		 * so a call that ends a function names that function. */
		unsigned adj = (user ? i : i - nu) ? 1 : 0;
		ps->line[0] = '\0';
		if (user)
			sym_resolve_user(pc, ips[i], adj, ps->buf, sizeof(ps->buf),
					 ps->lines ? ps->line : NULL, sizeof(ps->line));
		else
			sym_resolve_kernel(ps->ks, ips[i], adj, ps->buf, sizeof(ps->buf));
		r = sym_tb_name(ps->tb, ps->buf, strlen(ps->buf), &ps->names[i]);
		if (r < 0)
			return r;
		if (ps->lines) {
			r = sym_tb_name(ps->tb, ps->line, strlen(ps->line), &ps->lines[i]);
			if (r < 0)
				return r;
		}
	}
	return sym_tb_add(ps->tb, pid, stack, ps->names, ps->lines, nu, nk);
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
	if (!ps.names || sym_tb_new(s->lines, &ps.tb) < 0)
		goto out;
	if (s->lines && !(ps.lines = malloc(maxframes * sizeof(*ps.lines))))
		goto out;
	if (kernel)
		ps.ks = sym_kernel_get(s);

	for (size_t i = 0; i < npairs;) {
		struct sym_pctx pc;
		uint32_t pid = pairs[i].pid;
		r = sym_pctx_begin(s, pid, pairs[i].uid, &pc);
		if (r < 0)
			goto out;
		for (; i < npairs && pairs[i].pid == pid; i++) {
			r = add_stack(&ps, &pc, pid, pairs[i].stack);
			if (r < 0)
				break;
		}
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
	free(ps.names);
	free(ps.lines);
	free(pairs);
	return r;
}
