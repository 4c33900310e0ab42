/* SPDX-License-Identifier: MIT */
#ifndef GPUPROF_JSON_UTIL_H
#define GPUPROF_JSON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/*
 * Add a 64-bit integer exactly. cJSON keeps numbers as doubles, which round
 * above 2^53 (wall-clock nanoseconds are ~2^60): from there the value is a
 * raw JSON integer literal; below, a number node that json_reply_normalize()
 * prints as an integer (cJSON alone would print 10^15 and up in exponent
 * form). Use these for every integer a reply carries (ids, ns, bytes).
 */
cJSON *json_add_u64(cJSON *obj, const char *key, uint64_t v);
cJSON *json_add_i64(cJSON *obj, const char *key, int64_t v);

/*
 * Make a reply tree printable as exact, valid UTF-8 JSON, in place, just
 * before it is printed: every integral number outside int range becomes a
 * raw integer literal (never "1e+15"), every string and key holding bytes
 * that are not UTF-8 (process names from /proc, names from imported traces)
 * gets them replaced by U+FFFD. False when memory ran out (the tree is
 * still valid, partly normalized).
 */
bool json_reply_normalize(cJSON *root);

bool json_utf8_valid(const char *s, size_t len);

#endif
