// SPDX-License-Identifier: MIT
/*
 * Kineto / Chrome-trace semantics as SAX callbacks: which fields are kept
 * and how (HTA's trace loader). Containers are tracked by role; anything we do
 * not need is tokenized and dropped without being stored.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kineto.h"
#include "kineto_spec.h"
#include "num.h"

struct key_row {
	uint8_t role;
	uint8_t key;
	uint8_t len;
	const char *s;
};

static const struct key_row keys[] = {
	{R_TOP, K_TRACE_EVENTS, sizeof("traceEvents") - 1, "traceEvents"},
	{R_TOP, K_DIST, sizeof("distributedInfo") - 1, "distributedInfo"},
	{R_TOP, K_DEVPROPS, sizeof("deviceProperties") - 1, "deviceProperties"},
	{R_TOP, K_TRACE_NAME, sizeof("traceName") - 1, "traceName"},
	{R_TOP, K_BASE_TIME, sizeof("baseTimeNanoseconds") - 1, "baseTimeNanoseconds"},
	{R_DIST, K_RANK, sizeof("rank") - 1, "rank"},
	{R_EVENT, K_PH, sizeof("ph") - 1, "ph"},
	{R_EVENT, K_CAT, sizeof("cat") - 1, "cat"},
	{R_EVENT, K_NAME, sizeof("name") - 1, "name"},
	{R_EVENT, K_TS, sizeof("ts") - 1, "ts"},
	{R_EVENT, K_DUR, sizeof("dur") - 1, "dur"},
	{R_EVENT, K_PID, sizeof("pid") - 1, "pid"},
	{R_EVENT, K_TID, sizeof("tid") - 1, "tid"},
	{R_EVENT, K_ARGS, sizeof("args") - 1, "args"},
	{R_EVENT, K_ID, sizeof("id") - 1, "id"},
	{R_ARGS, K_STREAM, sizeof("stream") - 1, "stream"},
	{R_ARGS, K_CORR, sizeof("correlation") - 1, "correlation"},
	{R_ARGS, K_EXT_ID, sizeof("External id") - 1, "External id"},
	{R_ARGS, K_DEVICE, sizeof("device") - 1, "device"},
	{R_ARGS, K_CONTEXT, sizeof("context") - 1, "context"},
	{R_ARGS, K_QUEUED, sizeof("queued") - 1, "queued"},
	{R_ARGS, K_BYTES, sizeof("bytes") - 1, "bytes"},
	{R_ARGS, K_WAIT_STREAM, sizeof("wait_on_stream") - 1, "wait_on_stream"},
	{R_ARGS, K_WAIT_CORR, sizeof("wait_on_cuda_event_record_corr_id") - 1,
	 "wait_on_cuda_event_record_corr_id"},
	{R_ARGS, K_WAIT_EVID, sizeof("wait_on_cuda_event_id") - 1, "wait_on_cuda_event_id"},
	{R_ARGS, K_COLL, sizeof("Collective name") - 1, "Collective name"},
	{R_ARGS, K_DTYPE, sizeof("dtype") - 1, "dtype"},
	{R_ARGS, K_IN_NEL, sizeof("In msg nelems") - 1, "In msg nelems"},
	{R_ARGS, K_OUT_NEL, sizeof("Out msg nelems") - 1, "Out msg nelems"},
	{R_ARGS, K_GROUP_SIZE, sizeof("Group size") - 1, "Group size"},
	{R_ARGS, K_PG_NAME, sizeof("Process Group Name") - 1, "Process Group Name"},
	{R_ARGS, K_PG_DESC, sizeof("Process Group Description") - 1, "Process Group Description"},
	{R_ARGS, K_PG_RANKS, sizeof("Process Group Ranks") - 1, "Process Group Ranks"},
	{R_ARGS, K_IN_SPLIT, sizeof("In split size") - 1, "In split size"},
	{R_ARGS, K_OUT_SPLIT, sizeof("Out split size") - 1, "Out split size"},
	{R_ARGS, K_GRID, sizeof("grid") - 1, "grid"},
	{R_ARGS, K_BLOCK, sizeof("block") - 1, "block"},
	{R_ARGS, K_META_NAME, sizeof("name") - 1, "name"},
	{R_ARGS, K_LABELS, sizeof("labels") - 1, "labels"},
	{R_DEV, K_D_ID, sizeof("id") - 1, "id"},
	{R_DEV, K_D_NAME, sizeof("name") - 1, "name"},
	{R_DEV, K_D_MEM, sizeof("totalGlobalMem") - 1, "totalGlobalMem"},
	{R_DEV, K_D_MAJOR, sizeof("computeMajor") - 1, "computeMajor"},
	{R_DEV, K_D_MINOR, sizeof("computeMinor") - 1, "computeMinor"},
	{R_DEV, K_D_SMS, sizeof("numSms") - 1, "numSms"},
	{R_DEV, K_D_WARP, sizeof("warpSize") - 1, "warpSize"},
	{R_DEV, K_D_TPB, sizeof("maxThreadsPerBlock") - 1, "maxThreadsPerBlock"},
	{R_DEV, K_D_TPSM, sizeof("maxThreadsPerMultiprocessor") - 1, "maxThreadsPerMultiprocessor"},
	{R_DEV, K_D_REGS, sizeof("regsPerBlock") - 1, "regsPerBlock"},
	{R_DEV, K_D_SHMEM, sizeof("sharedMemPerBlock") - 1, "sharedMemPerBlock"},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))
#define KH_BITS 7
/*
 * Key lookup: per (role, hash of length, first and last byte), a chain of
 * key rows (1-based), built once. Each row also holds the key's first and
 * last 8 bytes (fewer for short keys) as integers, so a candidate is
 * checked with two compares and no memcmp() for keys of up to 16 bytes; an
 * unknown key (most args keys) usually hits an empty slot. The tables are
 * read-only after the pthread_once, so imports on several threads share
 * them.
 */
static uint8_t key_index[R_DEV + 1][1u << KH_BITS];
static uint8_t key_next[NKEYS];
static uint64_t key_w[NKEYS][2];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
/* roles whose keys are looked up */
static const bool key_role[R_DEV + 1] = {
	[R_TOP] = true, [R_EVENT] = true, [R_ARGS] = true, [R_DIST] = true, [R_DEV] = true,
};

static inline unsigned key_hash(const char *s, size_t n)
{
	return ((unsigned)n * 5 + (uint8_t)s[0] * 3 + (uint8_t)s[n - 1]) & ((1u << KH_BITS) - 1);
}

static void key_index_build(void)
{
	for (size_t i = NKEYS; i-- > 0;) {
		uint8_t *head = &key_index[keys[i].role][key_hash(keys[i].s, keys[i].len)];

		key_words(keys[i].s, keys[i].len, &key_w[i][0], &key_w[i][1]);
		key_next[i] = *head;
		*head = (uint8_t)(i + 1);
	}
}

void kimp_warn(struct kimp *k, enum import_warn w)
{
	k->res->warnings[w]++;
	k->res->warnings_total++;
}

int kimp_oom(struct kimp *k, int err)
{
	snprintf(k->err, sizeof(k->err), "%s",
		 err == -E2BIG ? "too many strings" : "out of memory");
	return err;
}

int kimp_count_raw(struct kimp *k)
{
	/* every index stays below TL_NO_INDEX (UINT32_MAX) */
	if (k->r->raw_events == UINT32_MAX) {
		snprintf(k->err, sizeof(k->err), "more than %u traceEvents elements", UINT32_MAX);
		return -E2BIG;
	}
	k->r->raw_events++;
	return 0;
}

/*
 * Names and categories repeat on almost every event: a small direct-mapped
 * cache (length + first/last 8 bytes → id) in front of the string table
 * skips hashing the whole string and probing. Up to 16 bytes those words
 * are the string; longer ones are checked against the interned copy.
 */
int kimp_intern(struct kimp *k, const struct jv *v, uint32_t *id)
{
	struct kimp_sc *c = NULL;
	uint64_t a, b;
	int64_t r;

	if (v->n && v->n <= UINT32_MAX - 1) {
		key_words(v->s, v->n, &a, &b);
		c = &k->sc[((a ^ (b * 0x9e3779b97f4a7c15ull) ^ v->n) * 0xbf58476d1ce4e5b9ull) >>
			   (64 - KIMP_SC_BITS)];
		if (c->id && c->len == v->n && c->a == a && c->b == b &&
		    (v->n <= 16 ||
		     !memcmp(strtab_get(k->st, c->id, NULL) + 8, v->s + 8, v->n - 16))) {
			*id = c->id;
			return k->spec ? kspec_note(k, c->id) : 0;
		}
	}
	{
		uint32_t n0 = k->st->n;

		r = strtab_intern(k->st, v->s, v->n);
		if (r < 0)
			return kimp_oom(k, (int)r);
		/* a new string: events that are never kept can still bring
		 * strings, which count against the import's memory too */
		if (k->st->n != n0 && k->mem) {
			int err = kimp_mem_grow(k, 0, 0, 0);

			if (err < 0)
				return err;
		}
	}
	*id = (uint32_t)r;
	if (c)
		*c = (struct kimp_sc){.a = a, .b = b, .len = (uint32_t)v->n, .id = (uint32_t)r};
	return k->spec ? kspec_note(k, (uint32_t)r) : 0;
}

/* Numeric value of a JSON number, or of a string holding a decimal
 * integer (pandas' to_numeric). false = not a usable number. */
bool kimp_get_i64(struct kimp *k, const struct jv *v, int64_t *out, bool quiet_str)
{
	if (v->type == JV_NUMBER) {
		/* plain integer of at most 18 digits: the tokenizer's value is
		 * exactly what num_to_i64() would compute */
		if (v->simple && !v->is_float && v->ndig <= 18) {
			*out = v->neg ? -(int64_t)v->mant : (int64_t)v->mant;
			return true;
		}
		if (v->special || num_to_i64(v->s, v->n, out) < 0) {
			kimp_warn(k, IMPORT_W_BAD_NUMBER);
			return false;
		}
		return true;
	}
	if (v->type == JV_STRING) {
		if (num_str_to_i64(v->s, v->n, out) == 0)
			return true;
		if (!quiet_str)
			kimp_warn(k, IMPORT_W_BAD_FIELD);
		return false;
	}
	if (v->type != JV_NULL)
		kimp_warn(k, IMPORT_W_BAD_FIELD);
	return false;
}

int kimp_set_time(struct kimp *k, const struct jv *v, int64_t *ns, double *d, bool *bad)
{
	*bad = true;
	if (v->type != JV_NUMBER) {
		if (v->type != JV_NULL)
			kimp_warn(k, IMPORT_W_BAD_FIELD);
		return 0;
	}
	if (v->special || (v->simple ? num_time_dec(v->neg, v->mant, v->exp10, v->s, v->n, ns, d)
				     : num_time(v->s, v->n, ns, d)) < 0) {
		kimp_warn(k, IMPORT_W_BAD_NUMBER);
		return 0;
	}
	if (!(fabs(*d) < 9.0e15 * 1000)) { /* keeps ceil/floor results in int64 */
		kimp_warn(k, IMPORT_W_BAD_NUMBER);
		return 0;
	}
	*bad = false;
	return 0;
}

static void ev_reset(struct kimp *k)
{
	struct kev *e = &k->e;

	memset(e, 0, sizeof(*e));
	e->index = k->r->raw_events;
	e->pid = e->tid = -1;
	e->stream = e->correlation = e->external_id = e->device = -1;
	e->a.wait_on_stream = e->a.wait_on_event_record_corr = e->a.wait_on_event_id = -1;
	e->a.queued = e->a.bytes = e->a.in_msg_nelems = e->a.out_msg_nelems = -1;
	e->a.group_size = e->a.context = -1;
	for (int i = 0; i < 3; i++)
		e->a.grid[i] = e->a.block[i] = -1;
}

static int on_begin(void *ctx, char type)
{
	struct kimp *k = ctx;
	uint32_t d = k->depth;
	uint8_t parent = d ? k->role[d < 16 ? d : 15] : R_SKIP, pkey = d && d < 16 ? k->key[d] : 0;
	uint8_t role = R_SKIP;

	if (d == 0)
		role = type == '{' ? R_TOP : R_EVENTS; /* a bare array is also a Chrome trace */
	else if (d >= 15)
		role = R_SKIP;
	else if (parent == R_TOP)
		role = (pkey == K_TRACE_EVENTS && type == '[') ? R_EVENTS
		       : (pkey == K_DIST && type == '{')       ? R_DIST
		       : (pkey == K_DEVPROPS && type == '[')   ? R_DEVS
							       : R_SKIP;
	else if (parent == R_EVENTS) {
		if (type == '{') {
			role = R_EVENT;
			ev_reset(k);
		} else {
			kimp_warn(k, IMPORT_W_BAD_FIELD);
		}
		if (kimp_count_raw(k) < 0)
			return -E2BIG;
	} else if (parent == R_EVENT && pkey == K_ARGS && type == '{')
		role = R_ARGS;
	else if (parent == R_ARGS && (pkey == K_GRID || pkey == K_BLOCK) && type == '[') {
		role = R_ARGS_ARR;
		k->arr_elem = 0;
	} else if (parent == R_DEVS && type == '{') {
		role = R_DEV;
		memset(&k->dev, 0, sizeof(k->dev));
		k->dev.id = -1;
	}
	k->depth = d + 1;
	if (k->depth < 16) {
		k->role[k->depth] = role;
		k->key[k->depth] = K_NONE;
	}
	return 0;
}

static int on_key(void *ctx, const char *s, size_t n, bool truncated)
{
	struct kimp *k = ctx;
	uint32_t d = k->depth;
	uint64_t a, b;

	if (truncated)
		kimp_warn(k, IMPORT_W_STR_TRUNC);
	if (d >= 16)
		return 0;
	k->key[d] = K_NONE;
	if (!key_role[k->role[d]] || truncated || n == 0 || n > 40)
		return 0;
	key_words(s, n, &a, &b);
	for (uint8_t i = key_index[k->role[d]][key_hash(s, n)]; i; i = key_next[i - 1]) {
		const struct key_row *kr = &keys[i - 1];

		if (kr->len == n && key_w[i - 1][0] == a && key_w[i - 1][1] == b &&
		    (n <= 16 || !memcmp(kr->s + 8, s + 8, n - 16))) {
			k->key[d] = kr->key;
			break;
		}
	}
	return 0;
}

const struct json_sax kineto_sax = {
	.begin = on_begin,
	.end = kimp_on_end,
	.key = on_key,
	.value = kimp_on_value,
};

int kimp_init(struct kimp *k, struct strtab *st, struct tl_rank *r, struct import_result *res,
	      uint32_t max_events)
{
	pthread_once(&key_once, key_index_build);
	memset(k, 0, sizeof(*k));
	k->st = st;
	k->r = r;
	k->res = res;
	k->max_events = max_events;
	return 0;
}

int kimp_mem_grow(struct kimp *k, uint32_t add_ev, uint32_t add_args, uint32_t add_meta)
{
	const struct tl_rank *r = k->r;
	uint64_t extra;

	if (!k->mem)
		return 0;
	extra = (uint64_t)add_ev * sizeof(*r->ev) + (uint64_t)add_args * sizeof(*r->args) +
		(uint64_t)add_meta * sizeof(*r->meta);
	/* a growth copies the rows in use before the old block is freed */
	if ((uint64_t)r->nev + add_ev > k->cap.ev_cap)
		extra += (uint64_t)r->nev * sizeof(*r->ev);
	if ((uint64_t)r->nargs + add_args > k->cap.args_cap)
		extra += (uint64_t)r->nargs * sizeof(*r->args);
	return tl_mem_charge(k->mem, tl_memcap_now(k->mem, r, k->st, extra), k->err,
			     sizeof(k->err));
}

/* With a memory limit: the room kimp_reserve may populate ahead (address
 * space only until written otherwise) fits in what is left of it. */
static void clamp_room(struct kimp *k, uint64_t *ev, uint64_t *args)
{
	const struct tl_rank *r = k->r;
	uint64_t now, room, left;

	if (!k->mem || !k->mem->o->max_mem)
		return;
	now = tl_memcap_now(k->mem, r, k->st, 0);
	left = k->mem->o->max_mem > now ? k->mem->o->max_mem - now : 0;
	room = (*ev - r->nev) * sizeof(*r->ev) + (*args - r->nargs) * sizeof(*r->args);
	if (room <= left)
		return;
	*ev = r->nev + (uint64_t)((double)(*ev - r->nev) * (double)left / (double)room);
	*args = r->nargs + (uint64_t)((double)(*args - r->nargs) * (double)left / (double)room);
}

int kimp_reserve(struct kimp *k, uint64_t done, uint64_t total, bool populate)
{
	struct tl_rank *r = k->r;
	uint64_t ev, args;

	if (!done || total <= done)
		return 0;
	/* 1/8 over the straight-line estimate, at most the event cap (the
	 * rows past it are never kept) */
	ev = (uint64_t)((double)r->nev * (double)total / (double)done * 1.125) + 1024;
	args = (uint64_t)((double)r->nargs * (double)total / (double)done * 1.125) + 1024;
	if (ev > k->max_events)
		ev = k->max_events;
	if (args > ev)
		args = ev;
	clamp_room(k, &ev, &args);
	/* populated room is memory held: reserve it first, or leave it
	 * address space */
	if (populate && k->mem &&
	    kimp_mem_grow(k, (uint32_t)(ev - r->nev), (uint32_t)(args - r->nargs), 0) < 0) {
		k->err[0] = '\0';
		populate = false;
	}
	if (bigalloc_reserve_pop((void **)&r->ev, &k->cap.ev_cap, &k->cap.ev_pop, r->nev,
				 (uint32_t)ev, sizeof(*r->ev)) < 0 ||
	    bigalloc_reserve_pop((void **)&r->args, &k->cap.args_cap, &k->cap.args_pop, r->nargs,
				 (uint32_t)args, sizeof(*r->args)) < 0)
		return -ENOMEM;
	if (populate)
		bigalloc_popper_start(&k->pop, true, r->ev, k->cap.ev_pop,
				      (size_t)k->cap.ev_cap * sizeof(*r->ev), r->args,
				      k->cap.args_pop, (size_t)k->cap.args_cap * sizeof(*r->args));
	return 0;
}

void kimp_stop_pop(struct kimp *k)
{
	if (!k->pop.running)
		return;
	bigalloc_popper_stop(&k->pop);
	/* the estimate's margin, populated ahead and not used */
	bigalloc_room_release(k->r->ev, (size_t)k->r->nev * sizeof(*k->r->ev),
			      (size_t)k->cap.ev_cap * sizeof(*k->r->ev));
	bigalloc_room_release(k->r->args, (size_t)k->r->nargs * sizeof(*k->r->args),
			      (size_t)k->cap.args_cap * sizeof(*k->r->args));
}

void kimp_finish(struct kimp *k)
{
	kimp_stop_pop(k);
	free(k->cat_kind);
	free(k->name_flags);
	free(k->seen_gen);
	free(k->first);
	k->cat_kind = NULL;
	k->name_flags = NULL;
	k->seen_gen = k->first = NULL;
}
