// SPDX-License-Identifier: MIT
/*
 * The dispatcher: one table of every analysis (analyze.list shows it) and
 * the common "rank" parameter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The parameters of each analysis besides "rank" (docs/analyses.md). */
static const struct analysis_param no_params[] = {{NULL}};

static const struct analysis_param idle_params[] = {
	{"consecutive_kernel_delay_us", "number", "30",
	 "gaps between kernels up to this many us count as kernel wait"},
	{"interval_stats", "bool", "false", "add statistics of the idle intervals"},
	{NULL},
};

static const struct analysis_param kernels_params[] = {
	{"include_memory", "bool", "true", "count memory copies and sets as kernels"},
	{"num_kernels", "int", "10", "kernels listed per kernel type"},
	{"duration_ratio", "number", "0.8", "list kernels up to this share of the time"},
	{NULL},
};

static const struct analysis_param launch_params[] = {
	{"runtime_cutoff_us", "number", "50", "launch calls longer than this are outliers"},
	{"launch_delay_cutoff_us", "number", "100", "launch delays longer than this are outliers"},
	{"include_memory", "bool", "true", "count cudaMemcpyAsync / cudaMemsetAsync as launches"},
	{"extended", "bool", "false", "also pair the launch calls HTA leaves out"},
	{"per_launch", "bool", "true", "include the per-launch arrays"},
	{NULL},
};

static const struct analysis_param queue_params[] = {
	{"max_queue_length", "int", "1024", "queue length at which a stream blocks"},
	{"series", "bool", "false", "include the queue-length series"},
	{NULL},
};

static const struct analysis_param sequences_params[] = {
	{"operator", "string", NULL, "the CPU operator (substring of its name; required)"},
	{"top_k", "int", "5", "sequences listed, 0 for all"},
	{"min_pattern_len", "int", "3", "kernels in a sequence at least"},
	{NULL},
};

static const struct analysis_param critical_path_params[] = {
	{"annotation", "string", "", "window: instances of annotations whose name contains this"},
	{"instance", "range", "0", "which instance(s) of the annotation, 0-based, inclusive"},
	{"zero_weight_launch_edges", "bool", "false", "add HTA's zero-weight launch edges"},
	{"kernel_kernel_threshold_us", "int", "1500",
	 "kernel-to-kernel gaps up to this many us are edges"},
	{"data_load_events", "json", NULL, "list of regexes: CPU ops that count as data loading"},
	{"edits", "edits", NULL, "what-if: scale, or set in us, events or delays (repeatable)",
	 "edit"},
	{"top", "int", "10", "events listed by time on the path"},
	{"max_edges", "int", "1000", "critical edges listed at most"},
	{"overlay", "fds", "false", "write the trace with the path marked to fds[1]", NULL, true},
	{"overlay_all_events", "bool", "false", "keep non-critical events in the overlay", NULL,
	 true},
	{"overlay_unverified", "bool", "false",
	 "overlay a capture imported before trace digests were recorded", "trust-trace", true},
	{"fds", "fds", NULL, "the overlay's descriptors: the imported trace, the output", NULL,
	 true},
	{NULL},
};

static const struct analysis_param comm_params[] = {
	{"link_bandwidth", "number", NULL,
	 "link bandwidth per GPU and direction, bytes/s (default: from the device)"},
	{"iteration", "string", "ProfilerStep#N",
	 "annotation marking iterations (a trailing * matches a prefix)"},
	{"iterations", "string", "all", "all: every complete step; hta: without the last"},
	{"tags", "json", NULL, "list of rules tagging process groups DP, TP, PP, EP or OTHER"},
	{"tp", "int", NULL, "tensor-parallel size"},
	{"pp", "int", NULL, "pipeline-parallel size"},
	{"dp", "int", NULL, "data-parallel size"},
	{"ep", "int", NULL, "expert-parallel size"},
	{"windows", "bool", "false", "keep every phase window"},
	{"top", "int", "10", "straggler instances listed"},
	{"fd", "fd", NULL, "also write an SVG of the breakdown and phase windows", "svg", true},
	{NULL},
};

/* Every analysis: a new one is a file here (or a folder, when it needs
 * several) and one line in this table, with its parameters above: that
 * makes it analyze.NAME, lists it in analyze.list and gives gpuprofctl its
 * options. */
const struct analysis_desc analysis_table[] = {
	{"temporal", "compute / non-compute / idle time per rank, non-compute split", no_params,
	 analysis_temporal},
	{"idle", "idle time per stream: host wait / kernel wait / other", idle_params,
	 analysis_idle},
	{"kernels", "exclusive time per kernel-type combination, per-kernel statistics",
	 kernels_params, analysis_kernels},
	{"overlap", "communication / computation overlap per rank", no_params, analysis_overlap},
	{"launch", "launch call vs GPU duration and launch delay, outlier sets", launch_params,
	 analysis_launch},
	{"queue", "queue length per stream: summary, series, time blocked on a full queue",
	 queue_params, analysis_queue},
	{"sequences", "frequent GPU kernel sequences under a CPU operator", sequences_params,
	 analysis_sequences},
	{"critical_path",
	 "longest path through CPU ops, launches and GPU kernels of one rank; what-if edits",
	 critical_path_params, analysis_critical_path},
	{"comm", "communication metrics (DP/TP/PP/EP) across ranks", comm_params, analysis_comm},
	{NULL, NULL, NULL, NULL},
};

const struct analysis_desc *analysis_find(const char *name)
{
	for (const struct analysis_desc *d = analysis_table; name && d->name; d++)
		if (strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

/* "rank" comes first in every list: the dispatcher takes it for all. */
static const struct analysis_param rank_param =
	{"rank", "int", NULL, "only this rank (default: every rank; critical_path: the lowest)"};

static cJSON *param_json(const struct analysis_param *p)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "name", p->name);
	cJSON_AddStringToObject(o, "type", p->type);
	if (p->def)
		cJSON_AddStringToObject(o, "default", p->def);
	cJSON_AddStringToObject(o, "help", p->help);
	if (p->option)
		cJSON_AddStringToObject(o, "option", p->option);
	return o;
}

/* "rank, consecutive_kernel_delay_us (30), ...": the parameters in a line;
 * `method` adds the method_only ones. */
static void params_line(const struct analysis_desc *d, bool method, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "rank");

	for (const struct analysis_param *p = d->params; p->name && at < len; p++)
		if (method || !p->method_only)
			at += (size_t)snprintf(buf + at, len - at, p->def ? ", %s (%s)" : ", %s",
					       p->name, p->def);
}

void analysis_params_line(const struct analysis_desc *d, char *buf, size_t len)
{
	params_line(d, false, buf, len);
}

bool analysis_param_known(const struct analysis_desc *d, const char *key, bool method)
{
	if (!strcmp(key, "rank"))
		return true;
	for (const struct analysis_param *p = d->params; p->name; p++)
		if (!strcmp(p->name, key))
			return method || !p->method_only;
	return false;
}

static cJSON *desc_json(const struct analysis_desc *d)
{
	cJSON *o = cJSON_CreateObject(), *ps;
	char line[1024];

	cJSON_AddStringToObject(o, "name", d->name);
	cJSON_AddStringToObject(o, "summary", d->summary);
	params_line(d, true, line, sizeof(line));
	cJSON_AddStringToObject(o, "params", line);
	ps = cJSON_AddArrayToObject(o, "parameters");
	cJSON_AddItemToArray(ps, param_json(&rank_param));
	for (const struct analysis_param *p = d->params; p->name; p++)
		cJSON_AddItemToArray(ps, param_json(p));
	return o;
}

cJSON *analysis_list_json(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "analyses");

	if (!arr) {
		cJSON_Delete(o);
		return NULL;
	}
	for (const struct analysis_desc *d = analysis_table; d->name; d++)
		cJSON_AddItemToArray(arr, desc_json(d));
	return o;
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
	const cJSON *it;
	cJSON_ArrayForEach(it, c.params)
	{
		if (!analysis_param_known(d, it->string, false))
			return aerr(&c, -EINVAL, "unknown parameter '%s'", it->string);
	}
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
