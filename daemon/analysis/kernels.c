// SPDX-License-Identifier: MIT
/*
 * GPU kernel breakdown (as HTA's): exclusive time per combination of kernel
 * types ("COMPUTATION overlapping COMMUNICATION" ...), summed over ranks, and
 * per-kernel statistics per rank and type with HTA's "others" folding.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Exclusive time per mask of types. HTA re-sorts after adding each type
 * and gives every row's segment to its running mask; applying all changes
 * at one instant first gives the same sums, except that HTA may also list
 * a label with sum 0 from zero-length segments (tie order; never on the
 * reference traces): we list only labels with time > 0.
 *
 * Without negative durations the per-type unions are true sets and the
 * exclusive times follow from the measures of unions (gpu_unions): with
 * g(T) = |U_all| - |U_(all \ T)|, the time during which the active set is
 * a nonempty subset of T, the time during which it is exactly M is
 * Σ over T ⊆ M of (-1)^|M \ T| g(T). Otherwise the sweep below.
 */
static int masks_by_unions(struct actx *c, const struct tl_rank *r, int ntypes, int64_t sum[8],
			   bool seen[8])
{
	unsigned all = (1u << ntypes) - 1, want = 0;
	int64_t u[1u << KT_COUNT];
	uint32_t rows[KT_COUNT] = {0};
	int err;

	for (unsigned S = 1; S <= all; S++)
		want |= 1u << S;
	if ((err = gpu_unions(c, r, want, u, rows)))
		return err;
	u[0] = 0;
	for (unsigned M = 1; M <= all; M++) {
		int64_t f = 0;

		for (unsigned T = M;; T = (T - 1) & M) { /* every subset of M */
			int64_t g = u[all] - u[all & ~T];

			f += __builtin_popcount(M & ~T) & 1 ? -g : g;
			if (!T)
				break;
		}
		sum[M] += f;
		seen[M] |= f > 0;
	}
	return 0;
}

static int type_masks(struct actx *c, const struct tl_rank *r, int ntypes, int64_t sum[8],
		      bool seen[8])
{
	struct ival *v;
	struct sweep_ev *ev;
	size_t nev = 0;
	int mask = 0, err;

	if ((err = masks_by_unions(c, r, ntypes, sum, seen)) <= 0)
		return err;
	v = bigalloc_malloc((r->nby_stream + 1) * sizeof(*v));
	ev = bigalloc_malloc((2 * (size_t)r->nby_stream + 1) * sizeof(*ev));
	if (!v || !ev) {
		bigalloc_free(v);
		bigalloc_free(ev);
		return -ENOMEM;
	}
	for (int t = 0; t < ntypes; t++) {
		size_t n = 0;

		for (uint32_t i = 0; i < r->nby_stream; i++) {
			const struct tl_event *e = &r->ev[r->by_stream[i]];

			if ((int)ktype_of(c, e->name) == t)
				v[n++] = (struct ival){ev_ts(r, e), ev_end(r, e)};
		}
		n = ival_merge(v, n);
		for (size_t i = 0; i < n; i++) {
			/* delta: +bit / -bit (ntypes <= 3) */
			ev[nev++] = (struct sweep_ev){v[i].s, (int8_t)(1 << t), 0};
			ev[nev++] = (struct sweep_ev){v[i].e, (int8_t) - (1 << t), 0};
		}
	}
	sweep_sort(ev, nev);
	for (size_t i = 0; i < nev;) {
		int64_t t = ev[i].t;

		while (i < nev && ev[i].t == t)
			mask += ev[i++].delta;
		if (i < nev && mask > 0 && ev[i].t > t) {
			sum[mask & 7] += ev[i].t - t;
			seen[mask & 7] = true;
		}
	}
	bigalloc_free(v);
	bigalloc_free(ev);
	return 0;
}

struct kstat {
	const char *name;
	uint32_t name_id;
	int32_t rank;
	uint8_t type;
	size_t n;
	double sum, max, min, mean, std;
};

struct kvec {
	struct kstat *v;
	size_t n, cap;
};

static struct kstat *kvec_add(struct kvec *k)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		struct kstat *nv = realloc(k->v, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		k->v = nv;
		k->cap = cap;
	}
	memset(&k->v[k->n], 0, sizeof(k->v[0]));
	return &k->v[k->n++];
}

/* Sum descending; HTA's reverse + quicksort + reverse keeps small tie
 * groups in name order, so names break ties. */
static int by_sum_desc(const void *a, const void *b)
{
	const struct kstat *x = a, *y = b;

	if (x->sum != y->sum)
		return x->sum < y->sum ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int by_type_name_rank(const void *a, const void *b)
{
	const struct kstat *x = a, *y = b;
	int d = strcmp(ktype_name[x->type], ktype_name[y->type]);

	if (d)
		return d;
	d = strcmp(x->name, y->name);
	if (d)
		return d;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

static void stats_of(struct kstat *s, const double *v, size_t n)
{
	double ss = 0;

	s->n = n;
	s->sum = 0;
	s->max = -INFINITY;
	s->min = INFINITY;
	for (size_t i = 0; i < n; i++) {
		s->sum += v[i];
		s->max = v[i] > s->max ? v[i] : s->max;
		s->min = v[i] < s->min ? v[i] : s->min;
	}
	s->mean = s->sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - s->mean) * (v[i] - s->mean);
	s->std = n > 1 ? sqrt(ss / (double)(n - 1)) : 0; /* NaN → 0 as HTA */
}

/* Sorted by sum, the tail of one rank's and type's names past
 * num_kernels or the ratio quantile folds into "others" (6.4). */
static int fold_others(struct kvec *out, size_t first, int64_t num_kernels, double ratio,
		       int32_t rank, int type)
{
	size_t ng = out->n - first, nothers = 0, keep = 0;
	struct kstat *g = out->v + first, others = {.name = "others"};
	double cum = 0, q, *vals;

	if (ng) /* (out->v is NULL while nothing was added) */
		qsort(g, ng, sizeof(*g), by_sum_desc);
	if ((int64_t)ng <= num_kernels)
		return 0;
	if (!(vals = malloc(ng * sizeof(*vals))))
		return -ENOMEM;
	/* q = linear quantile of the running sums; everything after q, or
	 * past the first num_kernels, becomes "others" */
	for (size_t i = 0; i < ng; i++)
		vals[i] = (cum += g[i].sum);
	q = quantile_sorted(vals, ng, ratio);
	for (size_t i = 0; i < ng; i++) {
		if (vals[i] > q || (int64_t)i >= num_kernels) {
			vals[nothers++] = g[i].sum;
			continue;
		}
		/* Q8: HTA regroups on the sum column alone, so a kept name's
		 * max/min/mean become its sum and std 0. */
		g[keep] = g[i];
		g[keep].max = g[keep].min = g[keep].mean = g[keep].sum;
		g[keep].std = 0;
		keep++;
	}
	stats_of(&others, vals, nothers);
	free(vals);
	others.rank = rank;
	others.type = (uint8_t)type;
	g[keep++] = others;
	out->n = first + keep;
	return 0;
}

/* Per-name accumulators of one rank, in a table keyed by name id. */
struct nacc {
	uint32_t name; /* 0: empty slot (the empty name never gets here: 1 + id) */
	uint8_t type;
	size_t n;
	double sum, max, min, mean, ss;
};

/* key's slot in tab (cap a power of two): where it is, or the empty slot
 * where it goes. */
static uint32_t nacc_slot(const struct nacc *tab, uint32_t cap, uint32_t key)
{
	uint32_t i = key * 2654435761u & (cap - 1);

	while (tab[i].name && tab[i].name != key)
		i = (i + 1) & (cap - 1);
	return i;
}

static struct nacc *nacc_get(struct nacc **tab, uint32_t *cap, uint32_t *used, uint32_t name)
{
	uint32_t key = name + 1, i = nacc_slot(*tab, *cap, key);

	if ((*tab)[i].name)
		return &(*tab)[i];
	if (2 * (*used + 1) > *cap) { /* grow, then insert */
		uint32_t ncap = *cap * 2;
		struct nacc *nt = calloc(ncap, sizeof(*nt));

		if (!nt)
			return NULL;
		for (uint32_t j = 0; j < *cap; j++)
			if ((*tab)[j].name)
				nt[nacc_slot(nt, ncap, (*tab)[j].name)] = (*tab)[j];
		free(*tab);
		*tab = nt;
		*cap = ncap;
		i = nacc_slot(nt, ncap, key);
	}
	(*used)++;
	(*tab)[i] = (struct nacc){.name = key, .max = -INFINITY, .min = INFINITY};
	return &(*tab)[i];
}

/*
 * One rank: per kernel name of the analysed types, count / sum / max /
 * min / mean / sample std of its durations, then each type's tail folded
 * into "others". Two passes over the rows in by_stream order, one table of
 * names: each name's durations are added in the same order as the sort
 * by name (stable) that this replaced gave them, so the sums and the
 * spread are the same doubles.
 */
static int kernel_stats(struct actx *c, const struct tl_rank *r, int ntypes, int64_t num_kernels,
			double ratio, struct kvec *out)
{
	uint32_t cap = 64, used = 0;
	struct nacc *tab = calloc(cap, sizeof(*tab)), *a;
	int err = -ENOMEM;

	if (!tab)
		return -ENOMEM;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		int t;
		double v;

		if (i + PREFETCH_AHEAD < r->nby_stream)
			__builtin_prefetch(&r->ev[r->by_stream[i + PREFETCH_AHEAD]]);
		t = (int)ktype_of(c, e->name);

		if (t >= ntypes)
			continue;
		if (!(a = nacc_get(&tab, &cap, &used, e->name)))
			goto out;
		v = us(ev_dur(r, e));
		a->type = (uint8_t)t;
		a->n++;
		a->sum += v;
		a->max = v > a->max ? v : a->max;
		a->min = v < a->min ? v : a->min;
	}
	for (uint32_t j = 0; j < cap; j++)
		if (tab[j].name)
			tab[j].mean = tab[j].sum / (double)tab[j].n;
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		double d;

		if (i + PREFETCH_AHEAD < r->nby_stream)
			__builtin_prefetch(&r->ev[r->by_stream[i + PREFETCH_AHEAD]]);
		if ((int)ktype_of(c, e->name) >= ntypes)
			continue;
		a = nacc_get(&tab, &cap, &used, e->name); /* present: no growth */
		d = us(ev_dur(r, e)) - a->mean;
		a->ss += d * d;
	}
	for (int t = 0; t < ntypes; t++) {
		size_t first = out->n;

		for (uint32_t j = 0; j < cap; j++) {
			struct kstat *s;

			if (!tab[j].name || tab[j].type != t)
				continue;
			if (!(s = kvec_add(out)))
				goto out;
			a = &tab[j];
			*s = (struct kstat){.name = timeline_str(c->tl, a->name - 1, NULL),
					    .name_id = a->name - 1,
					    .rank = r->rank,
					    .type = (uint8_t)t,
					    .n = a->n,
					    .sum = a->sum,
					    .max = a->max,
					    .min = a->min,
					    .mean = a->mean,
					    /* NaN -> 0 as HTA */
					    .std = a->n > 1 ? sqrt(a->ss / (double)(a->n - 1)) : 0};
		}
		if ((err = fold_others(out, first, num_kernels, ratio, r->rank, t)) < 0)
			goto out;
	}
	err = 0;
out:
	free(tab);
	return err;
}

struct label_sum {
	int mask;
	int64_t sum;
	char label[96];
};

static int label_cmp(const void *a, const void *b)
{
	const struct label_sum *x = a, *y = b;

	if (x->sum != y->sum)
		return x->sum < y->sum ? 1 : -1;
	return strcmp(x->label, y->label);
}

static void emit(struct actx *c, cJSON *root, const int64_t sum[8], const bool seen[8],
		 const struct kvec *k)
{
	struct label_sum ls[8];
	int64_t total = 0;
	int nl = 0;
	cJSON *types = jarr(c, root, "kernel_types"), *ks = jarr(c, root, "kernels");

	for (int m = 1; m < 8; m++) {
		if (!seen[m])
			continue;
		ls[nl].mask = m;
		ls[nl].sum = sum[m];
		ls[nl].label[0] = 0;
		for (int t = 0; t < 3; t++) {
			if (!(m & (1 << t)))
				continue;
			if (ls[nl].label[0])
				strcat(ls[nl].label, " overlapping ");
			strcat(ls[nl].label, ktype_name[t]);
		}
		total += sum[m];
		nl++;
	}
	qsort(ls, nl, sizeof(ls[0]), label_cmp);
	for (int i = 0; i < nl; i++) {
		cJSON *o = cJSON_CreateObject();

		jpush(c, types, o);
		jstr(c, o, "kernel_type", ls[i].label);
		jnum(c, o, "sum_us", us(ls[i].sum));
		jnum(c, o, "percentage", total ? 100.0 * (double)ls[i].sum / (double)total : NAN);
	}
	for (size_t i = 0; i < k->n; i++) {
		const struct kstat *s = &k->v[i];
		cJSON *o = cJSON_CreateObject();

		jpush(c, ks, o);
		jstr(c, o, "name", s->name);
		jstr(c, o, "kernel_type", ktype_name[s->type]);
		jint(c, o, "rank", s->rank);
		jint(c, o, "count", (int64_t)s->n);
		jnum(c, o, "sum_us", s->sum);
		jnum(c, o, "max_us", s->max);
		jnum(c, o, "min_us", s->min);
		jnum(c, o, "mean_us", s->mean);
		jnum(c, o, "stddev_us", s->std);
	}
}

int analysis_kernels(struct actx *c, cJSON **out)
{
	int64_t sum[8] = {0}, num_kernels;
	bool seen[8] = {false}, mem;
	double ratio;
	struct kvec k = {0};
	cJSON *root = NULL;
	int err, ntypes;

	err = an_param_bool(c, "include_memory", true, &mem);
	if (!err)
		err = an_param_int(c, "num_kernels", 10, 1, 1000000, &num_kernels);
	if (!err)
		err = an_param_num(c, "duration_ratio", 0.8, 0, 1, &ratio);
	if (!err)
		err = require_gpu(c);
	if (err)
		return err;
	ntypes = mem ? 3 : 2; /* COMPUTATION, COMMUNICATION[, MEMORY]: OTHER never */
	for (uint32_t i = 0; !err && i < timeline_nranks(c->tl); i++) {
		const struct tl_rank *r = timeline_rank_at(c->tl, i);

		if (!rank_selected(c, r))
			continue;
		err = type_masks(c, r, ntypes, sum, seen);
		if (!err)
			err = kernel_stats(c, r, ntypes, num_kernels, ratio, &k);
	}
	if (!err) {
		if (k.n)
			qsort(k.v, k.n, sizeof(*k.v), by_type_name_rank);
		root = jroot(c, "kernels", NULL);
		jbool(c, root, "include_memory", mem);
		emit(c, root, sum, seen, &k);
	}
	free(k.v);
	return an_finish(c, err, root, out);
}
