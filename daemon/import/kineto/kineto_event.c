// SPDX-License-Identifier: MIT
/*
 * Kineto values and event commit: what HTA keeps (rows with a
 * dur and a cat, cat != "Trace"), how times become integers (HTA's rounding), the
 * typed args, flows and metadata names.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "kineto.h"
#include "num.h"

uint8_t kimp_cat_kind(struct kimp *k, uint32_t cat)
{
	if (cat >= k->ncat_kind) {
		uint32_t n = k->ncat_kind ? k->ncat_kind : 64;
		uint8_t *p;

		while (n <= cat)
			n *= 2;
		p = realloc(k->cat_kind, n);
		if (!p)
			return TL_K_OTHER; /* cache only; recomputed next time */
		memset(p + k->ncat_kind, 0, n - k->ncat_kind);
		k->cat_kind = p;
		k->ncat_kind = n;
	}
	if (!k->cat_kind[cat]) {
		size_t len;
		const char *s = strtab_get(k->st, cat, &len);

		k->cat_kind[cat] = tl_kind_from_cat(s, len) + 1;
	}
	return k->cat_kind[cat] - 1;
}

uint32_t kimp_name_flags(struct kimp *k, uint32_t name)
{
	size_t len;
	const char *s;

	if (name >= k->nname_flags) {
		uint32_t n = k->nname_flags ? k->nname_flags : 1024;
		uint32_t *p;

		while (n <= name)
			n *= 2;
		p = realloc(k->name_flags, n * sizeof(*p));
		if (!p) {
			s = strtab_get(k->st, name, &len);
			return tl_flags_from_name(s, len);
		}
		memset(p + k->nname_flags, 0, (n - k->nname_flags) * sizeof(*p));
		k->name_flags = p;
		k->nname_flags = n;
	}
	if (!(k->name_flags[name] & NAME_DONE)) {
		s = strtab_get(k->st, name, &len);
		k->name_flags[name] = tl_flags_from_name(s, len) | NAME_DONE;
	}
	return k->name_flags[name] & ~NAME_DONE;
}

static int set_str(struct kimp *k, const struct jv *v, uint32_t *id)
{
	if (v->type != JV_STRING) {
		if (v->type != JV_NULL)
			kimp_warn(k, IMPORT_W_BAD_FIELD);
		return 0;
	}
	k->e.has_args = true;
	return kimp_intern(k, v, id);
}

static void set_num(struct kimp *k, const struct jv *v, int64_t *out, bool typed)
{
	if (kimp_get_i64(k, v, out, false) && typed)
		k->e.has_args = true;
}

static int event_value(struct kimp *k, uint8_t key, const struct jv *v)
{
	struct kev *e = &k->e;
	uint32_t id;
	int err;

	switch (key) {
	case K_PH:
		if (v->type == JV_STRING && v->n >= 1) {
			e->ph = v->n == 1 ? v->s[0] : '?';
			e->have |= KF_PH;
		}
		return 0;
	case K_CAT:
		if (v->type == JV_NULL)
			return 0;
		if (v->type != JV_STRING) {
			/* pandas would keep a non-string cat; we keep its text */
			kimp_warn(k, IMPORT_W_BAD_FIELD);
		}
		e->have |= KF_CAT;
		e->cat_trace = v->n == 5 && !memcmp(v->s, "Trace", 5);
		return kimp_intern(k, v, &e->cat);
	case K_NAME:
		e->have |= KF_NAME;
		return v->type == JV_NULL ? 0 : kimp_intern(k, v, &e->name);
	case K_TS:
		e->have |= KF_TS;
		e->ts_float = v->type != JV_NUMBER || v->is_float;
		return kimp_set_time(k, v, &e->ts_ns, &e->ts_d, &e->ts_bad);
	case K_DUR:
		if (v->type == JV_NULL)
			return 0; /* NaN in pandas: row dropped */
		e->have |= KF_DUR;
		return kimp_set_time(k, v, &e->dur_ns, &e->dur_d, &e->dur_bad);
	case K_PID:
	case K_TID: {
		int64_t *dst = key == K_PID ? &e->pid : &e->tid;
		uint32_t flag = key == K_PID ? TL_EV_PID_STR : TL_EV_TID_STR;

		if (v->type == JV_STRING) {
			if ((err = kimp_intern(k, v, &id)) < 0)
				return err;
			*dst = id;
			e->pidtid_flags |= flag;
		} else if (kimp_get_i64(k, v, dst, false)) {
			/* A repeated key wins with its number: a string flag left
			 * from an earlier "pid": "x" would make this number a
			 * string id, out of range once encoded. */
			e->pidtid_flags &= ~flag;
		}
		return 0;
	}
	case K_ID: { /* a flow's id: counted (kineto_commit.c), not kept */
		int64_t flow_id;

		if (kimp_get_i64(k, v, &flow_id, true) || v->type == JV_STRING)
			e->have |= KF_ID;
		return 0;
	}
	}
	return 0;
}

static int args_value(struct kimp *k, uint8_t key, const struct jv *v)
{
	struct kev *e = &k->e;
	struct tl_args *a = &e->a;

	switch (key) {
	case K_STREAM:
		/* pandas to_numeric: "0x0" (ROCm) is not a number → -1 */
		if (v->type == JV_STRING && num_str_to_i64(v->s, v->n, &e->stream) < 0)
			e->stream = -1;
		else if (v->type != JV_STRING && !kimp_get_i64(k, v, &e->stream, true))
			e->stream = -1;
		return 0;
	case K_CORR:
		set_num(k, v, &e->correlation, false);
		return 0;
	case K_EXT_ID:
		set_num(k, v, &e->external_id, false);
		return 0;
	case K_DEVICE:
		set_num(k, v, &e->device, false);
		return 0;
	case K_CONTEXT:
		set_num(k, v, &a->context, false);
		return 0;
	case K_QUEUED:
		set_num(k, v, &a->queued, true);
		return 0;
	case K_BYTES:
		set_num(k, v, &a->bytes, true);
		return 0;
	case K_WAIT_STREAM:
		set_num(k, v, &a->wait_on_stream, true);
		return 0;
	case K_WAIT_CORR:
		set_num(k, v, &a->wait_on_event_record_corr, true);
		return 0;
	case K_WAIT_EVID:
		set_num(k, v, &a->wait_on_event_id, true);
		return 0;
	case K_IN_NEL:
		set_num(k, v, &a->in_msg_nelems, true);
		return 0;
	case K_OUT_NEL:
		set_num(k, v, &a->out_msg_nelems, true);
		return 0;
	case K_GROUP_SIZE:
		set_num(k, v, &a->group_size, true);
		return 0;
	case K_COLL:
		return set_str(k, v, &a->collective_name);
	case K_DTYPE:
		return set_str(k, v, &a->dtype);
	case K_PG_NAME:
		return set_str(k, v, &a->pg_name);
	case K_PG_DESC:
		return set_str(k, v, &a->pg_desc);
	case K_PG_RANKS:
		return set_str(k, v, &a->pg_ranks);
	case K_IN_SPLIT:
		return set_str(k, v, &a->in_split);
	case K_OUT_SPLIT:
		return set_str(k, v, &a->out_split);
	case K_META_NAME:
	case K_LABELS:
		if (v->type == JV_STRING)
			return kimp_intern(k, v, &e->meta_value);
		return 0;
	}
	return 0;
}

static void dev_value(struct kimp *k, uint8_t key, const struct jv *v)
{
	struct tl_device *d = &k->dev;
	int64_t x;

	if (key == K_D_NAME) {
		if (v->type == JV_STRING)
			kimp_intern(k, v, &d->name);
		return;
	}
	if (!kimp_get_i64(k, v, &x, false))
		return;
	if (key == K_D_MEM) {
		d->total_global_mem = x;
		return;
	}
	if (x < INT32_MIN || x > INT32_MAX) {
		kimp_warn(k, IMPORT_W_BAD_NUMBER);
		return;
	}
	switch (key) {
	case K_D_ID:
		d->id = (int32_t)x;
		break;
	case K_D_MAJOR:
		d->compute_major = (int32_t)x;
		break;
	case K_D_MINOR:
		d->compute_minor = (int32_t)x;
		break;
	case K_D_SMS:
		d->num_sms = (int32_t)x;
		break;
	case K_D_WARP:
		d->warp_size = (int32_t)x;
		break;
	case K_D_TPB:
		d->max_threads_per_block = (int32_t)x;
		break;
	case K_D_TPSM:
		d->max_threads_per_sm = (int32_t)x;
		break;
	case K_D_REGS:
		d->regs_per_block = (int32_t)x;
		break;
	case K_D_SHMEM:
		d->shared_mem_per_block = (int32_t)x;
		break;
	}
}

int kimp_on_value(void *ctx, const struct jv *v)
{
	struct kimp *k = ctx;
	uint8_t role, key;
	int64_t x;

	if (v->type == JV_STRING) {
		if (v->truncated)
			kimp_warn(k, IMPORT_W_STR_TRUNC);
		if (v->bad_utf8)
			kimp_warn(k, IMPORT_W_BAD_UTF8);
	}
	if (k->depth >= 16)
		return 0;
	/* A key is only ever set from its own role's table: the key alone
	 * picks the handler of the two hot roles (one branch, not two
	 * indirect jumps). K_NONE in R_EVENT / R_ARGS: nothing to do. */
	key = k->key[k->depth];
	if (key >= K_PH && key <= K_ID)
		return event_value(k, key, v);
	if (key >= K_STREAM && key <= K_LABELS)
		return args_value(k, key, v);
	role = k->role[k->depth];
	switch (role) {
	case R_EVENTS:
		kimp_warn(k, IMPORT_W_BAD_FIELD);
		return kimp_count_raw(k);
	case R_ARGS_ARR: {
		int32_t *dst = k->key[k->depth - 1] == K_GRID ? k->e.a.grid : k->e.a.block;

		if (k->arr_elem < 3 && kimp_get_i64(k, v, &x, false) && x >= INT32_MIN &&
		    x <= INT32_MAX) {
			dst[k->arr_elem] = (int32_t)x;
			k->e.has_args = true;
		}
		k->arr_elem++;
		return 0;
	}
	case R_DIST:
		if (key == K_RANK && kimp_get_i64(k, v, &x, false) && x >= 0 && x <= INT32_MAX) {
			k->have_rank = true;
			k->rank = x;
		}
		return 0;
	case R_DEV:
		dev_value(k, key, v);
		return 0;
	case R_TOP:
		if (key == K_TRACE_NAME && v->type == JV_STRING)
			return kimp_intern(k, v, &k->r->trace_name);
		if (key == K_BASE_TIME)
			kimp_get_i64(k, v, &k->r->base_time_ns, false);
		return 0;
	}
	return 0;
}
