// SPDX-License-Identifier: MIT
/*
 * Folded-stack renderer (folded.h). Two passes so that strings are built
 * once per distinct stack, not once per sample:
 *   1. records -> hash table keyed by (stack, pid, tid, comm), counts summed;
 *   2. each key -> its text line in an arena; lines sorted, equal lines
 *      (different pids or stacks that resolve alike) merged, then written
 *      through a 1 MiB buffer.
 */
#include "folded.h"
#include "folded_int.h"

#include "capture/capture.h"
#include "capture/gpumatch.h"
#include "symtab.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUTBUF (1u << 20)

struct line {
	size_t off, len;
	uint64_t count;
};

static uint64_t key_hash(const struct agg *k)
{
	uint64_t h = ((uint64_t)k->stack << 32 | k->pid) * 0x9E3779B97F4A7C15ull;
	h ^= ((uint64_t)k->tid << 32 | k->comm) * 0xC2B2AE3D27D4EB4Full;
	h ^= ((uint64_t)k->cgroup << 32 | k->name) * 0x165667B19E3779F9ull;
	h ^= ((uint64_t)k->pc << 32 | k->reason) * 0x27D4EB2F165667C5ull;
	h ^= k->crc * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

static int agg_grow(struct ctx *x)
{
	size_t ncap = x->cap ? x->cap * 2 : 4096;
	struct agg *ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	for (size_t i = 0; i < x->cap; i++) {
		if (!x->slots[i].count)
			continue;
		size_t s = key_hash(&x->slots[i]) & (ncap - 1);
		while (ns[s].count)
			s = (s + 1) & (ncap - 1);
		ns[s] = x->slots[i];
	}
	free(x->slots);
	x->slots = ns;
	x->cap = ncap;
	return 0;
}

static int agg_add(struct ctx *x, const struct agg *k)
{
	if ((x->used + 1) * 2 > x->cap && agg_grow(x) < 0)
		return -ENOMEM;
	size_t mask = x->cap - 1, s = key_hash(k) & mask;
	for (;; s = (s + 1) & mask) {
		struct agg *a = &x->slots[s];
		if (!a->count) {
			*a = *k;
			x->used++;
			return 0;
		}
		if (a->stack == k->stack && a->pid == k->pid && a->tid == k->tid &&
		    a->comm == k->comm && a->name == k->name && a->cgroup == k->cgroup &&
		    a->pc == k->pc && a->reason == k->reason && a->crc == k->crc) {
			a->count += k->count;
			return 0;
		}
	}
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static bool in_set(const uint32_t *set, size_t n, uint32_t v)
{
	return !n || bsearch(&v, set, n, sizeof(v), u32_cmp);
}

static int sorted_copy(const uint32_t *in, size_t n, uint32_t **out)
{
	if (!n)
		return 0;
	*out = malloc(n * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, in, n * sizeof(**out));
	qsort(*out, n, sizeof(**out), u32_cmp);
	return 0;
}

static bool comm_matches(struct ctx *x, uint32_t id)
{
	if (!x->o->comm)
		return true;
	if (id > x->c->nstrs)
		return false;
	if (!x->comm_ok[id]) {
		size_t len;
		const char *s = capture_str(x->c, id, &len);
		size_t want = strlen(x->o->comm);
		x->comm_ok[id] = s && len == want && !memcmp(s, x->o->comm, len) ? 2 : 1;
	}
	return x->comm_ok[id] == 2;
}

/* gpu-time: each record's ns (ctx.share), from the launch <-> interval
 * match; NULL share (launches count 1) when there are no intervals. */
static int gpu_shares(struct ctx *x)
{
	struct gpu_match m;
	int err = gpu_match_build(x->c, &m);
	if (err < 0)
		return err;
	if (!m.nintervals) {
		x->gpu_fallback = true;
		gpu_match_finish(&m);
		return 0;
	}
	x->kname = m.name; /* kept past the match */
	m.name = NULL;
	x->cupti[0] = m.ncupti;
	x->cupti[1] = m.ncupti - m.ncupti_call;
	x->cupti[2] = m.ncupti_call - m.ncupti_launch;
	x->share = calloc(x->c->nrecs + 1, sizeof(*x->share));
	if (!x->share) {
		gpu_match_finish(&m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->c->nrecs; i++) {
		const struct store_rec *r = &x->c->recs[i];
		uint32_t n = m.count[i];
		if (r->type != STORE_REC_GPU_INTERVAL ||
		    (gpu_is_cupti(r) && (r->cpu & 0xff) == GPU_CUPTI_SYNC))
			continue; /* a sync interval is the CPU waiting */
		if (!n) {
			x->share[i] += r->dur_ns;
			continue;
		}
		/* even split; the remainder ns go to the first launches so
		 * that the total stays exact */
		for (uint32_t k = 0; k < n; k++)
			x->share[m.launch[m.first[i] + k]] += r->dur_ns / n + (k < r->dur_ns % n);
	}
	gpu_match_finish(&m);
	return 0;
}

/* Whether r counts (type, window, filters); its key and weight in *k. */
static bool record_key(struct ctx *x, const struct store_rec *r, struct agg *k)
{
	const struct folded_opts *o = x->o;
	static const uint16_t counted[] = {
		[FOLDED_WEIGHT_SAMPLES] = STORE_REC_CPU_SAMPLE,
		[FOLDED_WEIGHT_LAUNCHES] = STORE_REC_GPU_LAUNCH,
		[FOLDED_WEIGHT_GPU_TIME] = STORE_REC_GPU_INTERVAL,
		[FOLDED_WEIGHT_STALLS] = STORE_REC_GPU_PC,
	};
	if (o->weight == FOLDED_WEIGHT_GPU_TIME) {
		/* launches carry the matched time; intervals only their own
		 * unmatched time (0 when their launches took it) */
		if (r->type != STORE_REC_GPU_LAUNCH && r->type != STORE_REC_GPU_INTERVAL)
			return false;
		if (x->share ? !x->share[r - x->c->recs] : r->type != STORE_REC_GPU_LAUNCH)
			return false;
	} else if (r->type != counted[o->weight]) {
		return false;
	}
	if ((o->start_ns && r->ts_ns < o->start_ns) || (o->end_ns && r->ts_ns > o->end_ns))
		return false;
	if (!in_set(x->pids, o->npids, r->pid) || !in_set(x->tids, o->ntids, r->tid) ||
	    !comm_matches(x, r->comm))
		return false;
	/* the pid stays in the key even without o->pid: symbols are
	 * per (pid, stack); equal lines merge in the second pass */
	*k = (struct agg){r->stack,
			  r->pid,
			  o->tid ? r->tid : 0,
			  r->comm,
			  0,
			  r->aux32 ? r->aux32 : 1,
			  o->cgroup ? store_rec_cgroup(r) : 0};
	if (o->weight == FOLDED_WEIGHT_LAUNCHES) {
		k->name = gpu_launch_name(x->kname, (size_t)(r - x->c->recs), r);
		k->count = 1;
	} else if (o->weight == FOLDED_WEIGHT_GPU_TIME) {
		k->name = gpu_launch_name(x->kname, (size_t)(r - x->c->recs), r);
		k->count = x->share ? x->share[r - x->c->recs] : 1;
	} else if (o->weight == FOLDED_WEIGHT_STALLS) {
		k->stack = pcstall_stack(&x->pcs, r);
		k->name = r->name;
		k->pc = (uint32_t)r->aux[1];
		k->reason = store_rec_detail(r);
		k->count = r->aux32;
		k->crc = r->aux[0];
		if (!k->count)
			return false;
	}
	return true;
}

static int aggregate(struct ctx *x, struct folded_totals *t)
{
	for (size_t i = 0; i < x->c->nrecs; i++) {
		struct agg k;
		if (!record_key(x, &x->c->recs[i], &k))
			continue;
		if (agg_add(x, &k) < 0)
			return -ENOMEM;
		t->samples++;
	}
	return 0;
}

/* Symbols, filter sets and the launch index for c and o (ctx_finish()
 * frees them, also after a failure). */
static int ctx_init(struct ctx *x, const struct capture *c, const struct folded_opts *o,
		    bool *symbolized)
{
	*x = (struct ctx){.c = c, .o = o};
	if (!c || (o->npids && !o->pids) || (o->ntids && !o->tids) ||
	    (unsigned)o->weight > FOLDED_WEIGHT_STALLS)
		return -EINVAL;
	x->insn = o->insn;
	x->insn_ctx = o->insn_ctx;
	const struct capture_extra *ex = capture_find_extra(c, CAPSEC_SYMBOLS);
	if (ex && sym_table_decode(ex->data, ex->len, &x->syms, NULL, 0) == 0)
		*symbolized = true;
	if (sorted_copy(o->pids, o->npids, &x->pids) < 0 ||
	    sorted_copy(o->tids, o->ntids, &x->tids) < 0)
		return -ENOMEM;
	if (o->comm && !(x->comm_ok = calloc((size_t)c->nstrs + 1, 1)))
		return -ENOMEM;
	if (o->weight == FOLDED_WEIGHT_GPU_TIME && gpu_shares(x) < 0)
		return -ENOMEM;
	if (o->weight == FOLDED_WEIGHT_LAUNCHES && gpu_launch_names(c, &x->kname) < 0)
		return -ENOMEM;
	if (o->weight == FOLDED_WEIGHT_STALLS && pcstall_init(&x->pcs, c) < 0)
		return -ENOMEM;
	return 0;
}

static void ctx_finish(struct ctx *x)
{
	free(x->a.p);
	free(x->slots);
	free(x->comm_ok);
	free(x->pids);
	free(x->tids);
	free(x->share);
	free(x->kname);
	pcstall_finish(&x->pcs);
	sym_table_free(x->syms);
}

static int line_cmp(const void *a, const void *b, void *arena)
{
	const struct line *x = a, *y = b;
	const char *p = arena;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(p + x->off, p + y->off, n);
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static int emit(struct ctx *x, struct line *lines, size_t n, folded_write_fn fn, void *fctx,
		struct folded_totals *t)
{
	char *buf = malloc(OUTBUF);
	size_t bl = 0;
	int r = 0;
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct line *l = &lines[i];
		uint64_t count = l->count;
		while (i + 1 < n && line_cmp(l, &lines[i + 1], x->a.p) == 0)
			count += lines[++i].count;
		char num[24];
		int nl = snprintf(num, sizeof(num), " %" PRIu64 "\n", count);
		const char *s = x->a.p + l->off;
		size_t len = l->len;
		if (bl + len + (size_t)nl > OUTBUF) {
			r = bl ? fn(fctx, buf, bl) : 0;
			bl = 0;
		}
		if (r == 0 && len + (size_t)nl > OUTBUF) { /* a monster line */
			r = fn(fctx, s, len);
			len = 0;
		}
		if (r)
			break;
		memcpy(buf + bl, s, len);
		memcpy(buf + bl + len, num, (size_t)nl);
		bl += len + (size_t)nl;
		t->stacks++;
		t->weight += count;
	}
	if (r == 0 && bl)
		r = fn(fctx, buf, bl);
	free(buf);
	return r;
}

int folded_write(const struct capture *c, const struct folded_opts *opts, folded_write_fn fn,
		 void *fctx, struct folded_totals *totals)
{
	static const struct folded_opts defaults;
	struct folded_totals t = {0};
	struct ctx x;
	struct line *lines = NULL;
	size_t nlines = 0;
	int r = ctx_init(&x, c, opts ? opts : &defaults, &t.symbolized);

	t.gpu_time_fallback = x.gpu_fallback;
	t.cupti_intervals = x.cupti[0];
	t.cupti_no_call = x.cupti[1];
	t.cupti_no_launch = x.cupti[2];
	t.sass = x.pcs.sass.base != NULL;
	t.sass_kept = x.pcs.sass.n;
	t.sass_missing = x.pcs.sass.missing;
	t.sass_capped = x.pcs.sass.capped;
	if (r == 0 && !fn)
		r = -EINVAL;
	if (r < 0)
		goto out;
	r = -ENOMEM;
	if (aggregate(&x, &t) < 0)
		goto out;
	lines = malloc((x.used ? x.used : 1) * sizeof(*lines));
	if (!lines)
		goto out;
	for (size_t i = 0; i < x.cap; i++) {
		if (!x.slots[i].count)
			continue;
		size_t off = x.a.len;
		if (folded_build_line(&x, &x.slots[i]) < 0)
			goto out;
		lines[nlines++] = (struct line){off, x.a.len - off, x.slots[i].count};
	}
	qsort_r(lines, nlines, sizeof(*lines), line_cmp, x.a.p);
	r = emit(&x, lines, nlines, fn, fctx, &t);
out:
	if (totals)
		*totals = t;
	free(lines);
	ctx_finish(&x);
	return r;
}

/* ---- per-record lines ---------------------------------------------------- */

struct folded_liner {
	struct ctx x;
	struct folded_opts o;
};

int folded_liner_new(const struct capture *c, const struct folded_opts *o,
		     struct folded_liner **ret)
{
	static const struct folded_opts defaults;
	struct folded_liner *l = malloc(sizeof(*l));
	bool sym = false;
	if (!l)
		return -ENOMEM;
	l->o = o ? *o : defaults;
	int r = ctx_init(&l->x, c, &l->o, &sym);
	if (r < 0) {
		folded_liner_free(l);
		return r;
	}
	*ret = l;
	return 0;
}

void folded_liner_free(struct folded_liner *l)
{
	if (!l)
		return;
	ctx_finish(&l->x);
	free(l);
}

bool folded_liner_match(struct folded_liner *l, const struct store_rec *r, struct folded_key *key,
			uint64_t *count)
{
	struct agg k;
	if (!record_key(&l->x, r, &k))
		return false;
	*key = (struct folded_key){k.stack,  k.pid, k.tid,    k.comm, k.name,
				   k.cgroup, k.pc,  k.reason, k.crc};
	*count = k.count;
	return true;
}

int folded_liner_line(struct folded_liner *l, const struct folded_key *key, const char **text,
		      size_t *len)
{
	struct agg k = {key->stack, key->pid,	 key->tid, key->comm,	key->name,
			1,	    key->cgroup, key->pc,  key->reason, key->crc};
	l->x.a.len = 0;
	int r = folded_build_line(&l->x, &k);
	*text = l->x.a.p;
	*len = r < 0 ? 0 : l->x.a.len;
	return r;
}

static int fd_writer(void *ctx, const void *buf, size_t len)
{
	int fd = *(int *)ctx;
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {.fd = fd, .events = POLLOUT};
			int pr = poll(&pfd, 1, 30000);
			if (pr == 0)
				return -ETIMEDOUT;
			if (pr < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int folded_write_fd(const struct capture *c, const struct folded_opts *o, int fd,
		    struct folded_totals *totals)
{
	if (fd < 0)
		return -EBADF;
	return folded_write(c, o, fd_writer, &fd, totals);
}
