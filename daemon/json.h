/* SPDX-License-Identifier: MIT */
#ifndef GPUPROF_JSON_UTIL_H
#define GPUPROF_JSON_UTIL_H

#include <stdint.h>

#include <cjson/cJSON.h>

/*
 * Add an unsigned 64-bit integer exactly. cJSON keeps numbers as doubles,
 * which round above 2^53 (wall-clock nanoseconds are ~2^60), so the value is
 * written as a raw JSON integer literal.
 */
cJSON *json_add_u64(cJSON *obj, const char *key, uint64_t v);

#endif
