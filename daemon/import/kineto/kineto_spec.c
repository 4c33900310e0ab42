// SPDX-License-Identifier: MIT
/*
 * Speculative piece parses (kineto_spec.h). A segment is parsed with the
 * same tokenizer and Kineto callbacks as the serial import, into its own
 * string table and rank, from a state copied from the importer's: so when
 * the importer's state at the segment's first byte is that state, the
 * serial parse of those bytes would have produced exactly the segment's
 * events, with ids that differ only by the strings the importer interned
 * first and by the count of events before it. Merging re-interns the
 * segment's strings in their own order (the order a serial parse would
 * have met the new ones in) and shifts its indexes.
 *
 * What a segment may not contain, because merging could not reproduce
 * the serial result: the end of the events array (the parse stops), a
 * warning about too many events. Flow ids given as strings are marked
 * (TL_FLOW_STR_ID) and remapped. The importer also refuses a segment that
 * would cross its event or string caps; it then parses those bytes itself
 * and reports what a serial parse reports.
 */
#include <errno.h>
#include <string.h>

#include "kineto_spec.h"

/* The parsing thread's state: its string table (ids stable across
 * pieces, so its name/category caches stay warm), consumer and tokenizer. */
struct kspec_worker {
	struct strtab st;
	struct kimp k;
	struct json_tok tok;
	bool tok_init;
};

/* A segment's strings, in first-use order: worker id and text. */
struct kseg_str {
	uint32_t id;
	uint32_t len;
	size_t off; /* into blob */
};

struct kseg {
	bool ok;
	size_t start, end; /* [start, end) of the piece: whole events */
	struct tl_rank *r;
	struct import_result res;
	struct tl_build cap; /* r's capacities, kept across pieces */
	bool rounding;
	struct kseg_str *str;
	uint32_t nstr, str_cap;
	char *blob;
	size_t blob_len, blob_cap;
};

static bool ws(uint8_t c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

bool kspec_ctx_take(struct kspec_ctx *c, const struct kimp *k, const struct json_tok *t)
{
	for (uint32_t d = 1; d <= 2; d++) {
		if (k->depth < d || t->depth < d || k->role[d] != R_EVENTS)
			continue;
		memset(c, 0, sizeof(*c));
		c->depth = d;
		memcpy(c->stack, t->stack, d);
		memcpy(c->role, k->role, d + 1);
		memcpy(c->key, k->key, d + 1);
		c->max_depth = t->max_depth;
		c->max_string = t->max_string;
		c->max_events = k->max_events;
		return c->stack[d - 1] == '[';
	}
	return false;
}

struct kspec_worker *kspec_worker_new(void)
{
	struct kspec_worker *w = calloc(1, sizeof(*w));

	if (w && strtab_init(&w->st) < 0) {
		free(w);
		return NULL;
	}
	return w;
}

void kspec_worker_free(struct kspec_worker *w)
{
	if (!w)
		return;
	if (w->tok_init)
		json_tok_finish(&w->tok);
	kimp_finish(&w->k);
	strtab_finish(&w->st);
	free(w);
}

struct kseg *kseg_new(void)
{
	struct kseg *g = calloc(1, sizeof(*g));

	if (g && !(g->r = tl_rank_alloc(0))) {
		free(g);
		return NULL;
	}
	return g;
}

void kseg_free(struct kseg *g)
{
	if (!g)
		return;
	tl_rank_free(g->r);
	free(g->str);
	free(g->blob);
	free(g);
}

void kspec_map_free(struct kspec_map *m)
{
	free(m->id);
	m->id = NULL;
	m->cap = 0;
}

int kspec_note(struct kimp *k, uint32_t id)
{
	int err;

	if (id >= k->seen_cap) {
		uint32_t old = k->seen_cap;

		if ((err = bigalloc_grow((void **)&k->seen_gen, &k->seen_cap, id + 1,
					 sizeof(*k->seen_gen))) < 0)
			return kimp_oom(k, err);
		memset(k->seen_gen + old, 0, (size_t)(k->seen_cap - old) * sizeof(*k->seen_gen));
	}
	if (k->seen_gen[id] == k->gen)
		return 0;
	k->seen_gen[id] = k->gen;
	if ((err = bigalloc_grow((void **)&k->first, &k->first_cap, k->nfirst + 1,
				 sizeof(*k->first))) < 0)
		return kimp_oom(k, err);
	k->first[k->nfirst++] = id;
	return 0;
}

/* The texts of the segment's strings, copied out of the worker's table
 * (which the worker goes on growing while the importer reads these). */
static bool copy_strings(struct kseg *g, const struct kimp *k)
{
	size_t need = 0;

	if (bigalloc_grow((void **)&g->str, &g->str_cap, k->nfirst, sizeof(*g->str)) < 0)
		return false;
	for (uint32_t i = 0; i < k->nfirst; i++) {
		size_t len;

		strtab_get(k->st, k->first[i], &len);
		need += len;
	}
	if (need > g->blob_cap) {
		char *b = realloc(g->blob, need);

		if (!b)
			return false;
		g->blob = b;
		g->blob_cap = need;
	}
	g->blob_len = 0;
	for (uint32_t i = 0; i < k->nfirst; i++) {
		size_t len;
		const char *str = strtab_get(k->st, k->first[i], &len);

		g->str[i] = (struct kseg_str){.id = k->first[i],
					      .len = (uint32_t)len,
					      .off = g->blob_len};
		memcpy(g->blob + g->blob_len, str, len);
		g->blob_len += len;
	}
	g->nstr = k->nfirst;
	return true;
}

/* First byte of an element that follows "}," in p[0..n), or n. */
static size_t first_elem(const uint8_t *p, size_t n)
{
	for (const uint8_t *q = p; (q = memchr(q, '}', n - (size_t)(q - p)));) {
		const uint8_t *x = q + 1;

		while (x < p + n && ws(*x))
			x++;
		if (x < p + n && *x == ',') {
			x++;
			while (x < p + n && ws(*x))
				x++;
			if (x < p + n && *x == '{')
				return (size_t)(x - p);
		}
		q++;
	}
	return n;
}

/* One past the last "}" in p[0..n) that is followed by "," and "{", or 0. */
static size_t last_elem_end(const uint8_t *p, size_t n)
{
	for (size_t i = n; i-- > 0;) {
		size_t j = i;

		if (p[i] != '{')
			continue;
		while (j > 0 && ws(p[j - 1]))
			j--;
		if (j == 0 || p[j - 1] != ',')
			continue;
		j--;
		while (j > 0 && ws(p[j - 1]))
			j--;
		if (j > 0 && p[j - 1] == '}')
			return j;
	}
	return 0;
}

/* Parse p[start, end) into g from state c: 1 usable, 0 not, -1 a parse
 * error at p + start + *at (a wrong guess of the first element, or a real
 * error, which the importer's thread will report). */
static int try_at(struct kspec_worker *w, struct kseg *g, const struct kspec_ctx *c,
		  const uint8_t *p, size_t start, size_t end, size_t *at)
{
	struct tl_rank *r = g->r;
	struct kimp *k = &w->k;

	/* an empty rank and counters; allocations kept */
	r->nev = r->nargs = r->nmeta = r->raw_events = r->parsed_events = 0;
	r->min_ts_ns = INT64_MAX;
	r->hta_min_ts_us = INT64_MAX;
	memset(&g->res, 0, sizeof(g->res));
	if (!k->st) { /* first piece */
		kimp_init(k, &w->st, r, &g->res, c->max_events);
		k->spec = true;
	}
	k->r = r;
	k->res = &g->res;
	k->max_events = c->max_events;
	k->cap = g->cap;
	k->rounding = false;
	k->nfirst = 0;
	k->err[0] = '\0';
	if (++k->gen == 0) { /* wrapped: forget every mark */
		memset(k->seen_gen, 0, (size_t)k->seen_cap * sizeof(*k->seen_gen));
		k->gen = 1;
	}
	k->depth = c->depth;
	memcpy(k->role, c->role, c->depth + 1);
	memcpy(k->key, c->key, c->depth + 1);
	if (w->tok_init)
		json_tok_finish(&w->tok);
	json_tok_init(&w->tok, &kineto_sax, k, c->max_depth, c->max_string);
	w->tok_init = true;
	json_tok_resume(&w->tok, c->stack, c->depth);
	if (json_tok_feed(&w->tok, (const char *)p + start, end - start) < 0) {
		g->cap = k->cap;
		*at = (size_t)w->tok.err_offset;
		return -1;
	}
	g->cap = k->cap;
	if (!json_tok_after_elem(&w->tok, c->depth) || k->depth != c->depth ||
	    g->res.warnings[IMPORT_W_TOO_MANY] || !copy_strings(g, k))
		return 0;
	g->rounding = k->rounding;
	return 1;
}

/* The worker's string table lives as long as the import and holds what the
 * importer's holds again: past this, pieces are left to the importer, so
 * that a trace of distinct strings costs the import's memory limit once,
 * plus this. */
#define KSPEC_MAX_STR_BYTES (8u << 20)

void kseg_run(struct kspec_worker *w, struct kseg *g, const struct kspec_ctx *c, const uint8_t *p,
	      size_t n)
{
	size_t start = 0, end = last_elem_end(p, n), at;

	g->ok = false;
	if (tl_strtab_mem(&w->st) > KSPEC_MAX_STR_BYTES)
		return;
	/* A "}," that was not between two events (inside a string or an
	 * event's args) usually fails to parse soon: try the next one. */
	for (int tries = 0; tries < 4; tries++) {
		start += first_elem(p + start, n - start);
		if (start >= end)
			return;
		switch (try_at(w, g, c, p, start, end, &at)) {
		case 1:
			g->start = start;
			g->end = end;
			g->ok = true;
			return;
		case 0:
			return;
		}
		start += at + 1;
	}
}

bool kseg_span(const struct kseg *g, size_t *start, size_t *end)
{
	if (!g || !g->ok)
		return false;
	*start = g->start;
	*end = g->end;
	return true;
}

static inline uint32_t remap(const struct kspec_map *m, uint32_t id)
{
	return m->id[id];
}

int kseg_adopt(struct kseg *g, const struct kspec_ctx *c, struct kspec_map *m, struct kimp *k,
	       struct json_tok *t)
{
	struct tl_rank *r = k->r, *s = g->r;
	struct import_result *res = k->res;
	uint32_t ev0 = r->nev, args0 = r->nargs, me0 = r->nmeta;
	uint32_t raw0 = r->raw_events, maxid = 0;
	int err;

	if (!g->ok || !json_tok_at_elem(t, c->stack, c->depth) || k->depth != c->depth ||
	    memcmp(k->role, c->role, c->depth + 1) || memcmp(k->key, c->key, c->depth + 1))
		return 0;
	/* the caps a serial parse would have hit inside the segment */
	if ((uint64_t)r->nev + s->nev > k->max_events ||
	    (uint64_t)r->nmeta + s->nmeta > k->max_events ||
	    (uint64_t)k->st->n + g->nstr > STRTAB_MAX_IDS ||
	    (uint64_t)r->raw_events + s->raw_events > UINT32_MAX)
		return 0;

	/* strings new to the importer, in the order the segment met them:
	 * the ids a serial parse would have given them */
	for (uint32_t i = 0; i < g->nstr; i++)
		maxid = g->str[i].id > maxid ? g->str[i].id : maxid;
	if (maxid >= m->cap) {
		uint32_t old = m->cap;

		if ((err = bigalloc_grow((void **)&m->id, &m->cap, maxid + 1, sizeof(*m->id))) < 0)
			return kimp_oom(k, err);
		memset(m->id + old, 0, (size_t)(m->cap - old) * sizeof(*m->id));
	}
	for (uint32_t i = 0; i < g->nstr; i++) {
		const struct kseg_str *x = &g->str[i];
		int64_t id;

		if (!x->id || m->id[x->id])
			continue;
		if ((id = strtab_intern(k->st, g->blob + x->off, x->len)) < 0)
			return kimp_oom(k, (int)id);
		m->id[x->id] = (uint32_t)id;
	}

	kimp_pop_guard(k, s->nev, s->nargs);
	if (k->mem && (err = kimp_mem_grow(k, s->nev, s->nargs, s->nmeta)) < 0)
		return err;
	if ((err = bigalloc_grow_pop((void **)&r->ev, &k->cap.ev_cap, &k->cap.ev_pop, ev0, s->nev,
				     sizeof(*r->ev))) < 0 ||
	    (err = bigalloc_grow_pop((void **)&r->args, &k->cap.args_cap, &k->cap.args_pop, args0,
				     s->nargs, sizeof(*r->args))) < 0 ||
	    (err = bigalloc_grow_pop((void **)&r->meta, &k->cap.meta_cap, NULL, me0, s->nmeta,
				     sizeof(*r->meta))) < 0)
		return kimp_oom(k, err);

	if (g->rounding && !k->rounding) { /* as commit_event() would have */
		k->rounding = true;
		k->rounding_from = ev0;
	}
	for (uint32_t i = 0; i < s->nev; i++) {
		struct tl_event *e = &r->ev[ev0 + i];

		*e = s->ev[i];
		if (k->rounding && tl_ev_hta_dur_ns(e) < 0)
			e->flags |= TL_EV_HTA_DUR_NEG;
		e->index += raw0;
		e->name = remap(m, e->name);
		e->cat = remap(m, e->cat);
		if (e->flags & TL_EV_PID_STR)
			e->pid = remap(m, (uint32_t)e->pid);
		if (e->flags & TL_EV_TID_STR)
			e->tid = remap(m, (uint32_t)e->tid);
		if (e->args != TL_NO_ARGS)
			e->args += args0;
	}
	for (uint32_t i = 0; i < s->nargs; i++) {
		struct tl_args *a = &r->args[args0 + i];

		*a = s->args[i];
		a->collective_name = remap(m, a->collective_name);
		a->dtype = remap(m, a->dtype);
		a->pg_name = remap(m, a->pg_name);
		a->pg_desc = remap(m, a->pg_desc);
		a->pg_ranks = remap(m, a->pg_ranks);
		a->in_split = remap(m, a->in_split);
		a->out_split = remap(m, a->out_split);
	}
	for (uint32_t i = 0; i < s->nmeta; i++) {
		struct tl_meta *x = &r->meta[me0 + i];

		*x = s->meta[i];
		x->value = remap(m, x->value);
	}
	r->nev += s->nev;
	r->nargs += s->nargs;
	res->flows += g->res.flows;
	r->nmeta += s->nmeta;
	r->raw_events += s->raw_events;
	r->parsed_events += s->parsed_events;
	if (s->min_ts_ns < r->min_ts_ns)
		r->min_ts_ns = s->min_ts_ns;
	if (s->hta_min_ts_us < r->hta_min_ts_us)
		r->hta_min_ts_us = s->hta_min_ts_us;
	for (int w = 0; w < IMPORT_W_COUNT; w++)
		res->warnings[w] += g->res.warnings[w];
	res->warnings_total += g->res.warnings_total;
	json_tok_skip(t, g->end - g->start);
	return 1;
}
