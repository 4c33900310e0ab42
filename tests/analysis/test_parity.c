// SPDX-License-Identifier: MIT
/*
 * HTA parity: every reference trace × analysis against HTA's saved JSON
 * (reference/hta/outputs). Counts and integer-µs sums must be exact,
 * percentages within 0.01 points after HTA's own rounding; the documented
 * deviations (docs/analyses.md) are asserted as such.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parity.h"
#include "test.h"

static const char *tr; /* the trace under test, for messages */
static long ncmp; /* values compared, printed per test so a silent skip shows */

static bool same(double a, double b, double eps)
{
	ncmp++;
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return fabs(a - b) <= eps;
}

#define EXACT(what, a, b)                                                                          \
	do {                                                                                       \
		double _a = (a), _b = (b);                                                         \
		if (!same(_a, _b, 1e-9 * fmax(1, fabs(_b))))                                       \
			TEST_FAIL_AT("%s: %s: ours %.17g, HTA %.17g", tr, what, _a, _b);           \
	} while (0)
#define NEAR(what, a, b, eps)                                                                      \
	do {                                                                                       \
		double _a = (a), _b = (b);                                                         \
		if (!same(_a, _b, eps))                                                            \
			TEST_FAIL_AT("%s: %s: ours %.17g, HTA %.17g", tr, what, _a, _b);           \
	} while (0)

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const cJSON *records(const cJSON *df)
{
	return get(df, "records");
}

static bool hta_failed(const cJSON *o)
{
	return o && cJSON_IsString(get(o, "status"));
}

static void temporal(const struct timeline *tl, const cJSON *ref)
{
	const cJSON *rec;
	cJSON *res;

	if (hta_failed(ref)) { /* HTA: IndexError on no GPU rows */
		cJSON *r = NULL;

		CHECK_EQ_INT(analysis_run("temporal", tl, NULL, &r, NULL, 0), -ENODATA);
		return;
	}
	res = parity_run("temporal", tl, NULL);
	CHECK(res);
	cJSON_ArrayForEach(rec, records(get(ref, "result")))
	{
		const cJSON *m = parity_rank(res, (int)jnumv(rec, "rank"));
		const cJSON *s = get(m, "non_compute_split");

		CHECK(m);
		EXACT("idle", jnumv(m, "idle_time_us"), jnumv(rec, "idle_time(us)"));
		EXACT("compute", jnumv(m, "compute_time_us"), jnumv(rec, "compute_time(us)"));
		EXACT("non_compute", jnumv(m, "non_compute_time_us"),
		      jnumv(rec, "non_compute_time(us)"));
		EXACT("kernel_time", jnumv(m, "kernel_time_us"), jnumv(rec, "kernel_time(us)"));
		NEAR("idle %", hta_round(jnumv(m, "idle_time_pctg"), 2),
		     jnumv(rec, "idle_time_pctg"), 0.01);
		NEAR("compute %", hta_round(jnumv(m, "compute_time_pctg"), 2),
		     jnumv(rec, "compute_time_pctg"), 0.01);
		NEAR("non_compute %", hta_round(jnumv(m, "non_compute_time_pctg"), 2),
		     jnumv(rec, "non_compute_time_pctg"), 0.01);
		/* the split partitions non-compute exactly */
		EXACT("split sum",
		      jnumv(s, "communication_time_us") + jnumv(s, "memory_time_us") +
			      jnumv(s, "other_time_us"),
		      jnumv(rec, "non_compute_time(us)"));
	}
	cJSON_Delete(res);
}

static void overlap(const struct timeline *tl, const cJSON *ref)
{
	const cJSON *rec;
	cJSON *res = NULL;

	if (!tl || !ref)
		return;
	if (analysis_run("overlap", tl, NULL, &res, NULL, 0) == -ENODATA) {
		/* HTA returns a NaN row for a CPU-only trace; we say "no data" */
		cJSON_ArrayForEach(rec, records(get(ref, "result")))
			CHECK(isnan(jnumv(rec, "comp_comm_overlap_pctg")));
		return;
	}
	CHECK(res);
	cJSON_ArrayForEach(rec, records(get(ref, "result")))
	{
		const cJSON *m = parity_rank(res, (int)jnumv(rec, "rank"));

		CHECK(m);
		NEAR("overlap %", hta_round(jnumv(m, "comp_comm_overlap_pctg"), 2),
		     jnumv(rec, "comp_comm_overlap_pctg"), 0.01);
	}
	cJSON_Delete(res);
}

static const cJSON *idle_cat(const cJSON *rank, double stream, const char *cat)
{
	const cJSON *s, *c;

	cJSON_ArrayForEach(s, get(rank, "streams"))
	{
		if (jnumv(s, "stream") != stream)
			continue;
		cJSON_ArrayForEach(c, get(s, "categories"))
			if (strcmp(get(c, "idle_category")->valuestring, cat) == 0)
				return c;
	}
	return NULL;
}

static int idle_rows(const cJSON *res)
{
	const cJSON *r, *s;
	int n = 0;

	cJSON_ArrayForEach(r, get(res, "ranks"))
		cJSON_ArrayForEach(s, get(r, "streams"))
			n += cJSON_GetArraySize(get(s, "categories"));
	return n;
}

/* Streams listed in HTA's order (first appearance), not by number. */
static void idle_stream_order(const cJSON *rank, const cJSON *recs)
{
	const cJSON *rec, *s = get(rank, "streams")->child;
	double last = NAN;

	cJSON_ArrayForEach(rec, recs)
	{
		if (jnumv(rec, "stream") == last)
			continue;
		last = jnumv(rec, "stream");
		CHECK(s);
		if (!s)
			return;
		CHECK_NEAR(jnumv(s, "stream"), last, 0);
		s = s->next;
	}
	CHECK(!s);
}

static void idle(const struct timeline *tl, const cJSON *ref)
{
	const cJSON *def = get(ref, "default"), *st = get(ref, "show_idle_interval_stats");
	const cJSON *rec, *srec = NULL;
	cJSON *res;
	int i = 0;

	if (hta_failed(def)) { /* HTA: "No objects to concatenate" */
		cJSON *r = NULL;

		CHECK_EQ_INT(analysis_run("idle", tl, NULL, &r, NULL, 0), -ENODATA);
		return;
	}
	res = parity_run("idle", tl, "{\"rank\": 0, \"interval_stats\": true}");
	CHECK(res);
	if (!res)
		return;
	CHECK_EQ_INT(idle_rows(res), cJSON_GetArraySize(records(get(def, "idle_time_df"))));
	idle_stream_order(parity_rank(res, 0), records(get(def, "idle_time_df")));
	cJSON_ArrayForEach(rec, records(get(def, "idle_time_df")))
	{
		const cJSON *m = parity_rank(res, (int)jnumv(rec, "rank"));
		const cJSON *c = idle_cat(m, jnumv(rec, "stream"),
					  get(rec, "idle_category")->valuestring);
		const cJSON *s;

		CHECK(c);
		if (!c)
			continue;
		EXACT("idle_time", hta_round(jnumv(c, "idle_time_us"), 2), jnumv(rec, "idle_time"));
		NEAR("idle ratio", hta_round(jnumv(c, "idle_time_ratio"), 2),
		     jnumv(rec, "idle_time_ratio"), 0.01);
		/* interval stats rows are in the same order */
		srec = cJSON_GetArrayItem(records(get(st, "interval_stats_df")), i++);
		s = get(c, "interval_stats");
		CHECK(srec && s);
		if (!srec || !s)
			continue;
		EXACT("count", jnumv(s, "count"), jnumv(srec, "count"));
		NEAR("mean", hta_round(jnumv(s, "mean_us"), 2), jnumv(srec, "mean"), 0.01);
		NEAR("std", hta_round(jnumv(s, "std_us"), 2), jnumv(srec, "std"), 0.01);
		NEAR("min", jnumv(s, "min_us"), jnumv(srec, "min"), 0.01);
		NEAR("25%", hta_round(jnumv(s, "p25_us"), 2), jnumv(srec, "25%"), 0.01);
		NEAR("50%", hta_round(jnumv(s, "p50_us"), 2), jnumv(srec, "50%"), 0.01);
		NEAR("75%", hta_round(jnumv(s, "p75_us"), 2), jnumv(srec, "75%"), 0.01);
		NEAR("max", jnumv(s, "max_us"), jnumv(srec, "max"), 0.01);
	}
	cJSON_Delete(res);
}

static void kernels_one(const struct timeline *tl, const cJSON *ref, bool mem)
{
	const cJSON *types = records(get(ref, "kernel_type_df"));
	const cJSON *all = records(get(ref, "all_kernel_df"));
	const cJSON *rec, *mt, *mk;
	cJSON *res;
	int i = 0;

	res = parity_run("kernels", tl, mem ? "{\"include_memory\": true}"
					    : "{\"include_memory\": false}");
	CHECK(res);
	if (!res)
		return;
	mt = get(res, "kernel_types");
	mk = get(res, "kernels");
	CHECK_EQ_INT(cJSON_GetArraySize(mt), cJSON_GetArraySize(types));
	CHECK_EQ_INT(cJSON_GetArraySize(mk), cJSON_GetArraySize(all));
	cJSON_ArrayForEach(rec, types)
	{
		const cJSON *m = cJSON_GetArrayItem(mt, i++);

		if (!m)
			break;
		CHECK_STREQ(get(m, "kernel_type")->valuestring, get(rec, "kernel_type")->valuestring);
		EXACT("type sum", jnumv(m, "sum_us"), jnumv(rec, "sum"));
		NEAR("type %", hta_round(jnumv(m, "percentage"), 1), jnumv(rec, "percentage"), 0.01);
	}
	i = 0;
	cJSON_ArrayForEach(rec, all)
	{
		const cJSON *m = cJSON_GetArrayItem(mk, i++);

		if (!m)
			break;
		CHECK_STREQ(get(m, "name")->valuestring, get(rec, "name")->valuestring);
		CHECK_STREQ(get(m, "kernel_type")->valuestring, get(rec, "kernel_type")->valuestring);
		EXACT("rank", jnumv(m, "rank"), jnumv(rec, "rank"));
		EXACT("sum", jnumv(m, "sum_us"), jnumv(rec, "sum (us)"));
		EXACT("max", jnumv(m, "max_us"), jnumv(rec, "max (us)"));
		EXACT("min", jnumv(m, "min_us"), jnumv(rec, "min (us)"));
		EXACT("mean", jnumv(m, "mean_us"), jnumv(rec, "mean (us)"));
		NEAR("std", jnumv(m, "stddev_us"), jnumv(rec, "stddev"), 1e-6);
	}
	cJSON_Delete(res);
}

static void kernels(const struct timeline *tl, const cJSON *ref)
{
	cJSON *r = NULL;

	if (!cJSON_GetArraySize(records(get(get(ref, "include_memory_kernels_True"),
					     "kernel_type_df")))) {
		/* HTA answers with empty frames on a CPU-only trace */
		CHECK_EQ_INT(analysis_run("kernels", tl, NULL, &r, NULL, 0), -ENODATA);
		return;
	}
	kernels_one(tl, get(ref, "include_memory_kernels_True"), true);
	kernels_one(tl, get(ref, "include_memory_kernels_False"), false);
}

static void num_list(const char *what, const cJSON *ours, const cJSON *hta)
{
	int n = cJSON_GetArraySize(hta);

	CHECK_EQ_INT(cJSON_GetArraySize(ours), n);
	for (int i = 0; i < n && i < cJSON_GetArraySize(ours); i++)
		EXACT(what, cJSON_GetArrayItem(ours, i)->valuedouble,
		      cJSON_GetArrayItem(hta, i)->valuedouble);
}

static void launch(const struct timeline *tl, const cJSON *ref)
{
	const cJSON *v = get(ref, "all_ranks") ? get(ref, "all_ranks") : get(ref, "default");
	const cJSON *pr;
	cJSON *res = NULL;

	if (analysis_run("launch", tl, NULL, &res, NULL, 0) == -ENODATA) {
		cJSON_ArrayForEach(pr, get(v, "per_rank"))
			CHECK_EQ_INT(cJSON_GetArraySize(records(get(pr, "events_df"))), 0);
		return;
	}
	CHECK(res);
	cJSON_ArrayForEach(pr, get(v, "per_rank"))
	{
		const cJSON *m = parity_rank(res, atoi(pr->string)), *l = get(m, "launches");
		const cJSON *rows = records(get(pr, "events_df")), *rec;
		const cJSON *ol = get(pr, "derived_outlier_sets_(script-computed with HTA "
					  "visualization predicates)");
		static const char *const sets[][2] = {
			{ "short_gpu_kernels", "short_gpu_kernels_correlations" },
			{ "runtime_outliers", "runtime_outliers_correlations" },
			{ "launch_delay_outliers", "launch_delay_outliers_correlations" },
		};
		int i = 0;

		CHECK(m);
		CHECK_EQ_INT(jnumv(m, "count"), cJSON_GetArraySize(rows));
		cJSON_ArrayForEach(rec, rows)
		{
			EXACT("correlation", cJSON_GetArrayItem(get(l, "correlation"), i)->valuedouble,
			      jnumv(rec, "correlation"));
			EXACT("cpu", cJSON_GetArrayItem(get(l, "cpu_duration_us"), i)->valuedouble,
			      jnumv(rec, "cpu_duration"));
			EXACT("gpu", cJSON_GetArrayItem(get(l, "gpu_duration_us"), i)->valuedouble,
			      jnumv(rec, "gpu_duration"));
			EXACT("delay", cJSON_GetArrayItem(get(l, "launch_delay_us"), i)->valuedouble,
			      jnumv(rec, "launch_delay"));
			if (++i >= jnumv(m, "count"))
				break;
		}
		for (int k = 0; ol && k < 3; k++)
			num_list(sets[k][0], get(get(m, sets[k][0]), "correlations"),
				 get(ol, sets[k][1]));
	}
	cJSON_Delete(res);
}

#include "parity_queue_seq.h"

static void run_all(void (*fn)(const struct timeline *, const cJSON *), const char *file)
{
	ncmp = 0;
	for (int i = 0; parity_traces[i]; i++) {
		struct timeline *tl;
		cJSON *ref;

		tr = parity_traces[i];
		tl = parity_load_trace(tr);
		ref = parity_load_ref(tr, file);
		CHECK(tl && ref);
		if (tl && ref)
			fn(tl, ref);
		cJSON_Delete(ref);
		timeline_free(tl);
	}
	fprintf(stderr, "     %s: %ld values compared with HTA\n", file, ncmp);
}

static void test_temporal(void)
{
	run_all(temporal, "temporal_breakdown");
}
static void test_overlap(void)
{
	run_all(overlap, "comm_comp_overlap");
}
static void test_idle(void)
{
	run_all(idle, "idle_time_breakdown");
}
static void test_kernels(void)
{
	run_all(kernels, "gpu_kernel_breakdown");
}
static void test_launch(void)
{
	run_all(launch, "cuda_kernel_launch_stats");
}
static void test_queue(void)
{
	run_all(queue, "queue_length_summary");
}
static void test_sequences(void)
{
	run_all(sequences, "frequent_cuda_kernel_sequences");
}

int main(void)
{
	struct timeline *tl = parity_load_trace("simple_add");

	if (!tl)
		TEST_SKIP("reference traces not found under %s", parity_path(""));
	timeline_free(tl);
	RUN(test_temporal);
	RUN(test_overlap);
	RUN(test_idle);
	RUN(test_kernels);
	RUN(test_launch);
	RUN(test_queue);
	RUN(test_sequences);
	return test_summary();
}
