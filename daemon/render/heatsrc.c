// SPDX-License-Identifier: MIT
/*
 * Where the heat map's counts come from (heatmap_int.h):
 *   records        the capture's records that folded_write() would count
 *                  (CPU samples, launches or GPU time), each with its folded
 *                  line as frames, each distinct key resolved once;
 *   EU-stall rows  the CAPSEC_XE_EU_STALL section (docs/xe.md): interval
 *                  epoch + iv * interval_ns, frames
 *                  comm;launch stack...;kernel_[G];reason_[g];0xoffset_[g]
 *                  (xe.folded's, less pid, file and instruction text).
 */
#include "heatmap_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "decode.h"
#include "section.h"

static uint64_t key_hash(const struct folded_key *k)
{
	uint64_t h = ((uint64_t)k->stack << 32 | k->pid) * 0x9E3779B97F4A7C15ull;
	h ^= ((uint64_t)k->tid << 32 | k->comm) * 0xC2B2AE3D27D4EB4Full;
	h ^= (uint64_t)k->name * 0x165667B19E3779F9ull;
	h ^= ((uint64_t)k->pc << 32 | k->reason) * 0x27D4EB2F165667C5ull; /* stalls */
	h ^= k->crc * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

/* Leaf of a record's key, resolved once per distinct key. */
static int key_leaf(struct heatdata *d, struct folded_liner *l, const struct folded_key *k,
		    uint32_t *leaf)
{
	if ((d->kused + 1) * 2 > d->kcap) {
		size_t nc = d->kcap ? d->kcap * 2 : 4096;
		struct hd_key *ns = calloc(nc, sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		for (size_t i = 0; i < d->kcap; i++) {
			if (!d->keys[i].leaf)
				continue;
			size_t s = key_hash(&d->keys[i].k) & (nc - 1);
			while (ns[s].leaf)
				s = (s + 1) & (nc - 1);
			ns[s] = d->keys[i];
		}
		free(d->keys);
		d->keys = ns;
		d->kcap = nc;
	}
	size_t mask = d->kcap - 1, s = key_hash(k) & mask;
	for (; d->keys[s].leaf; s = (s + 1) & mask) {
		if (!memcmp(&d->keys[s].k, k, sizeof(*k))) {
			*leaf = d->keys[s].leaf;
			return 0;
		}
	}
	const char *text;
	size_t len;
	if (folded_liner_line(l, k, &text, &len) < 0 || !(*leaf = hd_line_leaf(d, text, len)))
		return -ENOMEM;
	d->keys[s] = (struct hd_key){*k, *leaf};
	d->kused++;
	return 0;
}

int hd_collect(struct heatdata *d, const struct capture *c, struct folded_liner *l)
{
	struct folded_key k;
	uint64_t n, t1 = 0;
	d->t0 = UINT64_MAX;
	for (size_t i = 0; i < c->nrecs; i++) {
		if (!folded_liner_match(l, &c->recs[i], &k, &n))
			continue;
		uint64_t ts = c->recs[i].ts_ns;
		d->t0 = ts < d->t0 ? ts : d->t0;
		t1 = ts > t1 ? ts : t1;
	}
	if (d->t0 == UINT64_MAX)
		return -ENODATA;
	int rc = hd_grid(d, c, d->t0, t1);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		uint32_t leaf;
		if (!folded_liner_match(l, r, &k, &n))
			continue;
		if (key_leaf(d, l, &k, &leaf) < 0 || hd_add(d, r->ts_ns, leaf, n) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The node of a kernel's "comm;launch stack...;name_[G]" (or the
 * unattributed pseudo-kernel's, k NULL). */
static uint32_t kernel_node(struct heatdata *d, struct capframes *f, const struct xe_capdata *x,
			    const struct xe_sec_kernel *k)
{
	char name[512];
	size_t len = 0;
	const char *s = k ? xe_sec_str(x, k->comm, &len) : "[unattributed]";
	uint32_t n = hd_node(d, 0, len || !k ? s : "[unknown]", k ? (len ? len : 9) : 14);
	if (k && k->stack)
		capframes_get(f, k->pid, k->stack);
	else if (k)
		capframes_raw(f, x->ips + k->ips_off, k->nips);
	else
		f->n = 0;
	for (size_t i = 0; i < f->n && n; i++)
		n = hd_node(d, n, f->name[i], f->len[i]);
	s = k ? xe_sec_str(x, k->name, &len) : "[unattributed]";
	if (k && !len)
		len = (size_t)snprintf(name, sizeof(name) - 4, "0x%" PRIx64, k->start);
	else
		memcpy(name, s, len = k ? (len < sizeof(name) - 4 ? len : sizeof(name) - 4) : 14);
	memcpy(name + len, "_[G]", 4);
	return n ? hd_node(d, n, name, len + 4) : 0;
}

int hd_collect_xe(struct heatdata *d, const struct capture *c, const struct render_view *view)
{
	const struct capture_extra *ex = capture_find_extra(c, CAPSEC_XE_EU_STALL);
	struct xe_capdata x;
	struct capframes *f = NULL;
	uint32_t *knode = NULL, unattr = 0;
	uint64_t t0 = UINT64_MAX, t1 = 0;
	char why[128];
	int r;
	if (!ex)
		return -ENODATA;
	if (xe_sec_decode(ex->data, ex->len, &x, why, sizeof(why)) < 0)
		return -EBADMSG;
	for (uint32_t i = 0; i < x.h->nrows; i++) {
		uint64_t ts = x.h->epoch_ns + (uint64_t)x.rows[i].iv * x.h->interval_ns;
		t0 = ts < t0 ? ts : t0;
		t1 = ts > t1 ? ts : t1;
	}
	r = -ENODATA;
	if (t0 == UINT64_MAX || (r = hd_grid(d, c, t0, t1)) < 0)
		goto out;
	r = -ENOMEM;
	if (!(f = malloc(sizeof(*f))) || !(knode = calloc(x.h->nkernels + 1, sizeof(*knode))))
		goto out;
	capframes_init(f, c, view);
	for (uint32_t i = 0; i < x.h->nrows; i++) {
		const struct xe_row *row = &x.rows[i];
		const struct xe_sec_kernel *k = xe_sec_kernel(&x, row->kid);
		uint32_t *kn = k ? &knode[k - x.k] : &unattr;
		char off[32];
		if (!*kn && !(*kn = kernel_node(d, f, &x, k)))
			goto fin;
		int ol = snprintf(off, sizeof(off), "0x%" PRIx32 "_[g]", row->off);
		for (int rr = 0; rr < XE_NREASONS; rr++) {
			if (!row->cnt[rr])
				continue;
			const char *rn = xe_reason_names[rr];
			char reason[40];
			int rl = snprintf(reason, sizeof(reason), "%s_[g]", rn);
			uint32_t leaf = hd_node(d, *kn, reason, (size_t)rl);
			if (!leaf || !(leaf = hd_node(d, leaf, off, (size_t)ol)) ||
			    hd_add(d, x.h->epoch_ns + (uint64_t)row->iv * x.h->interval_ns, leaf,
				   row->cnt[rr]) < 0)
				goto fin;
		}
	}
	r = 0;
fin:
	capframes_finish(f);
out:
	free(f);
	free(knode);
	xe_sec_finish(&x);
	return r;
}
