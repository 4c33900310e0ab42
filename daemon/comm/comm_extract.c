// SPDX-License-Identifier: MIT
/*
 * From the timeline to communication events: which kernels communicate,
 * their collective type, bytes and process group (from the kernel's args or
 * its launching record_param_comms op), the group's parallelism tag, and
 * each rank's compute/memory intervals and iteration windows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_int.h"

const char *const ctype_name[CT_N] = { "AllReduce", "AllGather", "ReduceScatter", "AllToAll",
				       "SendRecv",  "Send",	 "Recv",	  "Broadcast",
				       "Reduce",    "Gather",	 "Scatter",	  "Barrier",
				       "Unknown" };

enum { SC_UNSEEN = 0, SC_COMM, SC_COMPUTE, SC_OTHER };

/* NCCL/RCCL (nccl*, rccl*, ncclKernel), HCCL, oneCCL and DeepEP kernels. */
static bool comm_name(const char *s)
{
	return !strncmp(s, "nccl", 4) || !strncmp(s, "rccl", 4) || !strncmp(s, "hccl", 4) ||
	       strstr(s, "ncclKernel") || strstr(s, "ncclDevKernel") || strstr(s, "oneccl") ||
	       strstr(s, "deep_ep::") || strstr(s, "deepep");
}

static uint8_t sclass(struct cctx *c, uint32_t name)
{
	const char *s;

	if (name >= c->nstrs)
		return SC_OTHER;
	if (c->sclass[name])
		return c->sclass[name];
	s = timeline_str(c->tl, name, NULL);
	c->sclass[name] = comm_name(s) ? SC_COMM : SC_COMPUTE;
	return c->sclass[name];
}

static const struct {
	const char *name;
	uint8_t type;
} coll_names[] = {
	{ "allreduce", CT_ALLREDUCE },	{ "allreduce_coalesced", CT_ALLREDUCE },
	{ "all_reduce", CT_ALLREDUCE }, { "all_gather", CT_ALLGATHER },
	{ "_allgather_base", CT_ALLGATHER }, { "allgather", CT_ALLGATHER },
	{ "allgather_into_tensor_coalesced", CT_ALLGATHER }, { "allgather_coalesced", CT_ALLGATHER },
	{ "all_gather_into_tensor", CT_ALLGATHER }, { "reduce_scatter", CT_REDUCESCATTER },
	{ "_reduce_scatter_base", CT_REDUCESCATTER },
	{ "reduce_scatter_tensor_coalesced", CT_REDUCESCATTER },
	{ "reduce_scatter_tensor", CT_REDUCESCATTER }, { "all_to_all", CT_ALLTOALL },
	{ "all_to_allv", CT_ALLTOALL }, { "alltoall", CT_ALLTOALL }, { "alltoall_base", CT_ALLTOALL },
	{ "send", CT_SEND }, { "recv", CT_RECV }, { "sendrecv", CT_SENDRECV },
	{ "broadcast", CT_BROADCAST }, { "reduce", CT_REDUCE }, { "gather", CT_GATHER },
	{ "scatter", CT_SCATTER }, { "barrier", CT_BARRIER },
};

static int type_from_coll(const char *s)
{
	for (size_t i = 0; i < sizeof(coll_names) / sizeof(coll_names[0]); i++)
		if (!strcmp(s, coll_names[i].name))
			return coll_names[i].type;
	return -1;
}

/* ^(nccl|rccl)(Dev|SymDev|SymkDev)?Kernel_<Coll>; DeepEP dispatch/combine
 * are all-to-alls. The algo/proto/dtype in the name are not what ran. */
static uint8_t type_from_kernel(const char *s)
{
	static const struct {
		const char *p;
		uint8_t t;
	} k[] = { { "AllReduce", CT_ALLREDUCE },       { "AllGather", CT_ALLGATHER },
		  { "ReduceScatter", CT_REDUCESCATTER }, { "Broadcast", CT_BROADCAST },
		  { "Reduce", CT_REDUCE },	       { "SendRecv", CT_SENDRECV },
		  { "AllToAll", CT_ALLTOALL },	       { "AlltoAll", CT_ALLTOALL } };
	const char *u = strstr(s, "Kernel_");

	if (strstr(s, "deep_ep::") || strstr(s, "deepep"))
		return CT_ALLTOALL;
	if (!u)
		return CT_UNKNOWN;
	u += 7;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		size_t n = strlen(k[i].p);

		if (!strncmp(u, k[i].p, n) && (u[n] == '_' || u[n] == '(' || !u[n] || u[n] == 'V'))
			return k[i].t;
	}
	return CT_UNKNOWN;
}

/* c10 ScalarType names and a few numpy-style spellings (facts §4.2). */
int64_t dtype_size(const char *s)
{
	static const struct {
		const char *n;
		int8_t b;
	} t[] = {
		{ "Byte", 1 },	    { "Char", 1 },	   { "Short", 2 },	    { "Int", 4 },
		{ "Long", 8 },	    { "Half", 2 },	   { "Float", 4 },	    { "Double", 8 },
		{ "ComplexHalf", 4 }, { "ComplexFloat", 8 }, { "ComplexDouble", 16 }, { "Bool", 1 },
		{ "QInt8", 1 },	    { "QUInt8", 1 },	   { "QInt32", 4 },	    { "BFloat16", 2 },
		{ "QUInt4x2", 1 },  { "QUInt2x4", 1 },	   { "Bits1x8", 1 },	    { "Bits2x4", 1 },
		{ "Bits4x2", 1 },   { "Bits8", 1 },	   { "Bits16", 2 },	    { "UInt16", 2 },
		{ "UInt32", 4 },    { "UInt64", 8 },	   { "Float8_e5m2", 1 },    { "Float8_e4m3fn", 1 },
		{ "Float8_e5m2fnuz", 1 }, { "Float8_e4m3fnuz", 1 }, { "Float8_e8m0fnu", 1 },
		{ "Float4_e2m1fn_x2", 1 }, { "float32", 4 }, { "float16", 2 }, { "bfloat16", 2 },
		{ "float64", 8 },   { "int64", 8 },	   { "int32", 4 },	    { "uint8", 1 },
		{ "int8", 1 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].n))
			return t[i].b;
	if ((!strncmp(s, "UInt", 4) || !strncmp(s, "Int", 3)) && strlen(s) <= 5)
		return 1; /* UInt1..7 / Int1..7 placeholders */
	return -1;
}

/* nccl-tests' busBW factor (facts §5); NaN when n is needed but unknown. */
double busbw_factor(uint8_t type, int32_t n)
{
	switch (type) {
	case CT_ALLREDUCE:
		return n > 0 ? 2.0 * (n - 1) / n : NAN;
	case CT_ALLGATHER:
	case CT_REDUCESCATTER:
	case CT_ALLTOALL:
	case CT_GATHER:
	case CT_SCATTER:
		return n > 0 ? (double)(n - 1) / n : NAN;
	case CT_BROADCAST:
	case CT_REDUCE:
	case CT_SENDRECV:
	case CT_SEND:
	case CT_RECV:
		return 1.0;
	default:
		return NAN;
	}
}

/* S per collective (documented in docs/analyses.md): the total buffer. */
static int64_t bytes_of(uint8_t type, const struct tl_args *a, int64_t el)
{
	int64_t in = a->in_msg_nelems, out = a->out_msg_nelems, nel;

	switch (type) {
	case CT_ALLGATHER:
	case CT_RECV:
		nel = out >= 0 ? out : -1;
		break;
	case CT_ALLREDUCE:
	case CT_REDUCESCATTER:
	case CT_BROADCAST:
	case CT_REDUCE:
	case CT_SEND:
	case CT_BARRIER:
		nel = in;
		break;
	default: /* all-to-all(v), send/recv pairs, gather/scatter, unknown */
		nel = in > out ? in : out;
	}
	if (nel < 0 || el <= 0 || nel > INT64_MAX / el)
		return -1;
	return nel * el;
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

static int rpc_args(struct cctx *c, const struct tl_rank *r, struct xarg **out, uint32_t *n)
{
	uint32_t rpc = timeline_str_find(c->tl, "record_param_comms", 18), cap = 0;

	*out = NULL;
	*n = 0;
	if (!rpc)
		return 0;
	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];

		if (e->name != rpc || e->external_id < 0 || e->args == TL_NO_ARGS)
			continue;
		if (*n == cap) {
			struct xarg *p;

			cap = cap ? cap * 2 : 64;
			if (!(p = realloc(*out, cap * sizeof(*p))))
				return -ENOMEM;
			*out = p;
		}
		(*out)[*n].ext = e->external_id;
		(*out)[(*n)++].a = &r->args[e->args];
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_xarg);
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
				       const struct tl_event *e, const struct xarg *x, uint32_t nx)
{
	const struct tl_args *a = tl_event_args(r, e);
	int64_t ext = e->external_id;

	if (has_coll_args(c, a))
		return a;
	if (ext < 0 && e->link >= 0)
		ext = r->ev[e->link].external_id;
	if (ext >= 0 && nx) {
		struct xarg key = { ext, NULL }, *h = bsearch(&key, x, nx, sizeof(*x), cmp_xarg);

		if (h && has_coll_args(c, h->a))
			return h->a;
	}
	return NULL;
}

static int group_for(struct cctx *c, const struct tl_args *a, uint8_t type, uint32_t *out)
{
	uint32_t key = a ? (a->pg_name ? a->pg_name : a->pg_desc ? a->pg_desc : a->pg_ranks) : 0;
	struct cgroup *g;

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
		c->groups_cap = cap;
	}
	g = &c->groups[c->ngroups];
	memset(g, 0, sizeof(*g));
	g->key = key;
	g->name = a ? a->pg_name : 0;
	g->desc = a ? a->pg_desc : 0;
	g->ranks_text = a ? a->pg_ranks : 0;
	g->size = a && a->group_size > 0 ? (int32_t)a->group_size : -1;
	comm_tag_group(c, g, type);
	*out = c->ngroups++;
	if (key < c->nstrs)
		c->group_of[key] = c->ngroups;
	return 0;
}

static int add_ival(struct ival **v, uint32_t *n, uint32_t *cap, int64_t s, int64_t e)
{
	if (*n == *cap) {
		uint32_t nc = *cap ? *cap * 2 : 256;
		struct ival *p = realloc(*v, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[(*n)++] = (struct ival){ s, e };
	return 0;
}

static bool is_iter_mark(const struct cctx *c, const struct tl_event *e, const char *name)
{
	size_t n;

	if (!c->iter_name)
		return e->flags & TL_EV_PROFILER_STEP;
	n = strlen(c->iter_name);
	if (c->iter_prefix)
		return !strncmp(name, c->iter_name, n - 1);
	return !strcmp(name, c->iter_name);
}

/* Iteration windows: the annotations (CPU side first, else GPU side), sorted
 * and made disjoint; none → the rank's GPU span as one iteration. */
static int iterations(struct cctx *c, struct crank *cr, int64_t gmin, int64_t gmax)
{
	const struct tl_rank *r = cr->r;
	uint32_t cap = 0;
	int err;

	for (int pass = 0; pass < 2 && !cr->niters; pass++) {
		for (uint32_t i = 0; i < r->nev; i++) {
			const struct tl_event *e = &r->ev[i];

			bool gpu = (e->flags & TL_EV_GPU_SIDE) || e->kind == TL_K_GPU_USER_ANNOTATION;

			if (gpu != (pass == 1))
				continue;
			if (e->dur_ns <= 0 || !is_iter_mark(c, e, timeline_str(c->tl, e->name, NULL)))
				continue;
			if ((err = add_ival(&cr->iters, &cr->niters, &cap, e->ts_ns, e->ts_ns + e->dur_ns)))
				return err;
		}
	}
	if (cr->niters) {
		struct ival *tmp = malloc(cr->niters * sizeof(*tmp));

		if (!tmp)
			return -ENOMEM;
		sort_ival(cr->iters, cr->niters, tmp);
		free(tmp);
		for (uint32_t i = 0; i + 1 < cr->niters; i++)
			if (cr->iters[i].e > cr->iters[i + 1].s)
				cr->iters[i].e = cr->iters[i + 1].s; /* nested/overlapping marks */
		c->iter_marks = true;
		return 0;
	}
	if (gmax > gmin)
		return add_ival(&cr->iters, &cr->niters, &cap, gmin, gmax);
	return 0;
}

static int one_rank(struct cctx *c, struct crank *cr)
{
	const struct tl_rank *r = cr->r;
	uint32_t cap_ev = 0, cap_comp = 0, cap_mem = 0, nx = 0, it = 0;
	int64_t gmin = INT64_MAX, gmax = INT64_MIN;
	struct xarg *x = NULL;
	void *tmp;
	int err;

	if ((err = rpc_args(c, r, &x, &nx)))
		return err;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		int64_t s = e->ts_ns, en = e->ts_ns + (e->dur_ns > 0 ? e->dur_ns : 0);
		bool comm;

		if (e->kind != TL_K_KERNEL && e->kind != TL_K_MEMCPY && e->kind != TL_K_MEMSET)
			continue;
		if (s < gmin)
			gmin = s;
		if (en > gmax)
			gmax = en;
		comm = e->kind == TL_K_KERNEL && sclass(c, e->name) == SC_COMM;
		if (!comm) {
			err = e->kind == TL_K_KERNEL ? add_ival(&cr->comp, &cr->ncomp, &cap_comp, s, en)
						     : add_ival(&cr->mem, &cr->nmem, &cap_mem, s, en);
			if (err)
				goto out;
			continue;
		}
		const struct tl_args *a = coll_args(c, r, e, x, nx);
		int t = a ? coll_type_cached(c, a->collective_name) : -1;
		struct cev v = { .s = s, .e = en, .stream = e->stream, .iter = -1, .n = -1 };

		v.type = (uint8_t)(t >= 0 ? t : type_from_kernel(timeline_str(c->tl, e->name, NULL)));
		if (a) {
			v.n = a->group_size > 0 ? (int32_t)a->group_size : -1;
			v.bytes = bytes_of(v.type, a, el_size_cached(c, a->dtype));
		} else {
			v.bytes = -1;
		}
		if ((err = group_for(c, a, v.type, &v.group)))
			goto out;
		v.tag = c->groups[v.group].tag;
		if (v.n < 0)
			v.n = c->groups[v.group].size;
		c->groups[v.group].events++;
		cr->comm_total_ns += en - s;
		if (cr->nev == cap_ev) {
			uint32_t nc = cap_ev ? cap_ev * 2 : 256;
			struct cev *p = realloc(cr->ev, nc * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				goto out;
			}
			cr->ev = p;
			cap_ev = nc;
		}
		cr->ev[cr->nev++] = v;
	}
	{
		uint32_t m = cr->nev > cr->ncomp ? cr->nev : cr->ncomp;

		m = m > cr->nmem ? m : cr->nmem;
		tmp = malloc((size_t)m * sizeof(struct cev) + 1);
		if (!tmp) {
			err = -ENOMEM;
			goto out;
		}
		sort_cev(cr->ev, cr->nev, tmp);
		sort_ival(cr->comp, cr->ncomp, tmp);
		sort_ival(cr->mem, cr->nmem, tmp);
		free(tmp);
	}
	if ((err = iterations(c, cr, gmin, gmax)))
		goto out;
	/* an event belongs to the iteration its start falls in */
	for (uint32_t i = 0; i < cr->nev; i++) {
		while (it < cr->niters && cr->iters[it].e <= cr->ev[i].s)
			it++;
		if (it < cr->niters && cr->iters[it].s <= cr->ev[i].s)
			cr->ev[i].iter = (int32_t)it;
	}
	for (uint32_t d = 0; !c->link_bw && d < r->ndevices && !cr->link_bw; d++)
		cr->link_bw = comm_link_bw_for_device(timeline_str(c->tl, r->devices[d].name, NULL));
	if (c->link_bw)
		cr->link_bw = c->link_bw;
out:
	free(x);
	return err;
}

int comm_extract(struct cctx *c)
{
	uint32_t n = timeline_nranks(c->tl);
	uint64_t comm = 0;
	int err;

	c->nstrs = timeline_nstrs(c->tl);
	c->wait_id = timeline_str_find(c->tl, "wait", 4);
	c->sclass = calloc(c->nstrs + 1, 1);
	c->group_of = calloc(c->nstrs + 1, sizeof(*c->group_of));
	c->coll_type = calloc(c->nstrs + 1, 1);
	c->el_size = calloc(c->nstrs + 1, 1);
	c->ranks = calloc(n + 1, sizeof(*c->ranks));
	if (!c->sclass || !c->group_of || !c->ranks || !c->coll_type || !c->el_size)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct tl_rank *r = timeline_rank_at(c->tl, i);

		if (c->has_rank && r->rank != c->rank)
			continue;
		c->ranks[c->nranks].r = r;
		if ((err = one_rank(c, &c->ranks[c->nranks++])))
			return err;
		comm += c->ranks[c->nranks - 1].nev;
	}
	if (c->has_rank && !c->nranks) {
		char list[160];
		size_t k = 0;

		list[0] = '\0';
		for (uint32_t i = 0; i < n && k < sizeof(list) - 16; i++)
			k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%d", i ? ", " : "",
					      timeline_rank_at(c->tl, i)->rank);
		return cerr(c, -EINVAL, "rank %d is not in this capture (ranks: %s)", c->rank, list);
	}
	if (!comm)
		return cerr(c, -ENODATA, "no communication kernels (NCCL/RCCL/oneCCL/DeepEP) in %s",
			    c->has_rank ? "this rank" : "this capture");
	return 0;
}
