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

#include "capture/capture.h"
#include "symtab.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OUTBUF (1u << 20)

struct agg {
	uint32_t stack, pid, tid, comm;
	uint32_t name; /* GPU kernel string id, 0 for CPU samples */
	uint64_t count; /* 0: empty slot */
};

/* (pid, correlation) -> launch record index, for gpu-time weights. */
struct corr_slot {
	uint32_t pid;
	uint64_t corr; /* 0: empty */
	size_t idx;
};

struct line {
	size_t off, len;
	uint64_t count;
};

struct arena {
	char *p;
	size_t len, cap;
};

struct ctx {
	const struct capture *c;
	const struct folded_opts *o;
	struct sym_table *syms;
	struct agg *slots;
	size_t cap, used;
	uint8_t *comm_ok; /* per string id: 0 unknown, 1 no, 2 yes */
	uint32_t *pids, *tids;
	struct arena a;
	struct corr_slot *corr;
	size_t ncorr; /* slots, a power of two */
};

static uint64_t key_hash(const struct agg *k)
{
	uint64_t h = ((uint64_t)k->stack << 32 | k->pid) * 0x9E3779B97F4A7C15ull;
	h ^= ((uint64_t)k->tid << 32 | k->comm) * 0xC2B2AE3D27D4EB4Full;
	h ^= (uint64_t)k->name * 0x165667B19E3779F9ull;
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
		    a->comm == k->comm && a->name == k->name) {
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

static size_t corr_hash(uint32_t pid, uint64_t corr)
{
	uint64_t h = (corr ^ ((uint64_t)pid << 40)) * 0x9E3779B97F4A7C15ull;
	return (size_t)(h ^ (h >> 31));
}

/* Index the launches by (pid, correlation) so intervals find theirs. */
static int corr_index(struct ctx *x)
{
	size_t n = 0;
	for (size_t i = 0; i < x->c->nrecs; i++)
		n += x->c->recs[i].type == STORE_REC_GPU_LAUNCH && x->c->recs[i].aux[1];
	if (!n)
		return 0;
	x->ncorr = 16;
	while (x->ncorr < n * 2)
		x->ncorr *= 2;
	x->corr = calloc(x->ncorr, sizeof(*x->corr));
	if (!x->corr)
		return -ENOMEM;
	for (size_t i = 0; i < x->c->nrecs; i++) {
		const struct store_rec *r = &x->c->recs[i];
		if (r->type != STORE_REC_GPU_LAUNCH || !r->aux[1])
			continue;
		size_t s = corr_hash(r->pid, r->aux[1]) & (x->ncorr - 1);
		while (x->corr[s].corr && !(x->corr[s].corr == r->aux[1] && x->corr[s].pid == r->pid))
			s = (s + 1) & (x->ncorr - 1);
		x->corr[s] = (struct corr_slot){r->pid, r->aux[1], i};
	}
	return 0;
}

static const struct store_rec *corr_find(const struct ctx *x, uint32_t pid, uint64_t corr)
{
	if (!x->ncorr || !corr)
		return NULL;
	for (size_t s = corr_hash(pid, corr) & (x->ncorr - 1); x->corr[s].corr;
	     s = (s + 1) & (x->ncorr - 1))
		if (x->corr[s].corr == corr && x->corr[s].pid == pid)
			return &x->c->recs[x->corr[s].idx];
	return NULL;
}

static int aggregate(struct ctx *x, struct folded_totals *t)
{
	const struct folded_opts *o = x->o;
	static const uint16_t counted[] = {
		[FOLDED_WEIGHT_SAMPLES] = STORE_REC_CPU_SAMPLE,
		[FOLDED_WEIGHT_LAUNCHES] = STORE_REC_GPU_LAUNCH,
		[FOLDED_WEIGHT_GPU_TIME] = STORE_REC_GPU_INTERVAL,
	};
	uint16_t want = counted[o->weight];

	if (o->weight == FOLDED_WEIGHT_GPU_TIME && corr_index(x) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < x->c->nrecs; i++) {
		const struct store_rec *r = &x->c->recs[i];
		if (r->type != want)
			continue;
		if ((o->start_ns && r->ts_ns < o->start_ns) || (o->end_ns && r->ts_ns > o->end_ns))
			continue;
		if (!in_set(x->pids, o->npids, r->pid) || !in_set(x->tids, o->ntids, r->tid) ||
		    !comm_matches(x, r->comm))
			continue;
		/* the pid stays in the key even without o->pid: symbols are
		 * per (pid, stack); equal lines merge in the second pass */
		struct agg k = {r->stack, r->pid, o->tid ? r->tid : 0, r->comm, 0,
				r->aux32 ? r->aux32 : 1};
		if (o->weight == FOLDED_WEIGHT_LAUNCHES) {
			k.name = r->name;
			k.count = 1;
		} else if (o->weight == FOLDED_WEIGHT_GPU_TIME) {
			const struct store_rec *l = r->stack ? NULL : corr_find(x, r->pid, r->aux[1]);
			if (!r->dur_ns)
				continue;
			k.name = r->name ? r->name : (l ? l->name : 0);
			if (l) {
				k.stack = l->stack;
				if (!k.comm)
					k.comm = l->comm;
			}
			k.count = r->dur_ns;
		}
		if (agg_add(x, &k) < 0)
			return -ENOMEM;
		t->samples++;
	}
	return 0;
}

static int reserve(struct arena *a, size_t n)
{
	if (a->len + n <= a->cap)
		return 0;
	size_t nc = a->cap ? a->cap : (1u << 20);
	while (nc < a->len + n)
		nc *= 2;
	char *np = realloc(a->p, nc);
	if (!np)
		return -ENOMEM;
	a->p = np;
	a->cap = nc;
	return 0;
}

/* Append a name, sanitized; "[unknown]" for an empty one. */
static int put_name(struct arena *a, const char *s, size_t len)
{
	if (!len) {
		s = "[unknown]";
		len = 9;
	}
	if (reserve(a, len) < 0)
		return -ENOMEM;
	char *d = a->p + a->len;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		d[i] = ch == ';' ? ':' : ((unsigned char)ch < 0x20 || ch == 0x7f) ? ' ' : ch;
	}
	a->len += len;
	return 0;
}

static int put_raw(struct arena *a, const char *s, size_t len)
{
	if (reserve(a, len) < 0)
		return -ENOMEM;
	memcpy(a->p + a->len, s, len);
	a->len += len;
	return 0;
}

static int put_frame(struct ctx *x, const struct sym_frames *f, size_t i, uint64_t ip)
{
	char tmp[32];
	size_t len;
	int r;
	if (!f) {
		int n = snprintf(tmp, sizeof(tmp), "0x%" PRIx64, ip);
		return put_raw(&x->a, tmp, (size_t)n);
	}
	const char *s = sym_table_name(x->syms, f->names[i], &len);
	r = put_name(&x->a, s, len);
	if (r < 0 || !x->o->lines || !f->lines || !f->lines[i])
		return r;
	s = sym_table_name(x->syms, f->lines[i], &len);
	if (put_raw(&x->a, " (", 2) < 0 || put_name(&x->a, s, len) < 0 || put_raw(&x->a, ")", 1))
		return -ENOMEM;
	return 0;
}

/* The line of one key, without its count, appended to the arena. */
static int build_line(struct ctx *x, const struct agg *k)
{
	const struct folded_opts *o = x->o;
	char tmp[48];
	size_t len;
	uint16_t nu = 0, nk = 0;
	struct sym_frames fr, *f = NULL;
	int n, r;

	const char *comm = capture_str(x->c, k->comm, &len);
	r = put_name(&x->a, comm ? comm : "", comm ? len : 0);
	if (r < 0)
		return r;
	if (o->tid)
		n = snprintf(tmp, sizeof(tmp), "-%" PRIu32 "/%" PRIu32, k->pid, k->tid);
	else if (o->pid)
		n = snprintf(tmp, sizeof(tmp), "-%" PRIu32, k->pid);
	else
		n = 0;
	if (n > 0 && put_raw(&x->a, tmp, (size_t)n) < 0)
		return -ENOMEM;

	const uint64_t *ips = k->stack ? capture_stack(x->c, k->stack, &nu, &nk) : NULL;
	if (!ips)
		nu = nk = 0;
	if (ips && sym_table_find(x->syms, k->pid, k->stack, &fr) && fr.nuser == nu &&
	    fr.nkernel == nk)
		f = &fr;
	for (size_t i = nu; i-- > 0;)
		if (put_raw(&x->a, ";", 1) < 0 || put_frame(x, f, i, ips[i]) < 0)
			return -ENOMEM;
	if (!o->no_kernel && nk) {
		if (nu && put_raw(&x->a, ";-", 2) < 0)
			return -ENOMEM;
		for (size_t i = (size_t)nu + nk; i-- > nu;)
			if (put_raw(&x->a, ";", 1) < 0 || put_frame(x, f, i, ips[i]) < 0)
				return -ENOMEM;
	}
	if (!k->name)
		return 0;
	/* The GPU frame: the kernel name, up to the NUL that separates the
	 * launch geometry a launch collector may have appended. */
	const char *kn = capture_str(x->c, k->name, &len);
	const char *nul = kn ? memchr(kn, '\0', len) : NULL;
	if (nul)
		len = (size_t)(nul - kn);
	if (put_raw(&x->a, ";", 1) < 0 || put_name(&x->a, kn ? kn : "", kn ? len : 0) < 0 ||
	    put_raw(&x->a, "_[G]", 4) < 0)
		return -ENOMEM;
	return 0;
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
	struct ctx x = {.c = c, .o = opts ? opts : &defaults};
	struct line *lines = NULL;
	size_t nlines = 0;
	int r = -EINVAL;

	if (!c || !fn || (x.o->npids && !x.o->pids) || (x.o->ntids && !x.o->tids) ||
	    (unsigned)x.o->weight > FOLDED_WEIGHT_GPU_TIME)
		goto out;
	const struct capture_extra *ex = capture_find_extra(c, CAPSEC_SYMBOLS);
	if (ex && sym_table_decode(ex->data, ex->len, &x.syms, NULL, 0) == 0)
		t.symbolized = true;
	r = -ENOMEM;
	if (sorted_copy(x.o->pids, x.o->npids, &x.pids) < 0 ||
	    sorted_copy(x.o->tids, x.o->ntids, &x.tids) < 0)
		goto out;
	if (x.o->comm && !(x.comm_ok = calloc((size_t)c->nstrs + 1, 1)))
		goto out;
	if (aggregate(&x, &t) < 0)
		goto out;
	lines = malloc((x.used ? x.used : 1) * sizeof(*lines));
	if (!lines)
		goto out;
	for (size_t i = 0; i < x.cap; i++) {
		if (!x.slots[i].count)
			continue;
		size_t off = x.a.len;
		if (build_line(&x, &x.slots[i]) < 0)
			goto out;
		lines[nlines++] = (struct line){off, x.a.len - off, x.slots[i].count};
	}
	qsort_r(lines, nlines, sizeof(*lines), line_cmp, x.a.p);
	r = emit(&x, lines, nlines, fn, fctx, &t);
out:
	if (totals)
		*totals = t;
	free(lines);
	free(x.a.p);
	free(x.slots);
	free(x.comm_ok);
	free(x.pids);
	free(x.tids);
	free(x.corr);
	sym_table_free(x.syms);
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
