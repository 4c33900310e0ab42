// SPDX-License-Identifier: MIT
/*
 * Per-rank indexes, built once: HTA row order, per correlation (+ links),
 * per GPU stream and per thread (each sorted by time), and the duplicate
 * marking done at import.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "timeline_int.h"

/* Group key: (f, a, b) with f = string flags; streams use (0, stream, pid). */
struct gkey {
	uint32_t f;
	int64_t a, b;
	uint32_t count, first;
};

static int cmp_gkey(const void *x, const void *y)
{
	const struct gkey *p = x, *q = y;

	if ((p->f & TL_EV_PID_STR) != (q->f & TL_EV_PID_STR))
		return (p->f & TL_EV_PID_STR) ? 1 : -1;
	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->f != q->f)
		return p->f < q->f ? -1 : 1;
	return p->b < q->b ? -1 : p->b > q->b;
}

static uint64_t gkey_hash(uint32_t f, int64_t a, int64_t b)
{
	uint64_t h = ((uint64_t)a * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)b + f);

	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 31);
}

/*
 * Group the selected events by key with a counting sort (few distinct
 * keys: threads, streams), keep index order inside a group, then sort each
 * group by (ts, index) — O(n) when already in time order. The (ts,
 * position) pairs are filled in one pass over the selected rows in order,
 * not gathered from ev[] group by group (a cache miss per row); for
 * streams, a few of the rows, the first pass notes which in out[] and
 * tmp[] holds only theirs (it wrote every row's before: 4 bytes per row
 * of fresh memory, read back in full). out[] gets the positions;
 * *keys_out the groups in key order (caller frees).
 */
static int group_sort(struct tl_rank *r, bool streams, uint32_t *out, uint32_t *tmp,
		      struct tl_kp *kp, uint32_t *nout, struct gkey **keys_out, uint32_t *nkeys_out)
{
	uint32_t nslots = 64, nkeys = 0, cap = 0, n = 0, *slots, *gid = tmp, *rank_of;
	struct gkey *keys = NULL;
	int err = -ENOMEM;

	slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];
		uint32_t f = streams ? 0 : e->flags & (TL_EV_PID_STR | TL_EV_TID_STR);
		int64_t a = streams ? e->stream : e->pid, b = streams ? e->pid : e->tid;
		uint64_t s;

		if (streams && !(e->flags & TL_EV_GPU_SIDE))
			continue;
		for (s = gkey_hash(f, a, b) & (nslots - 1); slots[s]; s = (s + 1) & (nslots - 1)) {
			struct gkey *k = &keys[slots[s] - 1];

			if (k->f == f && k->a == a && k->b == b)
				break;
		}
		if (!slots[s]) {
			if (bigalloc_grow((void **)&keys, &cap, nkeys + 1, sizeof(*keys)) < 0)
				goto out;
			keys[nkeys] = (struct gkey){.f = f, .a = a, .b = b};
			slots[s] = ++nkeys;
			if (nkeys * 2 > nslots) { /* rehash */
				uint32_t *ns = calloc(nslots * 2, sizeof(*ns));

				if (!ns)
					goto out;
				free(slots);
				slots = ns;
				nslots *= 2;
				for (uint32_t k = 0; k < nkeys; k++) {
					uint64_t t = gkey_hash(keys[k].f, keys[k].a, keys[k].b) &
						     (nslots - 1);

					while (slots[t])
						t = (t + 1) & (nslots - 1);
					slots[t] = k + 1;
				}
				for (s = 0; slots[s] != nkeys; s++)
					;
			}
		}
		/* gid[n]: the n-th selected row's group; streams (a few of
		 * the rows) note the row in out[n] too, read back below */
		gid[n] = slots[s] - 1;
		if (streams)
			out[n] = i;
		keys[gid[n]].count++;
		n++;
	}
	/* key order, then offsets; count[] doubles as the running cursor */
	rank_of = malloc((nkeys + 1) * sizeof(*rank_of));
	if (!rank_of)
		goto out;
	for (uint32_t k = 0; k < nkeys; k++)
		keys[k].first = k; /* remember the original id */
	if (nkeys)
		qsort(keys, nkeys, sizeof(*keys), cmp_gkey);
	for (uint32_t k = 0, off = 0; k < nkeys; k++) {
		rank_of[keys[k].first] = k;
		keys[k].first = off;
		off += keys[k].count;
		keys[k].count = 0;
	}
	for (uint32_t j = 0; j < n; j++) {
		struct gkey *k = &keys[rank_of[gid[j]]];
		uint32_t i = streams ? out[j] : j;

		kp[k->first + k->count++] = (struct tl_kp){.key = r->ev[i].ts_ns, .pos = i};
	}
	free(rank_of);
	for (uint32_t k = 0; k < nkeys; k++)
		if (tl_sort_kp(kp + keys[k].first, keys[k].count) < 0)
			goto out;
	for (uint32_t i = 0; i < n; i++)
		out[i] = kp[i].pos;
	*nout = n;
	*keys_out = keys;
	*nkeys_out = nkeys;
	keys = NULL;
	err = 0;
out:
	free(keys);
	free(slots);
	return err;
}

static void build_links(struct tl_rank *r)
{
	for (uint32_t g = 0; g < r->nby_corr;) {
		uint32_t e = g;
		int32_t gpu = -1, cpu = -1;

		while (e < r->nby_corr &&
		       r->ev[r->by_corr[e]].correlation == r->ev[r->by_corr[g]].correlation)
			e++;
		for (uint32_t i = g; i < e; i++) {
			if (r->ev[r->by_corr[i]].flags & TL_EV_GPU_KERNEL_FILTER)
				gpu = (int32_t)r->by_corr[i];
			else
				cpu = (int32_t)r->by_corr[i];
		}
		for (uint32_t i = g; i < e; i++) {
			struct tl_event *ev = &r->ev[r->by_corr[i]];

			ev->link = (ev->flags & TL_EV_GPU_KERNEL_FILTER) ? cpu : gpu;
		}
		g = e;
	}
}

/* corr_start[] (timeline.h): by_corr / corr_keys are sorted. Sparse ids
 * (e.g. a trace whose iterations each start past the last id) were binary
 * searched over all keys: a cache miss per step, two thirds of launch's
 * time on the repeated 1 GB trace. Buckets bound the search to the few
 * keys of one bucket with the same memory bound. */
static int corr_index(struct tl_rank *r)
{
	const int64_t *k = r->corr_keys;
	uint32_t n = r->nby_corr, j = 0, shift = 0;
	uint64_t span, nb;

	if (!n)
		return 0;
	span = (uint64_t)k[n - 1] - (uint64_t)k[0]; /* exact: k[n - 1] >= k[0] */
	while ((span >> shift) >= 4ull * n + 64 || (span >> shift) >= UINT32_MAX - 1)
		shift++;
	nb = (span >> shift) + 1;
	if (!(r->corr_start = bigalloc_malloc(((size_t)nb + 1) * sizeof(*r->corr_start))))
		return -ENOMEM;
	r->corr_lo = k[0];
	r->corr_span = (uint32_t)nb;
	r->corr_shift = shift;
	for (uint64_t b = 0; b <= nb; b++) {
		while (j < n && ((uint64_t)k[j] - (uint64_t)k[0]) >> shift < b)
			j++;
		r->corr_start[b] = j;
	}
	return 0;
}

/* One group_sort() call, run on a helper thread. */
struct gs_job {
	struct tl_rank *r;
	bool streams;
	uint32_t *out, *tmp;
	struct tl_kp *kp;
	uint32_t n, nkeys;
	struct gkey *keys;
	int err;
};

static void *gs_main(void *arg)
{
	struct gs_job *j = arg;

	j->err = group_sort(j->r, j->streams, j->out, j->tmp, j->kp, &j->n, &j->keys, &j->nkeys);
	return NULL;
}

/* From this many rows on, the duplicate marking, the per-thread sort and
 * the per-stream sort use a second thread (the second CPU is idle after
 * the parse; on the repeated 1 GB trace the per-thread sort alone was a
 * third of tl_rank_index). */
#define PAR_MIN_ROWS (1u << 18)

/* Worth a second thread: a large rank, and a second CPU to run it. */
static bool par_rank(const struct tl_rank *r)
{
	return r->nev >= PAR_MIN_ROWS && bigalloc_two_cpus();
}

/*
 * The per-thread sort started before the correlation link (finalize.c),
 * on the rows as they are then: it reads only their thread, time and
 * flags, which the link and the step filter's decisions leave alone, and
 * it must be waited for before the filter moves rows. Its positions are
 * then mapped to the kept rows' new ones (the order within each thread
 * stays: positions keep the rows' order). It overlapped nothing before,
 * running beside the per-stream sort at the very end.
 */
struct tl_bythread {
	pthread_t th;
	bool started;
	struct gs_job job;
};

struct tl_bythread *tl_bythread_start(struct tl_rank *r)
{
	size_t sz = (size_t)r->nev * sizeof(uint32_t) + 4;
	struct tl_bythread *b;

	if (!par_rank(r) || !(b = calloc(1, sizeof(*b))))
		return NULL;
	b->job = (struct gs_job){.r = r,
				 .out = bigalloc_malloc_room(sz),
				 .tmp = bigalloc_malloc_room(sz),
				 .kp = bigalloc_malloc_room((size_t)r->nev * sizeof(struct tl_kp) +
							    1)};
	if (b->job.out && b->job.tmp && b->job.kp &&
	    bigalloc_thread_start(&b->th, gs_main, &b->job) == 0) {
		b->started = true;
		return b;
	}
	tl_bythread_free(b);
	return NULL;
}

int tl_bythread_wait(struct tl_bythread *b)
{
	if (b->started) {
		pthread_join(b->th, NULL);
		b->started = false;
		bigalloc_free(b->job.tmp);
		bigalloc_free(b->job.kp);
		b->job.tmp = NULL;
		b->job.kp = NULL;
	}
	return b->job.err;
}

void tl_bythread_remap(struct tl_bythread *b, const uint32_t *np)
{
	struct gs_job *j = &b->job;
	uint32_t w = 0, nk = 0;

	for (uint32_t k = 0; k < j->nkeys; k++) {
		struct gkey g = j->keys[k];
		uint32_t first = w;

		for (uint32_t i = g.first; i < g.first + g.count; i++)
			if (np[j->out[i]] != UINT32_MAX)
				j->out[w++] = np[j->out[i]];
		if (w > first) { /* a thread left without rows is gone */
			g.first = first;
			g.count = w - first;
			j->keys[nk++] = g;
		}
	}
	j->nkeys = nk;
	j->n = w;
}

void tl_bythread_free(struct tl_bythread *b)
{
	if (!b)
		return;
	tl_bythread_wait(b);
	bigalloc_free(b->job.out);
	free(b->job.keys);
	free(b);
}

int tl_rank_index_pairs(struct tl_rank *r, struct tl_kp *pairs, uint32_t npairs,
			struct tl_bythread *bt)
{
	uint32_t *tmp, *tmp2 = NULL, n;
	size_t sz = (size_t)r->nev * sizeof(uint32_t) + 4;
	struct tl_kp *kp = pairs, *kp2 = NULL;
	struct gs_job st = {0}, th = {0}, *par_job = NULL;
	pthread_t helper;
	int err;

	tl_rank_drop_indexes(r);
	/* huge pages: a 4 KiB page fault per first touch of these arrays
	 * was ~5 % of a 1 GB import (finalize's temporaries are fresh
	 * mappings each time) */
	tmp = bigalloc_malloc(sz);
	/* by_corr holds npairs; by_stream the GPU-side rows, not yet
	 * counted: room, populated as the sort writes it */
	r->by_corr = bigalloc_malloc((size_t)npairs * sizeof(uint32_t) + 4);
	r->by_stream = bigalloc_malloc_room(sz);
	r->by_thread = bt ? NULL : bigalloc_malloc(sz);
	if (!tmp || !r->by_corr || !r->by_stream || (!bt && !r->by_thread))
		goto nomem;
	/* No pass resetting links: build_links() writes the link of every
	 * row with a correlation, and a row without one is made with -1
	 * and never linked (a pass writing all rows was 12 ms of a 1 GB
	 * import). */
	r->nby_corr = n = npairs;
	if (!(r->corr_keys = bigalloc_malloc((size_t)n * sizeof(*r->corr_keys) + 1)))
		goto nomem;
	for (uint32_t i = 0; i < n; i++) {
		r->by_corr[i] = kp[i].pos;
		r->corr_keys[i] = kp[i].key;
	}
	/* kp and tmp are free now. The per-thread sort: done already (bt)
	 * or here. Large ranks use a second thread: for the per-stream
	 * sort when the per-thread one is done, else for the latter (the
	 * per-stream sort then gets scratch of its own, written only as
	 * far as it goes). */
	th = (struct gs_job){.r = r, .out = r->by_thread, .tmp = tmp, .kp = kp};
	st = (struct gs_job){.r = r, .streams = true, .out = r->by_stream, .tmp = tmp, .kp = kp};
	if (bt) {
		if (tl_bythread_wait(bt) < 0)
			goto nomem;
		th = bt->job; /* its keys and positions become the rank's */
		r->by_thread = bt->job.out;
		bt->job.out = NULL;
		bt->job.keys = NULL;
		if (bigalloc_thread_start(&helper, gs_main, &st) == 0)
			par_job = &st;
	} else if (par_rank(r) && (tmp2 = bigalloc_malloc_room(sz)) &&
		   (kp2 = bigalloc_malloc_room((size_t)r->nev * sizeof(*kp2) + 1)) &&
		   bigalloc_thread_start(&helper, gs_main, &th) == 0) {
		par_job = &th;
		st.tmp = tmp2;
		st.kp = kp2;
	}
	err = corr_index(r);
	if (!err) {
		build_links(r);
		if (par_job != &st)
			gs_main(&st);
		if (!bt && !par_job)
			gs_main(&th);
	}
	if (par_job)
		pthread_join(helper, NULL);
	bigalloc_free(tmp2);
	bigalloc_free(kp2);
	if (err < 0 || st.err < 0 || th.err < 0)
		goto nomem;
	r->nby_stream = st.n;
	r->streams = calloc(st.nkeys + 1, sizeof(*r->streams));
	for (uint32_t k = 0; r->streams && k < st.nkeys; k++)
		r->streams[k] = (struct tl_stream){.stream = st.keys[k].a,
						   .pid = st.keys[k].b,
						   .first = st.keys[k].first,
						   .count = st.keys[k].count};
	r->nstreams = st.nkeys;
	r->threads = calloc(th.nkeys + 1, sizeof(*r->threads));
	for (uint32_t k = 0; r->threads && k < th.nkeys; k++)
		r->threads[k] = (struct tl_thread){.pid = th.keys[k].a,
						   .tid = th.keys[k].b,
						   .first = th.keys[k].first,
						   .count = th.keys[k].count,
						   .flags = th.keys[k].f};
	r->nthreads = th.nkeys;
	if (!r->streams || !r->threads)
		goto nomem;
	free(st.keys);
	free(th.keys);
	bigalloc_free(tmp);
	r->flags |= TL_RANK_FINALIZED;
	return 0;
nomem:
	free(st.keys);
	free(th.keys);
	bigalloc_free(tmp);
	tl_rank_drop_indexes(r);
	return -ENOMEM;
}

int tl_rank_index(struct tl_rank *r)
{
	struct tl_kp *pairs = NULL;
	uint32_t n;
	int err = tl_corr_pairs(r, &pairs, &n);

	if (!err)
		err = tl_rank_index_pairs(r, pairs, n, NULL);
	bigalloc_free(pairs);
	return err;
}

static uint64_t ev_hash(const struct tl_event *e)
{
	uint64_t h = (uint64_t)e->ts_ns * 0x9e3779b97f4a7c15ull;

	h ^= (uint64_t)e->dur_ns + 0x7f4a7c15ull + (h << 6) + (h >> 2);
	h ^= ((uint64_t)e->name << 32 | e->cat) + (h << 6) + (h >> 2);
	h ^= (uint64_t)e->pid * 31 + (uint64_t)e->tid + (h << 6) + (h >> 2);
	h ^= (uint64_t)e->correlation + (h << 6) + (h >> 2);
	return h * 0xbf58476d1ce4e5b9ull;
}

static bool ev_same(const struct tl_event *a, const struct tl_event *b)
{
	return a->ts_ns == b->ts_ns && a->dur_ns == b->dur_ns && a->name == b->name &&
	       a->cat == b->cat && a->pid == b->pid && a->tid == b->tid && a->stream == b->stream &&
	       a->correlation == b->correlation && a->external_id == b->external_id &&
	       (a->flags & (TL_EV_PID_STR | TL_EV_TID_STR)) ==
		       (b->flags & (TL_EV_PID_STR | TL_EV_TID_STR));
}

/*
 * Rows hashed in one sequential pass, then radix-partitioned by the hash's
 * top bits into partitions of ~8k rows, each checked with an open-addressing
 * table small enough for the L2 cache: (hash low 32 bits << 32 | position)
 * entries, the 32 bits a tag that rejects almost every other row without
 * reading it. Identical rows hash alike, so they share a partition, and a
 * partition keeps position order: the first of identical rows stays, the
 * later ones are marked, exactly as one table over all rows in order would
 * do. One table over a 1 GB trace's rows (64 MiB) took a DRAM miss per
 * row even with prefetching: ~10 % of the import.
 */
/* The partition of hash h among 2^bits (its top bits). */
static inline uint32_t dup_part(uint64_t h, uint32_t bits)
{
	return bits ? (uint32_t)(h >> (64 - bits)) : 0;
}

/*
 * Duplicate marking in three phases over row ranges (1: hash and count
 * per partition, 2: scatter into the partitions) and partition ranges (3:
 * a hash table per partition). Each runs on two threads for a large rank
 * (par_rank: the second CPU is idle at this point of an import; ~70 ms of
 * a 1 GB one on one thread); a thread's rows are contiguous and the first
 * thread's come first in every partition, so the marks are a serial
 * pass's: a row is a duplicate of the earliest identical row.
 */
#define DUP_PART_ROWS 8192
#define DUP_MAX_BITS 10

struct dup_job {
	struct tl_rank *r;
	uint32_t bits, lo, hi; /* rows [lo, hi): phases 1 and 2 */
	uint32_t plo, phi;     /* partitions [plo, phi): phase 3 */
	uint64_t *h, *ent;
	uint32_t *cnt;	     /* phase 1: rows per partition; phase 2: cursors */
	const uint32_t *end; /* phase 3: end[p] = where partition p ends */
	uint64_t nslots;     /* phase 3: table size for the largest partition */
	int64_t dups;
	int err;
};

static void *dup_count(void *arg)
{
	struct dup_job *j = arg;

	for (uint32_t i = j->lo; i < j->hi; i++) {
		j->h[i] = ev_hash(&j->r->ev[i]);
		j->cnt[dup_part(j->h[i], j->bits)]++;
	}
	return NULL;
}

static void *dup_scatter(void *arg)
{
	struct dup_job *j = arg;

	for (uint32_t i = j->lo; i < j->hi; i++)
		j->ent[j->cnt[dup_part(j->h[i], j->bits)]++] = (uint64_t)(uint32_t)j->h[i] << 32 |
							       i;
	return NULL;
}

static void *dup_tables(void *arg)
{
	struct dup_job *j = arg;
	struct tl_event *ev = j->r->ev;
	uint64_t mask = j->nslots - 1, *slots;

	if (j->plo == j->phi)
		return NULL;
	if (!(slots = bigalloc_malloc(j->nslots * sizeof(*slots)))) {
		j->err = -ENOMEM;
		return NULL;
	}
	for (uint32_t p = j->plo; p < j->phi; p++) {
		uint32_t lo = p ? j->end[p - 1] : 0, cnt = j->end[p] - lo;
		uint64_t m = mask;

		if (!cnt)
			continue;
		while (m > 15 && m / 2 + 1 >= (uint64_t)cnt * 2)
			m /= 2; /* a small partition clears a small table */
		memset(slots, 0, (m + 1) * sizeof(*slots));
		for (uint32_t k = lo; k < j->end[p]; k++) {
			uint64_t e = j->ent[k], tag = e >> 32 << 32, s = (e >> 32) & m;
			uint32_t i = (uint32_t)e;

			for (; slots[s]; s = (s + 1) & m) {
				if ((slots[s] & ~0xffffffffull) == tag &&
				    ev_same(&ev[(uint32_t)slots[s] - 1], &ev[i])) {
					ev[i].flags |= TL_EV_DUPLICATE;
					j->dups++;
					break;
				}
			}
			if (!slots[s])
				slots[s] = tag | (i + 1ull);
		}
	}
	bigalloc_free(slots);
	return NULL;
}

/* fn on jobs[0] here and jobs[1] (when nt == 2) on a second thread, or
 * here too when none can start. */
static void dup_run(struct dup_job *jobs, int nt, void *(*fn)(void *))
{
	pthread_t th;
	bool par = nt == 2 && bigalloc_thread_start(&th, fn, &jobs[1]) == 0;

	fn(&jobs[0]);
	if (par)
		pthread_join(th, NULL);
	else if (nt == 2)
		fn(&jobs[1]);
}

int64_t tl_rank_mark_duplicates_n(struct tl_rank *r, int nthreads)
{
	uint32_t n = r->nev, bits = 0, nparts, maxc = 0, *cnt = NULL, *end;
	struct dup_job j[2] = {0};
	uint64_t *h = NULL, *ent = NULL, nslots = 16;
	int nt = nthreads >= 2 && n >= 2 ? 2 : 1;
	int64_t dups = -ENOMEM;

	if (n < 2)
		return 0;
	while (bits < DUP_MAX_BITS && ((uint64_t)DUP_PART_ROWS << bits) < n)
		bits++;
	nparts = 1u << bits;
	h = bigalloc_malloc((size_t)n * sizeof(*h));
	ent = bigalloc_malloc((size_t)n * sizeof(*ent));
	/* per thread: counts then cursors; then end[] */
	cnt = calloc(3 * (size_t)nparts, sizeof(*cnt));
	if (!h || !ent || !cnt)
		goto out;
	end = cnt + 2 * (size_t)nparts;
	for (int t = 0; t < 2; t++)
		j[t] = (struct dup_job){.r = r,
					.bits = bits,
					.h = h,
					.ent = ent,
					.cnt = cnt + (size_t)t * nparts,
					.end = end};
	j[0].hi = nt == 2 ? n / 2 : n;
	j[1].lo = j[0].hi;
	j[1].hi = n;
	dup_run(j, nt, dup_count);
	/* partition p: the first thread's rows, then the second's */
	for (uint32_t p = 0, at = 0; p < nparts; p++) {
		uint32_t c0 = j[0].cnt[p], c1 = j[1].cnt[p];

		j[0].cnt[p] = at;
		j[1].cnt[p] = at + c0;
		at += c0 + c1;
		end[p] = at;
		maxc = c0 + c1 > maxc ? c0 + c1 : maxc;
	}
	dup_run(j, nt, dup_scatter);
	bigalloc_free(h);
	h = NULL;
	while (nslots < (uint64_t)maxc * 2)
		nslots *= 2;
	/* the partitions in two halves of about as many rows */
	j[0].plo = 0;
	j[0].phi = nparts;
	if (nt == 2) {
		uint32_t p = 0;

		while (p < nparts && end[p] < n / 2)
			p++;
		j[0].phi = j[1].plo = p;
		j[1].phi = nparts;
	}
	j[0].nslots = j[1].nslots = nslots;
	dup_run(j, nt, dup_tables);
	dups = j[0].err < 0 || j[1].err < 0 ? -ENOMEM : j[0].dups + j[1].dups;
out:
	bigalloc_free(h);
	bigalloc_free(ent);
	free(cnt);
	return dups;
}

int64_t tl_rank_mark_duplicates(struct tl_rank *r)
{
	return tl_rank_mark_duplicates_n(r, par_rank(r) ? 2 : 1);
}
