/* SPDX-License-Identifier: MIT */
/*
 * JSON number parsing for the tokenizer (jsontok.c): the validating one-pass
 * parse of a number's text (num_parse), and the fast path's parse straight
 * from the input (num_fast: SSE2 digit runs + SWAR conversion). Both fill
 * struct jv's number fields the same way. Only jsontok.c includes this.
 */
#ifndef GPUPROF_IMPORT_JSONTOK_NUM_H
#define GPUPROF_IMPORT_JSONTOK_NUM_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "jsontok.h"
#include "num.h"

/*
 * Validate JSON number text and convert it in the same pass: is_float,
 * and the exact (mant, exp10) fast-path fields of struct jv.
 */
static bool num_parse(const char *s, size_t n, struct jv *v)
{
	size_t i = 0, d;
	uint64_t m = 0;
	unsigned nd = 0;
	int32_t fd = 0;
	bool exp = false;

	if (i < n && s[i] == '-')
		i++;
	v->neg = i;
	if (i >= n)
		return false;
	if (s[i] == '0') {
		i++;
		nd = 1;
	} else if (s[i] >= '1' && s[i] <= '9') {
		while (i < n && s[i] >= '0' && s[i] <= '9') {
			m = m * 10 + (uint64_t)(s[i++] - '0');
			nd++;
		}
	} else {
		return false;
	}
	if (i < n && s[i] == '.') {
		d = ++i;
		while (i < n && s[i] >= '0' && s[i] <= '9') {
			m = m * 10 + (uint64_t)(s[i++] - '0');
			nd++;
		}
		if (i == d)
			return false;
		fd = (int32_t)(i - d);
		v->is_float = true;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		d = i;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == d)
			return false;
		v->is_float = exp = true;
	}
	/* m wrapped when nd > 19: then simple is false and m is unused */
	v->simple = !exp && nd <= 19;
	v->ndig = (uint8_t)(nd < 255 ? nd : 255);
	v->mant = m;
	v->exp10 = -fd;
	return i == n;
}

#if defined(__SSE2__)
/* Count of ASCII digits at q, 0-16 (16 bytes readable). */
static inline unsigned digit_run(const char *q)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
	__m128i d = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
				  _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));

	return (unsigned)__builtin_ctz(~(unsigned)_mm_movemask_epi8(d) | 0x10000u);
}

/* Value of the n (1-8) digits at q (8 bytes readable), without a loop:
 * the digits are placed as the low end of an 8-digit number and combined
 * pairwise (SWAR). */
static inline uint64_t digits8(const char *q, unsigned n)
{
	uint64_t w, keep = n == 8 ? ~0ull : (1ull << (8 * n)) - 1;

	memcpy(&w, q, 8);
	w = (w & keep) - (0x3030303030303030ull & keep);
	w <<= 8 * (8 - n);
	w = w * 10 + (w >> 8);
	return (((w & 0x000000ff000000ffull) * 0x000f424000000064ull) +
		(((w >> 16) & 0x000000ff000000ffull) * 0x0000271000000001ull)) >>
	       32;
}

/* Value of the n (1-16) digits at q (16 bytes readable). */
static inline uint64_t digits16(const char *q, unsigned n)
{
	return n <= 8 ? digits8(q, n) : digits8(q, n - 8) * 100000000ull + digits8(q + n - 8, 8);
}

/*
 * The common numbers of a trace (integers, decimals without exponent, at
 * most 16 digits before and after the point) parsed in one branch-light
 * pass: *v as num_parse() fills it, and the end of the number. NULL when
 * this cannot decide (near the chunk end, longer digit runs, an exponent,
 * a leading zero followed by digits, a number byte right after): the
 * caller then takes the byte-class scan + num_parse() path, which gives
 * the results and errors for those.
 */
static inline const char *num_fast(const char *p, const char *end, struct jv *v)
{
	const char *q = p;
	unsigned n, nd;
	uint64_t m;

	if (end - p < 64)
		return NULL;
	q += *q == '-';
	n = digit_run(q);
	if (!n || n == 16 || (n > 1 && *q == '0'))
		return NULL;
	m = digits16(q, n);
	nd = n;
	q += n;
	v->exp10 = 0;
	if (*q == '.') {
		n = digit_run(++q);
		if (!n || n == 16)
			return NULL;
		m = m * num_pow10[n] + digits16(q, n); /* wraps only past 19 digits: unused then */
		nd += n;
		q += n;
		v->exp10 = -(int32_t)n;
		v->is_float = true;
	}
	/* an exponent, or not a valid number ("1.2.3", "1-2"): the scan path
	 * takes the whole byte run; a digit cannot follow a run of < 16 */
	if (*q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-')
		return NULL;
	v->type = JV_NUMBER;
	v->s = p;
	v->n = (size_t)(q - p);
	v->neg = *p == '-';
	v->simple = nd <= 19;
	v->ndig = (uint8_t)nd;
	v->mant = m;
	return q;
}
#endif

#endif /* GPUPROF_IMPORT_JSONTOK_NUM_H */
