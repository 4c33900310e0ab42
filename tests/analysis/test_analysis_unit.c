// SPDX-License-Identifier: MIT
/*
 * Small hand-built timelines (Kineto JSON text through the importer) whose
 * numbers are worked out below, plus params and error handling.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "jsonpath.h"
#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"

#define K(name, cat, ts, dur, stream, corr)                                                        \
	"{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"pid\":0,\"tid\":" #stream        \
	",\"ts\":" #ts ",\"dur\":" #dur ",\"args\":{\"stream\":" #stream ",\"correlation\":" #corr "}}"
#define L(name, ts, dur, corr)                                                                     \
	"{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
	",\"dur\":" #dur ",\"args\":{\"correlation\":" #corr "}}"
#define OP(name, ts, dur)                                                                          \
	"{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts      \
	",\"dur\":" #dur "}"

static struct timeline *load(const char *json)
{
	struct timeline *tl = NULL;
	struct import_result res;

	if (timeline_new(&tl))
		return NULL;
	if (timeline_import_buf(json, strlen(json), NULL, tl, &res)) {
		fprintf(stderr, "import: %s\n", res.error_msg);
		timeline_free(tl);
		return NULL;
	}
	return tl;
}

static cJSON *run(const struct timeline *tl, const char *name, const char *params)
{
	cJSON *p = params ? cJSON_Parse(params) : NULL, *res = NULL;
	char err[200];
	int rc = analysis_run(name, tl, p, &res, err, sizeof(err));

	cJSON_Delete(p);
	if (rc)
		fprintf(stderr, "%s: %d %s\n", name, rc, err);
	return res;
}

/* compute [0,100] s7, nccl [50,150] s8, memcpy [200,250] s7 */
static const char *mix = "{\"traceEvents\":[" K("gemm", "kernel", 0, 100, 7, 1) ","
	K("ncclKernel_AllReduce", "kernel", 50, 100, 8, 2) ","
	K("Memcpy HtoD", "gpu_memcpy", 200, 50, 7, 3) "]}";

static void test_temporal_split(void)
{
	struct timeline *tl = load(mix);
	cJSON *r = run(tl, "temporal", NULL);

	CHECK(r);
	/* span 250, busy 200 → idle 50; compute 100; non-compute 100 */
	CHECK_NEAR(json_num(r, "ranks.0.kernel_time_us"), 250, 0);
	CHECK_NEAR(json_num(r, "ranks.0.idle_time_us"), 50, 0);
	CHECK_NEAR(json_num(r, "ranks.0.compute_time_us"), 100, 0);
	CHECK_NEAR(json_num(r, "ranks.0.non_compute_time_us"), 100, 0);
	CHECK_NEAR(json_num(r, "ranks.0.idle_time_pctg"), 20, 1e-12);
	/* compute wins [50,100]; communication keeps [100,150]; memory [200,250] */
	CHECK_NEAR(json_num(r, "ranks.0.non_compute_split.communication_time_us"), 50, 0);
	CHECK_NEAR(json_num(r, "ranks.0.non_compute_split.memory_time_us"), 50, 0);
	CHECK_NEAR(json_num(r, "ranks.0.non_compute_split.other_time_us"), 0, 0);
	CHECK_NEAR(json_num(r, "ranks.0.non_compute_split.memory_time_pctg"), 20, 1e-12);
	cJSON_Delete(r);
	r = run(tl, "overlap", NULL);
	CHECK_NEAR(json_num(r, "ranks.0.comp_comm_overlap_pctg"), 50, 1e-12);
	cJSON_Delete(r);
	r = run(tl, "kernels", NULL);
	/* four labels of 50 µs each: 25 % apiece, ties in label order */
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "kernel_types")), 4);
	CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "kernel_types"), 0),
					"kernel_type")->valuestring,
		    "COMMUNICATION");
	CHECK_NEAR(json_num(r, "kernel_types.1.percentage"), 25, 1e-12);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "kernels")), 3);
	cJSON_Delete(r);
	timeline_free(tl);
}

/*
 * Stream 7: K1 [100,110] K2 [115,125] K3 [200,210] K4 [300,310], launched at
 * 90 (dur 2), 105 (20), 150 (60), 120 (2).
 */
static const char *idle_tl = "{\"traceEvents\":[" L("cudaLaunchKernel", 90, 2, 1) ","
	L("cudaLaunchKernel", 105, 20, 2) "," L("cudaLaunchKernel", 120, 2, 4) ","
	L("cudaLaunchKernel", 150, 60, 3) "," K("k1", "kernel", 100, 10, 7, 1) ","
	K("k2", "kernel", 115, 10, 7, 2) "," K("k3", "kernel", 200, 10, 7, 3) ","
	K("k4", "kernel", 300, 10, 7, 4) "]}";

static void test_idle(void)
{
	struct timeline *tl = load(idle_tl);
	cJSON *r = run(tl, "idle", "{\"interval_stats\": true}");

	CHECK(r);
	/* K2: launch 105 < prev end 110, gap 5 < 30 → kernel wait 5;
	 * K3: launch 150 > 125 → host wait 75; K4: gap 90 → other 90 */
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.categories.0.idle_time_us"), 75, 0);
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.categories.1.idle_time_us"), 5, 0);
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.categories.2.idle_time_us"), 90, 0);
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.categories.0.idle_time_ratio"), 75.0 / 170,
		   1e-12);
	CHECK_EQ_INT(json_num(r, "ranks.0.streams.0.categories.2.interval_stats.count"), 1);
	cJSON_Delete(r);
	/* a 100 µs threshold makes K4's 90 µs gap kernel wait */
	r = run(tl, "idle", "{\"consecutive_kernel_delay_us\": 100}");
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.categories.1.idle_time_us"), 95, 0);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* Streams come in order of first appearance in the file (HTA's DataFrame
 * order), not by number: 9 before 3 before 5. */
static void test_idle_stream_order(void)
{
	static const char *json = "{\"traceEvents\":[" K("a", "kernel", 50, 10, 9, 1) ","
		K("b", "kernel", 0, 10, 3, 2) "," K("c", "kernel", 20, 10, 9, 3) ","
		K("d", "kernel", 10, 10, 5, 4) "," K("e", "kernel", 40, 10, 3, 5) "]}";
	struct timeline *tl = load(json);
	cJSON *r = tl ? run(tl, "idle", NULL) : NULL;

	CHECK(r);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(
			 cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0), "streams")),
		     3);
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.stream"), 9, 0);
	CHECK_NEAR(json_num(r, "ranks.0.streams.1.stream"), 3, 0);
	CHECK_NEAR(json_num(r, "ranks.0.streams.2.stream"), 5, 0);
	/* stream 9: c [20,30] then a [50,60], gap 20 (no launch: kernel wait) */
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.categories.0.idle_time_us"), 20, 0);
	cJSON_Delete(r);
	timeline_free(tl);
}

/*
 * One stream on two devices (pid 0 and 1), kernels alternating between
 * them: 5 µs long, every 10 µs. HTA groups rows by stream only, so the
 * stream's rows in time order leave k * 2 - 1 gaps of 5 µs (kernel wait).
 * The by-stream index groups them per (stream, pid): idle must merge the
 * two. k = 10: a few moves (insertion sort); k = 2000: past the move
 * budget (idle.c krow_sort falls back to qsort).
 */
static char *two_device_trace(int k)
{
	size_t cap = (size_t)k * 2 * 160 + 64, n = 0;
	char *s = malloc(cap);

	n += (size_t)snprintf(s + n, cap - n, "{\"traceEvents\":[");
	for (int i = 0; i < 2 * k; i++)
		n += (size_t)snprintf(s + n, cap - n,
				      "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":%d,"
				      "\"tid\":7,\"ts\":%d,\"dur\":5,\"args\":{\"stream\":7,"
				      "\"correlation\":%d}}",
				      i ? "," : "", i % 2, 100 + 10 * i, i + 1);
	snprintf(s + n, cap - n, "]}");
	return s;
}

static void test_idle_stream_on_two_devices(void)
{
	static const int ks[] = { 10, 2000 };

	for (int i = 0; i < 2; i++) {
		char *json = two_device_trace(ks[i]);
		struct timeline *tl = load(json);
		cJSON *r = tl ? run(tl, "idle", "{\"interval_stats\": true}") : NULL;
		const cJSON *cats = cJSON_GetObjectItem(
			cJSON_GetArrayItem(
				cJSON_GetObjectItem(
					cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0), "streams"),
				0),
			"categories");

		CHECK_EQ_INT(cJSON_GetArraySize(cats), 2); /* kernel wait, other (the first row) */
		CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(cats, 0), "idle_category")
				    ->valuestring,
			    "kernel_wait");
		CHECK_NEAR(json_num(cJSON_GetArrayItem(cats, 0), "idle_time_us"),
			   (ks[i] * 2 - 1) * 5.0, 0);
		CHECK_NEAR(json_num(cJSON_GetArrayItem(cats, 0), "interval_stats.max_us"), 5, 0);
		CHECK_NEAR(json_num(cJSON_GetArrayItem(cats, 0), "interval_stats.min_us"), 5, 0);
		cJSON_Delete(r);
		timeline_free(tl);
		free(json);
	}
}

static void test_launch(void)
{
	struct timeline *tl = load(idle_tl);
	cJSON *r = run(tl, "launch", NULL);

	CHECK_EQ_INT(json_num(r, "ranks.0.count"), 4);
	/* rows in launch-call order: corr 1, 2, 4, 3 */
	CHECK_EQ_INT(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0), "launches"),
		"launch_delay_us"), 0)->valuedouble, 8);
	CHECK_EQ_INT(json_num(r, "ranks.0.short_gpu_kernels.count"), 1);     /* corr 2: 10 < 20 */
	CHECK_EQ_INT(json_num(r, "ranks.0.runtime_outliers.count"), 1);	     /* corr 3: 60 > 50 */
	CHECK_EQ_INT(json_num(r, "ranks.0.launch_delay_outliers.count"), 1); /* corr 4: 178 */
	/* the summary is the arrays' mean and max; per_launch false drops the
	 * arrays, keeps the counts, outlier sets and summary */
	const cJSON *l = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0),
					     "launches");
	static const char *const cols[] = { "cpu_duration_us", "gpu_duration_us",
					    "launch_delay_us" };
	double mean[3], max[3];
	for (int k = 0; k < 3; k++) {
		const cJSON *v;
		double s = 0, m = 0;
		int n = 0;
		cJSON_ArrayForEach(v, cJSON_GetObjectItem(l, cols[k]))
		{
			s += v->valuedouble, n++;
			m = v->valuedouble > m ? v->valuedouble : m;
		}
		CHECK_EQ_INT(n, 4);
		mean[k] = s / n, max[k] = m;
	}
	CHECK_NEAR(max[2], 178, 0); /* corr 4 */
	cJSON_Delete(r);
	r = run(tl, "launch", "{\"per_launch\": false}");
	CHECK(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0),
				  "launches") == NULL);
	CHECK_EQ_INT(json_num(r, "ranks.0.count"), 4);
	CHECK_EQ_INT(json_num(r, "ranks.0.launch_delay_outliers.count"), 1);
	for (int k = 0; k < 3; k++) {
		char key[96];
		snprintf(key, sizeof(key), "ranks.0.summary.%s.mean", cols[k]);
		CHECK_NEAR(json_num(r, key), mean[k], 1e-9);
		snprintf(key, sizeof(key), "ranks.0.summary.%s.max", cols[k]);
		CHECK_NEAR(json_num(r, key), max[k], 0);
	}
	cJSON_Delete(r);
	r = run(tl, "launch", "{\"launch_delay_cutoff_us\": 5}");
	CHECK_EQ_INT(json_num(r, "ranks.0.launch_delay_outliers.count"), 2);
	cJSON_Delete(r);
	timeline_free(tl);
}

static void test_queue(void)
{
	struct timeline *tl = load(idle_tl);
	cJSON *r = run(tl, "queue", "{\"series\": true, \"max_queue_length\": 2}");

	/* 90+ 100- 105+ 115- 120+ 150+ 200- 300- → 1 0 1 0 1 2 1 0 */
	CHECK_EQ_INT(json_num(r, "ranks.0.streams.0.summary.count"), 8);
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.summary.mean"), 0.75, 1e-12);
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.summary.max"), 2, 0);
	/* at 2 from 150 to 200; trace spans 90..300 (starts) */
	CHECK_NEAR(
		json_num(r,
			 "ranks.0.streams.0.blocked_on_full_queue.duration_at_max_queue_length_us"),
		50, 0);
	CHECK_NEAR(json_num(r, "ranks.0.streams.0.blocked_on_full_queue."
			       "relative_duration_at_max_queue_length"),
		   50.0 / 210, 1e-12);
	CHECK_NEAR(json_num(r, "ranks.0.hta_blocked_stream"), 7, 0);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* A launch row with a negative stream arg other than -1 is GPU side (HTA:
 * stream != -1) but not in GPUKernelFilter (stream >= 0), so it still
 * pairs with its kernel and is a launch: queue counts it twice, as a
 * launch and as a GPU row (a stream of its own). Queue's row array starts
 * at one row per correlated event and must grow. */
static void test_queue_launch_with_stream(void)
{
	static const char *json =
	    "{\"traceEvents\":["
	    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
	    "\"tid\":1,\"ts\":10,\"dur\":2,\"args\":{\"correlation\":1,\"stream\":-2}},"
	    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
	    "\"tid\":1,\"ts\":20,\"dur\":2,\"args\":{\"correlation\":2,\"stream\":-2}},"
	    K("k1", "kernel", 30, 5, 7, 1) "," K("k2", "kernel", 40, 5, 7, 2) "]}";
	struct timeline *tl = load(json);
	cJSON *r = tl ? run(tl, "queue", NULL) : NULL;

	CHECK(r);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(
			 cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0), "streams")),
		     2);
	/* A launch's queue is its correlation's first GPU-side row's stream,
	 * here the launch row itself: stream -2 holds the two launches (+1)
	 * and the same rows as GPU rows (-1); stream 7 the two kernels. */
	CHECK_EQ_INT(json_num(r, "ranks.0.streams.0.summary.count"), 4);
	CHECK_EQ_INT(json_num(r, "ranks.0.streams.1.summary.count"), 2);
	cJSON_Delete(r);
	timeline_free(tl);
}

#define KP(name, ts, dur, pid, stream, corr)                                                       \
	"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":" #pid ",\"tid\":" #stream     \
	",\"ts\":" #ts ",\"dur\":" #dur ",\"args\":{\"stream\":" #stream ",\"correlation\":" #corr   \
	",\"device\":" #pid "}}"

/* The numbers of array `key` of series object `se` equal want[0..n). */
static bool series_is(const cJSON *se, const char *key, const double *want, int n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(se, key);

	if (cJSON_GetArraySize(a) != n)
		return false;
	for (int i = 0; i < n; i++)
		if (cJSON_GetArrayItem(a, i)->valuedouble != want[i])
			return false;
	return true;
}

/* Streams in ascending order whatever the order they first appear in, one
 * stream on two devices counted as one (HTA groups by stream alone), and
 * each stream's rows in time order. */
static void test_queue_stream_groups(void)
{
	static const char *json = "{\"traceEvents\":["
		L("cudaLaunchKernel", 10, 1, 1) "," L("cudaLaunchKernel", 11, 1, 2) ","
		L("cudaLaunchKernel", 12, 1, 3) "," L("cudaLaunchKernel", 13, 1, 4) ","
		L("cudaLaunchKernel", 14, 1, 5) "," KP("k5", 24, 1, 0, 7, 5) ","
		KP("k3", 22, 1, 0, 3, 3) "," KP("k1", 20, 1, 0, 7, 1) ","
		KP("k2", 21, 1, 1, 7, 2) "," KP("k4", 23, 1, 0, 0, 4) "]}";
	static const double ts0[] = { 3, 13 }, len0[] = { 1, 0 };
	static const double ts3[] = { 2, 12 }, len3[] = { 1, 0 };
	static const double ts7[] = { 0, 1, 4, 10, 11, 14 }, len7[] = { 1, 2, 3, 2, 1, 0 };
	struct timeline *tl = load(json);
	cJSON *r = tl ? run(tl, "queue", "{\"series\": true}") : NULL;
	const cJSON *st = cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0), "streams");

	CHECK(r);
	CHECK_EQ_INT(cJSON_GetArraySize(st), 3);
	CHECK_EQ_INT(json_num(r, "ranks.0.streams.0.stream"), 0);
	CHECK_EQ_INT(json_num(r, "ranks.0.streams.1.stream"), 3);
	CHECK_EQ_INT(json_num(r, "ranks.0.streams.2.stream"), 7);
	CHECK(series_is(cJSON_GetObjectItem(cJSON_GetArrayItem(st, 0), "series"), "ts_us", ts0, 2));
	CHECK(series_is(cJSON_GetObjectItem(cJSON_GetArrayItem(st, 0), "series"), "queue_length",
			len0, 2));
	CHECK(series_is(cJSON_GetObjectItem(cJSON_GetArrayItem(st, 1), "series"), "ts_us", ts3, 2));
	CHECK(series_is(cJSON_GetObjectItem(cJSON_GetArrayItem(st, 1), "series"), "queue_length",
			len3, 2));
	CHECK(series_is(cJSON_GetObjectItem(cJSON_GetArrayItem(st, 2), "series"), "ts_us", ts7, 6));
	CHECK(series_is(cJSON_GetObjectItem(cJSON_GetArrayItem(st, 2), "series"), "queue_length",
			len7, 6));
	CHECK_NEAR(json_num(r, "ranks.0.streams.2.summary.max"), 3, 0);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* Two aten::linear ops each launching k_a, k_b, k_c; a sub-µs op inside the
 * second one rounds to dur -1 (4.2), where HTA raises and we do not. */
static const char *seq_tl = "{\"traceEvents\":[" OP("aten::linear", 0, 100) ","
	L("cudaLaunchKernel", 10, 2, 1) "," L("cudaLaunchKernel", 20, 2, 2) ","
	L("cudaLaunchKernel", 30, 2, 3) "," OP("aten::linear", 200, 100) ","
	L("cudaLaunchKernel", 210, 2, 4) "," L("cudaLaunchKernel", 220, 2, 5) ","
	L("cudaLaunchKernel", 230, 2, 6) "," OP("tiny", 250.5, 0.2) ","
	K("k_a", "kernel", 50, 10, 7, 1) "," K("k_b", "kernel", 61, 9, 7, 2) ","
	K("k_c", "kernel", 71, 9, 7, 3) "," K("k_a", "kernel", 250, 10, 7, 4) ","
	K("k_b", "kernel", 261, 9, 7, 5) "," K("k_c", "kernel", 271, 9, 7, 6) "]}";

static void test_sequences(void)
{
	struct timeline *tl = load(seq_tl);
	cJSON *r = run(tl, "sequences", "{\"operator\": \"linear\"}");
	const cJSON *p;

	CHECK(r);
	p = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"),
								      0),
						  "patterns"),
			       0);
	CHECK(p);
	if (p) {
		CHECK_STREQ(cJSON_GetObjectItem(p, "pattern")->valuestring,
			    "aten::linear|k_a|k_b|k_c");
		CHECK_NEAR(json_num(p, "count"), 2, 0);
		CHECK_NEAR(json_num(p, "gpu_kernel_duration_us"), 56, 0);
		CHECK_NEAR(json_num(p, "cpu_op_duration_us"), 200, 0);
	}
	cJSON_Delete(r);
	r = run(tl, "sequences", "{\"operator\": \"linear\", \"min_pattern_len\": 4}");
	CHECK_NEAR(json_num(r, "ranks.0.patterns_total"), 0, 0);
	cJSON_Delete(r);
	timeline_free(tl);
}

/*
 * End points at the same time (HTA's _less_than decides): k groups of
 * aten::addmm listed before its parent aten::linear, both starting at the
 * same µs, the linear one longer; a launch inside both; a zero-length op
 * at the linear's end. The longer op opens first whatever the file order,
 * so "aten::" roots are the linear ops, one pattern counted k times. With
 * k = 20 a thread's end points go through qsort, with k = 300 through the
 * radix sort by time and the comparator on runs of equal times
 * (sequences.c endpt_sort); a radix sort alone keeps the file order and
 * roots the addmm ops.
 */
static char *tie_trace(int k)
{
	size_t cap = (size_t)k * 700 + 64, n = 0;
	char *s = malloc(cap);

	n += (size_t)snprintf(s + n, cap - n, "{\"traceEvents\":[");
	for (int i = 0; i < k; i++) {
		int t = 1000 + i * 100;

		n += (size_t)snprintf(
		    s + n, cap - n,
		    "%s{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::addmm\",\"pid\":1,"
		    "\"tid\":1,\"ts\":%d,\"dur\":40},"
		    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":1,"
		    "\"tid\":1,\"ts\":%d,\"dur\":50},"
		    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"mark\",\"pid\":1,"
		    "\"tid\":1,\"ts\":%d,\"dur\":0},"
		    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
		    "\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":5,\"args\":{\"correlation\":%d}},"
		    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k_gemm\",\"pid\":0,"
		    "\"tid\":7,\"ts\":%d,\"dur\":3,\"args\":{\"stream\":7,\"correlation\":%d}}",
		    i ? "," : "", t, t, t + 50, t + 10, i + 1, t + 20, i + 1);
	}
	snprintf(s + n, cap - n, "]}");
	return s;
}

static void test_sequences_tied_end_points(void)
{
	static const int ks[] = { 20, 300 };

	for (int i = 0; i < 2; i++) {
		char *json = tie_trace(ks[i]);
		struct timeline *tl = load(json);
		cJSON *r =
		    tl ? run(tl, "sequences", "{\"operator\": \"aten::\", \"min_pattern_len\": 1}")
		       : NULL;
		const cJSON *p = cJSON_GetArrayItem(
		    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0),
					"patterns"),
		    0);

		CHECK(p);
		if (p) {
			CHECK_STREQ(cJSON_GetObjectItem(p, "pattern")->valuestring,
				    "aten::linear|k_gemm");
			CHECK_NEAR(json_num(p, "count"), ks[i], 0);
		}
		CHECK_NEAR(json_num(r, "ranks.0.patterns_total"), 1, 0);
		cJSON_Delete(r);
		timeline_free(tl);
		free(json);
	}
}

/*
 * The backward thread's rows move under the main thread's ProfilerStep#
 * annotations (HTA's _link_main_and_bwd_stacks). Main thread (tid 1):
 * steps 1 [0, 100] and 2 [100, 150]. Backward thread (tid 2, "autograd::"
 * rows), each launching one kernel: A [10, 20] → step 1; C [110, 115] and B
 * [125, 135] → step 2; D, a launch at 150.5 lasting 0.2 µs, which HTA's
 * rounding (4.2) makes ts 151, end 150, dur -1: inside step 2 by HTA's test
 * (ts >= start, end <= end) although it starts after the step ends; E [95,
 * 105] crosses from step 1 into step 2 and stays where it was. A step's pattern lists
 * the kernels of the rows it adopted. Step 3 [200, 250] is there for HTA's
 * ProfilerStep filter (4.8), which drops the last step onwards.
 */
#define BW(name, ts, dur)                                                                          \
	"{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" name "\",\"pid\":1,\"tid\":2,\"ts\":" #ts      \
	",\"dur\":" #dur "}"
#define LB(ts, dur, corr)                                                                          \
	"{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":2,"  \
	"\"ts\":" #ts ",\"dur\":" #dur ",\"args\":{\"correlation\":" #corr "}}"
static const char *bwd_tl = "{\"traceEvents\":[" OP("ProfilerStep#1", 0, 100) ","
	OP("ProfilerStep#2", 100, 50) "," OP("ProfilerStep#3", 200, 50) "," BW("autograd::A", 10, 10) "," LB(12, 2, 1) ","
	BW("autograd::C", 110, 5) "," LB(111, 2, 3) "," BW("autograd::B", 125, 10) ","
	LB(126, 2, 2) "," LB(150.5, 0.2, 4) "," BW("autograd::E", 95, 10) "," LB(96, 2, 5) ","
	K("k_a", "kernel", 30, 5, 7, 1) "," K("k_c", "kernel", 116, 2, 7, 3) ","
	K("k_b", "kernel", 136, 2, 7, 2) "," K("k_d", "kernel", 152, 2, 7, 4) ","
	K("k_e", "kernel", 106, 2, 7, 5) "]}";

static void test_sequences_backward_link(void)
{
	struct timeline *tl = load(bwd_tl);
	cJSON *r = run(tl, "sequences", "{\"operator\": \"ProfilerStep#\", \"min_pattern_len\": 1}");
	const cJSON *pats = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"),
								   0),
						"patterns"),
		    *p;
	int seen = 0;

	CHECK(r);
	CHECK_EQ_INT(cJSON_GetArraySize(pats), 2);
	cJSON_ArrayForEach(p, pats) {
		const char *s = cJSON_GetObjectItem(p, "pattern")->valuestring;

		if (!strcmp(s, "ProfilerStep#1|k_a"))
			seen |= 1;
		else if (!strcmp(s, "ProfilerStep#2|k_c|k_b|k_d"))
			seen |= 2;
		else
			fprintf(stderr, "unexpected pattern %s\n", s);
	}
	CHECK_EQ_INT(seen, 3);
	cJSON_Delete(r);
	timeline_free(tl);
}

/*
 * Where one row ends, the next starts and a zero-length row sits at the
 * same time, HTA's end-point comparator is not transitive (sequences.c
 * endpt_cmp), so its nesting depends on the rows' order in the file.
 * Main thread: ProfilerStep#1..#5, 100 µs each, back to back, and a
 * zero-length aten::detach at each boundary (100, 200, ...). Backward
 * thread: one aten::mm per step, [100i+20, 100i+50], launching k0, k1, k2
 * (4 µs each). HTA's ProfilerStep filter drops step 5, so four aten::mm
 * are re-parented under steps 1-4. When step i+1 opens before step i has
 * closed, step i's close pops step i+1 instead, so steps 2-4 become
 * children of step 1 and their aten::mm rows one level deeper than step
 * 1's: one root instead of four, as HTA reports on such traces. We order
 * such a time as zero-length rows, ends, then starts: four roots in every
 * file order (count 4, GPU 4 * 12 µs, CPU 4 * 30 µs); likewise with 80
 * steps (79 roots), where the radix sort hands each run of equal times to
 * qsort.
 */
static char *boundary_trace(int steps, unsigned seed)
{
	char **rows = malloc((size_t)steps * 9 * sizeof(*rows)), *s;
	size_t nrows = 0, cap = 64;
	int corr = 1;

	for (int i = 0; i < steps; i++) {
		rows[nrows] = malloc(256);
		snprintf(rows[nrows++], 256,
			 "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\","
			 "\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":100}",
			 i + 1, 100 * i);
	}
	for (int i = 0; i < steps; i++) {
		int b = 100 * i + 20;

		if (i) {
			rows[nrows] = malloc(256);
			snprintf(rows[nrows++], 256,
				 "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::detach\","
				 "\"pid\":1,\"tid\":1,\"ts\":%d,\"dur\":0}",
				 100 * i);
		}
		rows[nrows] = malloc(256);
		snprintf(rows[nrows++], 256,
			 "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,"
			 "\"tid\":2,\"ts\":%d,\"dur\":30}",
			 b);
		for (int j = 0; j < 3; j++, corr++) {
			int o = j == 0 ? 2 : j == 1 ? 10 : 20;

			rows[nrows] = malloc(256);
			snprintf(rows[nrows++], 256,
				 "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":"
				 "\"cudaLaunchKernel\",\"pid\":1,\"tid\":2,\"ts\":%d,\"dur\":2,"
				 "\"args\":{\"correlation\":%d}}",
				 b + o, corr);
			rows[nrows] = malloc(256);
			snprintf(rows[nrows++], 256,
				 "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%d\",\"pid\":0,"
				 "\"tid\":7,\"ts\":%d,\"dur\":4,\"args\":{\"stream\":7,"
				 "\"correlation\":%d}}",
				 j, b + o + 3, corr);
		}
	}
	/* rows in an order drawn from seed (0: as built), but the steps keep
	 * their order among themselves: HTA's filter drops from the last one
	 * in the file, and that is not what this is about */
	for (size_t i = nrows - 1; seed && i > 0; i--) {
		size_t k;
		char *t;

		seed = seed * 1103515245u + 12345u;
		k = (seed >> 8) % (i + 1);
		t = rows[i];
		rows[i] = rows[k];
		rows[k] = t;
	}
	/* and a step is row 0: a launch there would read as "no partner" (HTA's
	 * index_correlation 0) and lose its kernel */
	for (size_t i = 0; i < nrows; i++)
		if (strstr(rows[i], "ProfilerStep#")) {
			char *t = rows[0];

			rows[0] = rows[i];
			rows[i] = t;
			break;
		}
	for (size_t i = 0; i < nrows; i++) /* a selection sort of the steps in place */
		for (size_t j = i + 1; strstr(rows[i], "ProfilerStep#") && j < nrows; j++)
			if (strstr(rows[j], "ProfilerStep#") && strcmp(rows[j], rows[i]) < 0) {
				char *t = rows[i];

				rows[i] = rows[j];
				rows[j] = t;
			}
	for (size_t i = 0; i < nrows; i++)
		cap += strlen(rows[i]) + 1;
	s = malloc(cap);
	strcpy(s, "{\"traceEvents\":[");
	for (size_t i = 0; i < nrows; i++) {
		if (i)
			strcat(s, ",");
		strcat(s, rows[i]);
		free(rows[i]);
	}
	strcat(s, "]}");
	free(rows);
	return s;
}

static void test_sequences_zero_length_at_a_boundary(void)
{
	/* 5 steps: the thread's end points go through qsort; 80: through the
	 * radix sort, then qsort on each run of equal times */
	for (unsigned t = 0; t < 80; t++) {
		int steps = t < 60 ? 5 : 80, n = steps - 1;
		unsigned seed = t < 60 ? t : t - 60;
		char *json = boundary_trace(steps, seed);
		struct timeline *tl = load(json);
		cJSON *r = tl ? run(tl, "sequences", "{\"operator\": \"aten::mm\", \"top_k\": 0}")
			      : NULL;
		const cJSON *p = cJSON_GetArrayItem(
		    cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ranks"), 0),
					"patterns"),
		    0);

		CHECK(p);
		CHECK_NEAR(json_num(r, "ranks.0.roots"), n, 0);
		CHECK_NEAR(json_num(r, "ranks.0.patterns_total"), 1, 0);
		if (p) {
			CHECK_STREQ(cJSON_GetObjectItem(p, "pattern")->valuestring,
				    "aten::mm|k0|k1|k2");
			CHECK_NEAR(json_num(p, "count"), n, 0);
			CHECK_NEAR(json_num(p, "gpu_kernel_duration_us"), 12 * n, 0);
			CHECK_NEAR(json_num(p, "cpu_op_duration_us"), 30 * n, 0);
		}
		if (!p || json_num(p, "count") != n)
			fprintf(stderr, "%d steps, file order %u: %.300s...\n", steps, seed, json);
		cJSON_Delete(r);
		timeline_free(tl);
		free(json);
	}
}

static void test_errors(void)
{
	struct timeline *cpu = load("{\"traceEvents\":[" OP("aten::mm", 0, 10) "]}");
	struct timeline *tl = load(mix);
	cJSON *r = NULL, *p;
	char err[200];

	for (int i = 0; analysis_table[i].name; i++) {
		/* critical paths need no GPU; comm answers for its own kernels */
		if (!strcmp(analysis_table[i].name, "critical_path") ||
		    !strcmp(analysis_table[i].name, "comm"))
			continue;
		p = strcmp(analysis_table[i].name, "sequences") ? NULL
								: cJSON_Parse("{\"operator\": \"mm\"}");
		CHECK_EQ_INT(analysis_run(analysis_table[i].name, cpu, p, &r, err, sizeof(err)),
			     -ENODATA);
		cJSON_Delete(p);
		CHECK(!r);
		CHECK_STREQ(err, "no GPU activity in this capture");
	}
	CHECK_EQ_INT(analysis_run("nope", tl, NULL, &r, err, sizeof(err)), -ENOENT);
	/* the table's critical_path entry takes the analysis's params, not the
	 * RPC method's overlay on descriptors */
	p = cJSON_Parse("{\"overlay\": true}");
	CHECK_EQ_INT(analysis_run("critical_path", tl, p, &r, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "unknown parameter 'overlay'");
	cJSON_Delete(p);
	p = cJSON_Parse("{\"rank\": 3}");
	CHECK_EQ_INT(analysis_run("temporal", tl, p, &r, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "rank 3 is not in this capture (ranks: 0)");
	cJSON_Delete(p);
	p = cJSON_Parse("{\"treshold\": 3}");
	CHECK_EQ_INT(analysis_run("idle", tl, p, &r, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "unknown parameter 'treshold'");
	cJSON_Delete(p);
	p = cJSON_Parse("{\"top_k\": -1, \"operator\": \"x\"}");
	CHECK_EQ_INT(analysis_run("sequences", tl, p, &r, err, sizeof(err)), -EINVAL);
	cJSON_Delete(p);
	CHECK_EQ_INT(analysis_run("sequences", tl, NULL, &r, err, sizeof(err)), -EINVAL);
	CHECK_STREQ(err, "parameter 'operator' is required");
	p = cJSON_Parse("{\"interval_stats\": 1}");
	CHECK_EQ_INT(analysis_run("idle", tl, p, &r, err, sizeof(err)), -EINVAL);
	cJSON_Delete(p);
	timeline_free(cpu);
	timeline_free(tl);
}

int main(void)
{
	RUN(test_temporal_split);
	RUN(test_idle);
	RUN(test_idle_stream_order);
	RUN(test_idle_stream_on_two_devices);
	RUN(test_launch);
	RUN(test_queue);
	RUN(test_queue_launch_with_stream);
	RUN(test_queue_stream_groups);
	RUN(test_sequences);
	RUN(test_sequences_tied_end_points);
	RUN(test_sequences_backward_link);
	RUN(test_sequences_zero_length_at_a_boundary);
	RUN(test_errors);
	return test_summary();
}
