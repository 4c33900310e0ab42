/* SPDX-License-Identifier: MIT */
/*
 * Reading a reply or an analysis result in tests by a dotted path:
 * "ranks.0.kernel_time_us" walks member "ranks", element 0, member
 * "kernel_time_us" (a part that starts with a digit is an array index).
 */
#ifndef GPUPROF_TESTS_JSONPATH_H
#define GPUPROF_TESTS_JSONPATH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* The item at path, or NULL. A part longer than 63 bytes is cut there. */
static inline const cJSON *json_at(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while ((dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		o = key[0] >= '0' && key[0] <= '9' ? cJSON_GetArrayItem(o, atoi(key))
						   : cJSON_GetObjectItemCaseSensitive(o, key);
		path = dot + 1;
	}
	return cJSON_GetObjectItemCaseSensitive(o, path);
}

/* The number at path, NaN when absent or not a number. The analyses write
 * exact µs as raw numbers, with valuedouble set too: those count. */
static inline double json_num(const cJSON *o, const char *path)
{
	o = json_at(o, path);
	return cJSON_IsNumber(o) || cJSON_IsRaw(o) ? o->valuedouble : NAN;
}

/* The string at path, "" when absent or not a string. */
static inline const char *json_str(const cJSON *o, const char *path)
{
	o = json_at(o, path);
	return cJSON_IsString(o) ? o->valuestring : "";
}

#endif
