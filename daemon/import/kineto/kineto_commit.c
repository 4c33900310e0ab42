// SPDX-License-Identifier: MIT
/*
 * End of a Kineto event object: decide what it is (kept row, flow,
 * metadata, dropped) and append it to the rank being built.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "kineto.h"

/* Chrome trace event phases; anything else is counted as unknown. */
static const char known_ph[] = "BEXiICbnestfPONDMVvRc";

static int push_row(struct kimp *k)
{
	struct kev *e = &k->e;
	struct tl_rank *r = k->r;
	struct tl_event *ev;
	int64_t hta_ts, hta_end;
	double end_d;
	int err;

	r->parsed_events++;
	if (r->nev >= k->max_events) {
		kimp_warn(k, IMPORT_W_TOO_MANY);
		return 0;
	}
	kimp_pop_guard(k, 1, e->has_args);
	if (k->mem && (err = kimp_mem_grow(k, 1, e->has_args, 0)) < 0)
		return err;
	if ((err = bigalloc_grow_pop((void **)&r->ev, &k->cap.ev_cap, &k->cap.ev_pop, r->nev, 1,
				     sizeof(*r->ev))) < 0 ||
	    (e->has_args &&
	     (err = bigalloc_grow_pop((void **)&r->args, &k->cap.args_cap, &k->cap.args_pop,
				      r->nargs, 1, sizeof(*r->args))) < 0))
		return kimp_oom(k, err);

	/* HTA's rounding with Python floats: ts = ceil(ts), end = floor(ts + dur). */
	end_d = e->ts_d + e->dur_d;
	hta_ts = (int64_t)ceil(e->ts_d);
	hta_end = isfinite(end_d) && fabs(end_d) < 9.2e18 ? (int64_t)floor(end_d) : hta_ts;

	ev = &r->ev[r->nev];
	memset(ev, 0, sizeof(*ev));
	ev->ts_ns = e->ts_ns;
	ev->dur_ns = e->dur_ns;
	if (!tl_ev_set_hta(ev, hta_ts, hta_end)) { /* ts + dur past int64 ns */
		kimp_warn(k, IMPORT_W_BAD_NUMBER);
		return 0;
	}
	r->nev++;
	ev->pid = e->pid;
	ev->tid = e->tid;
	ev->stream = e->stream;
	ev->correlation = e->correlation;
	ev->external_id = e->external_id;
	ev->index_corr = e->correlation == -1 ? TL_NO_INDEX : 0;
	ev->index = e->index;
	ev->name = e->name;
	ev->cat = e->cat;
	ev->link = -1;
	ev->device = e->device >= INT32_MIN && e->device <= INT32_MAX ? (int32_t)e->device : -1;
	ev->kind = kimp_cat_kind(k, e->cat);
	ev->flags = kimp_name_flags(k, e->name) | e->pidtid_flags;
	if (ev->kind == TL_K_SYNC) {
		size_t len;
		const char *s = strtab_get(k->st, e->name, &len);

		ev->sync = tl_sync_from_name(s, len);
	}
	if (e->dur_ns < 0) {
		ev->flags |= TL_EV_DUR_NEG;
		kimp_warn(k, IMPORT_W_NEG_DUR);
	}
	if (e->ph != 'X')
		ev->flags |= TL_EV_NOT_X;
	if (k->rounding && hta_end < hta_ts) /* while the row is in cache */
		ev->flags |= TL_EV_HTA_DUR_NEG;
	if (ev->stream != -1)
		ev->flags |= TL_EV_GPU_SIDE;
	{
		size_t len;
		const char *s = strtab_get(k->st, e->name, &len);
		bool sync_name = (len == 10 && !memcmp(s, "Event Sync", 10)) ||
				 (len == 12 && !memcmp(s, "Context Sync", 12));

		if ((ev->stream >= 0 && ev->correlation >= 0) || sync_name)
			ev->flags |= TL_EV_GPU_KERNEL_FILTER;
	}
	if (e->has_args) {
		ev->args = r->nargs;
		r->args[r->nargs++] = e->a;
	} else {
		ev->args = TL_NO_ARGS;
	}
	if (e->ts_ns < r->min_ts_ns)
		r->min_ts_ns = e->ts_ns;
	if (hta_ts < r->hta_min_ts_us)
		r->hta_min_ts_us = hta_ts;
	return 0;
}

static int push_meta(struct kimp *k)
{
	struct kev *e = &k->e;
	struct tl_rank *r = k->r;
	size_t len;
	const char *s = strtab_get(k->st, e->name, &len);
	uint32_t kind;
	int err;

	if (len == 12 && !memcmp(s, "process_name", 12))
		kind = TL_META_PROCESS_NAME;
	else if (len == 11 && !memcmp(s, "thread_name", 11))
		kind = TL_META_THREAD_NAME;
	else if (len == 14 && !memcmp(s, "process_labels", 14))
		kind = TL_META_PROCESS_LABELS;
	else
		return 0;
	if (!e->meta_value || r->nmeta >= k->max_events)
		return 0;
	if (k->mem &&
	    (err = kimp_mem_grow(k, 0, 0, 1 + (r->nmeta + 1 > k->cap.meta_cap ? r->nmeta : 0))) < 0)
		return err;
	err = bigalloc_grow((void **)&r->meta, &k->cap.meta_cap, r->nmeta + 1, sizeof(*r->meta));
	if (err < 0)
		return kimp_oom(k, err);
	r->meta[r->nmeta].pid = e->pidtid_flags & TL_EV_PID_STR ? -1 : e->pid;
	r->meta[r->nmeta].tid = e->pidtid_flags & TL_EV_TID_STR ? -1 : e->tid;
	r->meta[r->nmeta].kind = kind;
	r->meta[r->nmeta].value = e->meta_value;
	r->nmeta++;
	return 0;
}

static int commit_event(struct kimp *k)
{
	struct kev *e = &k->e;
	bool ts_ok = (e->have & KF_TS) && !e->ts_bad;

	/* HTA's ts column turns float64 (→ rounding) when any element
	 * has a non-integer or missing ts. */
	if ((!(e->have & KF_TS) || e->ts_float) && !k->rounding) {
		k->rounding = true;
		k->rounding_from = k->r->nev; /* earlier rows get TL_EV_HTA_DUR_NEG at the end */
	}
	if ((e->have & KF_PH) && !strchr(known_ph, e->ph))
		kimp_warn(k, IMPORT_W_UNKNOWN_PH);
	if ((e->have & KF_DUR) && (e->have & KF_CAT) && !e->cat_trace) {
		if (!ts_ok) {
			kimp_warn(k, IMPORT_W_MISSING_TS);
			return 0;
		}
		if (e->dur_bad)
			return 0; /* counted as BAD_NUMBER */
		return push_row(k);
	}
	/* Flow events (ac2g launch → kernel, fwdbwd) are counted, not kept: HTA
	 * drops them at load (no dur) and no analysis reads them; the
	 * correlation ids link launches and kernels. */
	if ((e->ph == 's' || e->ph == 't' || e->ph == 'f') && ts_ok && (e->have & KF_ID)) {
		k->res->flows++;
		return 0;
	}
	if (e->ph == 'M')
		return push_meta(k);
	return 0;
}

int kimp_on_end(void *ctx, char type)
{
	struct kimp *k = ctx;
	uint8_t role = k->depth < 16 ? k->role[k->depth] : R_SKIP;
	struct tl_rank *r = k->r;
	int err = 0;

	(void)type;
	if (role == R_EVENTS && k->spec)
		return -ECANCELED; /* a piece's parse ends inside the events */
	if (role == R_EVENT) {
		err = commit_event(k);
	} else if (role == R_DEV && r->ndevices < 1024) {
		err = bigalloc_grow((void **)&r->devices, &k->cap.dev_cap, r->ndevices + 1,
				    sizeof(*r->devices));
		if (err < 0)
			err = kimp_oom(k, err);
		else
			r->devices[r->ndevices++] = k->dev;
	}
	k->depth--;
	return err;
}
