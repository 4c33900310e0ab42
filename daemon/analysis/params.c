// SPDX-License-Identifier: MIT
/* The analysis framework: parameters, each checked with a message. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
