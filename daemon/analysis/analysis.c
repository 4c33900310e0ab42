// SPDX-License-Identifier: MIT
/*
 * The dispatcher: one table of every analysis (analyze.list shows it) and
 * the common "rank" parameter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Every analysis: a new one is a file here (or a folder, when it needs
 * several) and one line in this table. */
const struct analysis_desc analysis_table[] = {
	{"temporal", "compute / non-compute / idle time per rank, non-compute split", "rank",
	 analysis_temporal},
	{"idle", "idle time per stream: host wait / kernel wait / other",
	 "rank, consecutive_kernel_delay_us (30), interval_stats (false)", analysis_idle},
	{"kernels", "exclusive time per kernel-type combination, per-kernel statistics",
	 "rank, include_memory (true), num_kernels (10), duration_ratio (0.8)", analysis_kernels},
	{"overlap", "communication / computation overlap per rank", "rank", analysis_overlap},
	{"launch", "launch call vs GPU duration and launch delay, outlier sets",
	 "rank, runtime_cutoff_us (50), launch_delay_cutoff_us (100), include_memory (true), "
	 "extended (false), per_launch (true)",
	 analysis_launch},
	{"queue", "queue length per stream: summary, series, time blocked on a full queue",
	 "rank, max_queue_length (1024), series (false)", analysis_queue},
	{"sequences", "frequent GPU kernel sequences under a CPU operator",
	 "operator (required), rank, top_k (5, 0 = all), min_pattern_len (3)", analysis_sequences},
	{"critical_path",
	 "longest path through CPU ops, launches and GPU kernels of one rank; what-if edits",
	 "rank, annotation, instance, zero_weight_launch_edges (false), "
	 "kernel_kernel_threshold_us (1500), data_load_events, edits, top (10), "
	 "max_edges (1000), overlay (false)",
	 analysis_critical_path},
	{"comm", "communication metrics (DP/TP/PP/EP) across ranks",
	 "rank, link_bandwidth, iteration, tags, tp, pp, dp, ep, windows (false), top",
	 analysis_comm},
	{NULL, NULL, NULL, NULL},
};

const struct analysis_desc *analysis_find(const char *name)
{
	for (const struct analysis_desc *d = analysis_table; name && d->name; d++)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

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

int analysis_run(const char *name, const struct timeline *tl, const cJSON *params, cJSON **result,
		 char *err, size_t errlen)
{
	return analysis_run_flags(name, tl, params, 0, result, err, errlen);
}

int analysis_run_flags(const char *name, const struct timeline *tl, const cJSON *params,
		       unsigned flags, cJSON **result, char *err, size_t errlen)
{
	struct actx c = {.tl = tl,
			 .params = params,
			 .err = err,
			 .errlen = errlen,
			 .compact = flags & ANALYSIS_COMPACT};
	const struct analysis_desc *d = analysis_find(name);
	int ret;

	*result = NULL;
	if (err && errlen)
		err[0] = 0;
	if (!d)
		return aerr(&c, -ENOENT, "no analysis named '%s'", name ? name : "(null)");
	if (!tl)
		return aerr(&c, -EINVAL, "no timeline");
	if (params && !cJSON_IsObject(params) && !cJSON_IsNull(params))
		return aerr(&c, -EINVAL, "params must be an object");
	if (params && cJSON_IsNull(params))
		c.params = NULL;
	ret = parse_rank(&c);
	if (!ret)
		ret = d->run(&c, result);
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
