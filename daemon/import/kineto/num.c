// SPDX-License-Identifier: MIT
/*
 * Number conversions for the importer. Trace times are decimal µs text;
 * ts_ns is computed exactly from the digits (no binary floating point),
 * while the HTA-parity values need the same double Python's float() gives:
 * correctly rounded, via a Clinger fast path or strtod() otherwise.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"

struct dec {
	bool neg;
	uint64_t mant; /* first 19 significant digits */
	int32_t exp10; /* value = mant * 10^exp10 (before dropped digits) */
	bool inexact;  /* more than 19 significant digits: dropped ones non-zero */
};

/* Parse validated JSON number text (jsontok.c checked the grammar). */
static int dec_parse(const char *s, size_t n, struct dec *d)
{
	size_t i = 0;
	int digits = 0;
	int64_t e = 0;

	memset(d, 0, sizeof(*d));
	if (i < n && s[i] == '-') {
		d->neg = true;
		i++;
	}
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		if (digits < 19) {
			d->mant = d->mant * 10 + (uint64_t)(s[i] - '0');
			if (d->mant)
				digits++;
		} else {
			e++;
			if (s[i] != '0')
				d->inexact = true;
		}
	}
	if (i < n && s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			if (digits < 19) {
				d->mant = d->mant * 10 + (uint64_t)(s[i] - '0');
				e--;
				if (d->mant)
					digits++;
			} else if (s[i] != '0') {
				d->inexact = true;
			}
		}
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		bool eneg = false;
		int64_t x = 0;

		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			eneg = s[i++] == '-';
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			if (x < 100000)
				x = x * 10 + (s[i] - '0');
		e += eneg ? -x : x;
	}
	if (i != n)
		return -EINVAL;
	if (e > 100000)
		e = 100000;
	if (e < -100000)
		e = -100000;
	d->exp10 = (int32_t)e;
	return 0;
}

/* The one table of them: the tokenizer's fast path scales by it too. */
const uint64_t num_pow10[20] = {
	1ull,
	10ull,
	100ull,
	1000ull,
	10000ull,
	100000ull,
	1000000ull,
	10000000ull,
	100000000ull,
	1000000000ull,
	10000000000ull,
	100000000000ull,
	1000000000000ull,
	10000000000000ull,
	100000000000000ull,
	1000000000000000ull,
	10000000000000000ull,
	100000000000000000ull,
	1000000000000000000ull,
	10000000000000000000ull,
};

static int dec_scaled(const struct dec *dp, int scale, int64_t *out)
{
	struct dec d = *dp;
	int32_t e;
	uint64_t v;

	e = d.exp10 + scale;
	if (!d.mant) {
		*out = 0;
		return 0;
	}
	if (e >= 0) {
		if (e > 19 || d.mant > UINT64_MAX / num_pow10[e])
			return -ERANGE;
		v = d.mant * num_pow10[e];
	} else {
		uint64_t q, r, half;

		if (e < -19) {
			*out = 0;
			return 0;
		}
		q = d.mant / num_pow10[-e];
		r = d.mant % num_pow10[-e];
		half = num_pow10[-e] / 2;
		/* round half to even; dropped non-zero digits break ties upward */
		if (r > half || (r == half && (d.inexact || (q & 1))))
			q++;
		v = q;
	}
	if (v > (uint64_t)INT64_MAX + d.neg)
		return -ERANGE;
	*out = d.neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

int num_scaled_i64(const char *s, size_t n, int scale, int64_t *out)
{
	struct dec d;

	if (dec_parse(s, n, &d) < 0)
		return -EINVAL;
	return dec_scaled(&d, scale, out);
}

/* Clinger's exact double powers go to 10^22, past what num_pow10 holds. */
static const double pow10d[] = {
	1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,  1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static double dec_double(const struct dec *d, const char *s, size_t n)
{
	char tmp[400];

	if (!d->inexact && d->mant < (1ull << 53) && d->exp10 >= -22 && d->exp10 <= 22) {
		/* Clinger: both operands exact, one correctly rounded op. */
		double v = (double)d->mant;

		v = d->exp10 < 0 ? v / pow10d[-d->exp10] : v * pow10d[d->exp10];
		return d->neg ? -v : v;
	}
	if (n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	return strtod(tmp, NULL);
}

double num_to_double(const char *s, size_t n)
{
	struct dec d;

	if (dec_parse(s, n, &d) < 0)
		return NAN;
	return dec_double(&d, s, n);
}

int num_time(const char *s, size_t n, int64_t *ns, double *d)
{
	struct dec dd;
	int err;

	if (dec_parse(s, n, &dd) < 0)
		return -EINVAL;
	if ((err = dec_scaled(&dd, 3, ns)) < 0)
		return err;
	*d = dec_double(&dd, s, n);
	return 0;
}

int num_time_dec(bool neg, uint64_t mant, int32_t exp10, const char *s, size_t n, int64_t *ns,
		 double *d)
{
	/* What dec_parse() gives for such text: every digit accumulated,
	 * one exponent step per fraction digit, nothing dropped. */
	struct dec dd = {.neg = neg, .mant = mant, .exp10 = exp10};
	int err;

	if ((err = dec_scaled(&dd, 3, ns)) < 0)
		return err;
	*d = dec_double(&dd, s, n);
	return 0;
}

int num_to_i64(const char *s, size_t n, int64_t *out)
{
	/* fast path: short plain integers (pids, ids, correlations) */
	if (n && n < 19) {
		size_t i = s[0] == '-';
		int64_t v = 0;

		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			v = v * 10 + (s[i] - '0');
		if (i == n && n > (size_t)(s[0] == '-')) {
			*out = s[0] == '-' ? -v : v;
			return 0;
		}
	}
	return num_scaled_i64(s, n, 0, out);
}

/* A JSON string holding a decimal integer ("7", "-1"): pandas'
 * to_numeric accepts these; "0x0" and anything else are not numbers. */
int num_str_to_i64(const char *s, size_t n, int64_t *out)
{
	size_t i = 0;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (i < n && s[i] == '+')
		i++;
	if (i >= n)
		return -EINVAL;
	for (size_t j = i + (s[i] == '-'); j < n; j++)
		if (s[j] < '0' || s[j] > '9')
			return -EINVAL;
	if (n - i == 1 && s[i] == '-')
		return -EINVAL;
	return num_to_i64(s + i, n - i, out);
}

bool dbl_to_i64(double v, int64_t *out)
{
	if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
		return false;
	*out = (int64_t)v;
	return true;
}
