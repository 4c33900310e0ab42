// SPDX-License-Identifier: MIT
/*
 * The dispatcher: one table of analyses (also listed by --help), the common
 * "rank" parameter, and the errno → JSON-RPC mapping the RPC layer uses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* analysis_table[i] is run by runs[i]. (Listed apart: an array of the
 * descriptors copied out of a table of {desc, run} is not a constant
 * initializer in C11; clang refuses it.) */
const struct analysis_desc analysis_table[] = {
	{ "temporal", "compute / non-compute / idle time per rank, non-compute split", "rank" },
	{ "idle", "idle time per stream: host wait / kernel wait / other",
	  "rank, consecutive_kernel_delay_us (30), interval_stats (false)" },
	{ "kernels", "exclusive time per kernel-type combination, per-kernel statistics",
	  "rank, include_memory (true), num_kernels (10), duration_ratio (0.8)" },
	{ "overlap", "communication / computation overlap per rank", "rank" },
	{ "launch", "launch call vs GPU duration and launch delay, outlier sets",
	  "rank, runtime_cutoff_us (50), launch_delay_cutoff_us (100), include_memory (true), "
	  "extended (false), per_launch (true)" },
	{ "queue", "queue length per stream: summary, series, time blocked on a full queue",
	  "rank, max_queue_length (1024), series (false)" },
	{ "sequences", "frequent GPU kernel sequences under a CPU operator",
	  "operator (required), rank, top_k (5, 0 = all), min_pattern_len (3)" },
	{ NULL, NULL, NULL },
};

static int (*const runs[])(struct actx *c, cJSON **out) = {
	analysis_temporal, analysis_idle,  analysis_kernels,   analysis_overlap,
	analysis_launch,   analysis_queue, analysis_sequences,
};

#define NENTRIES (sizeof(runs) / sizeof(runs[0]))
_Static_assert(sizeof(analysis_table) / sizeof(analysis_table[0]) == NENTRIES + 1,
	       "one run function per analysis");

static int parse_rank(struct actx *c)
{
	int64_t rank;
	char list[128];
	size_t at = 0;
	int err;

	if (!c->params || !cJSON_GetObjectItemCaseSensitive(c->params, "rank"))
		return 0;
	err = an_param_int(c, "rank", 0, 0, INT32_MAX, &rank);
	if (err)
		return err;
	c->has_rank = true;
	c->rank = (int32_t)rank;
	if (timeline_rank(c->tl, c->rank))
		return 0;
	list[0] = 0;
	for (uint32_t i = 0; i < timeline_nranks(c->tl) && at < sizeof(list) - 16; i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%d", i ? ", " : "",
				       timeline_rank_at(c->tl, i)->rank);
	return aerr(c, -EINVAL, "rank %d is not in this capture (ranks: %s)", c->rank, list);
}

int analysis_run(const char *name, const struct timeline *tl, const cJSON *params,
		 cJSON **result, char *err, size_t errlen)
{
	return analysis_run_flags(name, tl, params, 0, result, err, errlen);
}

int analysis_run_flags(const char *name, const struct timeline *tl, const cJSON *params,
		       unsigned flags, cJSON **result, char *err, size_t errlen)
{
	struct actx c = { .tl = tl, .params = params, .err = err, .errlen = errlen,
			  .compact = flags & ANALYSIS_COMPACT };
	int (*run)(struct actx *c, cJSON **out) = NULL;
	int ret;

	*result = NULL;
	if (err && errlen)
		err[0] = 0;
	for (size_t i = 0; name && i < NENTRIES; i++)
		if (strcmp(analysis_table[i].name, name) == 0)
			run = runs[i];
	if (!run)
		return aerr(&c, -ENOENT, "no analysis named '%s'", name ? name : "(null)");
	if (!tl)
		return aerr(&c, -EINVAL, "no timeline");
	if (params && !cJSON_IsObject(params) && !cJSON_IsNull(params))
		return aerr(&c, -EINVAL, "params must be an object");
	if (params && cJSON_IsNull(params))
		c.params = NULL;
	ret = parse_rank(&c);
	if (!ret)
		ret = run(&c, result);
	jnums_finish(&c, ret == 0 && *result);
	if (ret == 0 && c.oom) { /* a text buffer could not be made */
		cJSON_Delete(*result);
		*result = NULL;
		ret = -ENOMEM;
	}
	if (ret == -ENOMEM && err && errlen && !err[0])
		snprintf(err, errlen, "out of memory");
	free(c.ktype);
	return ret;
}

int analysis_rpc_code(int err)
{
	switch (err) {
	case -EINVAL:
		return ANALYSIS_RPC_INVALID_PARAMS;
	case -ENODATA:
		return ANALYSIS_RPC_NO_DATA;
	case -ENOENT:
		return ANALYSIS_RPC_NO_METHOD;
	default:
		return ANALYSIS_RPC_INTERNAL;
	}
}
