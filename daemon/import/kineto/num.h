/* SPDX-License-Identifier: MIT */
/* Number conversions for the importer (see num.c). Inputs are JSON number
 * text already validated by the tokenizer. */
#ifndef GPUPROF_IMPORT_NUM_H
#define GPUPROF_IMPORT_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 10^0 .. 10^19: every power of ten a uint64_t holds. */
extern const uint64_t num_pow10[20];

/* value * 10^scale, exactly, rounded half-even to an integer.
 * 0, -ERANGE (does not fit int64) or -EINVAL. */
int num_scaled_i64(const char *s, size_t n, int scale, int64_t *out);
/* Integer value (fractions rounded half-even). */
int num_to_i64(const char *s, size_t n, int64_t *out);
/* Decimal integer inside a JSON string; -EINVAL when it is not one. */
int num_str_to_i64(const char *s, size_t n, int64_t *out);
/* Correctly rounded double, like Python's float(). */
double num_to_double(const char *s, size_t n);
/* µs text → exact ns and Python's double, one parse. 0, -ERANGE, -EINVAL. */
int num_time(const char *s, size_t n, int64_t *ns, double *d);
/* num_time() for text the tokenizer already split into an exact
 * (neg, mant, exp10) with at most 19 digits and no exponent (struct jv's
 * `simple`); s/n is still needed for the rare strtod() fallback. */
int num_time_dec(bool neg, uint64_t mant, int32_t exp10, const char *s, size_t n, int64_t *ns,
		 double *d);
/* Truncating conversion; false when out of int64 range or NaN. */
bool dbl_to_i64(double v, int64_t *out);

#endif /* GPUPROF_IMPORT_NUM_H */
