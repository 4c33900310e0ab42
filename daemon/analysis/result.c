// SPDX-License-Identifier: MIT
/*
 * The analysis framework: result building. cJSON helpers that record an
 * allocation failure instead of checking each call, the root every
 * analysis starts from, and compact number arrays (ANALYSIS_COMPACT).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

cJSON *jtree_add(bool *oom, cJSON *parent, const char *key, cJSON *x, bool static_key)
{
	bool ok;

	if (!x) {
		*oom = true;
		return NULL;
	}
	if (!parent)
		return x;
	if (!key)
		ok = cJSON_AddItemToArray(parent, x);
	else if (static_key)
		ok = cJSON_AddItemToObjectCS(parent, key, x);
	else
		ok = cJSON_AddItemToObject(parent, key, x);
	if (!ok) {
		cJSON_Delete(x);
		*oom = true;
		return NULL;
	}
	return x;
}

void jtree_push(bool *oom, cJSON *arr, cJSON *item)
{
	if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
		cJSON_Delete(item);
		*oom = true;
	}
}

cJSON *jobj(struct actx *c, cJSON *parent, const char *key)
{
	return jtree_add(&c->oom, parent, key, cJSON_CreateObject(), false);
}

cJSON *jarr(struct actx *c, cJSON *parent, const char *key)
{
	return jtree_add(&c->oom, parent, key, cJSON_CreateArray(), false);
}

void jnum(struct actx *c, cJSON *o, const char *key, double v)
{
	if (o)
		jtree_add(&c->oom, o, key, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(),
			  false);
}

void jint(struct actx *c, cJSON *o, const char *key, int64_t v)
{
	jnum(c, o, key, (double)v);
}

void jstr(struct actx *c, cJSON *o, const char *key, const char *s)
{
	if (o)
		jtree_add(&c->oom, o, key, cJSON_CreateString(s), false);
}

void jbool(struct actx *c, cJSON *o, const char *key, bool v)
{
	if (o)
		jtree_add(&c->oom, o, key, cJSON_CreateBool(v), false);
}

void jpush(struct actx *c, cJSON *arr, cJSON *item)
{
	jtree_push(&c->oom, arr, item);
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
	size_t n;	 /* numbers */
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
	*b = (struct jnums){.arr = arr};
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
