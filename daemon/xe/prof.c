// SPDX-License-Identifier: MIT
/*
 * Aggregation: per (interval, kernel, offset) one row of ten reason
 * counters in an open-addressing table of fixed capacity. At the fastest
 * rate the hardware hands over tens of millions of records a second, but
 * they land on few distinct offsets, so memory follows the code touched,
 * not the sample rate. When the table passes its load limit, the oldest
 * intervals are dropped (counted), like the store's ring.
 */
#include "section.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int xe_rows_init(struct xe *x)
{
	uint32_t cap = 1024;

	/* Capacity twice the row limit keeps probes short at the limit. */
	while (cap < x->cfg.max_rows * 2u && cap < (1u << 30))
		cap <<= 1;
	x->rows = calloc(cap, sizeof(*x->rows));
	if (!x->rows)
		return -ENOMEM;
	x->hot = calloc(1u << XE_HOT_BITS, sizeof(*x->hot));
	if (!x->hot) {
		free(x->rows);
		x->rows = NULL;
		return -ENOMEM;
	}
	x->rcap = cap;
	x->min_iv = UINT32_MAX;
	return 0;
}

static inline uint32_t row_hash(uint32_t iv, uint32_t kid, uint32_t off)
{
	uint64_t h = ((uint64_t)iv << 40) ^ ((uint64_t)kid << 20) ^ off;

	h *= 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h >> 32);
}

static struct xe_row *slot_for(struct xe_row *rows, uint32_t cap, uint32_t iv, uint32_t kid,
			       uint32_t off)
{
	uint32_t i = row_hash(iv, kid, off) & (cap - 1);

	for (;; i = (i + 1) & (cap - 1)) {
		struct xe_row *r = &rows[i];

		if (!r->used || (r->iv == iv && r->kid == kid && r->off == off))
			return r;
	}
}

/* Empty slot i of the linear-probing table by shifting later members of
 * its cluster back (Knuth's algorithm R): no tombstones, no rehash, so an
 * eviction neither allocates nor faults in a fresh 32 MiB table. */
static void row_delete(struct xe_row *rows, uint32_t mask, uint32_t i)
{
	uint32_t j = i;

	for (;;) {
		rows[i].used = 0; /* counters stay: row_get clears a row it reuses */
		for (;;) {
			uint32_t k;

			j = (j + 1) & mask;
			if (!rows[j].used)
				return;
			k = row_hash(rows[j].iv, rows[j].kid, rows[j].off) & mask;
			/* rows[j] stays when its home lies cyclically in (i, j] */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			break;
		}
		rows[i] = rows[j];
		i = j;
	}
}

/* Drop the oldest quarter of the retained intervals (at least one), in
 * place. A slot refilled by a shifted row is looked at again; rows that
 * wrap from the table's start to its end were looked at already. */
static void evict_oldest(struct xe *x)
{
	uint32_t span = x->max_iv - x->min_iv + 1, cut = x->min_iv + (span / 4 ? span / 4 : 1);
	uint32_t min = UINT32_MAX, mask = x->rcap - 1;

	for (uint32_t i = 0; i < x->rcap;) {
		struct xe_row *r = &x->rows[i];

		if (r->used && r->iv < cut) {
			row_delete(x->rows, mask, i);
			x->st.rows_evicted++;
			x->nrows--;
			continue;
		}
		if (r->used && r->iv < min)
			min = r->iv;
		i++;
	}
	x->min_iv = min;
}

/* The row of (iv, kid, off), created when new; NULL when iv is older than
 * every retained interval after an eviction (counted in rows_evicted). */
static struct xe_row *row_get(struct xe *x, uint32_t iv, uint32_t kid, uint32_t off)
{
	struct xe_row *r = slot_for(x->rows, x->rcap, iv, kid, off);

	if (!r->used) {
		if (x->nrows >= x->cfg.max_rows) {
			evict_oldest(x);
			if (iv < x->min_iv && x->nrows) {
				/* A late sample older than all we keep. */
				x->st.rows_evicted++;
				return NULL;
			}
			r = slot_for(x->rows, x->rcap, iv, kid, off);
		}
		/* a slot emptied by row_delete keeps its old counters */
		*r = (struct xe_row){.iv = iv, .kid = kid, .off = off, .used = 1};
		x->nrows++;
		if (iv < x->min_iv)
			x->min_iv = iv;
		if (iv > x->max_iv)
			x->max_iv = iv;
	}
	return r;
}

void xe_rows_add(struct xe *x, uint32_t iv, uint32_t kid, uint32_t off, const uint8_t *cnt)
{
	struct xe_row *r = row_get(x, iv, kid, off);

	if (r)
		for (int i = 0; i < XE_NREASONS; i++)
			r->cnt[i] += cnt[i];
}

/* ---- hot cache (xe_int.h) ---- */

void xe_hot_merge(struct xe *x, struct xe_hot *h)
{
	struct xe_row *r = row_get(x, x->hot_iv, h->kid, h->off);

	if (r)
		for (int i = 0; i < XE_NREASONS; i++)
			r->cnt[i] += h->cnt[i];
	memset(h, 0, sizeof(*h));
	x->nhot--;
}

void xe_rows_flush(struct xe *x)
{
	for (uint32_t i = 0; x->nhot && i < (1u << XE_HOT_BITS); i++)
		if (x->hot[i].nadd)
			xe_hot_merge(x, &x->hot[i]);
}

/* ---- export ---- */

static bool kernel_visible(const struct xe_kent *e, const struct xe_export_filter *f)
{
	if (!f)
		return true;
	if (f->uid_filter && e->uid != f->uid)
		return false;
	if (!f->npids)
		return true;
	for (size_t i = 0; i < f->npids; i++)
		if ((uint32_t)f->pids[i] == e->pid)
			return true;
	return false;
}

static int cmp_row(const void *a, const void *b)
{
	const struct xe_row *x = a, *y = b;

	if (x->kid != y->kid)
		return x->kid < y->kid ? -1 : 1;
	if (x->iv != y->iv)
		return x->iv < y->iv ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void put_str(char *blob, uint32_t *blen, const char *s, struct xe_sec_str *out)
{
	size_t n = s ? strlen(s) : 0;

	out->off = *blen;
	out->len = (uint32_t)n;
	if (n)
		memcpy(blob + *blen, s, n);
	*blen += (uint32_t)n;
}

int xe_export(struct xe *x, uint64_t t0_ns, uint64_t t1_ns, const struct xe_export_filter *f,
	      void **buf, size_t *len)
{
	uint32_t iv0 = xe_iv(x, t0_ns), iv1 = xe_iv(x, t1_ns), nrows = 0, nk = 0, nips = 0;
	uint64_t blen = 0;
	bool unattr_ok = !f || (!f->uid_filter && !f->npids);
	struct xe_row *rows = NULL;
	uint8_t *used = NULL, *out = NULL;
	int r = -ENOMEM;

	*buf = NULL;
	*len = 0;
	pthread_mutex_lock(&x->lock);
	xe_retry_locked(x, iv1 > x->max_iv ? iv1 : x->max_iv, false);
	xe_rows_flush(x);
	used = calloc(x->kcap + 1, 1);
	rows = malloc(sizeof(*rows) * (x->nrows ? x->nrows : 1));
	if (!used || !rows)
		goto out;
	for (uint32_t i = 0; i < x->rcap; i++) {
		const struct xe_row *rw = &x->rows[i];
		const struct xe_kent *e;

		if (!rw->used || rw->iv < iv0 || rw->iv > iv1)
			continue;
		e = rw->kid ? &x->k[rw->kid - 1] : NULL;
		if (rw->kid && (!e->id || !kernel_visible(e, f)))
			continue;
		if (!rw->kid && !unattr_ok)
			continue;
		rows[nrows] = *rw;
		rows[nrows].used = 0;
		nrows++;
		if (e && !used[rw->kid]) {
			used[rw->kid] = 1;
			nk++;
			nips += e->nustack;
			blen += (e->name ? strlen(e->name) : 0) + (e->file ? strlen(e->file) : 0) +
				(e->comm ? strlen(e->comm) : 0) +
				(e->cgroup ? strlen(e->cgroup) : 0);
		}
	}
	r = 0;
	if (!nrows)
		goto out;
	qsort(rows, nrows, sizeof(*rows), cmp_row);
	size_t total = sizeof(struct xe_sec_hdr) + (size_t)nk * sizeof(struct xe_sec_kernel) +
		       (size_t)nrows * sizeof(struct xe_row) + (size_t)nips * 8 + blen;
	r = -ENOMEM;
	if (blen > UINT32_MAX || !(out = calloc(1, total)))
		goto out;
	struct xe_sec_hdr *h = (struct xe_sec_hdr *)out;
	struct xe_sec_kernel *ks = (struct xe_sec_kernel *)(h + 1);
	struct xe_row *ro = (struct xe_row *)(ks + nk);
	uint64_t *ips = (uint64_t *)(ro + nrows);
	char *blob = (char *)(ips + nips);
	uint32_t ki = 0, ipn = 0, bl = 0;

	*h = (struct xe_sec_hdr){
		.magic = XE_SEC_MAGIC,
		.version = XE_SEC_VERSION,
		.nkernels = nk,
		.nrows = nrows,
		.nips = nips,
		.blob_len = (uint32_t)blen,
		.interval_ns = x->cfg.interval_ns,
		.epoch_ns = x->epoch_ns,
		.unattributed = x->st.unattributed,
		.deferred_now = x->dn,
		.records = x->st.records,
	};
	for (uint32_t id = 1; id <= x->kcap; id++) {
		const struct xe_kent *e = &x->k[id - 1];
		struct xe_sec_kernel *o;

		if (!used[id])
			continue;
		o = &ks[ki++];
		o->id = id;
		o->pid = e->pid;
		o->uid = e->uid;
		o->start = e->start;
		o->size = e->end - e->start;
		o->iba = e->iba;
		o->ips_off = ipn;
		o->nips = e->nustack;
		if (e->nustack)
			memcpy(ips + ipn, e->ustack, sizeof(uint64_t) * e->nustack);
		ipn += e->nustack;
		put_str(blob, &bl, e->name, &o->name);
		put_str(blob, &bl, e->file, &o->file);
		put_str(blob, &bl, e->comm, &o->comm);
		put_str(blob, &bl, e->cgroup, &o->cgroup);
	}
	memcpy(ro, rows, sizeof(*rows) * nrows);
	*buf = out;
	*len = total;
	r = 0;
out:
	pthread_mutex_unlock(&x->lock);
	free(used);
	free(rows);
	return r;
}
