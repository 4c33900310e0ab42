// SPDX-License-Identifier: MIT
#include "json.h"
#include "utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* cJSON prints a number that does not fit an int with "%1.15g" (or
 * "%1.17g"), so 4458676416789000 leaves as "4.458676416789e+15": valid JSON,
 * but a reader that parses it as an integer fails, and above 2^53 the digits
 * are not the ones meant. Every integer therefore leaves as a raw literal. */
static cJSON *raw_int(int64_t v, bool neg, uint64_t u)
{
	char buf[24];
	if (neg)
		snprintf(buf, sizeof(buf), "%" PRId64, v);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64, u);
	return cJSON_CreateRaw(buf);
}

cJSON *json_add_u64(cJSON *obj, const char *key, uint64_t v)
{
	/* a number node where a double holds it exactly, so code that reads
	 * the tree back still can; json_reply_normalize() prints it exactly */
	if (v < (1ull << 53))
		return cJSON_AddNumberToObject(obj, key, (double)v);
	cJSON *n = raw_int(0, false, v);
	if (n && !cJSON_AddItemToObject(obj, key, n)) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}

cJSON *json_add_i64(cJSON *obj, const char *key, int64_t v)
{
	if (v >= 0)
		return json_add_u64(obj, key, (uint64_t)v);
	if (v > -(1ll << 53))
		return cJSON_AddNumberToObject(obj, key, (double)v);
	cJSON *n = raw_int(v, true, 0);
	if (n && !cJSON_AddItemToObject(obj, key, n)) {
		cJSON_Delete(n);
		return NULL;
	}
	return n;
}

bool json_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_char(p + i, len - i, NULL);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

/* A copy of s with every byte that is not part of valid UTF-8 replaced by
 * U+FFFD; NULL on no memory. */
static char *utf8_fix(const char *s)
{
	size_t len = strlen(s);
	char *o = cJSON_malloc(len * 3 + 1);
	if (!o)
		return NULL;
	const unsigned char *p = (const unsigned char *)s;
	size_t k = 0;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_char(p + i, len - i, NULL);
		if (n) {
			memcpy(o + k, p + i, n);
			k += n, i += n;
		} else {
			memcpy(o + k, "\xef\xbf\xbd", 3);
			k += 3, i++;
		}
	}
	o[k] = '\0';
	return o;
}

/* Replace *sp (owned by cJSON) by its repaired copy; false on no memory. */
static bool fix_str(char **sp)
{
	if (!*sp || json_utf8_valid(*sp, strlen(*sp)))
		return true;
	char *f = utf8_fix(*sp);
	if (!f)
		return false;
	cJSON_free(*sp);
	*sp = f;
	return true;
}

static bool num_to_raw(cJSON *it)
{
	double d = it->valuedouble;
	char buf[24];
	/* cJSON prints what fits an int exactly; fractions stay doubles */
	if (!isfinite(d) || d != floor(d) || (d >= -2147483648.0 && d <= 2147483647.0) ||
	    d >= 9223372036854775808.0 || d < -9223372036854775808.0)
		return true;
	snprintf(buf, sizeof(buf), "%lld", (long long)d);
	char *s = cJSON_malloc(strlen(buf) + 1);
	if (!s)
		return false;
	strcpy(s, buf);
	it->type = cJSON_Raw | (it->type & ~0xff);
	it->valuestring = s;
	return true;
}

bool json_reply_normalize(cJSON *item)
{
	bool ok = true;
	for (cJSON *it = item; it; it = it->next) {
		if (it->type & cJSON_IsReference)
			continue; /* not ours to change; replies hold none */
		if (it->string && !(it->type & cJSON_StringIsConst))
			ok &= fix_str(&it->string);
		if (cJSON_IsString(it))
			ok &= fix_str(&it->valuestring);
		else if (cJSON_IsNumber(it))
			ok &= num_to_raw(it);
		else if (it->child)
			ok &= json_reply_normalize(it->child);
	}
	return ok;
}
