/* SPDX-License-Identifier: MIT */
/*
 * For the live-capture tests (test_gpu_job_live.c, test_cupti_live.c): the
 * timeline section a capture gets, decoded as an analysis job reads it,
 * and lookups in the analyses' results.
 */
#ifndef GPUPROF_TESTS_LIVE_TL_H
#define GPUPROF_TESTS_LIVE_TL_H

#include <cjson/cJSON.h>

#include "capture/capture.h"
#include "test.h"
#include "timeline.h"
#include "timeline/live.h"

/* The section timeline_live_attach() gives c, decoded; NULL (a failed
 * check) without one. */
static struct timeline *attached(struct capture *c)
{
	struct timeline *tl = NULL;
	char why[128] = "";

	CHECK_EQ_INT(timeline_live_attach(c), 0);
	const struct capture_extra *x = capture_find_extra(c, CAPSEC_TIMELINE);
	CHECK(x != NULL);
	if (!x)
		return NULL;
	CHECK_EQ_INT(timeline_decode(x->data, x->len, &tl, why, sizeof(why)), 0);
	return tl;
}

/* Member k of o as a number, -1 when absent; comm results write exact µs
 * as raw numbers (valuedouble set too). */
static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) || cJSON_IsRaw(v) ? v->valuedouble : -1;
}

/* The entry of res's "ranks" for rank, or NULL. */
static const cJSON *rank_obj(const cJSON *res, int rank)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(res, "ranks"))
	{
		if ((int)num(r, "rank") == rank)
			return r;
	}
	return NULL;
}

#endif
