// SPDX-License-Identifier: MIT
/*
 * Binary encoding of a timeline (the CAPSEC_TIMELINE capture section), and
 * timeline_equal(). Layout (all little-endian, docs/import.md):
 *
 *   "GPTL" u32 version u32 nstrs u32 nranks
 *   nstrs-1 × { u32 len, bytes }            (id 0 is "" and not stored)
 *   nranks × { rank header, events, args, flows, meta, devices,
 *              u32 ntail, u32 ntail_args, tail events, tail args }
 *
 * Version 1 had no tail (the rows HTA's step filter dropped were lost);
 * it still decodes, with an empty tail and TL_RANK_TAIL_KEPT clear.
 *
 * Flows are no longer kept (the count written is 0); the section stays so
 * that captures written before can still be read (decode skips theirs).
 *
 * Indexes are not stored; decode rebuilds them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "wbuf.h"
#include "timeline_int.h"

/* Little-endian stores; the compiler merges the bytes into one store. */
static inline uint8_t *put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 4;
}

static inline uint8_t *put_i64(uint8_t *p, int64_t v)
{
	uint64_t u = (uint64_t)v;

	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(u >> (8 * i));
	return p + 8;
}

static void wb_u32(struct wbuf *w, uint32_t v)
{
	uint8_t *p = wb_room(w, 4);

	if (p) {
		put_u32(p, v);
		wb_advance(w, 4);
	}
}

static void wb_i64(struct wbuf *w, int64_t v)
{
	uint8_t *p = wb_room(w, 8);

	if (p) {
		put_i64(p, v);
		wb_advance(w, 8);
	}
}

/* TL_ENC_EVENT bytes, one reserve: events are most of a big timeline. */
static void enc_event(struct wbuf *w, const struct tl_event *e)
{
	uint8_t *p = wb_room(w, TL_ENC_EVENT);

	if (!p)
		return;
	p = put_i64(p, e->ts_ns);
	p = put_i64(p, e->dur_ns);
	p = put_i64(p, tl_ev_hta_ts_us(e));
	p = put_i64(p, tl_ev_hta_end_us(e));
	p = put_i64(p, e->pid);
	p = put_i64(p, e->tid);
	p = put_i64(p, e->stream);
	p = put_i64(p, e->correlation);
	p = put_i64(p, e->external_id);
	p = put_i64(p, tl_ev_index_corr(e));
	p = put_u32(p, e->index);
	p = put_u32(p, e->name);
	p = put_u32(p, e->cat);
	p = put_u32(p, e->args);
	p = put_u32(p, e->flags);
	p = put_u32(p, (uint32_t)e->device);
	put_u32(p, (uint32_t)e->kind | (uint32_t)e->sync << 8);
	wb_advance(w, TL_ENC_EVENT);
}

static void enc_args(struct wbuf *w, const struct tl_args *a)
{
	const int64_t n[] = {a->wait_on_stream,
			     a->wait_on_event_record_corr,
			     a->wait_on_event_id,
			     a->queued,
			     a->bytes,
			     a->in_msg_nelems,
			     a->out_msg_nelems,
			     a->group_size,
			     a->context};
	const uint32_t s[] = {a->collective_name, a->dtype,    a->pg_name,  a->pg_desc,
			      a->pg_ranks,	  a->in_split, a->out_split};

	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		wb_i64(w, n[i]);
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		wb_u32(w, s[i]);
	for (int i = 0; i < 3; i++)
		wb_u32(w, (uint32_t)a->grid[i]);
	for (int i = 0; i < 3; i++)
		wb_u32(w, (uint32_t)a->block[i]);
}

static void enc_rank(struct wbuf *w, const struct tl_rank *r)
{
	wb_u32(w, (uint32_t)r->rank);
	wb_u32(w, r->flags & ~TL_RANK_FINALIZED);
	wb_u32(w, r->raw_events);
	wb_u32(w, r->parsed_events);
	wb_i64(w, r->min_ts_ns);
	wb_i64(w, r->hta_min_ts_us);
	wb_i64(w, r->step_cutoff_hta_us);
	wb_i64(w, r->step_cutoff_ns);
	wb_u32(w, r->trace_name);
	wb_i64(w, r->base_time_ns);
	wb_u32(w, r->nev);
	wb_u32(w, r->nargs);
	wb_u32(w, 0); /* flows */
	wb_u32(w, r->nmeta);
	wb_u32(w, r->ndevices);
	for (uint32_t i = 0; i < r->nev; i++)
		enc_event(w, &r->ev[i]);
	for (uint32_t i = 0; i < r->nargs; i++)
		enc_args(w, &r->args[i]);
	for (uint32_t i = 0; i < r->nmeta; i++) {
		wb_i64(w, r->meta[i].pid);
		wb_i64(w, r->meta[i].tid);
		wb_u32(w, r->meta[i].kind);
		wb_u32(w, r->meta[i].value);
	}
	for (uint32_t i = 0; i < r->ndevices; i++) {
		const struct tl_device *d = &r->devices[i];

		wb_i64(w, d->total_global_mem);
		wb_u32(w, (uint32_t)d->id);
		wb_u32(w, d->name);
		wb_u32(w, (uint32_t)d->compute_major);
		wb_u32(w, (uint32_t)d->compute_minor);
		wb_u32(w, (uint32_t)d->num_sms);
		wb_u32(w, (uint32_t)d->warp_size);
		wb_u32(w, (uint32_t)d->max_threads_per_block);
		wb_u32(w, (uint32_t)d->max_threads_per_sm);
		wb_u32(w, (uint32_t)d->regs_per_block);
		wb_u32(w, (uint32_t)d->shared_mem_per_block);
	}
	/* version 2: the step filter's tail, events then args */
	wb_u32(w, r->ntail);
	wb_u32(w, r->ntail_args);
	for (uint32_t i = 0; i < r->ntail; i++)
		enc_event(w, &r->tail[i]);
	for (uint32_t i = 0; i < r->ntail_args; i++)
		enc_args(w, &r->tail_args[i]);
}

/* The encoded size, give or take the rank headers (an upper bound): the
 * buffer is allocated once. */
static size_t enc_size(const struct timeline *tl)
{
	size_t n = 16;

	for (uint32_t id = 1; id < tl->st.n; id++)
		n += 4 + (size_t)tl->st.len[id];
	for (uint32_t i = 0; i < tl->nranks; i++) {
		const struct tl_rank *r = tl->ranks[i];

		n += 136 + (size_t)(r->nev + r->ntail) * TL_ENC_EVENT +
		     (size_t)(r->nargs + r->ntail_args) * TL_ENC_ARGS +
		     (size_t)r->nmeta * TL_ENC_META + (size_t)r->ndevices * TL_ENC_DEVICE;
	}
	return n;
}

int tl_encode(const struct timeline *tl, void **buf, size_t *len)
{
	struct wbuf w;
	size_t n;
	void *p;
	int err;

	if ((err = wb_init_mem(&w, enc_size(tl))) < 0)
		return err;
	{ /* written from start to (almost) end */
		size_t done = 0;

		bigalloc_prefault(w.buf, w.cap, &done, w.cap);
	}
	wb_put(&w, TL_ENC_MAGIC, 4);
	wb_u32(&w, TIMELINE_ENC_VERSION);
	wb_u32(&w, tl->st.n);
	wb_u32(&w, tl->nranks);
	for (uint32_t id = 1; id < tl->st.n; id++) {
		wb_u32(&w, tl->st.len[id]);
		wb_put(&w, tl->st.blob + tl->st.off[id], tl->st.len[id]);
	}
	for (uint32_t i = 0; i < tl->nranks; i++)
		enc_rank(&w, tl->ranks[i]);
	err = w.err;
	if (!(p = wb_take(&w, &n)))
		return err;
	*buf = p;
	*len = n;
	return 0;
}

int timeline_encode(const struct timeline *tl, void **buf, size_t *len)
{
	for (uint32_t i = 0; i < tl->nranks; i++)
		if (!(tl->ranks[i]->flags & TL_RANK_FINALIZED))
			return -EINVAL;
	return tl_encode(tl, buf, len);
}

static bool args_eq(const struct tl_args *a, const struct tl_args *b)
{
	return a->wait_on_stream == b->wait_on_stream &&
	       a->wait_on_event_record_corr == b->wait_on_event_record_corr &&
	       a->wait_on_event_id == b->wait_on_event_id && a->queued == b->queued &&
	       a->bytes == b->bytes && a->in_msg_nelems == b->in_msg_nelems &&
	       a->out_msg_nelems == b->out_msg_nelems && a->group_size == b->group_size &&
	       a->context == b->context && a->collective_name == b->collective_name &&
	       a->dtype == b->dtype && a->pg_name == b->pg_name && a->pg_desc == b->pg_desc &&
	       a->pg_ranks == b->pg_ranks && a->in_split == b->in_split &&
	       a->out_split == b->out_split && !memcmp(a->grid, b->grid, sizeof(a->grid)) &&
	       !memcmp(a->block, b->block, sizeof(a->block));
}

static bool rank_eq(const struct tl_rank *a, const struct tl_rank *b)
{
	if (a->rank != b->rank || a->flags != b->flags || a->nev != b->nev ||
	    a->nargs != b->nargs || a->nmeta != b->nmeta || a->ndevices != b->ndevices ||
	    a->raw_events != b->raw_events || a->parsed_events != b->parsed_events ||
	    a->min_ts_ns != b->min_ts_ns || a->hta_min_ts_us != b->hta_min_ts_us ||
	    a->step_cutoff_ns != b->step_cutoff_ns ||
	    a->step_cutoff_hta_us != b->step_cutoff_hta_us || a->trace_name != b->trace_name ||
	    a->base_time_ns != b->base_time_ns || a->nstreams != b->nstreams ||
	    a->nthreads != b->nthreads)
		return false;
	if (a->nev && memcmp(a->ev, b->ev, a->nev * sizeof(*a->ev)))
		return false;
	if (a->ntail != b->ntail || a->ntail_args != b->ntail_args ||
	    (a->ntail && memcmp(a->tail, b->tail, a->ntail * sizeof(*a->tail))))
		return false;
	for (uint32_t i = 0; i < a->ntail_args; i++)
		if (!args_eq(&a->tail_args[i], &b->tail_args[i]))
			return false;
	for (uint32_t i = 0; i < a->nargs; i++)
		if (!args_eq(&a->args[i], &b->args[i]))
			return false;
	for (uint32_t i = 0; i < a->nmeta; i++)
		if (memcmp(&a->meta[i], &b->meta[i], sizeof(a->meta[i])))
			return false;
	for (uint32_t i = 0; i < a->ndevices; i++)
		if (memcmp(&a->devices[i], &b->devices[i], sizeof(a->devices[i])))
			return false;
	return true;
}

bool timeline_equal(const struct timeline *a, const struct timeline *b)
{
	if (a->st.n != b->st.n || a->nranks != b->nranks)
		return false;
	for (uint32_t id = 0; id < a->st.n; id++)
		if (a->st.len[id] != b->st.len[id] ||
		    memcmp(a->st.blob + a->st.off[id], b->st.blob + b->st.off[id], a->st.len[id]))
			return false;
	for (uint32_t i = 0; i < a->nranks; i++)
		if (!rank_eq(a->ranks[i], b->ranks[i]))
			return false;
	return true;
}
