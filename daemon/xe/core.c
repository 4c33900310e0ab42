// SPDX-License-Identifier: MIT
/*
 * The GPU-kernel table and sample attribution (the Xe PRMs): a sample's
 * address is instruction base + (ip << 3); the kernel is the one whose
 * [start, start + size) holds it. Kernels live in slots addressed by id
 * (rows refer to ids, so a kernel replaced at the same VA keeps its own
 * profile) and an index of the active ones sorted by start.
 */
#include "xe_int.h"
#include "sym/demangle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int xe_new(const struct xe_config *cfg, uint64_t epoch_ns, struct xe **ret)
{
	struct xe *x = calloc(1, sizeof(*x));
	int r = -ENOMEM;

	if (!x)
		return -ENOMEM;
	if (cfg)
		x->cfg = *cfg;
	if (!x->cfg.interval_ns)
		x->cfg.interval_ns = 100000000ull;
	if (!x->cfg.max_rows)
		x->cfg.max_rows = 1u << 18;
	if (!x->cfg.max_kernels)
		x->cfg.max_kernels = 65536;
	if (!x->cfg.max_deferred)
		x->cfg.max_deferred = 65536;
	if (!x->cfg.defer_intervals)
		x->cfg.defer_intervals = 50;
	x->epoch_ns = epoch_ns;
	x->k = calloc(x->cfg.max_kernels, sizeof(*x->k));
	x->freeslots = malloc(sizeof(uint32_t) * x->cfg.max_kernels);
	x->idx = malloc(sizeof(uint32_t) * x->cfg.max_kernels);
	x->d = malloc(sizeof(*x->d) * x->cfg.max_deferred);
	if (!x->k || !x->freeslots || !x->idx || !x->d)
		goto err;
	x->kcap = x->cfg.max_kernels;
	r = xe_rows_init(x);
	if (r < 0)
		goto err;
	pthread_mutex_init(&x->lock, NULL);
	*ret = x;
	return 0;
err:
	free(x->k);
	free(x->freeslots);
	free(x->idx);
	free(x->d);
	free(x);
	return r;
}

static void kent_clear(struct xe_kent *e)
{
	free(e->name);
	free(e->file);
	free(e->comm);
	free(e->cgroup);
	free(e->ustack);
	memset(e, 0, sizeof(*e));
}

void xe_free(struct xe *x)
{
	if (!x)
		return;
	for (uint32_t i = 0; i < x->kused; i++)
		kent_clear(&x->k[i]);
	pthread_mutex_destroy(&x->lock);
	free(x->k);
	free(x->freeslots);
	free(x->idx);
	free(x->d);
	free(x->rows);
	free(x->hot);
	free(x);
}

/* Index position of the first active kernel with start > addr. */
static uint32_t upper(const struct xe *x, uint64_t addr)
{
	uint32_t lo = 0, hi = x->nidx;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (x->k[x->idx[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct xe_kent *find_addr(struct xe *x, uint64_t addr)
{
	uint32_t pos = upper(x, addr);
	struct xe_kent *e;

	if (!pos)
		return NULL;
	e = &x->k[x->idx[pos - 1]];
	return addr < e->end ? e : NULL;
}

/* The kernel an IP falls in, trying the last hit first (samples come in
 * runs from one kernel), then every known instruction base: processes
 * with different heaps have different IBAs and the record does not say
 * whose it is (the xe driver's EU-stall stream: no context id in the record). */
struct xe_kent *xe_kfind(struct xe *x, uint64_t ip, uint64_t *addr)
{
	uint64_t off = ip << 3;
	struct xe_kent *e;

	if (x->last_hit) {
		e = &x->k[x->last_hit - 1];
		*addr = (e->iba + off) & XE_VA_MASK;
		if (e->active && *addr >= e->start && *addr < e->end)
			return e;
	}
	for (unsigned i = 0; i < x->nibas; i++) {
		*addr = (x->ibas[i] + off) & XE_VA_MASK;
		e = find_addr(x, *addr);
		if (e) {
			x->last_hit = e->id;
			return e;
		}
	}
	return NULL;
}

static void idx_remove(struct xe *x, uint32_t pos)
{
	x->k[x->idx[pos]].active = false;
	memmove(&x->idx[pos], &x->idx[pos + 1], (x->nidx - pos - 1) * sizeof(uint32_t));
	x->nidx--;
}

static void slot_release(struct xe *x, struct xe_kent *e)
{
	uint32_t slot = e->id - 1;

	if (x->last_hit == e->id)
		x->last_hit = 0;
	kent_clear(e);
	x->freeslots[x->nfree++] = slot;
	x->st.kernels--;
}

/* Table full: free inactive kernels no retained row refers to, then the
 * active ones idle longest (their rows, if any, export as unknown). */
static void reclaim(struct xe *x)
{
	uint32_t oldest = x->min_iv, before = x->nfree;

	for (uint32_t i = 0; i < x->kused; i++) {
		struct xe_kent *e = &x->k[i];

		if (e->id && !e->active && (e->last_iv < oldest || !x->nrows))
			slot_release(x, e);
	}
	if (x->nfree > before)
		return;
	for (uint32_t i = 0; i < x->nidx;) {
		struct xe_kent *e = &x->k[x->idx[i]];

		if (e->last_iv < oldest || !x->nrows) {
			idx_remove(x, i);
			slot_release(x, e);
		} else {
			i++;
		}
	}
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void note_iba(struct xe *x, uint64_t iba)
{
	for (unsigned i = 0; i < x->nibas; i++)
		if (x->ibas[i] == iba)
			return;
	/* Bounded: a 17th heap replaces the oldest (one process per heap is
	 * the usual case; more is a host running many GPU processes). */
	if (x->nibas == XE_MAX_IBAS)
		memmove(x->ibas, x->ibas + 1, sizeof(x->ibas) - sizeof(x->ibas[0])), x->nibas--;
	x->ibas[x->nibas++] = iba;
	x->st.ibas = x->nibas;
}

/* A weak add at start (pos = upper(x, start)): true when a named kernel
 * covers start; else *end is cut back to the first named kernel inside
 * [start, *end), so the guess fills the gap before it. */
static bool weak_clip(const struct xe *x, uint32_t pos, uint64_t start, uint64_t *end)
{
	if (pos && x->k[x->idx[pos - 1]].end > start && !x->k[x->idx[pos - 1]].weak)
		return true;
	for (; pos < x->nidx && x->k[x->idx[pos]].start < *end; pos++)
		if (!x->k[x->idx[pos]].weak) {
			*end = x->k[x->idx[pos]].start;
			break;
		}
	return false;
}

int xe_ktab_add(struct xe *x, const struct xe_kernel_info *k)
{
	uint64_t start, end, size;
	uint32_t pos, slot, now_iv;
	struct xe_kent *e;
	char dm[1024];
	int r = 0;

	if (!x || !k || (k->nustack && !k->ustack))
		return -EINVAL;
	size = k->size ? k->size : XE_KERNEL_DEFAULT_SIZE;
	start = k->gpu_addr & XE_VA_MASK;
	end = start + size;
	if (end > XE_VA_MASK + 1 || size > (1ull << 32))
		return -EINVAL;

	pthread_mutex_lock(&x->lock);
	now_iv = x->max_iv;
	pos = upper(x, start);
	if (k->weak && weak_clip(x, pos, start, &end))
		goto out; /* a named kernel covers it: the name wins */
	if (pos) {
		e = &x->k[x->idx[pos - 1]];
		if (e->start == start && e->end == end && e->iba == (k->iba & XE_VA_MASK) &&
		    e->pid == k->pid) {
			e->last_iv = now_iv; /* a launch of a known kernel */
			goto out;
		}
	}
	/* A new kernel takes its range: older kernels overlapping it (VA
	 * reused after a module unload or process exit) leave the index but
	 * keep their slots while rows refer to them. */
	while (pos && x->k[x->idx[pos - 1]].end > start)
		idx_remove(x, --pos);
	while (pos < x->nidx && x->k[x->idx[pos]].start < end)
		idx_remove(x, pos);

	if (!x->nfree && x->kused == x->kcap)
		reclaim(x);
	if (x->nfree) {
		slot = x->freeslots[--x->nfree];
	} else if (x->kused < x->kcap) {
		slot = x->kused++;
	} else {
		x->st.kernels_full++;
		r = -ENOSPC;
		goto out;
	}
	e = &x->k[slot];
	*e = (struct xe_kent){
		.start = start,
		.end = end,
		.iba = k->iba & XE_VA_MASK,
		.id = slot + 1,
		.pid = k->pid,
		.uid = k->uid,
		.last_iv = now_iv,
		.active = true,
		.weak = k->weak,
	};
	if (x->cfg.demangle && k->name && sym_demangle(k->name, dm, sizeof(dm)))
		e->name = strdup(dm); /* once per new kernel, not per launch */
	else
		e->name = dup_or_null(k->name);
	e->file = dup_or_null(k->file);
	e->comm = dup_or_null(k->comm);
	e->cgroup = dup_or_null(k->cgroup);
	if (k->nustack) {
		e->ustack = malloc(sizeof(uint64_t) * k->nustack);
		if (e->ustack) {
			memcpy(e->ustack, k->ustack, sizeof(uint64_t) * k->nustack);
			e->nustack = k->nustack;
		}
	}
	pos = upper(x, start);
	memmove(&x->idx[pos + 1], &x->idx[pos], (x->nidx - pos) * sizeof(uint32_t));
	x->idx[pos] = slot;
	x->nidx++;
	x->st.kernels++;
	note_iba(x, e->iba);
	if (x->dn)
		xe_retry_locked(x, now_iv, false);
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

void xe_ktab_remove_pid(struct xe *x, uint32_t pid)
{
	pthread_mutex_lock(&x->lock);
	for (uint32_t i = 0; i < x->nidx;) {
		if (x->k[x->idx[i]].pid == pid)
			idx_remove(x, i);
		else
			i++;
	}
	x->last_hit = 0;
	pthread_mutex_unlock(&x->lock);
}

static void defer(struct xe *x, const struct xe_sample *s, uint32_t iv)
{
	uint32_t cap = x->cfg.max_deferred;
	struct xe_dsample *d;

	if (x->dn == cap) {
		/* Full: the oldest waiter gives up, counted as unattributed. */
		d = &x->d[x->dhead];
		xe_rows_add(x, d->iv, 0, (uint32_t)(d->ip << 3), d->cnt);
		x->st.unattributed++;
		x->dhead = (x->dhead + 1) % cap;
		x->dn--;
	}
	d = &x->d[(x->dhead + x->dn) % cap];
	d->ip = s->ip;
	d->iv = iv;
	memcpy(d->cnt, s->cnt, XE_NREASONS);
	x->dn++;
	x->st.deferred++;
}

void xe_retry_locked(struct xe *x, uint32_t now_iv, bool give_up)
{
	uint32_t cap = x->cfg.max_deferred, n = x->dn, kept = 0;

	/* Compact in place: survivors move to the front of the ring. */
	for (uint32_t i = 0; i < n; i++) {
		struct xe_dsample d = x->d[(x->dhead + i) % cap];
		uint64_t addr;
		struct xe_kent *e = x->nibas ? xe_kfind(x, d.ip, &addr) : NULL;

		if (e) {
			xe_rows_add(x, d.iv, e->id, (uint32_t)(addr - e->start), d.cnt);
			x->st.late_attributed++;
			x->st.attributed++;
		} else if (give_up || d.iv + x->cfg.defer_intervals < now_iv) {
			xe_rows_add(x, d.iv, 0, (uint32_t)(d.ip << 3), d.cnt);
			x->st.unattributed++;
		} else {
			x->d[(x->dhead + kept++) % cap] = d;
		}
	}
	x->dn = kept;
	x->st.deferred_now = kept;
}

void xe_retry_deferred(struct xe *x, uint64_t now_ns, bool give_up)
{
	pthread_mutex_lock(&x->lock);
	xe_retry_locked(x, xe_iv(x, now_ns), give_up);
	pthread_mutex_unlock(&x->lock);
}

/* Records go through in chunks: decode a chunk (one loop per layout),
 * attribute it while prefetching each sample's hot-cache line, then add
 * the counters, by which time the lines have arrived. */
#define XE_CHUNK 64

size_t xe_ingest(struct xe *x, const struct xe_decoder *d, const uint8_t *buf, size_t len,
		 size_t rec_size, uint64_t now_ns)
{
	size_t n = rec_size ? len / rec_size : 0;
	struct xe_sample s[XE_CHUNK];
	uint32_t kid[XE_CHUNK], off[XE_CHUNK], home[XE_CHUNK];
	uint8_t which[XE_CHUNK];
	uint32_t iv;

	if (!n)
		return 0;
	pthread_mutex_lock(&x->lock);
	iv = xe_iv(x, now_ns);
	if (iv > x->max_iv)
		x->max_iv = iv;
	xe_hot_begin(x, iv);
	for (size_t i = 0; i < n; i += XE_CHUNK) {
		unsigned m = n - i < XE_CHUNK ? (unsigned)(n - i) : XE_CHUNK, na = 0;

		d->decode_n(buf + i * rec_size, m, rec_size, s);
		for (unsigned j = 0; j < m; j++) {
			struct xe_kent *e;
			uint64_t addr;

			if (!xe_sample_total(&s[j])) {
				x->st.empty++;
				continue;
			}
			e = xe_kfind(x, s[j].ip, &addr);
			if (!e) {
				defer(x, &s[j], iv);
				continue;
			}
			e->last_iv = iv;
			kid[na] = e->id;
			off[na] = (uint32_t)(addr - e->start);
			home[na] = xe_hot_hash(kid[na], off[na]);
			__builtin_prefetch(&x->hot[home[na]], 1);
			which[na++] = (uint8_t)j;
		}
		for (unsigned j = 0; j < na; j++)
			xe_hot_add(x, home[j], kid[j], off[j], s[which[j]].cnt);
		x->st.attributed += na;
	}
	x->st.records += n;
	/* Age the waiters from the head (oldest first): every kernel add has
	 * retried them already, so no look-up is owed here. */
	while (x->dn && x->d[x->dhead].iv + x->cfg.defer_intervals < iv) {
		struct xe_dsample *o = &x->d[x->dhead];

		xe_rows_add(x, o->iv, 0, (uint32_t)(o->ip << 3), o->cnt);
		x->st.unattributed++;
		x->dhead = (x->dhead + 1) % x->cfg.max_deferred;
		x->dn--;
	}
	x->st.deferred_now = x->dn;
	pthread_mutex_unlock(&x->lock);
	return n;
}

void xe_get_stats(struct xe *x, struct xe_stats *st)
{
	pthread_mutex_lock(&x->lock);
	xe_rows_flush(x);
	x->st.rows = x->nrows;
	x->st.deferred_now = x->dn;
	*st = x->st;
	pthread_mutex_unlock(&x->lock);
}
