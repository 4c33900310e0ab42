// SPDX-License-Identifier: MIT
/*
 * Captures in memory: cutting one out of the store and looking things up
 * in its own tables. The file format lives in capfile.c, the file system
 * side in capio.c.
 */
#include "capture/capture.h"
#include "capture/capture-int.h"
#include "gpd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int capture_new(struct capture **ret)
{
	struct capture *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->kind = CAPTURE_LIVE;
	c->state = CAPTURE_READY;
	*ret = c;
	return 0;
}

void capture_free_data(struct capture *c)
{
	for (size_t i = 0; i < c->nextras; i++)
		free(c->extras[i].data);
	free(c->extras);
	free(c->str_blob);
	free(c->strs);
	free(c->ips);
	free(c->stacks);
	free(c->recs);
	free(c->stackrefs);
	c->stackrefs = NULL;
	c->nstackrefs = 0;
	c->extras = NULL;
	c->nextras = 0;
	c->str_blob = NULL;
	c->str_blob_len = 0;
	c->strs = NULL;
	c->nstrs = 0;
	c->ips = NULL;
	c->nips = 0;
	c->stacks = NULL;
	c->nstacks = 0;
	c->recs = NULL;
	c->nrecs = 0;
}

void capture_free(struct capture *c)
{
	if (!c)
		return;
	capture_free_data(c);
	free(c);
}

/* Growable tables of the capture being built; capacities kept here so the
 * public struct holds only lengths. */
struct builder {
	struct capture *c;
	size_t blob_cap, strs_cap, ips_cap, stacks_cap;
	uint32_t *map; /* store id -> capture id, 0 = not copied yet */
};

static int reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static int copy_str(struct builder *b, const struct store *s, uint32_t *id)
{
	struct capture *c = b->c;
	const char *str;
	size_t len;

	if (*id == 0)
		return 0;
	if (b->map[*id]) {
		*id = b->map[*id];
		return 0;
	}
	str = store_str(s, *id, &len);
	if (!str) {
		*id = 0;
		return 0;
	}
	if (c->str_blob_len + len > UINT32_MAX || c->nstrs == UINT32_MAX - 1)
		return -E2BIG;
	if (reserve((void **)&c->str_blob, &b->blob_cap, c->str_blob_len + len, 1) ||
	    reserve((void **)&c->strs, &b->strs_cap, (size_t)c->nstrs + 1, sizeof(*c->strs)))
		return -ENOMEM;
	memcpy(c->str_blob + c->str_blob_len, str, len);
	c->strs[c->nstrs] =
		(struct capture_str){.off = (uint32_t)c->str_blob_len, .len = (uint32_t)len};
	c->str_blob_len += len;
	b->map[*id] = ++c->nstrs;
	*id = c->nstrs;
	return 0;
}

static int copy_stack(struct builder *b, const struct store *s, uint32_t *id)
{
	struct capture *c = b->c;
	const uint64_t *ips;
	uint16_t nu, nk;

	if (*id == 0)
		return 0;
	if (b->map[*id]) {
		*id = b->map[*id];
		return 0;
	}
	ips = store_stack(s, *id, &nu, &nk);
	if (!ips) {
		*id = 0;
		return 0;
	}
	if (c->nips + nu + nk > UINT32_MAX || c->nstacks == UINT32_MAX - 1)
		return -E2BIG;
	if (reserve((void **)&c->ips, &b->ips_cap, c->nips + nu + nk, sizeof(*c->ips)) ||
	    reserve((void **)&c->stacks, &b->stacks_cap, (size_t)c->nstacks + 1,
		    sizeof(*c->stacks)))
		return -ENOMEM;
	memcpy(c->ips + c->nips, ips, ((size_t)nu + nk) * sizeof(*ips));
	c->stacks[c->nstacks] =
		(struct capture_stack){.off = (uint32_t)c->nips, .nuser = nu, .nkernel = nk};
	c->nips += (size_t)nu + nk;
	b->map[*id] = ++c->nstacks;
	*id = c->nstacks;
	return 0;
}

static bool matches(const struct store_rec *r, const struct capture_filter *f, uint64_t t0,
		    uint64_t t1)
{
	if (r->ts_ns < t0 || r->ts_ns > t1)
		return false;
	if (f && f->types && (r->type >= 32 || !(f->types & 1u << r->type)))
		return false;
	if (f && f->uid_filter && r->uid != f->uid)
		return false;
	if (f && f->npids) {
		for (size_t i = 0; i < f->npids; i++)
			if ((uint32_t)f->pids[i] == r->pid)
				return true;
		return false;
	}
	return true;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int capture_take(const struct store *s, const struct capture_filter *f, uint64_t t0_ns,
		 uint64_t t1_ns, struct capture **ret)
{
	struct builder b = {0};
	struct capture *c = NULL;
	size_t n = store_count(s), nmatch = 0;
	int r;

	if (!s || t0_ns > t1_ns || (f && f->npids > CAPTURE_MAX_PIDS) ||
	    (f && f->npids && !f->pids))
		return -EINVAL;
	r = capture_new(&c);
	if (r < 0)
		return r;
	b.c = c;
	b.map = calloc(store_id_limit(s), sizeof(*b.map));
	if (!b.map) {
		r = -ENOMEM;
		goto fail;
	}
	/* Count first so the record array is allocated exactly once. The
	 * ring is arrival-ordered, not strictly time-ordered (per-CPU
	 * buffers drain out of step), so scan it all rather than bisect. */
	for (size_t i = 0; i < n; i++)
		nmatch += matches(store_at(s, i), f, t0_ns, t1_ns);
	if (nmatch) {
		c->recs = malloc(nmatch * sizeof(*c->recs));
		if (!c->recs) {
			r = -ENOMEM;
			goto fail;
		}
	}
	for (size_t i = 0; i < n && c->nrecs < nmatch; i++) {
		const struct store_rec *sr = store_at(s, i);
		struct store_rec *cr;

		if (!matches(sr, f, t0_ns, t1_ns))
			continue;
		cr = &c->recs[c->nrecs++];
		*cr = *sr;
		r = copy_str(&b, s, &cr->comm);
		if (!r)
			r = copy_str(&b, s, &cr->name);
		if (!r && cr->type == STORE_REC_GPU_LAUNCH)
			r = copy_str(&b, s, &cr->cgroup);
		if (!r && store_rec_detail(cr)) {
			uint32_t d = store_rec_detail(cr);

			r = copy_str(&b, s, &d);
			cr->aux[1] = (uint64_t)d << 32 | (cr->aux[1] & UINT32_MAX);
		}
		if (!r)
			r = copy_stack(&b, s, &cr->stack);
		if (r < 0)
			goto fail;
	}

	c->kind = CAPTURE_LIVE;
	c->state = CAPTURE_READY;
	c->created_realtime_ns = realtime_ns();
	c->mono_to_realtime_ns = gpd_mono_to_realtime_ns();
	c->t0_ns = t0_ns;
	c->t1_ns = t1_ns;
	if (f) {
		c->npids = (uint32_t)f->npids;
		if (f->npids)
			memcpy(c->pids, f->pids, f->npids * sizeof(*f->pids));
		c->uid_filter = f->uid_filter;
		c->filter_uid = f->uid;
	}
	/* Best effort: the store only keeps a coarse eviction history. */
	c->store_evicted_in_window = store_evicted_since(s, t0_ns);
	if (t1_ns != UINT64_MAX) {
		uint64_t after = store_evicted_since(s, t1_ns + 1);

		c->store_evicted_in_window =
			c->store_evicted_in_window > after ? c->store_evicted_in_window - after : 0;
	}
	free(b.map);
	*ret = c;
	return 0;
fail:
	free(b.map);
	capture_free(c);
	return r;
}

const char *capture_str(const struct capture *c, uint32_t id, size_t *len)
{
	const struct capture_str *cs;

	if (len)
		*len = 0;
	if (!c || id == 0 || id > c->nstrs)
		return NULL;
	cs = &c->strs[id - 1];
	if (cs->off > c->str_blob_len || cs->len > c->str_blob_len - cs->off)
		return NULL;
	if (len)
		*len = cs->len;
	return c->str_blob ? c->str_blob + cs->off : "";
}

const uint64_t *capture_stack(const struct capture *c, uint32_t id, uint16_t *nuser,
			      uint16_t *nkernel)
{
	static const uint64_t none[1];
	const struct capture_stack *st;
	size_t n;

	if (nuser)
		*nuser = 0;
	if (nkernel)
		*nkernel = 0;
	if (!c || id == 0 || id > c->nstacks)
		return NULL;
	st = &c->stacks[id - 1];
	n = (size_t)st->nuser + st->nkernel;
	if (st->off > c->nips || n > c->nips - st->off)
		return NULL;
	if (nuser)
		*nuser = st->nuser;
	if (nkernel)
		*nkernel = st->nkernel;
	return c->ips ? c->ips + st->off : none;
}

int capture_add_extra(struct capture *c, uint32_t type, const void *data, size_t len)
{
	void *copy;
	int err;

	if (!c || (!data && len) || !capture_extra_type_ok(type))
		return -EINVAL;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, data, len);
	err = capture_adopt_extra(c, type, copy, len);
	if (err < 0)
		free(copy);
	return err;
}

int capture_adopt_extra(struct capture *c, uint32_t type, void *data, size_t len)
{
	struct capture_extra *ex;

	if (!c || !data || !capture_extra_type_ok(type))
		return -EINVAL;
	/* Capacity is implicit: grow to the next power of two (min 4) when
	 * the count reaches one, so a file of many tiny sections decodes in
	 * linear time. */
	if (c->nextras == 0 || (c->nextras >= 4 && !(c->nextras & (c->nextras - 1)))) {
		size_t ncap = c->nextras ? c->nextras * 2 : 4;

		ex = ncap < SIZE_MAX / sizeof(*ex) ? realloc(c->extras, ncap * sizeof(*ex)) : NULL;
		if (!ex)
			return -ENOMEM;
		c->extras = ex;
	}
	ex = c->extras;
	ex[c->nextras++] = (struct capture_extra){.type = type, .data = data, .len = len};
	return 0;
}

const struct capture_extra *capture_find_extra(const struct capture *c, uint32_t type)
{
	for (size_t i = 0; c && i < c->nextras; i++)
		if (c->extras[i].type == type)
			return &c->extras[i];
	return NULL;
}

/* Distinct pids counted exactly up to this many; more are each counted
 * as new (the fraction then errs low, toward "not covered"). */
#define COVERAGE_PIDS 256u

void capture_gpu_coverage(const struct capture *c, struct capture_coverage *cov)
{
	uint32_t seen[COVERAGE_PIDS];
	uint32_t nseen = 0, extra = 0;
	uint64_t span = c->t1_ns > c->t0_ns ? c->t1_ns - c->t0_ns : 0;

	memset(cov, 0, sizeof(*cov));
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		uint64_t a, b;
		uint32_t k;

		if (r->type != STORE_REC_GPU_WINDOW)
			continue;
		for (k = 0; k < nseen && seen[k] != r->pid; k++)
			;
		if (k == nseen) {
			if (nseen < COVERAGE_PIDS)
				seen[nseen++] = r->pid;
			else
				extra++;
		}
		a = r->ts_ns > c->t0_ns ? r->ts_ns : c->t0_ns;
		b = r->ts_ns + r->dur_ns < c->t1_ns ? r->ts_ns + r->dur_ns : c->t1_ns;
		if (b > a)
			cov->covered_ns += b - a;
		cov->windows++;
		cov->duty = r->aux32;
		cov->period_ms = (uint32_t)r->aux[0];
	}
	cov->pids = nseen + extra;
	if (cov->pids && span)
		cov->fraction = (double)cov->covered_ns / ((double)cov->pids * (double)span);
	if (cov->fraction > 1.0)
		cov->fraction = 1.0;
}
