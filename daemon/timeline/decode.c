// SPDX-License-Identifier: MIT
/*
 * Decoding of untrusted timeline bytes (capture files are fuzzed): every
 * count is bounded by the bytes that remain before anything is allocated,
 * every string id / args index / enum is range-checked, ranks must be
 * unique. On any failure nothing leaks and *ret is untouched.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "timeline_int.h"

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static uint32_t rb_u32(struct rbuf *r)
{
	uint32_t v = 0;

	if (r->len - r->off < 4) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)r->p[r->off + i] << (8 * i);
	r->off += 4;
	return v;
}

static int64_t rb_i64(struct rbuf *r)
{
	uint64_t v = 0;

	if (r->len - r->off < 8) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += 8;
	return (int64_t)v;
}

static bool fits(const struct rbuf *r, uint64_t n, uint64_t each)
{
	return n <= (r->len - r->off) / each;
}

#define EV_FLAGS_KNOWN ((1u << 20) - 1)

/* One event; false when it is out of range (nstrs strings, nargs args). */
static bool dec_event(struct rbuf *b, struct tl_event *e, uint32_t nstrs, uint32_t nargs)
{
	uint32_t ks;
	int64_t hts, hend, ic;

	e->ts_ns = rb_i64(b);
	e->dur_ns = rb_i64(b);
	hts = rb_i64(b);
	hend = rb_i64(b);
	e->pid = rb_i64(b);
	e->tid = rb_i64(b);
	e->stream = rb_i64(b);
	e->correlation = rb_i64(b);
	e->external_id = rb_i64(b);
	ic = rb_i64(b);
	e->index = rb_u32(b);
	e->name = rb_u32(b);
	e->cat = rb_u32(b);
	e->args = rb_u32(b);
	e->flags = rb_u32(b);
	e->device = (int32_t)rb_u32(b);
	ks = rb_u32(b);
	e->kind = (uint8_t)ks;
	e->sync = (uint8_t)(ks >> 8);
	e->link = -1;
	return tl_ev_set_hta(e, hts, hend) && tl_ev_set_index_corr(e, ic) && e->name < nstrs &&
	       e->cat < nstrs && (e->args == TL_NO_ARGS || e->args < nargs) &&
	       !(e->flags & ~EV_FLAGS_KNOWN) && e->kind < TL_K_COUNT &&
	       e->sync <= TL_SYNC_STREAM_WAIT && !(ks >> 16) &&
	       (!(e->flags & TL_EV_PID_STR) || (uint64_t)e->pid < nstrs) &&
	       (!(e->flags & TL_EV_TID_STR) || (uint64_t)e->tid < nstrs);
}

/* One args record; false when a string id is out of range. */
static bool dec_args(struct rbuf *b, struct tl_args *a, uint32_t nstrs)
{
	int64_t *n[] = {&a->wait_on_stream,
			&a->wait_on_event_record_corr,
			&a->wait_on_event_id,
			&a->queued,
			&a->bytes,
			&a->in_msg_nelems,
			&a->out_msg_nelems,
			&a->group_size,
			&a->context};
	uint32_t *s[] = {&a->collective_name, &a->dtype,    &a->pg_name,  &a->pg_desc,
			 &a->pg_ranks,	      &a->in_split, &a->out_split};

	for (size_t j = 0; j < sizeof(n) / sizeof(n[0]); j++)
		*n[j] = rb_i64(b);
	for (size_t j = 0; j < sizeof(s) / sizeof(s[0]); j++) {
		*s[j] = rb_u32(b);
		if (*s[j] >= nstrs)
			return false;
	}
	for (int j = 0; j < 3; j++)
		a->grid[j] = (int32_t)rb_u32(b);
	for (int j = 0; j < 3; j++)
		a->block[j] = (int32_t)rb_u32(b);
	return true;
}

/* Version 2: the rows the step filter dropped (tail events, then args). */
static int dec_tail(struct rbuf *b, uint32_t nstrs, struct tl_rank *r, const char **why)
{
	uint32_t nt = rb_u32(b), na = rb_u32(b);

	*why = "count larger than the data";
	if (b->bad || !fits(b, nt, TL_ENC_EVENT) || !fits(b, na, TL_ENC_ARGS) ||
	    (nt && !(r->flags & TL_RANK_STEP_FILTERED)))
		return -EBADMSG;
	/* zeroed: timeline_equal() compares events bytewise, padding included */
	r->tail = calloc(nt ? nt : 1, sizeof(*r->tail));
	r->tail_args = calloc(na ? na : 1, sizeof(*r->tail_args));
	if (!r->tail || !r->tail_args)
		return -ENOMEM;
	*why = "bad tail event";
	for (uint32_t i = 0; i < nt; i++)
		if (!dec_event(b, &r->tail[i], nstrs, na))
			return -EBADMSG;
	r->ntail = nt;
	*why = "string id out of range";
	for (uint32_t i = 0; i < na; i++)
		if (!dec_args(b, &r->tail_args[i], nstrs))
			return -EBADMSG;
	r->ntail_args = na;
	return 0;
}

static int dec_rank(struct rbuf *b, uint32_t version, uint32_t nstrs, struct tl_rank **ret,
		    const char **why)
{
	struct tl_rank *r = tl_rank_alloc(0);
	uint32_t nev, nargs, nflows, nmeta, ndev;
	int err;

	if (!r)
		return -ENOMEM;
	r->rank = (int32_t)rb_u32(b);
	r->flags = rb_u32(b) & (TL_RANK_HTA_ROUNDING | TL_RANK_STEP_FILTERED |
				TL_RANK_FROM_DIST_INFO | (version >= 2 ? TL_RANK_TAIL_KEPT : 0));
	r->raw_events = rb_u32(b);
	r->parsed_events = rb_u32(b);
	r->min_ts_ns = rb_i64(b);
	r->hta_min_ts_us = rb_i64(b);
	r->step_cutoff_hta_us = rb_i64(b);
	r->step_cutoff_ns = rb_i64(b);
	r->trace_name = rb_u32(b);
	r->base_time_ns = rb_i64(b);
	nev = rb_u32(b);
	nargs = rb_u32(b);
	nflows = rb_u32(b);
	nmeta = rb_u32(b);
	ndev = rb_u32(b);
	*why = "truncated rank header";
	if (b->bad)
		goto bad;
	*why = "count larger than the data";
	if (!fits(b, nev, TL_ENC_EVENT) || !fits(b, nargs, TL_ENC_ARGS) ||
	    !fits(b, nflows, TL_ENC_FLOW) || !fits(b, nmeta, TL_ENC_META) ||
	    !fits(b, ndev, TL_ENC_DEVICE) || nev >= INT32_MAX || r->rank < 0)
		goto bad;
	*why = "string id out of range";
	if (r->trace_name >= nstrs)
		goto bad;
	r->ev = bigalloc_calloc(nev, sizeof(*r->ev));
	r->args = calloc(nargs ? nargs : 1, sizeof(*r->args));
	r->meta = calloc(nmeta ? nmeta : 1, sizeof(*r->meta));
	r->devices = calloc(ndev ? ndev : 1, sizeof(*r->devices));
	if (!r->ev || !r->args || !r->meta || !r->devices) {
		tl_rank_free(r);
		return -ENOMEM;
	}
	*why = "bad event";
	for (uint32_t i = 0; i < nev; i++)
		if (!dec_event(b, &r->ev[i], nstrs, nargs))
			goto bad;
	r->nev = nev;
	*why = "string id out of range";
	for (uint32_t i = 0; i < nargs; i++)
		if (!dec_args(b, &r->args[i], nstrs))
			goto bad;
	r->nargs = nargs;
	/* flows, written by earlier versions: checked, not kept */
	for (uint32_t i = 0; i < nflows; i++) {
		uint32_t cat, pb;

		*why = "bad flow";
		if (b->len - b->off < TL_ENC_FLOW)
			goto bad;
		b->off += TL_ENC_FLOW - 8; /* id, ts_ns, pid, tid, index */
		cat = rb_u32(b);
		pb = rb_u32(b);
		if (cat >= nstrs || (pb >> 16) || (pb >> 8) > 1)
			goto bad;
	}
	for (uint32_t i = 0; i < nmeta; i++) {
		r->meta[i].pid = rb_i64(b);
		r->meta[i].tid = rb_i64(b);
		r->meta[i].kind = rb_u32(b);
		r->meta[i].value = rb_u32(b);
		*why = "bad metadata";
		if (r->meta[i].value >= nstrs || r->meta[i].kind < TL_META_PROCESS_NAME ||
		    r->meta[i].kind > TL_META_PROCESS_LABELS)
			goto bad;
	}
	r->nmeta = nmeta;
	for (uint32_t i = 0; i < ndev; i++) {
		struct tl_device *d = &r->devices[i];

		d->total_global_mem = rb_i64(b);
		d->id = (int32_t)rb_u32(b);
		d->name = rb_u32(b);
		d->compute_major = (int32_t)rb_u32(b);
		d->compute_minor = (int32_t)rb_u32(b);
		d->num_sms = (int32_t)rb_u32(b);
		d->warp_size = (int32_t)rb_u32(b);
		d->max_threads_per_block = (int32_t)rb_u32(b);
		d->max_threads_per_sm = (int32_t)rb_u32(b);
		d->regs_per_block = (int32_t)rb_u32(b);
		d->shared_mem_per_block = (int32_t)rb_u32(b);
		*why = "string id out of range";
		if (d->name >= nstrs)
			goto bad;
	}
	r->ndevices = ndev;
	if (version >= 2 && (err = dec_tail(b, nstrs, r, why)) < 0) {
		tl_rank_free(r);
		return err;
	}
	*why = "truncated rank";
	if (b->bad)
		goto bad;
	*ret = r;
	return 0;
bad:
	tl_rank_free(r);
	return -EBADMSG;
}

int timeline_decode(const void *buf, size_t len, struct timeline **ret, char *why, size_t whylen)
{
	struct rbuf b = {.p = buf, .len = len};
	struct timeline *tl = NULL;
	const char *reason = "truncated header";
	uint32_t version, nstrs, nranks;
	int err = -EBADMSG;

	if (len < 16 || memcmp(buf, TL_ENC_MAGIC, 4)) {
		reason = "not a timeline (bad magic)";
		goto fail;
	}
	b.off = 4;
	version = rb_u32(&b);
	if (version != TIMELINE_ENC_VERSION && version != 1) {
		reason = "unsupported timeline version";
		err = -ENOTSUP;
		goto fail;
	}
	nstrs = rb_u32(&b);
	nranks = rb_u32(&b);
	reason = "count larger than the data";
	if (!nstrs || !fits(&b, nstrs - 1, 4) || !fits(&b, nranks, 80))
		goto fail;
	if ((err = timeline_new(&tl)) < 0)
		goto fail;
	err = -EBADMSG;
	for (uint32_t id = 1; id < nstrs; id++) {
		uint32_t n = rb_u32(&b);
		int64_t got;

		reason = "truncated string table";
		if (b.bad || n == 0 || n > b.len - b.off)
			goto fail;
		got = strtab_intern(&tl->st, (const char *)b.p + b.off, n);
		if (got < 0) {
			err = (int)got;
			reason = "out of memory";
			goto fail;
		}
		reason = "duplicate string in table";
		if ((uint32_t)got != id)
			goto fail;
		b.off += n;
	}
	for (uint32_t i = 0; i < nranks; i++) {
		struct tl_rank *r;

		err = dec_rank(&b, version, nstrs, &r, &reason);
		if (err < 0)
			goto fail;
		if ((err = tl_insert_rank(tl, r)) < 0) {
			tl_rank_free(r);
			reason = err == -EEXIST ? "duplicate rank" : "out of memory";
			err = err == -EEXIST ? -EBADMSG : err;
			goto fail;
		}
		if ((err = tl_rank_index(r)) < 0) {
			reason = "out of memory";
			goto fail;
		}
	}
	reason = "trailing bytes";
	if (b.off != b.len) {
		err = -EBADMSG;
		goto fail;
	}
	*ret = tl;
	return 0;
fail:
	if (why && whylen)
		snprintf(why, whylen, "%s (at byte %zu)", reason, b.off);
	timeline_free(tl);
	return err;
}
