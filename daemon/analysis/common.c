// SPDX-License-Identifier: MIT
/*
 * Helpers shared by the analyses: kernel types, interval union, statistics,
 * params and JSON building.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const ktype_name[KT_COUNT] = { "COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER" };

static bool starts(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/*
 * HTA's kernel types: its anchored re.match rules, in order. Note that "hipMemcpy"
 * is COMMUNICATION (the ^hip rule comes first), and that a compute kernel
 * whose name contains "Sync" or "dma" is OTHER: both copied on purpose.
 */
static enum ktype classify(const char *n)
{
	static const char *const not_comp_prefix[] = {
		"nccl", "Stream Wait Event", "runFunction", "hip", "job_exe", "packet", "pe_exe",
		"cpum_exe_subgraph", "hccl", "collective_subgraph_execution", NULL
	};
	static const char *const not_comp_sub[] = { "Memcpy", "Memset", "dma", "Sync", NULL };

	if (starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || strstr(n, "ncclKernel"))
		return KT_COMMUNICATION;
	if (starts(n, "Memcpy") || starts(n, "Memset") || starts(n, "hipMemcpy") ||
	    starts(n, "hipMemset") || starts(n, "dma"))
		return KT_MEMORY;
	for (int i = 0; not_comp_prefix[i]; i++)
		if (starts(n, not_comp_prefix[i]))
			return KT_OTHER;
	for (int i = 0; not_comp_sub[i]; i++)
		if (strstr(n, not_comp_sub[i]))
			return KT_OTHER;
	if (starts(n, "cuda") && strstr(n + 4, "LaunchKernel"))
		return KT_OTHER;
	return KT_COMPUTATION;
}

enum ktype ktype_of(struct actx *c, uint32_t name)
{
	if (!c->ktype) {
		c->nstrs = timeline_nstrs(c->tl);
		c->ktype = calloc(c->nstrs ? c->nstrs : 1, 1);
		if (!c->ktype)
			return classify(timeline_str(c->tl, name, NULL));
	}
	if (name >= c->nstrs)
		return classify(timeline_str(c->tl, name, NULL));
	if (!c->ktype[name])
		c->ktype[name] = (uint8_t)(classify(timeline_str(c->tl, name, NULL)) + 1);
	return (enum ktype)(c->ktype[name] - 1);
}

bool rank_selected(const struct actx *c, const struct tl_rank *r)
{
	return !c->has_rank || r->rank == c->rank;
}

int require_gpu(struct actx *c)
{
	uint32_t n = timeline_nranks(c->tl);

	for (uint32_t i = 0; i < n; i++) {
		const struct tl_rank *r = timeline_rank_at(c->tl, i);

		if (rank_selected(c, r) && rank_has_gpu(r))
			return 0;
	}
	return aerr(c, -ENODATA, "no GPU activity in this capture");
}

int64_t ev_partner(const struct tl_rank *r, const struct tl_event *e)
{
	int64_t ic = tl_ev_index_corr(e);
	uint32_t lo = 0, hi = r->nev;

	if (ic < 0)
		return -1;
	if (e->link >= 0 && r->ev[e->link].index == ic)
		return e->link;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->ev[mid].index < ic)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nev && r->ev[lo].index == ic ? (int64_t)lo : -1;
}

int aerr(struct actx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* ---- params --------------------------------------------------------- */

int an_param_keys(struct actx *c, const char *const *allowed)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, c->params)
	{
		bool ok = false;

		for (int i = 0; allowed[i]; i++)
			ok |= strcmp(it->string, allowed[i]) == 0;
		if (!ok)
			return aerr(c, -EINVAL, "unknown parameter '%s'", it->string);
	}
	return 0;
}

int an_param_num(struct actx *c, const char *key, double def, double lo, double hi, double *out)
{
	const cJSON *v = c->params ? cJSON_GetObjectItemCaseSensitive(c->params, key) : NULL;

	*out = def;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return aerr(c, -EINVAL, "parameter '%s' must be a number", key);
	if (v->valuedouble < lo || v->valuedouble > hi)
		return aerr(c, -EINVAL, "parameter '%s' = %g is out of range [%g, %g]", key,
			    v->valuedouble, lo, hi);
	*out = v->valuedouble;
	return 0;
}

int an_param_int(struct actx *c, const char *key, int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
	const cJSON *v = c->params ? cJSON_GetObjectItemCaseSensitive(c->params, key) : NULL;

	*out = def;
	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
		return aerr(c, -EINVAL, "parameter '%s' must be an integer", key);
	if (v->valuedouble < (double)lo || v->valuedouble > (double)hi)
		return aerr(c, -EINVAL, "parameter '%s' = %.0f is out of range [%lld, %lld]", key,
			    v->valuedouble, (long long)lo, (long long)hi);
	*out = (int64_t)v->valuedouble;
	return 0;
}

int an_param_bool(struct actx *c, const char *key, bool def, bool *out)
{
	const cJSON *v = c->params ? cJSON_GetObjectItemCaseSensitive(c->params, key) : NULL;

	*out = def;
	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return aerr(c, -EINVAL, "parameter '%s' must be true or false", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

int an_param_str(struct actx *c, const char *key, const char **out)
{
	const cJSON *v = c->params ? cJSON_GetObjectItemCaseSensitive(c->params, key) : NULL;

	if (!v)
		return aerr(c, -EINVAL, "parameter '%s' is required", key);
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return aerr(c, -EINVAL, "parameter '%s' must be a non-empty string", key);
	*out = v->valuestring;
	return 0;
}

/* ---- intervals ------------------------------------------------------ */

int gpu_merge_init(struct gpu_merge *m, const struct tl_rank *r)
{
	*m = (struct gpu_merge){ .r = r };
	if (!r->nstreams)
		return 0;
	if (!(m->h = malloc(r->nstreams * sizeof(*m->h))))
		return -ENOMEM;
	for (uint32_t j = 0; j < r->nstreams; j++) {
		const struct tl_stream *st = &r->streams[j];
		struct gm_head x;
		uint32_t i;

		if (!st->count)
			continue;
		x = (struct gm_head){ ev_ts(r, &r->ev[r->by_stream[st->first]]), j, st->first,
				      st->first + st->count };
		/* sift up */
		for (i = m->n++; i > 0; i = (i - 1) / 2) {
			struct gm_head *p = &m->h[(i - 1) / 2];

			if (gm_before(p, &x))
				break;
			m->h[i] = *p;
		}
		m->h[i] = x;
	}
	return 0;
}

void gpu_merge_free(struct gpu_merge *m)
{
	free(m->h);
	m->h = NULL;
	m->n = 0;
}

int gpu_unions(struct actx *c, const struct tl_rank *r, uint32_t want, int64_t u[1u << KT_COUNT],
	       uint32_t rows[KT_COUNT])
{
	enum { NSETS = 1u << KT_COUNT };
	struct ival_acc acc[NSETS] = { 0 };
	uint8_t sets[KT_COUNT][NSETS], nsets[KT_COUNT] = { 0 };
	struct gpu_merge m;
	const struct tl_event *e;
	bool bad = false;

	for (unsigned S = 1; S < NSETS; S++)
		for (int t = 0; t < KT_COUNT; t++)
			if ((want >> S & 1) && (S >> t & 1))
				sets[t][nsets[t]++] = (uint8_t)S;
	if (gpu_merge_init(&m, r) < 0)
		return -ENOMEM;
	while ((e = gpu_merge_next(&m))) {
		enum ktype t = ktype_of(c, e->name);
		int64_t s, d;

		if (!nsets[t])
			continue;
		s = ev_ts(r, e);
		d = ev_dur(r, e);
		if ((bad = d < 0 || m.unsorted))
			break;
		rows[t]++;
		for (unsigned i = 0; i < nsets[t]; i++)
			ival_acc_add(&acc[sets[t][i]], s, s + d);
	}
	bad |= m.unsorted;
	gpu_merge_free(&m);
	if (bad)
		return 1;
	for (unsigned S = 0; S < NSETS; S++)
		u[S] = ival_acc_total(&acc[S]);
	return 0;
}

size_t ival_merge(struct ival *v, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	ival_sort(v, n);
	/* A row opens a new group only when it starts after every earlier end:
	 * touching intervals merge, and the result ignores tie order (4.12). */
	for (size_t i = 1; i < n; i++) {
		if (v[i].s <= v[k].e) {
			if (v[i].e > v[k].e)
				v[k].e = v[i].e;
		} else {
			v[++k] = v[i];
		}
	}
	return k + 1;
}

int64_t ival_total(const struct ival *v, size_t n)
{
	int64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += v[i].e - v[i].s;
	return t;
}

int64_t ival_overlap(const struct ival *a, size_t na, const struct ival *b, size_t nb)
{
	size_t i = 0, j = 0;
	int64_t t = 0;

	while (i < na && j < nb) {
		int64_t s = a[i].s > b[j].s ? a[i].s : b[j].s;
		int64_t e = a[i].e < b[j].e ? a[i].e : b[j].e;

		if (e > s)
			t += e - s;
		if (a[i].e < b[j].e)
			i++;
		else
			j++;
	}
	return t;
}

/* ---- statistics ----------------------------------------------------- */

/* numpy 1.24 _lerp: from the upper end when frac >= 0.5, so the last bits
 * match pandas' describe() */
static double np_lerp(double a, double b, double frac)
{
	if (frac >= 0.5)
		return b - (b - a) * (1.0 - frac);
	return a + (b - a) * frac;
}

/* Where the linear quantile q of n sorted values falls: v[*lo], frac. */
static double quantile_pos(size_t n, double q, size_t *lo)
{
	double pos = q * (double)(n - 1);

	*lo = (size_t)floor(pos);
	return pos - (double)*lo;
}

double quantile_sorted(const double *v, size_t n, double q)
{
	double frac;
	size_t lo;

	if (!n)
		return NAN;
	frac = quantile_pos(n, q, &lo);
	if (lo + 1 >= n)
		return v[n - 1];
	return np_lerp(v[lo], v[lo + 1], frac);
}

/* The k-th smallest (from 0) of the values counted in cnt[0..top], the
 * value x counted in cnt[x - lo]. */
static double kth_counted(const uint32_t *cnt, uint32_t top, int64_t lo, size_t k)
{
	size_t seen = 0;

	for (uint32_t x = 0; x < top; x++)
		if ((seen += cnt[x]) > k)
			return (double)((int64_t)x + lo);
	return (double)((int64_t)top + lo);
}

/*
 * Order statistics of whole numbers that span fewer than max(n, 65536)
 * values (queue lengths: millions of them on a large trace, negative
 * where a correlation has more GPU rows than launches, in the hundred
 * thousands where GPU rows never start) from a histogram, instead of
 * sorting v. The same doubles as quantile_sorted() of the sorted values.
 * false (s untouched): some value is not such a number (or is -0), the
 * span is wider, or too few values to be worth it.
 */
static bool dstats_counted(const double *v, size_t n, struct dstats *s)
{
	static const double qs[3] = { 0.25, 0.5, 0.75 };
	double *out[3] = { &s->q25, &s->q50, &s->q75 };
	/* a histogram no longer than the values (4 bytes a slot, scanned
	 * six times), at least 65536 slots */
	int64_t lo = INT64_MAX, hi = INT64_MIN, span = n > 65536 ? (int64_t)n : 65536;
	uint32_t top, *cnt;

	if (n < 4096)
		return false;
	for (size_t i = 0; i < n; i++) {
		int64_t x;

		if (!(v[i] > -2147483648.0 && v[i] < 2147483648.0) ||
		    v[i] != (double)(x = (int64_t)v[i]) || (v[i] == 0 && signbit(v[i])))
			return false;
		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
		if (hi - lo >= span)
			return false;
	}
	top = (uint32_t)(hi - lo);
	if (!(cnt = calloc((size_t)top + 1, sizeof(*cnt))))
		return false;
	for (size_t i = 0; i < n; i++)
		cnt[(int64_t)v[i] - lo]++;
	s->min = (double)lo;
	s->max = (double)hi;
	for (int j = 0; j < 3; j++) {
		size_t k;
		double frac = quantile_pos(n, qs[j], &k);

		*out[j] = k + 1 >= n ? s->max :
				       np_lerp(kth_counted(cnt, top, lo, k),
					       kth_counted(cnt, top, lo, k + 1), frac);
	}
	free(cnt);
	return true;
}

void dstats_compute(double *v, size_t n, struct dstats *s)
{
	double sum = 0, ss = 0;

	s->count = n;
	s->mean = s->std = s->min = s->q25 = s->q50 = s->q75 = s->max = NAN;
	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	s->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - s->mean) * (v[i] - s->mean);
	if (n > 1)
		s->std = sqrt(ss / (double)(n - 1));
	if (dstats_counted(v, n, s))
		return;
	dstats_sort(v, n);
	s->min = v[0];
	s->max = v[n - 1];
	s->q25 = quantile_sorted(v, n, 0.25);
	s->q50 = quantile_sorted(v, n, 0.5);
	s->q75 = quantile_sorted(v, n, 0.75);
}

void dstats_json(struct actx *c, cJSON *o, const struct dstats *s, const char *suffix)
{
	static const char *const k[] = { "mean", "std", "min", "p25", "p50", "p75", "max" };
	const double v[] = { s->mean, s->std, s->min, s->q25, s->q50, s->q75, s->max };
	char key[32];

	jint(c, o, "count", (int64_t)s->count);
	for (int i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "%s%s", k[i], suffix);
		jnum(c, o, key, v[i]);
	}
}

/* ---- JSON ----------------------------------------------------------- */

static cJSON *track(struct actx *c, cJSON *x)
{
	if (!x)
		c->oom = true;
	return x;
}

cJSON *jobj(struct actx *c, cJSON *parent, const char *key)
{
	cJSON *o = track(c, cJSON_CreateObject());

	if (o && parent && !cJSON_AddItemToObject(parent, key, o)) {
		cJSON_Delete(o);
		c->oom = true;
		return NULL;
	}
	return o;
}

cJSON *jarr(struct actx *c, cJSON *parent, const char *key)
{
	cJSON *a = track(c, cJSON_CreateArray());

	if (a && parent && !cJSON_AddItemToObject(parent, key, a)) {
		cJSON_Delete(a);
		c->oom = true;
		return NULL;
	}
	return a;
}

void jnum(struct actx *c, cJSON *o, const char *key, double v)
{
	if (!o)
		return;
	if (!isfinite(v))
		track(c, cJSON_AddNullToObject(o, key));
	else
		track(c, cJSON_AddNumberToObject(o, key, v));
}

void jint(struct actx *c, cJSON *o, const char *key, int64_t v)
{
	jnum(c, o, key, (double)v);
}

void jstr(struct actx *c, cJSON *o, const char *key, const char *s)
{
	if (o)
		track(c, cJSON_AddStringToObject(o, key, s));
}

void jbool(struct actx *c, cJSON *o, const char *key, bool v)
{
	if (o)
		track(c, cJSON_AddBoolToObject(o, key, v));
}

void jpush(struct actx *c, cJSON *arr, cJSON *item)
{
	if (!item) {
		c->oom = true;
		return;
	}
	if (!arr || !cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		c->oom = true;
	}
}

/*
 * One compact array's JSON text, written as its numbers are pushed: "["
 * and the numbers with their commas; jnums_finish() closes it. Sized for
 * the usual text, not the longest: most numbers are at most 11 bytes
 * (whole µs with 3 decimals), a longer one grows the buffer. (The
 * numbers were first collected as doubles and printed at the end: 8 more
 * bytes a number of fresh memory in every call, and a second pass.)
 */
#define JNUM_AVG 12
#define JNUM_MAX 34 /* jfmt_num's 31 + ',' + ']' + NUL */

struct jnums {
	cJSON *arr;
	char *txt;
	size_t len, cap; /* bytes */
	size_t n; /* numbers */
};

/* The buffer collecting arr's numbers (made on first use), or NULL. */
static struct jnums *nums_of(struct actx *c, cJSON *arr)
{
	struct jnums *b;

	/* an array node's valueint (unused by cJSON for arrays) holds its
	 * buffer's index + 1: launch and queue push to several arrays in
	 * turn, each push found without a scan */
	if (arr->valueint > 0 && (uint32_t)arr->valueint <= c->nnums &&
	    c->nums[arr->valueint - 1].arr == arr)
		return &c->nums[arr->valueint - 1];
	for (uint32_t i = c->nnums; i-- > 0;)
		if (c->nums[i].arr == arr) {
			arr->valueint = (int)i + 1;
			return &c->nums[i];
		}
	if (c->nnums == c->nums_cap) {
		uint32_t cap = c->nums_cap ? c->nums_cap * 2 : 8;
		struct jnums *n = realloc(c->nums, cap * sizeof(*n));

		if (!n)
			return NULL;
		c->nums = n;
		c->nums_cap = cap;
	}
	b = &c->nums[c->nnums];
	*b = (struct jnums){ .arr = arr };
	arr->valueint = (int)++c->nnums;
	return b;
}

/* Room in b's text for `more` numbers of the usual length and one of the
 * longest; false: OOM. */
static bool nums_room(struct jnums *b, size_t more)
{
	size_t need = b->len + more * JNUM_AVG + 2 * JNUM_MAX, cap;
	char *t;

	if (need <= b->cap)
		return true;
	cap = b->cap ? b->cap + b->cap / 2 : 0;
	if (cap < need)
		cap = need;
	if (!(t = realloc(b->txt, cap)))
		return false;
	if (!b->txt)
		t[b->len++] = '[';
	b->txt = t;
	b->cap = cap;
	return true;
}

void jnums_reserve(struct actx *c, cJSON *arr, size_t n)
{
	struct jnums *b;

	if (!c->compact || !arr)
		return;
	if (!(b = nums_of(c, arr)) || !nums_room(b, n))
		c->oom = true;
}

void jpush_num(struct actx *c, cJSON *arr, double v)
{
	struct jnums *b;

	if (!c->compact || !arr) {
		jpush(c, arr, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
		return;
	}
	if (!(b = nums_of(c, arr))) {
		c->oom = true;
		return;
	}
	if (b->cap - b->len < JNUM_MAX && !nums_room(b, 64)) {
		c->oom = true;
		return;
	}
	if (b->n++)
		b->txt[b->len++] = ',';
	b->len += jfmt_num(v, b->txt + b->len);
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
				     "25262728293031323334353637383940414243444546474849"
				     "50515253545556575859606162636465666768697071727374"
				     "75767778798081828384858687888990919293949596979899";

/* Decimal digits of x. */
static unsigned ndigits(uint64_t x)
{
	unsigned n = 1;

	while (x >= 100) {
		x /= 100;
		n += 2;
	}
	return n + (x >= 10);
}

/* x's digits at out (no NUL); returns how many. Written from the last
 * digit back, two per division (the queue series and the per-launch
 * columns print millions of numbers), straight into place: a copy of a
 * variable length was a libc call per number, 12 % of the queue call. */
static size_t utoa(uint64_t x, char *out)
{
	size_t n = ndigits(x);
	char *end = out + n;

	while (x >= 100) {
		uint64_t q = x / 100;

		end -= 2;
		memcpy(end, digit_pairs + 2 * (x - 100 * q), 2);
		x = q;
	}
	if (x >= 10)
		memcpy(end - 2, digit_pairs + 2 * x, 2);
	else
		end[-1] = (char)('0' + x);
	return n;
}

size_t jfmt_num(double v, char *out)
{
	size_t n = 0;

	if (!isfinite(v)) {
		memcpy(out, "null", 5);
		return 4;
	}
	/* whole numbers and whole ns in µs (x.yyy): exact decimal text,
	 * which parses back to the nearest double: v itself, checked */
	if (fabs(v) < 1e12 && (double)(int64_t)v == v) { /* whole: no division */
		int64_t iv = (int64_t)v;

		if (iv < 0)
			out[n++] = '-';
		n += utoa(iv < 0 ? (uint64_t)-iv : (uint64_t)iv, out + n);
		out[n] = '\0';
		return n;
	}
	if (fabs(v) < 1e12) {
		double a = fabs(v) * 1000;
		uint64_t m = (uint64_t)(a + 0.5), ip, f; /* llround(a): a < 2^52 */

		if ((double)m / 1000 == fabs(v)) {
			if (v < 0)
				out[n++] = '-';
			ip = m / 1000;
			f = m - ip * 1000;
			n += utoa(ip, out + n);
			if (f) { /* up to 3 decimals, no trailing zeros */
				out[n++] = '.';
				out[n++] = (char)('0' + f / 100);
				if ((f %= 100)) {
					out[n++] = (char)('0' + f / 10);
					if (f % 10)
						out[n++] = (char)('0' + f % 10);
				}
			}
			out[n] = '\0';
			return n;
		}
	}
	return (size_t)snprintf(out, 32, "%.17g", v);
}

void jnums_finish(struct actx *c, bool ok)
{
	for (uint32_t i = 0; i < c->nnums; i++) {
		struct jnums *b = &c->nums[i];

		if (ok && b->txt && b->arr && cJSON_IsArray(b->arr) && !b->arr->child) {
			char *t;

			b->txt[b->len++] = ']'; /* nums_room() kept JNUM_MAX free */
			b->txt[b->len] = '\0';
			/* give back the room left */
			if (b->len + 1 < b->cap && (t = realloc(b->txt, b->len + 1)))
				b->txt = t;
			b->arr->type = cJSON_Raw;
			b->arr->valuestring = b->txt;
			b->txt = NULL;
		}
		free(b->txt);
	}
	free(c->nums);
	c->nums = NULL;
	c->nnums = c->nums_cap = 0;
}

cJSON *jroot(struct actx *c, const char *name, cJSON **ranks)
{
	cJSON *root = jobj(c, NULL, NULL);

	jstr(c, root, "analysis", name);
	jstr(c, root, "unit", "us");
	if (ranks)
		*ranks = jarr(c, root, "ranks");
	return root;
}
