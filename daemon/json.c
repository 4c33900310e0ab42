// SPDX-License-Identifier: MIT
#include "json.h"

#include <inttypes.h>
#include <stdio.h>

cJSON *json_add_u64(cJSON *obj, const char *key, uint64_t v)
{
	if (v < (1ull << 53))
		return cJSON_AddNumberToObject(obj, key, (double)v);
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return cJSON_AddRawToObject(obj, key, buf);
}
