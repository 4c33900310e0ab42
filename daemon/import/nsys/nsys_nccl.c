// SPDX-License-Identifier: MIT
/*
 * NCCL in an nsys export (NCCL's NVTX ranges): a kernel's launch sits in
 * NCCL's NVTX ranges on the launching thread (innermost range; for
 * ncclGroupEnd, every op since the matching ncclGroupStart), whose binary
 * payloads carry the communicator id and the message size; PyTorch's own
 * "nccl:<collective>" range around it gives the collective's real name
 * (ncclDevKernel_SendRecv can be send/recv or all_to_all). The result goes
 * into the kernel's tl_args exactly as Kineto would have written them, with
 * bytes expressed as elements of dtype "Byte", so one code path (daemon/comm)
 * reads both sources.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys_int.h"

static const struct {
	const char *name;
	uint8_t op;
	const char *coll; /* PyTorch's spelling, for tl_args.collective_name */
} ops[] = {
	{"ncclGroupStart", NOP_GROUP_START, NULL},
	{"ncclGroupEnd", NOP_GROUP_END, NULL},
	{"ncclAllReduce", NOP_ALLREDUCE, "allreduce"},
	{"ncclAllGather", NOP_ALLGATHER, "all_gather"},
	{"ncclReduceScatter", NOP_REDUCESCATTER, "reduce_scatter"},
	{"ncclBroadcast", NOP_BROADCAST, "broadcast"},
	{"ncclReduce", NOP_REDUCE, "reduce"},
	{"ncclSend", NOP_SEND, "send"},
	{"ncclRecv", NOP_RECV, "recv"},
	{"ncclAlltoAll", NOP_ALLTOALL, "all_to_all"},
	{"ncclGather", NOP_GATHER, "gather"},
	{"ncclScatter", NOP_SCATTER, "scatter"},
	{"ncclCommInitRank", NOP_COMM_INIT, NULL},
	{"ncclCommInitRankConfig", NOP_COMM_INIT, NULL},
	{"ncclCommInitRankScalable", NOP_COMM_INIT, NULL},
	{"ncclCommSplit", NOP_COMM_INIT, NULL},
};

enum nsys_op nsys_op_from_name(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strlen(ops[i].name) == n && !memcmp(ops[i].name, s, n))
			return ops[i].op;
	return NOP_NONE;
}

static const char *op_coll(uint8_t op)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i].op == op)
			return ops[i].coll;
	return NULL;
}

/* Same rule as HTA's communication kernels plus RCCL/oneCCL/DeepEP names. */
bool nsys_is_comm_kernel(const char *s, size_t n)
{
	return (n >= 4 && !memcmp(s, "nccl", 4)) || memmem(s, n, "ncclKernel", 10) ||
	       memmem(s, n, "ncclDevKernel", 13) || (n >= 4 && !memcmp(s, "rccl", 4));
}

int nsys_read_schemas(struct nsys_imp *m)
{
	static const char *const cols[] = {"domainId", "schemaId", "idx", "type",
					   "name",     "offset",   NULL};
	sqlite3_stmt *s;
	int err, rc;

	err = nsys_select(m, "NVTX_PAYLOAD_SCHEMA_ENTRIES", cols, NULL, &s);
	if (err)
		return err == -ENOENT ? 0 : err;
	while ((rc = nsys_step(m, s)) == 1) {
		int64_t d = sqlite3_column_int64(s, 0), id = sqlite3_column_int64(s, 1);
		int64_t type = sqlite3_column_int64(s, 3);
		/* the first entry's offset is NULL, meaning 0 (the nsys SQLite schema) */
		int64_t off = sqlite3_column_type(s, 5) == SQLITE_NULL ? 0
								       : sqlite3_column_int64(s, 5);
		const char *name = (const char *)sqlite3_column_text(s, 4);
		struct nsys_schema *x = NULL;

		if (off < 0 || off > 4096)
			continue;
		for (uint32_t i = 0; i < m->nsch && !x; i++)
			if (m->sch[i].domain == d && m->sch[i].schema == id)
				x = &m->sch[i];
		if (!x) {
			if (bigalloc_grow((void **)&m->sch, &m->sch_cap, m->nsch + 1,
					  sizeof(*m->sch))) {
				sqlite3_finalize(s);
				return nsys_fail(m, -ENOMEM, "out of memory");
			}
			x = &m->sch[m->nsch++];
			*x = (struct nsys_schema){d, id, -1, -1, -1, -1, -1};
		}
		name = name ? name : "";
		/* by entry type and name, never by schema id: ids move across
		 * NCCL releases (NCCL's NVTX ranges) */
		if (!strcmp(name, "NCCL communicator ID"))
			x->off_hash = (int32_t)off;
		else if (type == 22) /* NVTX_PAYLOAD_ENTRY_TYPE_SIZE */
			x->off_size = (int32_t)off;
		else if (!strcmp(name, "No. of ranks"))
			x->off_nranks = (int32_t)off;
		else if (!strcmp(name, "Rank"))
			x->off_rank = (int32_t)off;
		else if (!strcmp(name, "CUDA device"))
			x->off_dev = (int32_t)off;
	}
	sqlite3_finalize(s);
	return rc < 0 ? rc : 0;
}

static bool rd(const uint8_t *p, size_t len, int32_t off, size_t w, uint64_t *v)
{
	if (off < 0 || (size_t)off + w > len)
		return false;
	*v = 0;
	memcpy(v, p + off, w); /* little-endian x86-64 layout */
	return true;
}

/*
 * binaryData (only with --include-blobs=true): four little-endian u64
 * [domainId][schemaId][payloadSize][payloadOffset] then the payload [re].
 * Without schema rows fall back to NCCL >= 2.25's fixed layouts.
 */
void nsys_decode_payload(struct nsys_imp *m, struct nsys_range *g, const void *blob, int len)
{
	const uint8_t *b = blob;
	uint64_t dom, sid, psize, poff, v;
	const struct nsys_schema *x = NULL;
	struct nsys_schema fb = {0, 0, 0, 8, -1, -1, -1};

	if (!b || len < 32)
		return;
	memcpy(&dom, b, 8);
	memcpy(&sid, b + 8, 8);
	memcpy(&psize, b + 16, 8);
	memcpy(&poff, b + 24, 8);
	if (poff > (uint64_t)len || psize > (uint64_t)len - poff)
		return;
	b += poff;
	for (uint32_t i = 0; i < m->nsch && !x; i++)
		if ((uint64_t)m->sch[i].domain == dom && (uint64_t)m->sch[i].schema == sid)
			x = &m->sch[i];
	if (!x) {
		if (g->op == NOP_COMM_INIT)
			fb = (struct nsys_schema){0, 0, 0, -1, 8, 12, 16};
		x = &fb;
	}
	if (rd(b, psize, x->off_hash, 8, &v))
		g->hash = v, g->has_hash = true;
	if (rd(b, psize, x->off_size, 8, &v) && v <= (uint64_t)INT64_MAX)
		g->bytes = (int64_t)v;
	if (rd(b, psize, x->off_nranks, 4, &v))
		g->nranks = (int32_t)v;
	if (rd(b, psize, x->off_rank, 4, &v))
		g->crank = (int32_t)v;
	if (rd(b, psize, x->off_dev, 4, &v))
		g->cudadev = (int32_t)v;
}

static int cmp_rng(const void *a, const void *b)
{
	const struct nsys_range *x = a, *y = b;

	if (x->gtid != y->gtid)
		return x->gtid < y->gtid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end; /* outer first */
}

/* First range of thread gtid starting after t. */
static uint32_t upper(const struct nsys_imp *m, int64_t gtid, int64_t t)
{
	uint32_t lo = 0, hi = m->nrng;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct nsys_range *g = &m->rng[mid];

		if (g->gtid < gtid || (g->gtid == gtid && g->start <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Communicator size from the CommInit payloads (every member's carries it;
 * the same process's first). */
static int32_t comm_size(const struct nsys_imp *m, uint64_t pid, uint64_t hash)
{
	int32_t any = -1;

	for (uint32_t i = 0; i < m->ninit; i++) {
		const struct nsys_range *g = &m->rng[m->init[i]];

		if (!g->has_hash || g->hash != hash || g->nranks <= 0)
			continue;
		if (NSYS_PID(g->gtid) == pid)
			return g->nranks;
		if (any < 0)
			any = g->nranks;
	}
	return any;
}

/*
 * The communicator's members as timeline ranks, in communicator-rank order
 * ("[3, 1]": communicator rank 0 is timeline rank 3), when every member's
 * CommInit is in this export: the process and CUDA device of each CommInit
 * range give the timeline rank. 0 otherwise (membership incomplete: one
 * export per process, or no payloads). Cached per communicator.
 */
static int64_t comm_members(struct nsys_imp *m, uint64_t hash, int32_t n)
{
	int32_t *at = NULL;
	char *txt = NULL;
	size_t k = 0, cap = (size_t)(n > 0 ? n : 0) * 13 + 4; /* ", " + 10 digits + 1 each */
	int64_t id = 0;

	for (uint32_t i = 0; i < m->nmem; i++)
		if (m->mem[i].hash == hash)
			return m->mem[i].id;
	if (n > 0 && (uint32_t)n <= m->nranks) { /* more members than ranks: incomplete */
		if (!(at = malloc((size_t)n * sizeof(*at))) || !(txt = malloc(cap)))
			goto oom;
		for (int32_t i = 0; i < n; i++)
			at[i] = -1;
		for (uint32_t i = 0; i < m->ninit; i++) {
			const struct nsys_range *g = &m->rng[m->init[i]];
			struct nsys_rank *nr;

			if (!g->has_hash || g->hash != hash || g->crank < 0 || g->crank >= n)
				continue;
			nr = nsys_rank_of(m, g->gtid, g->cudadev);
			if (!nr && g->cudadev >= 0)
				nr = nsys_rank_of(m, g->gtid, -1);
			if (nr)
				at[g->crank] = m->base + (int32_t)(nr - m->ranks);
		}
		for (int32_t i = 0; i < n && at[i] >= 0; i++)
			k += (size_t)snprintf(txt + k, cap - k, "%s%d", i ? ", " : "[", at[i]);
		if (n && at[n - 1] >= 0) {
			k += (size_t)snprintf(txt + k, cap - k, "]");
			if ((id = nsys_intern(m, txt, k)) < 0)
				goto out;
		}
	}
	if (bigalloc_grow((void **)&m->mem, &m->mem_cap, m->nmem + 1, sizeof(*m->mem)))
		goto oom;
	m->mem[m->nmem++] = (struct nsys_members){hash, id};
	goto out;
oom:
	id = nsys_fail(m, -ENOMEM, "out of memory");
out:
	free(at);
	free(txt);
	return id;
}

struct acc {
	int64_t send, recv, other; /* summed bytes per kind, -1 once unknown */
	uint8_t op;		   /* single op kind, NOP_NONE if none, 255 if mixed */
	uint32_t nops, nother;
	bool has_hash;
	uint64_t hash;
};

static void acc_add(struct acc *a, const struct nsys_range *g)
{
	int64_t *slot = g->op == NOP_SEND ? &a->send : g->op == NOP_RECV ? &a->recv : &a->other;

	if (*slot >= 0)
		*slot = g->bytes < 0 ? -1 : *slot + g->bytes;
	a->op = a->op == NOP_NONE || a->op == g->op ? g->op : 255;
	a->nops++;
	a->nother += slot == &a->other;
	if (!a->has_hash && g->has_hash)
		a->has_hash = true, a->hash = g->hash;
}

/* NCCL op ranges behind a launch at t on thread gtid. */
static void collect_ops(const struct nsys_imp *m, int64_t gtid, int64_t t, struct acc *a)
{
	uint32_t u = upper(m, gtid, t), scan = 0;

	for (uint32_t i = u; i-- > 0 && scan < 256; scan++) {
		const struct nsys_range *g = &m->rng[i];
		int depth = 0;

		if (g->gtid != gtid)
			return;
		if (g->op == NOP_TORCH || g->end < t)
			continue;
		if (g->op != NOP_GROUP_END) {
			if (g->op != NOP_GROUP_START && g->op != NOP_COMM_INIT)
				acc_add(a, g);
			return;
		}
		/* every op since the matching ncclGroupStart (nested groups count) */
		for (uint32_t k = i; k-- > 0 && i - k < 4096;) {
			const struct nsys_range *h = &m->rng[k];

			if (h->gtid != gtid)
				return;
			if (h->op == NOP_GROUP_END)
				depth++;
			else if (h->op == NOP_GROUP_START && depth-- == 0)
				return;
			else if (h->op != NOP_TORCH && h->op != NOP_COMM_INIT &&
				 h->op != NOP_GROUP_START)
				acc_add(a, h);
		}
		return;
	}
}

/* PyTorch's "nccl:<coll>" range around t on the thread: the collective. */
static uint32_t torch_name(const struct nsys_imp *m, int64_t gtid, int64_t t)
{
	uint32_t u = upper(m, gtid, t), scan = 0;

	for (uint32_t i = u; i-- > 0 && scan < 4096; scan++) {
		const struct nsys_range *g = &m->rng[i];

		if (g->gtid != gtid)
			return 0;
		if (g->op == NOP_TORCH && g->start <= t && g->end >= t)
			return g->name;
	}
	return 0;
}

/* bytes x n ranks, or -1 (unknown) when n is unknown or the payload's
 * numbers overflow (a hostile or damaged export). */
static int64_t times_n(int64_t bytes, int64_t n)
{
	int64_t r;

	return n > 0 && !__builtin_mul_overflow(bytes, n, &r) ? r : -1;
}

static int enrich_one(struct nsys_imp *m, const struct nsys_comm *c)
{
	struct nsys_rank *nr = &m->ranks[c->rank];
	struct tl_event *e = &nr->r->ev[c->ev];
	struct tl_args *a = e->args == TL_NO_ARGS ? NULL : &nr->r->args[e->args];
	struct acc x = {0, 0, 0, NOP_NONE, 0, 0, false, 0};
	int64_t bytes, name = 0, n = -1, in, out;
	const char *coll = NULL;
	uint32_t tn;

	m->res->nccl_kernels++;
	if (!a || c->gtid < 0) {
		m->res->nccl_no_bytes++, m->res->nccl_no_comm++; /* launch not found */
		return 0;
	}
	collect_ops(m, c->gtid, c->launch, &x);
	tn = torch_name(m, c->gtid, c->launch);
	if (x.op == 255)
		coll = !x.nother ? "sendrecv" : "coalesced";
	else if (x.nops)
		coll = op_coll(x.op);
	if (tn)
		name = tn;
	else if (coll && (name = nsys_intern(m, coll, strlen(coll))) < 0)
		return (int)name;
	if (!name && !x.nops) {
		m->res->nccl_no_bytes++, m->res->nccl_no_comm++; /* no NCCL range around it */
		return 0;
	}
	a->collective_name = (uint32_t)name;
	if (x.has_hash) {
		char h[24];
		int64_t id, mem;

		n = comm_size(m, (uint64_t)c->pid, x.hash);
		snprintf(h, sizeof(h), "0x%016" PRIx64, x.hash);
		if ((id = nsys_intern(m, h, strlen(h))) < 0)
			return (int)id;
		if ((mem = comm_members(m, x.hash, n)) < 0)
			return (int)mem;
		a->pg_name = (uint32_t)id;
		a->pg_ranks = (uint32_t)mem;
	} else {
		m->res->nccl_no_comm++;
	}
	a->group_size = n;
	/* S as nccl-tests counts it (nccl-tests' PERFORMANCE.md): the payload is per rank for
	 * all-gather / reduce-scatter and per peer for ncclAlltoAll */
	bytes = x.send > x.recv ? x.send : x.recv;
	if (x.send < 0 || x.recv < 0 || x.other < 0 || (x.nother && x.nother < x.nops))
		bytes = -1; /* unknown, or p2p mixed with collectives in one kernel */
	else if (x.nother)
		bytes = x.other;
	if (!x.nops || bytes < 0) {
		m->res->nccl_no_bytes++; /* never guessed: comm counts "bytes unknown" */
		return 0;
	}
	in = out = bytes;
	if (x.op == NOP_ALLGATHER)
		out = times_n(bytes, n);
	else if (x.op == NOP_REDUCESCATTER)
		in = times_n(bytes, n);
	else if (x.op == NOP_ALLTOALL || x.op == NOP_GATHER || x.op == NOP_SCATTER)
		in = out = times_n(bytes, n);
	if (in < 0 || out < 0)
		m->res->nccl_no_bytes++;
	a->in_msg_nelems = in;
	a->out_msg_nelems = out;
	a->dtype = m->ids_byte;
	return 0;
}

int nsys_enrich(struct nsys_imp *m)
{
	int64_t b;
	int err;

	if (!m->ncomm)
		return 0;
	if ((b = nsys_intern(m, "Byte", 4)) < 0)
		return (int)b;
	m->ids_byte = (uint32_t)b;
	if (m->nrng)
		qsort(m->rng, m->nrng, sizeof(*m->rng), cmp_rng);
	for (uint32_t i = 0; i < m->nrng; i++) {
		if (m->rng[i].op != NOP_COMM_INIT || !m->rng[i].has_hash)
			continue;
		if (bigalloc_grow((void **)&m->init, &m->init_cap, m->ninit + 1, sizeof(*m->init)))
			return nsys_fail(m, -ENOMEM, "out of memory");
		m->init[m->ninit++] = i;
	}
	for (uint32_t i = 0; i < m->ncomm; i++)
		if ((err = enrich_one(m, &m->comm[i])))
			return err;
	return 0;
}
