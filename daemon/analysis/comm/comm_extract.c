// SPDX-License-Identifier: MIT
/*
 * From the timeline to communication events, one rank at a time: which
 * kernels communicate, their collective type, bytes and process group (from
 * the kernel's args or its launching record_param_comms op), the group's
 * parallelism tag, and the rank's compute/memory intervals and iteration
 * windows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_int.h"

enum { SC_UNSEEN = 0, SC_COMM, SC_COMPUTE, SC_OTHER };

static uint8_t sclass(struct cctx *c, uint32_t name)
{
	const char *s;

	if (name >= c->nstrs)
		return SC_OTHER;
	if (c->sclass[name])
		return c->sclass[name];
	s = timeline_str(c->tl, name, NULL);
	c->sclass[name] = comm_kernel_name(s) ? SC_COMM : SC_COMPUTE;
	return c->sclass[name];
}

/* Per string id caches: one strcmp walk per distinct name, not per event. */
static int coll_type_cached(struct cctx *c, uint32_t id)
{
	if (id >= c->nstrs)
		return -1;
	if (!c->coll_type[id]) {
		int t = type_from_coll(timeline_str(c->tl, id, NULL));

		c->coll_type[id] = (int8_t)(t < 0 ? -1 : t + 1);
	}
	return c->coll_type[id] < 0 ? -1 : c->coll_type[id] - 1;
}

static int64_t el_size_cached(struct cctx *c, uint32_t id)
{
	if (id >= c->nstrs)
		return -1;
	if (!c->el_size[id]) {
		int64_t s = dtype_size(timeline_str(c->tl, id, NULL));

		c->el_size[id] = (int8_t)(s < 0 ? -1 : s + 1);
	}
	return c->el_size[id] < 0 ? -1 : c->el_size[id] - 1;
}

/* External id → record_param_comms args, per rank (sorted pairs). */
struct xarg {
	int64_t ext;
	const struct tl_args *a;
};

static int cmp_xarg(const void *a, const void *b)
{
	const struct xarg *x = a, *y = b;

	return x->ext < y->ext ? -1 : x->ext > y->ext;
}

/* Append to a growable array of elements of size sz (doubling). */
static int grow(void *pv, uint32_t n, uint32_t *cap, size_t sz)
{
	void **v = pv, *p;
	uint32_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 256;
	if (!(p = realloc(*v, (size_t)nc * sz)))
		return -ENOMEM;
	*v = p;
	*cap = nc;
	return 0;
}

static bool named_iter_mark(struct cctx *c, const struct tl_event *e)
{
	const char *name;
	size_t n;

	if (e->name < c->nstrs && c->iter_mark[e->name])
		return c->iter_mark[e->name] == 1;
	name = timeline_str(c->tl, e->name, NULL);
	n = strlen(c->iter_name);
	bool m = c->iter_prefix ? !strncmp(name, c->iter_name, n - 1) : !strcmp(name, c->iter_name);

	if (e->name < c->nstrs)
		c->iter_mark[e->name] = m ? 1 : 2;
	return m;
}

/* Inline: it runs on every event, and without iter_name it is one flag. */
static inline bool is_iter_mark(struct cctx *c, const struct tl_event *e)
{
	return c->iter_name ? named_iter_mark(c, e) : e->flags & TL_EV_PROFILER_STEP;
}

/* Iteration marks (CPU-side; GPU-side ones for when there are none) and
 * record_param_comms args. */
struct marks {
	struct xarg *x;
	uint32_t nx, capx;
	uint32_t *gpu; /* positions of GPU-side marks */
	uint32_t ngpu, capgpu, capcpu;
};

/* Position p of the rank: ev[] then the tail. */
static const struct tl_event *tl_at(const struct tl_rank *r, uint32_t p)
{
	return p < r->nev ? &r->ev[p] : &r->tail[p - r->nev];
}

static int add_mark(struct crank *cr, uint32_t *cap, const struct tl_event *e)
{
	if (grow(&cr->iters, cr->niters, cap, sizeof(*cr->iters)))
		return -ENOMEM;
	cr->iters[cr->niters++] = (struct ival){e->ts_ns, e->ts_ns + e->dur_ns};
	return 0;
}

static bool gpu_work(const struct tl_event *e)
{
	return e->kind == TL_K_KERNEL || e->kind == TL_K_MEMCPY || e->kind == TL_K_MEMSET;
}

/* The step filter's tail (rows in file order, no by_stream): its CPU-side
 * marks and record_param_comms args, and its GPU-side marks, at positions
 * r->nev + k (tl_at()). */
static int scan_tail_cpu(struct cctx *c, struct crank *cr, struct marks *m)
{
	const struct tl_rank *r = cr->r;
	uint32_t rpc = timeline_str_find(c->tl, "record_param_comms", 18);

	for (uint32_t k = 0; k < r->ntail; k++) {
		const struct tl_event *e = &r->tail[k];

		if (gpu_work(e))
			continue;
		if (rpc && e->name == rpc && e->external_id >= 0 && e->args != TL_NO_ARGS) {
			if (grow(&m->x, m->nx, &m->capx, sizeof(*m->x)))
				return -ENOMEM;
			m->x[m->nx].ext = e->external_id;
			m->x[m->nx++].a = &r->tail_args[e->args];
		}
		if (e->dur_ns <= 0 || !is_iter_mark(c, e))
			continue;
		if (e->kind != TL_K_GPU_USER_ANNOTATION) {
			if (add_mark(cr, &m->capcpu, e))
				return -ENOMEM;
		} else {
			if (grow(&m->gpu, m->ngpu, &m->capgpu, sizeof(*m->gpu)))
				return -ENOMEM;
			m->gpu[m->ngpu++] = r->nev + k;
		}
	}
	return 0;
}

/* The rank's CPU-side events, in order: the GPU-side ones (bits set from
 * by_stream) are skipped without being read, since the pass over by_stream
 * reads them anyway. */
static int scan_cpu(struct cctx *c, struct crank *cr, struct marks *m)
{
	const struct tl_rank *r = cr->r;
	const uint64_t *gpu = c->buf.gpu;
	uint32_t rpc = timeline_str_find(c->tl, "record_param_comms", 18);
	int err;

	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e;

		if (gpu[i / 64] == ~0ull) {
			i |= 63;
			continue;
		}
		if (gpu[i / 64] >> (i % 64) & 1)
			continue;
		e = &r->ev[i];
		if (rpc && e->name == rpc && e->external_id >= 0 && e->args != TL_NO_ARGS) {
			if (grow(&m->x, m->nx, &m->capx, sizeof(*m->x)))
				return -ENOMEM;
			m->x[m->nx].ext = e->external_id;
			m->x[m->nx++].a = &r->args[e->args];
		}
		if (e->dur_ns > 0 && is_iter_mark(c, e) && e->kind != TL_K_GPU_USER_ANNOTATION &&
		    add_mark(cr, &m->capcpu, e))
			return -ENOMEM;
		if (e->dur_ns > 0 && e->kind == TL_K_GPU_USER_ANNOTATION && is_iter_mark(c, e) &&
		    !cr->niters) {
			if (grow(&m->gpu, m->ngpu, &m->capgpu, sizeof(*m->gpu)))
				return -ENOMEM;
			m->gpu[m->ngpu++] = i;
		}
	}
	if (cr->tail && (err = scan_tail_cpu(c, cr, m)))
		return err;
	if (m->nx)
		qsort(m->x, m->nx, sizeof(*m->x), cmp_xarg);
	return 0;
}

static bool has_coll_args(struct cctx *c, const struct tl_args *a)
{
	if (!a || (!a->collective_name && a->in_msg_nelems < 0 && !a->pg_name && !a->pg_desc))
		return false;
	/* the wait pseudo-collective: no payload */
	return !c->wait_id || a->collective_name != c->wait_id;
}

/* The kernel's own args (Kineto copies them; our nsys import writes them),
 * else its launch op's record_param_comms via the shared External id. */
static const struct tl_args *coll_args(struct cctx *c, const struct tl_rank *r,
				       const struct tl_event *e, const struct tl_args *a,
				       const struct xarg *x, uint32_t nx)
{
	int64_t ext = e->external_id;

	if (has_coll_args(c, a))
		return a;
	if (ext < 0 && e->link >= 0)
		ext = r->ev[e->link].external_id;
	if (ext >= 0 && nx) {
		struct xarg key = {ext, NULL}, *h = bsearch(&key, x, nx, sizeof(*x), cmp_xarg);

		if (h && has_coll_args(c, h->a))
			return h->a;
	}
	return NULL;
}

static int group_for(struct cctx *c, const struct tl_args *a, uint32_t *out)
{
	uint32_t key = a ? (a->pg_name ? a->pg_name : a->pg_desc ? a->pg_desc : a->pg_ranks) : 0;
	struct cgroup *g;
	uint32_t *pc;

	if (key < c->nstrs && c->group_of[key]) {
		*out = c->group_of[key] - 1;
		g = &c->groups[*out];
		if (g->size < 0 && a && a->group_size > 0)
			g->size = (int32_t)a->group_size;
		return 0;
	}
	if (c->ngroups == c->groups_cap) {
		uint32_t cap = c->groups_cap ? c->groups_cap * 2 : 16;
		struct cgroup *p = realloc(c->groups, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->groups = p;
		if (!(pc = realloc(c->gcount, cap * sizeof(*pc))))
			return -ENOMEM;
		c->gcount = pc;
		c->groups_cap = cap;
	}
	c->gcount[c->ngroups] = 0;
	g = &c->groups[c->ngroups];
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->name = a ? a->pg_name : 0;
	g->desc = a ? a->pg_desc : 0;
	g->ranks_text = a ? a->pg_ranks : 0;
	g->size = a && a->group_size > 0 ? (int32_t)a->group_size : -1;
	comm_tag_group(c, g);
	*out = c->ngroups++;
	if (key < c->nstrs)
		c->group_of[key] = c->ngroups;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Iteration windows: the CPU-side marks, else the GPU-side ones (in event
 * order, as for the CPU side), sorted and made disjoint; none → the rank's
 * GPU span as one iteration. */
static int iterations(struct cctx *c, struct crank *cr, struct marks *m, int64_t gmin, int64_t gmax)
{
	uint32_t cap = m->capcpu;

	if (!cr->niters && m->ngpu) {
		qsort(m->gpu, m->ngpu, sizeof(*m->gpu), cmp_u32);
		for (uint32_t i = 0; i < m->ngpu; i++)
			if (add_mark(cr, &cap, tl_at(cr->r, m->gpu[i])))
				return -ENOMEM;
	}
	if (cr->niters) {
		struct ival *tmp = malloc(cr->niters * sizeof(*tmp));

		if (!tmp)
			return -ENOMEM;
		sort_ival_inplace(cr->iters, cr->niters, tmp);
		free(tmp);
		for (uint32_t i = 0; i + 1 < cr->niters; i++)
			if (cr->iters[i].e > cr->iters[i + 1].s)
				cr->iters[i].e = cr->iters[i + 1].s; /* nested/overlapping marks */
		c->iter_marks = true;
		return 0;
	}
	if (gmax > gmin) {
		if (!(cr->iters = malloc(sizeof(*cr->iters))))
			return -ENOMEM;
		cr->iters[cr->niters++] = (struct ival){gmin, gmax};
	}
	return 0;
}

/* Kernels (compute and communication) starting in [lo, hi). */
static uint32_t kernels_in(const struct crank *cr, int64_t lo, int64_t hi)
{
	uint32_t comp = first_ival_at(cr->comp, 0, cr->ncomp, hi) -
			first_ival_at(cr->comp, 0, cr->ncomp, lo);

	return comp + first_cev_at(cr->ev, 0, cr->nev, hi) - first_cev_at(cr->ev, 0, cr->nev, lo);
}

/*
 * The step HTA's filter drops (the last iteration, when it starts at or
 * after the filter's cutoff) is counted when it is complete: it launches
 * at least as many kernels as the fewest of the rank's earlier iterations
 * (a step the profiler's stop cut short lacks some); a lone iteration is
 * complete. Otherwise it is left out, and the result says why. Iterations
 * the importer kept are counted as they are.
 */
static void last_step(struct crank *cr)
{
	const struct tl_rank *r = cr->r;
	const struct ival *last;
	uint32_t k, least = UINT32_MAX;

	if (!cr->tail || cr->niters < 2 || !(r->flags & TL_RANK_STEP_FILTERED))
		return;
	last = &cr->iters[cr->niters - 1];
	if (last->s < r->step_cutoff_ns)
		return;
	for (uint32_t i = 0; i + 1 < cr->niters; i++) {
		uint32_t n = kernels_in(cr, cr->iters[i].s, cr->iters[i].e);

		least = n < least ? n : least;
	}
	k = kernels_in(cr, last->s, last->e);
	if (k >= least)
		return;
	cr->left_out = LO_INCOMPLETE;
	cr->left_start = last->s;
	cr->left_kernels = k;
	cr->left_min = least;
	cr->niters--;
}

/* One comm kernel: type, bytes, group from its args (or its launch op's). */
/* Inlined in both passes (by_stream, tail): it runs per comm kernel. */
static inline __attribute__((always_inline)) int
comm_event(struct cctx *c, struct crank *cr, const struct tl_event *e, const struct tl_args *own,
	   const struct marks *m, int64_t s, int64_t en)
{
	const struct tl_args *a = coll_args(c, cr->r, e, own, m->x, m->nx);
	int t = a ? coll_type_cached(c, a->collective_name) : -1;
	uint8_t type = (uint8_t)(t >= 0 ? t : type_from_kernel(timeline_str(c->tl, e->name, NULL)));
	int32_t n = a && a->group_size > 0 ? (int32_t)a->group_size : -1;
	uint32_t g;
	int err;

	uint8_t tag;

	if ((err = group_for(c, a, &g)))
		return err;
	if (g >= CEV_MAX_GROUPS)
		return cerr(c, -E2BIG, "more than %u process groups", CEV_MAX_GROUPS);
	tag = c->groups[g].ttag[type]; /* decided once per (group, type) */
	if (tag == TTAG_UNSET)
		tag = comm_tag_type(c, &c->groups[g], type);
	/* built in registers, stored once (bit-fields) */
	cr->ev[cr->nev++] =
		(struct cev){.s = s,
			     .e = en,
			     .bytes = a ? bytes_of(type, a, el_size_cached(c, a->dtype)) : -1,
			     .n = n >= 0 ? n : c->groups[g].size,
			     .group = g,
			     .tag = tag,
			     .type = type};
	c->groups[g].events++;
	c->groups[g].tevents[type]++;
	c->gcount[g]++;
	c->tcount[tag]++;
	cr->comm_total_ns += en - s;
	return 0;
}

/* iterations=hta: the comm kernel time of the step left out, for the
 * reconciliation (every comm kernel of the capture is accounted for). */
static void tail_comm_time(struct cctx *c, struct crank *cr)
{
	const struct tl_rank *r = cr->r;

	for (uint32_t k = 0; k < r->ntail; k++) {
		const struct tl_event *e = &r->tail[k];

		if (e->kind == TL_K_KERNEL && sclass(c, e->name) == SC_COMM)
			cr->left_comm_ns += e->dur_ns > 0 ? e->dur_ns : 0;
	}
}

/* The tail's GPU work, as the by_stream pass does it. */
static int tail_gpu(struct cctx *c, struct crank *cr, const struct marks *m, int64_t *gmin,
		    int64_t *gmax)
{
	const struct tl_rank *r = cr->r;
	int err;

	for (uint32_t k = 0; k < r->ntail; k++) {
		const struct tl_event *e = &r->tail[k];
		int64_t s = e->ts_ns, en = e->ts_ns + (e->dur_ns > 0 ? e->dur_ns : 0);

		if (!gpu_work(e))
			continue;
		*gmin = s < *gmin ? s : *gmin;
		*gmax = en > *gmax ? en : *gmax;
		if (e->kind != TL_K_KERNEL)
			cr->mem[cr->nmem++] = (struct ival){s, en};
		else if (sclass(c, e->name) != SC_COMM)
			cr->comp[cr->ncomp++] = (struct ival){s, en};
		else if ((err = comm_event(c, cr, e,
					   e->args == TL_NO_ARGS ? NULL : &r->tail_args[e->args], m,
					   s, en)))
			return err;
	}
	return 0;
}

void cbuf_free(struct cbuf *b)
{
	big_free(b->ev, b->cap * sizeof(*b->ev));
	big_free(b->tmp, b->cap * sizeof(*b->ev));
	big_free(b->comp, b->cap * sizeof(*b->comp));
	big_free(b->mem, b->cap * sizeof(*b->mem));
	b->ev = b->tmp = NULL, b->comp = b->mem = NULL, b->cap = 0;
}

/* Room in the shared buffers for a rank of nev events, nby of them GPU-side. */
static int buf_room(struct cbuf *b, uint32_t nev, uint32_t nby)
{
	size_t words = (size_t)nev / 64 + 1;

	if (nby + 1 > b->cap) {
		size_t cap = (size_t)nby + 1;

		cbuf_free(b);
		b->ev = big_alloc(cap * sizeof(*b->ev));
		b->comp = big_alloc(cap * sizeof(*b->comp));
		b->mem = big_alloc(cap * sizeof(*b->mem));
		b->tmp = big_alloc(cap * sizeof(*b->ev));
		b->cap = cap;
		if (!b->ev || !b->comp || !b->mem || !b->tmp) {
			cbuf_free(b);
			return -ENOMEM;
		}
	}
	if (words > b->gpu_words) {
		free(b->gpu);
		b->gpu_words = (b->gpu = malloc(words * sizeof(*b->gpu))) ? words : 0;
		if (!b->gpu)
			return -ENOMEM;
	}
	memset(b->gpu, 0, words * sizeof(*b->gpu));
	return 0;
}

/* Bit per GPU-side position. A stream's positions rise, mostly within one
 * word at a time: the bits gather in a register (no read-modify-write chain
 * through memory per event). */
static void mark_gpu(uint64_t *gpu, const uint32_t *pos, uint32_t n)
{
	uint32_t w = n ? pos[0] / 64 : 0;
	uint64_t acc = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (pos[i] / 64 != w) {
			gpu[w] |= acc;
			w = pos[i] / 64, acc = 0;
		}
		acc |= 1ull << (pos[i] % 64);
	}
	if (n)
		gpu[w] |= acc;
}

/*
 * One rank: its CPU-side events in order (iteration marks, launch ops'
 * args), then its GPU work in stream order (by_stream); each event is read
 * once. The GPU-side events are known from by_stream's positions alone.
 */
int comm_extract_rank(struct cctx *c, struct crank *cr)
{
	const struct tl_rank *r = cr->r;
	struct marks m = {0};
	int64_t gmin = INT64_MAX, gmax = INT64_MIN;
	int err;

	cr->nev = cr->ncomp = cr->nmem = 0;
	memset(c->tcount, 0, sizeof(c->tcount));
	if (c->ngroups)
		memset(c->gcount, 0, c->ngroups * sizeof(*c->gcount));
	if ((err = buf_room(&c->buf, r->nev, r->nby_stream + (cr->tail ? r->ntail : 0))))
		return err;
	cr->ev = c->buf.ev, cr->comp = c->buf.comp, cr->mem = c->buf.mem;
	mark_gpu(c->buf.gpu, r->by_stream, r->nby_stream);
	if ((err = scan_cpu(c, cr, &m)))
		goto out;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		uint32_t p = r->by_stream[i];
		const struct tl_event *e = &r->ev[p];
		int64_t s = e->ts_ns, en = e->ts_ns + (e->dur_ns > 0 ? e->dur_ns : 0);

		if (i + 24 < r->nby_stream) { /* an event spans two cache lines */
			const char *ahead = (const char *)&r->ev[r->by_stream[i + 24]];

			__builtin_prefetch(ahead);
			__builtin_prefetch(ahead + sizeof(struct tl_event) - 1);
		}
		if (e->dur_ns > 0 && is_iter_mark(c, e)) {
			if (grow(&m.gpu, m.ngpu, &m.capgpu, sizeof(*m.gpu))) {
				err = -ENOMEM;
				goto out;
			}
			m.gpu[m.ngpu++] = p;
		}
		if (e->kind != TL_K_KERNEL && e->kind != TL_K_MEMCPY && e->kind != TL_K_MEMSET)
			continue;
		if (s < gmin)
			gmin = s;
		if (en > gmax)
			gmax = en;
		if (e->kind != TL_K_KERNEL)
			cr->mem[cr->nmem++] = (struct ival){s, en};
		else if (sclass(c, e->name) != SC_COMM)
			cr->comp[cr->ncomp++] = (struct ival){s, en};
		else if ((err = comm_event(c, cr, e, tl_event_args(r, e), &m, s, en)))
			goto out;
	}
	if (cr->tail && (err = tail_gpu(c, cr, &m, &gmin, &gmax)))
		goto out;
	if (cr->left_out == LO_HTA)
		tail_comm_time(c, cr);
	cr->ev = sort_cev(cr->ev, cr->nev, c->buf.tmp);
	if (cr->ev == c->buf.tmp) /* the sorted copy is in the scratch: swap their roles */
		c->buf.tmp = c->buf.ev, c->buf.ev = cr->ev;
	sort_ival_inplace(cr->comp, cr->ncomp, c->buf.tmp);
	sort_ival_inplace(cr->mem, cr->nmem, c->buf.tmp);
	if ((err = iterations(c, cr, &m, gmin, gmax)))
		goto out;
	last_step(cr);
	c->comm_events += cr->nev;
out:
	free(m.x);
	free(m.gpu);
	return err;
}

int comm_select(struct cctx *c)
{
	uint32_t n = timeline_nranks(c->tl);

	c->nstrs = timeline_nstrs(c->tl);
	c->wait_id = timeline_str_find(c->tl, "wait", 4);
	c->sclass = calloc(c->nstrs + 1, 1);
	c->group_of = calloc(c->nstrs + 1, sizeof(*c->group_of));
	c->coll_type = calloc(c->nstrs + 1, 1);
	c->el_size = calloc(c->nstrs + 1, 1);
	c->iter_mark = c->iter_name ? calloc(c->nstrs + 1, 1) : NULL;
	c->ranks = calloc(n + 1, sizeof(*c->ranks));
	if (!c->sclass || !c->group_of || !c->ranks || !c->coll_type || !c->el_size ||
	    (c->iter_name && !c->iter_mark))
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct tl_rank *r = timeline_rank_at(c->tl, i);
		struct crank *cr = &c->ranks[c->nranks];

		if (c->has_rank && r->rank != c->rank)
			continue;
		cr->r = r;
		for (uint32_t d = 0; !c->link_bw && d < r->ndevices && !cr->link_bw; d++)
			cr->link_bw = comm_link_bw_for_device(
				timeline_str(c->tl, r->devices[d].name, NULL));
		if (c->link_bw)
			cr->link_bw = c->link_bw;
		if (r->flags & TL_RANK_STEP_FILTERED) {
			cr->tail = !c->hta_iters && (r->flags & TL_RANK_TAIL_KEPT);
			cr->left_out = c->hta_iters ? LO_HTA : cr->tail ? LO_NONE : LO_OLD_CAPTURE;
			cr->left_start = r->step_cutoff_ns;
		}
		c->nranks++;
	}
	if (c->has_rank && !c->nranks) {
		char list[160];
		size_t k = 0;

		list[0] = '\0';
		for (uint32_t i = 0; i < n && k < sizeof(list) - 16; i++)
			k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%d", i ? ", " : "",
					      timeline_rank_at(c->tl, i)->rank);
		return cerr(c, -EINVAL, "rank %d is not in this capture (ranks: %s)", c->rank,
			    list);
	}
	return 0;
}
