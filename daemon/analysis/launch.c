// SPDX-License-Identifier: MIT
/*
 * Kernel launch statistics (as HTA's): for every (launch call, GPU row) pair
 * sharing a correlation id, the call's duration, the GPU row's duration and
 * the launch delay max(0, gpu.ts - call end); plus the three outlier sets
 * HTA's plot draws, with configurable cutoffs.
 *
 * HTA recognises only cudaLaunchKernel[ExC], runFunction - job_prep... and
 * (optionally) cudaMemcpyAsync / cudaMemsetAsync (Q9). With "extended": true
 * we also take cuLaunchKernel[Ex] (Triton), the hip* launch calls (ROCm) and
 * Level Zero appends, and flag those pairs "extended" so HTA's numbers stay
 * recoverable.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { L_NONE = 0, L_HTA, L_EXT };

static bool is_level_zero(const char *n)
{
	return strncmp(n, "zeCommandListAppendLaunch", 25) == 0 ||
	       strncmp(n, "zeCommandListAppendMemory", 25) == 0;
}

/* Does this correlation id belong to a launch call, and to which set? */
static int launch_kind(struct actx *c, const struct tl_rank *r, int64_t corr, bool mem, bool ext)
{
	uint32_t first, n = tl_rank_corr(r, corr, &first);
	int kind = L_NONE;

	for (uint32_t i = 0; i < n; i++) {
		const struct tl_event *e = &r->ev[r->by_corr[first + i]];

		if ((e->flags & TL_EV_LAUNCH_STATS) || (mem && (e->flags & TL_EV_MEM_ASYNC)))
			return L_HTA;
		if (ext && ((e->flags & TL_EV_LAUNCH_QUEUE) ||
			    is_level_zero(timeline_str(c->tl, e->name, NULL))))
			kind = L_EXT;
	}
	return kind;
}

struct outlier {
	const char *key;
	cJSON *arr;
	size_t n;
};

/* Mean and max of one column, for the summary (per_launch or not). */
struct col {
	double sum, max;
};

static void col_add(struct col *k, double v)
{
	k->sum += v;
	k->max = v > k->max ? v : k->max;
}

struct launch_opts {
	double rt_cut, delay_cut;  /* runtime_cutoff_us, launch_delay_cutoff_us */
	bool mem, ext, per_launch; /* include_memory, extended, per_launch */
};

static int one_rank(struct actx *c, const struct tl_rank *r, cJSON *out, const void *opts)
{
	const struct launch_opts *lo = opts;
	double rt_cut = lo->rt_cut, delay_cut = lo->delay_cut;
	bool mem = lo->mem, ext = lo->ext, per_launch = lo->per_launch;
	cJSON *o = cJSON_CreateObject(), *l, *corr = NULL, *cpu = NULL, *gpu = NULL, *delay = NULL,
	      *flag = NULL, *sum;
	struct col cols[3] = {{0, 0}, {0, 0}, {0, 0}}; /* cpu, gpu, delay */
	static const char *const col_key[3] = {"cpu_duration_us", "gpu_duration_us",
					       "launch_delay_us"};
	struct outlier ol[3] = {{"short_gpu_kernels"},
				{"runtime_outliers"},
				{"launch_delay_outliers"}};
	size_t count = 0;

	jpush(c, out, o);
	jint(c, o, "rank", r->rank);
	if (per_launch) {
		l = jobj(c, o, "launches");
		corr = jarr(c, l, "correlation");
		cpu = jarr(c, l, "cpu_duration_us");
		gpu = jarr(c, l, "gpu_duration_us");
		delay = jarr(c, l, "launch_delay_us");
		if (ext)
			flag = jarr(c, l, "extended");
		/* a row per GPU-side row with a launch, about: one allocation
		 * each instead of doublings (their copies and fresh pages were
		 * a third of the call on the generated 1 GB trace) */
		jnums_reserve(c, corr, r->nby_stream);
		jnums_reserve(c, cpu, r->nby_stream);
		jnums_reserve(c, gpu, r->nby_stream);
		jnums_reserve(c, delay, r->nby_stream);
	}
	for (int k = 0; k < 3; k++)
		ol[k].arr = cJSON_CreateArray();

	/* CPU rows in DataFrame order (ascending index: 4.9), each joined with
	 * every GPU row of its correlation, as pandas' inner merge. */
	for (uint32_t p = 0; p < r->nev && !c->oom; p++) {
		const struct tl_event *e = &r->ev[p];
		uint32_t first, n;
		int kind;

		if (ev_gpu(e) || e->correlation == TL_NONE)
			continue;
		kind = launch_kind(c, r, e->correlation, mem, ext);
		if (kind == L_NONE)
			continue;
		n = tl_rank_corr(r, e->correlation, &first);
		for (uint32_t i = 0; i < n; i++) {
			const struct tl_event *g = &r->ev[r->by_corr[first + i]];
			int64_t d;
			double cd, gd, dd;

			if (!ev_gpu(g))
				continue;
			d = ev_ts(r, g) - ev_end(r, e);
			cd = us(ev_dur(r, e));
			gd = us(ev_dur(r, g));
			dd = d > 0 ? us(d) : 0;
			if (per_launch) {
				jpush_num(c, corr, (double)e->correlation);
				jpush_num(c, cpu, cd);
				jpush_num(c, gpu, gd);
				jpush_num(c, delay, dd);
				if (flag)
					jpush(c, flag, cJSON_CreateBool(kind == L_EXT));
			}
			col_add(&cols[0], cd);
			col_add(&cols[1], gd);
			col_add(&cols[2], dd);
			count++;
			/* HTA's plot predicates (cuda_kernel_analysis.py) */
			if (cd <= rt_cut && gd < cd) {
				jpush_num(c, ol[0].arr, (double)e->correlation);
				ol[0].n++;
			}
			if (cd > rt_cut) {
				jpush_num(c, ol[1].arr, (double)e->correlation);
				ol[1].n++;
			}
			if (dd > delay_cut) {
				jpush_num(c, ol[2].arr, (double)e->correlation);
				ol[2].n++;
			}
		}
	}
	jint(c, o, "count", (int64_t)count);
	sum = jobj(c, o, "summary");
	for (int k = 0; k < 3; k++) {
		cJSON *x = jobj(c, sum, col_key[k]);

		jnum(c, x, "mean", count ? cols[k].sum / (double)count : 0);
		jnum(c, x, "max", cols[k].max);
	}
	for (int k = 0; k < 3; k++) {
		cJSON *s = jobj(c, o, ol[k].key);

		jint(c, s, "count", (int64_t)ol[k].n);
		if (s && ol[k].arr)
			cJSON_AddItemToObject(s, "correlations", ol[k].arr);
		else {
			cJSON_Delete(ol[k].arr);
			c->oom = true;
		}
	}
	return 0;
}

int analysis_launch(struct actx *c, cJSON **out)
{
	double rt_cut, delay_cut;
	bool mem, ext, per_launch;
	cJSON *root, *ranks;
	int err;

	err = an_param_num(c, "runtime_cutoff_us", 50, 0, 1e12, &rt_cut);
	if (!err)
		err = an_param_num(c, "launch_delay_cutoff_us", 100, 0, 1e12, &delay_cut);
	if (!err)
		err = an_param_bool(c, "include_memory", true, &mem);
	if (!err)
		err = an_param_bool(c, "extended", false, &ext);
	if (!err)
		err = an_param_bool(c, "per_launch", true, &per_launch);
	if (!err)
		err = require_gpu(c);
	if (err)
		return err;
	root = jroot(c, "launch", &ranks);
	jnum(c, root, "runtime_cutoff_us", rt_cut);
	jnum(c, root, "launch_delay_cutoff_us", delay_cut);
	jbool(c, root, "include_memory", mem);
	jbool(c, root, "extended", ext);
	jbool(c, root, "per_launch", per_launch);
	return an_each_rank(c, root, ranks, one_rank,
			    &(struct launch_opts){rt_cut, delay_cut, mem, ext, per_launch}, out);
}
