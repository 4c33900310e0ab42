// SPDX-License-Identifier: MIT
/*
 * Communication metrics on a small hand-built 2-rank timeline (Kineto JSON
 * through the importer) whose every number is worked out in the comments:
 * overlapping comm on two streams, compute overlap, an iteration without
 * communication, a kernel without size info and an unknown group, a single
 * rank, user mappings, the straggler view and the SVG.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "comm/comm_int.h"
#include "test.h"
#include "timeline/timeline.h"

#define ARGS_TP                                                                                    \
	"\"Collective name\":\"allreduce\",\"In msg nelems\":1000,\"Out msg nelems\":1000,"     \
	"\"dtype\":\"Float\",\"Group size\":2,\"Process Group Name\":\"1\","                     \
	"\"Process Group Description\":\"mesh_tp\",\"Process Group Ranks\":\"[0, 1]\""
#define ARGS_DP                                                                                    \
	"\"Collective name\":\"_allgather_base\",\"In msg nelems\":250,\"Out msg nelems\":1000," \
	"\"dtype\":\"BFloat16\",\"Group size\":4,\"Process Group Name\":\"2\","                  \
	"\"Process Group Description\":\"mesh_dp\",\"Process Group Ranks\":\"[0, 1, 2, 3]\""
#define KER(name, ts, dur, stream, corr, extra)                                                    \
	"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" name "\",\"pid\":0,\"tid\":" #stream         \
	",\"ts\":" #ts ",\"dur\":" #dur ",\"args\":{\"stream\":" #stream ",\"correlation\":" #corr \
	extra "}}"
#define ITER(ts)                                                                                   \
	"{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"iter\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
	",\"dur\":1000}"

/* Rank 0, iteration A [0,1000): TP allreduce 100-200 (s20) and 150-250 (s21),
 * DP all-gather 400-500, SendRecv without args 600-700; compute 0-300 and
 * 350-450, memcpy 800-850. Iteration B [1000,2000): compute 1100-1200. */
static const char *rank0 =
	"{\"distributedInfo\":{\"rank\":0},\"traceEvents\":[" ITER(0) "," ITER(1000) ","
	KER("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100, 100, 20, 1, "," ARGS_TP) ","
	KER("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 150, 100, 21, 2, "," ARGS_TP) ","
	KER("ncclDevKernel_AllGather_RING_LL", 400, 100, 20, 3, "," ARGS_DP) ","
	KER("ncclDevKernel_SendRecv", 600, 100, 20, 4, "") ","
	KER("gemm", 0, 300, 7, 5, "") "," KER("gemm", 350, 100, 7, 6, "") ","
	"{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":7,"
	"\"ts\":800,\"dur\":50,\"args\":{\"stream\":7,\"correlation\":7,\"bytes\":4096}},"
	KER("gemm", 1100, 100, 7, 8, "") "]}";

/* Rank 1: TP 130-230 and 140-240, DP 450-500 (bytes 2000 in 50 us). */
static const char *rank1 =
	"{\"distributedInfo\":{\"rank\":1},\"traceEvents\":[" ITER(0) "," ITER(1000) ","
	KER("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 130, 100, 20, 1, "," ARGS_TP) ","
	KER("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 140, 100, 21, 2, "," ARGS_TP) ","
	KER("ncclDevKernel_AllGather_RING_LL", 450, 50, 20, 3, "," ARGS_DP) "]}";

static struct timeline *two_ranks(void)
{
	struct timeline *tl = NULL;
	struct import_opts o = { .rank = -1, .no_finalize = true };
	struct import_result res;

	if (timeline_new(&tl))
		return NULL;
	if (timeline_import_buf(rank0, strlen(rank0), &o, tl, &res) ||
	    timeline_import_buf(rank1, strlen(rank1), &o, tl, &res) || timeline_finalize(tl, 0)) {
		fprintf(stderr, "import: %s\n", res.error_msg);
		timeline_free(tl);
		return NULL;
	}
	return tl;
}

static cJSON *run(const struct timeline *tl, const char *params, int *rc)
{
	cJSON *p = params ? cJSON_Parse(params) : NULL, *res = NULL;
	char err[256];
	int r = comm_analyze(tl, p, NULL, &res, err, sizeof(err));

	if (rc)
		*rc = r;
	else if (r)
		fprintf(stderr, "comm: %d %s\n", r, err);
	cJSON_Delete(p);
	return res;
}

/* "a.b.0.c" into the tree; NaN when absent or not a number. */
static double num(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while ((dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		o = key[0] >= '0' && key[0] <= '9' ? cJSON_GetArrayItem(o, atoi(key))
						   : cJSON_GetObjectItemCaseSensitive(o, key);
		path = dot + 1;
	}
	o = cJSON_GetObjectItemCaseSensitive(o, path);
	return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

static const cJSON *window(const cJSON *r, const char *from, const char *to)
{
	const cJSON *w;

	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(r, "phase_windows"))
		if (!strcmp(cJSON_GetObjectItemCaseSensitive(w, "from")->valuestring, from) &&
		    !strcmp(cJSON_GetObjectItemCaseSensitive(w, "to")->valuestring, to))
			return w;
	return NULL;
}

static void test_breakdown(void)
{
	struct timeline *tl = two_ranks();
	cJSON *r = run(tl, "{\"iteration\":\"iter\",\"link_bandwidth\":1e8}", NULL);

	CHECK(r);
	CHECK_NEAR(num(r, "iterations.count"), 2, 0);
	CHECK_NEAR(num(r, "iterations.time_mean_us"), 1000, 0);
	CHECK_NEAR(num(r, "iterations.time_p99_us"), 1000, 0);
	/* rank 0 A, union: comm [100,250)+[400,500)+[600,700) = 350 split TP 150,
	 * DP 100, OTHER 100; compute [0,300)+[350,450) = 400 minus 200 under
	 * comm = 200; memcpy 50; idle 1000 - 600 = 400 */
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.comm_us.TP"), 150, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.comm_us.DP"), 100, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.comm_us.OTHER"), 100, 1e-9);
	/* + iteration B: compute 100, idle 900 */
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.compute_us"), 300, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.memory_us"), 50, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.idle_us"), 1300, 1e-9);
	/* simple sums: TP 200, DP 100, OTHER 100, compute 400+100, memory 50,
	 * idle 1000-950 + 1000-100 = 1050 */
	CHECK_NEAR(num(r, "ranks.0.breakdown.sum.comm_us.TP"), 200, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.sum.compute_us"), 500, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.sum.idle_us"), 1050, 1e-9);
	/* rank 1: union TP [130,240) = 110, DP 50, idle 2000 - 160 */
	CHECK_NEAR(num(r, "ranks.1.breakdown.union.comm_us.TP"), 110, 1e-9);
	CHECK_NEAR(num(r, "ranks.1.breakdown.union.idle_us"), 1840, 1e-9);
	/* global ratios over ΣT = 4000 */
	CHECK_NEAR(num(r, "breakdown.union.ratios.comm.TP"), 260.0 / 4000, 1e-12);
	CHECK_NEAR(num(r, "breakdown.union.ratios.comm.DP"), 150.0 / 4000, 1e-12);
	CHECK_NEAR(num(r, "breakdown.union.ratios.comm.OTHER"), 100.0 / 4000, 1e-12);
	CHECK_NEAR(num(r, "breakdown.union.ratios.compute"), 300.0 / 4000, 1e-12);
	CHECK_NEAR(num(r, "breakdown.union.ratios.idle"), 3140.0 / 4000, 1e-12);
	CHECK_NEAR(num(r, "breakdown.union.ratios.total"), 1, 1e-12);
	CHECK_NEAR(num(r, "breakdown.sum.ratios.comm.TP"), 400.0 / 4000, 1e-12);
	CHECK_NEAR(num(r, "breakdown.sum.ratios.idle"), 2800.0 / 4000, 1e-12);
	CHECK_NEAR(num(r, "breakdown.sum.ratios.total"), 1, 1e-12);
	/* overlap: r0 A 200/350, r1 A 0 (B has no comm: not averaged) */
	CHECK_NEAR(num(r, "overlap.average_overlap_ratio"), (200.0 / 350) / 2, 1e-12);
	CHECK_NEAR(num(r, "overlap.per_tag.TP"), 0.5, 1e-12);
	CHECK_NEAR(num(r, "overlap.per_tag.DP"), 0.25, 1e-12);
	CHECK_NEAR(num(r, "overlap.per_tag.OTHER"), 0, 1e-12);
	CHECK_NEAR(num(r, "ranks.0.iteration_list.0.overlap_ratio"), 200.0 / 350, 1e-12);
	/* per-iteration bw: 10000 B over the union of sized events, 250 us */
	CHECK_NEAR(num(r, "ranks.0.iteration_list.0.bw_Bps"), 4e7, 1e-3);
	CHECK_NEAR(num(r, "ranks.0.iteration_list.0.events_bytes_unknown"), 1, 0);
	CHECK_NEAR(num(r, "ranks.0.iteration_list.1.events"), 0, 0);
	/* reconciliation: 400 + 250 us of comm kernels */
	CHECK_NEAR(num(r, "reconciliation.comm_kernel_time_us"), 650, 1e-9);
	CHECK_NEAR(num(r, "reconciliation.comm_time_in_iterations_us"), 650, 1e-9);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "reconciliation"),
					       "tags_sum_to_total")));
	cJSON_Delete(r);
	timeline_free(tl);
}

static void test_windows_bandwidth(void)
{
	struct timeline *tl = two_ranks();
	cJSON *r = run(tl, "{\"iteration\":\"iter\",\"link_bandwidth\":1e8,\"windows\":true}", NULL);
	const cJSON *w;

	CHECK(r);
	/* TP→DP: r0 400-250 = 150, r1 450-240 = 210; DP→OTHER: r0 600-500 */
	w = window(r, "TP", "DP");
	CHECK(w);
	CHECK_NEAR(num(w, "count"), 2, 0);
	CHECK_NEAR(num(w, "mean_us"), 180, 1e-9);
	CHECK_NEAR(num(w, "p50_us"), 180, 1e-9);
	CHECK_NEAR(num(w, "p95_us"), 150 + 0.95 * 60, 1e-9);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(w, "windows_us")), 2);
	w = window(r, "DP", "OTHER");
	CHECK(w && num(w, "count") == 1 && num(w, "mean_us") == 100);
	CHECK(!window(r, "OTHER", "TP"));
	/* TP: 4 × 4000 B in 100 us = 4e7 B/s; util 0.4; busbw factor 2(n-1)/n = 1 */
	CHECK_NEAR(num(r, "bandwidth.TP.events"), 4, 0);
	CHECK_NEAR(num(r, "bandwidth.TP.total_bytes"), 16000, 0);
	CHECK_NEAR(num(r, "bandwidth.TP.avg_bw_Bps"), 4e7, 1e-3);
	CHECK_NEAR(num(r, "bandwidth.TP.avg_util"), 0.4, 1e-12);
	CHECK_NEAR(num(r, "bandwidth.TP.p95_util"), 0.4, 1e-12);
	CHECK_NEAR(num(r, "bandwidth.TP.busbw_Bps"), 4e7, 1e-3);
	/* DP all-gather: S = Out 1000 × BFloat16 2 = 2000 B, in 100 us (2e7) and
	 * 50 us (4e7); busbw factor (n-1)/n = 3/4 */
	CHECK_NEAR(num(r, "bandwidth.DP.avg_bw_Bps"), 3e7, 1e-3);
	CHECK_NEAR(num(r, "bandwidth.DP.algbw_Bps"), 4000 / 150e-6, 1e-3);
	CHECK_NEAR(num(r, "bandwidth.DP.avg_util"), 0.3, 1e-12);
	CHECK_NEAR(num(r, "bandwidth.DP.p95_util"), 0.2 + 0.95 * 0.2, 1e-12);
	CHECK_NEAR(num(r, "bandwidth.DP.global_avg_util"), 4000 / 150e-6 / 1e8, 1e-12);
	CHECK_NEAR(num(r, "bandwidth.DP.avg_busbw_Bps"), 2.25e7, 1e-3);
	CHECK_NEAR(num(r, "bandwidth.DP.busbw_Bps"), 3000 / 150e-6, 1e-3);
	/* the SendRecv without args: counted in time, bytes unknown */
	CHECK_NEAR(num(r, "bandwidth.OTHER.events"), 1, 0);
	CHECK_NEAR(num(r, "bandwidth.OTHER.events_bytes_unknown"), 1, 0);
	CHECK_NEAR(num(r, "bandwidth.OTHER.time_us"), 100, 1e-9);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(r, "bandwidth"), "OTHER"), "avg_bw_Bps")));
	/* volume: 2 iterations, 4 (iteration, rank) pairs */
	CHECK_NEAR(num(r, "volume.TP.bytes_per_iteration"), 8000, 0);
	CHECK_NEAR(num(r, "volume.TP.bytes_per_step_per_gpu"), 4000, 0);
	CHECK_NEAR(num(r, "volume.DP.bytes"), 4000, 0);
	/* unknown group listed for mapping */
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "unmapped_groups")), 1);
	CHECK_STREQ(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "unmapped_groups"), 0)->valuestring,
		    "(unknown)");
	/* straggler: TP seq 0 spread 30 (rank 1 last), seq 1 spread 10 (rank 0),
	 * DP seq 0 spread 50 (rank 1); the SendRecv is on one rank only */
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "straggler"),
							    "groups")), 2);
	CHECK_NEAR(num(r, "straggler.groups.0.spread_max_us"), 30, 1e-9);
	CHECK_NEAR(num(r, "straggler.groups.0.spread_mean_us"), 20, 1e-9);
	CHECK_NEAR(num(r, "straggler.top_instances.0.spread_us"), 50, 1e-9);
	CHECK_NEAR(num(r, "straggler.top_instances.0.last_rank"), 1, 0);
	{
		char *svg = NULL;
		size_t len = 0;

		CHECK_EQ_INT(comm_svg(r, &svg, &len), 0);
		CHECK(svg && strstr(svg, "<svg") && strstr(svg, "</svg>") && strstr(svg, "polyline"));
		free(svg);
	}
	cJSON_Delete(r);
	timeline_free(tl);
}

static void test_params_and_single_rank(void)
{
	struct timeline *tl = two_ranks();
	cJSON *r;
	int rc;

	/* one rank: no straggler groups, everything else per that rank */
	r = run(tl, "{\"iteration\":\"iter\",\"rank\":1}", NULL);
	CHECK(r && num(r, "nranks") == 1);
	CHECK_NEAR(num(r, "breakdown.union.comm_us.TP"), 110, 1e-9);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "straggler"),
							    "groups")), 0);
	cJSON_Delete(r);
	/* mappings: the rule wins over the name; ranks [0,1] → PP */
	r = run(tl, "{\"iteration\":\"iter\",\"tags\":[{\"match\":\"^mesh_tp$\",\"tag\":\"EP\"}]}", NULL);
	CHECK_NEAR(num(r, "bandwidth.EP.events"), 4, 0);
	CHECK_NEAR(num(r, "bandwidth.TP.events"), 0, 0);
	cJSON_Delete(r);
	r = run(tl, "{\"iteration\":\"iter\",\"tags\":[{\"ranks\":[0,1],\"tag\":\"PP\"},"
		    "{\"collective\":\"SendRecv\",\"tag\":\"EP\"}]}", NULL);
	CHECK_NEAR(num(r, "bandwidth.PP.events"), 4, 0);
	CHECK_NEAR(num(r, "bandwidth.DP.events"), 2, 0); /* by name still */
	CHECK_NEAR(num(r, "bandwidth.EP.events"), 1, 0);
	cJSON_Delete(r);
	/* no iteration marks: each rank's GPU span is one iteration */
	r = run(tl, NULL, NULL);
	CHECK_NEAR(num(r, "iterations.count"), 1, 0);
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.iteration_time_us"), 1200, 1e-9);
	CHECK_NEAR(num(r, "ranks.1.breakdown.union.iteration_time_us"), 370, 1e-9);
	CHECK_NEAR(num(r, "breakdown.union.ratios.total"), 1, 1e-12);
	cJSON_Delete(r);
	/* errors */
	r = run(tl, "{\"bogus\":1}", &rc);
	CHECK(!r && rc == -EINVAL);
	r = run(tl, "{\"rank\":7}", &rc);
	CHECK(!r && rc == -EINVAL);
	r = run(tl, "{\"tags\":[{\"match\":\"(\",\"tag\":\"DP\"}]}", &rc);
	CHECK(!r && rc == -EINVAL);
	r = run(tl, "{\"tags\":[{\"match\":\"x\",\"tag\":\"XX\"}]}", &rc);
	CHECK(!r && rc == -EINVAL);
	timeline_free(tl);
}

static void test_no_comm_and_sizes(void)
{
	static const char *j =
		"{\"traceEvents\":[" KER("gemm", 0, 10, 7, 1, "") "]}";
	/* a group known only by its ranks: stride 2 with tp=2, dp=2 → DP */
	static const char *k =
		"{\"traceEvents\":[" KER("ncclKernel_AllReduce_RING_LL_Sum_float", 0, 10, 7, 1,
					 ",\"Collective name\":\"allreduce\",\"In msg nelems\":4,"
					 "\"Out msg nelems\":4,\"dtype\":\"Half\",\"Group size\":2,"
					 "\"Process Group Ranks\":\"[0, 2]\"") "]}";
	struct timeline *tl = NULL;
	cJSON *r;
	int rc;

	CHECK(!timeline_new(&tl) && !timeline_import_buf(j, strlen(j), NULL, tl, NULL));
	r = run(tl, NULL, &rc);
	CHECK(!r && rc == -ENODATA);
	timeline_free(tl);
	CHECK(!timeline_new(&tl) && !timeline_import_buf(k, strlen(k), NULL, tl, NULL));
	r = run(tl, "{\"tp\":2,\"dp\":2}", NULL);
	CHECK_NEAR(num(r, "bandwidth.DP.total_bytes"), 8, 0);
	CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "groups"), 0),
					"tag_source")->valuestring, "sizes");
	cJSON_Delete(r);
	r = run(tl, NULL, NULL); /* no sizes: unmapped */
	CHECK_NEAR(num(r, "bandwidth.OTHER.events"), 1, 0);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* Kernels starting at the same time on two streams: the order is by start,
 * then stream (by_stream's order), whatever the file order. Here DP on
 * stream 21 comes first in the file, TP on stream 20 starts with it: TP
 * 100-200 (s20), DP 100-300 (s21), TP 400-500 (s20) → phases TP, DP, TP:
 * TP→DP = 100 - 200, DP→TP = 400 - 300 (us). */
static void test_same_start(void)
{
	static const char *tr =
		"{\"distributedInfo\":{\"rank\":0},\"traceEvents\":["
		KER("ncclDevKernel_AllGather_RING_LL", 100, 200, 21, 1, "," ARGS_DP) ","
		KER("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 100, 100, 20, 2, "," ARGS_TP) ","
		KER("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 400, 100, 20, 3, "," ARGS_TP) "]}";
	struct timeline *tl = NULL;
	struct import_result res;
	cJSON *r;

	CHECK(!timeline_new(&tl) && !timeline_import_buf(tr, strlen(tr), NULL, tl, &res));
	r = run(tl, NULL, NULL);
	CHECK(r != NULL);
	CHECK_NEAR(num(window(r, "TP", "DP"), "mean_us"), -100, 1e-9);
	CHECK_NEAR(num(window(r, "DP", "TP"), "mean_us"), 100, 1e-9);
	CHECK_NEAR(num(window(r, "TP", "DP"), "count"), 1, 0);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* pctl_unsorted() (radix + quickselect above 4096 values) equals pctl() on
 * the sorted copy, exactly: duplicates, several exponents, zeros, and the
 * percentile whose neighbour lies in the next radix bucket. */
static void test_percentiles(void)
{
	static const double ps[] = { 0, 1, 50, 95, 99.9, 100 };
	size_t sizes[] = { 17, 4097, 50000 };
	uint64_t x = 88172645463325252ull;

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t n = sizes[z];
		double *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* a third duplicates, the rest over 1e-3 .. 1e3 */
			v[i] = i % 3 == 0 ? 0.25 * (double)(x % 4) : (double)(x % 1000000) * 1e-3 + 1e-3;
		}
		memcpy(w, v, n * sizeof(*v));
		qsort(w, n, sizeof(*w), cmp_double);
		for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
			double *u = malloc(n * sizeof(*u));

			memcpy(u, v, n * sizeof(*v));
			CHECK(pctl_unsorted(u, n, ps[k]) == pctl(w, n, ps[k]));
			free(u);
		}
		free(v);
		free(w);
	}
	{ /* 4900 values in [1, 2), 100 in [1000, 2000): the 4900th's neighbour
	   * is 1000 + the least of the high ones, in another bucket */
		size_t n = 5000;
		double *v = malloc(n * sizeof(*v)), p = 4899.5 / 4999 * 100;

		for (size_t i = 0; i < n; i++)
			v[i] = i < 4900 ? 1 + (double)i / 4900 : 1000 + (double)(n - i);
		CHECK_NEAR(pctl_unsorted(v, n, p), ((1 + 4899.0 / 4900) + 1001) / 2, 1e-9);
		free(v);
	}
}

/* overlap_window() (the compute list searched for the other list's span)
 * equals ival_overlap() on whole random lists, first_ival_at() a linear
 * scan; big_alloc() memory, huge-page backed or not, holds what is written. */
static void test_overlap_window_big_alloc(void)
{
	uint64_t x = 0x2545f4914f6cdd1dull;
	struct ival a[64], b[256];

	for (int round = 0; round < 500; round++) {
		uint32_t na = 0, nb = 0;
		int64_t t = 0, u = 0;
		uint32_t wa = 1 + round % 64, wb = round % 256;

		for (uint32_t i = 0; i < wa; i++) { /* a narrow phase, somewhere */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			t += 1 + (int64_t)(x % 50);
			a[na++] = (struct ival){ 5000 + t, 5000 + t + 1 + (int64_t)(x >> 40) % 40 };
			t = a[na - 1].e;
		}
		for (uint32_t i = 0; i < wb; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			u += 1 + (int64_t)(x % 90);
			b[nb++] = (struct ival){ u, u + 1 + (int64_t)(x >> 40) % 80 };
			u = b[nb - 1].e;
		}
		CHECK(overlap_window(a, na, b, nb) == ival_overlap(a, na, b, nb));
		CHECK(overlap_window(b, nb, a, na) == ival_overlap(b, nb, a, na));
	}
	CHECK(overlap_window(a, 0, b, 3) == 0 && overlap_window(a, 3, b, 0) == 0);
	for (uint32_t n = 0; n < 200; n += 7) { /* first_ival_at() = a linear scan */
		int64_t t = 0;

		for (uint32_t i = 0; i < n; i++) { /* sorted starts with repeats */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			t += (int64_t)(x % 3);
			b[i] = (struct ival){ t, t + 1 };
		}
		for (int64_t q = -1; q <= t + 1; q++) {
			uint32_t from = (uint32_t)(x % (n + 1)), want = 0;

			while (want < n && b[want].s < q)
				want++;
			if (from > want)
				from = want;
			CHECK(first_ival_at(b, from, n, q) == want);
		}
	}
	for (size_t n = 100; n <= (size_t)5 << 20; n *= 7) { /* malloc'd, then mapped */
		unsigned char *p = big_alloc(n);
		size_t bad = 0;

		CHECK(p != NULL);
		if (!p)
			continue;
		for (size_t i = 0; i < n; i++)
			p[i] = (unsigned char)(i * 31);
		for (size_t i = 0; i < n; i++)
			bad += p[i] != (unsigned char)(i * 31);
		CHECK(bad == 0);
		big_free(p, n);
	}
	big_free(NULL, (size_t)4 << 20);
}

int main(void)
{
	RUN(test_breakdown);
	RUN(test_windows_bandwidth);
	RUN(test_params_and_single_rank);
	RUN(test_no_comm_and_sizes);
	RUN(test_percentiles);
	RUN(test_same_start);
	RUN(test_overlap_window_big_alloc);
	return test_summary();
}
