// SPDX-License-Identifier: MIT
/*
 * Communication metrics on a small hand-built 2-rank timeline (Kineto JSON
 * through the importer) whose every number is worked out in the comments:
 * overlapping comm on two streams, compute overlap, an iteration without
 * communication, a kernel without size info and an unknown group, a single
 * rank, user mappings, the straggler view and the SVG.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/comm/comm.h"
#include "analysis/comm/comm_int.h"
#include "jsonpath.h"
#include "test.h"
#include "import/import.h"
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
	CHECK_NEAR(json_num(r, "iterations.count"), 2, 0);
	CHECK_NEAR(json_num(r, "iterations.time_mean_us"), 1000, 0);
	CHECK_NEAR(json_num(r, "iterations.time_p99_us"), 1000, 0);
	/* rank 0 A, union: comm [100,250)+[400,500)+[600,700) = 350 split TP 150,
	 * DP 100, OTHER 100; compute [0,300)+[350,450) = 400 minus 200 under
	 * comm = 200; memcpy 50; idle 1000 - 600 = 400 */
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.comm_us.TP"), 150, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.comm_us.DP"), 100, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.comm_us.OTHER"), 100, 1e-9);
	/* + iteration B: compute 100, idle 900 */
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.compute_us"), 300, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.memory_us"), 50, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.idle_us"), 1300, 1e-9);
	/* simple sums: TP 200, DP 100, OTHER 100, compute 400+100, memory 50,
	 * idle 1000-950 + 1000-100 = 1050 */
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.sum.comm_us.TP"), 200, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.sum.compute_us"), 500, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.sum.idle_us"), 1050, 1e-9);
	/* rank 1: union TP [130,240) = 110, DP 50, idle 2000 - 160 */
	CHECK_NEAR(json_num(r, "ranks.1.breakdown.union.comm_us.TP"), 110, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.1.breakdown.union.idle_us"), 1840, 1e-9);
	/* global ratios over ΣT = 4000 */
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.comm.TP"), 260.0 / 4000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.comm.DP"), 150.0 / 4000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.comm.OTHER"), 100.0 / 4000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.compute"), 300.0 / 4000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.idle"), 3140.0 / 4000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.total"), 1, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.sum.ratios.comm.TP"), 400.0 / 4000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.sum.ratios.idle"), 2800.0 / 4000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.sum.ratios.total"), 1, 1e-12);
	/* overlap: r0 A 200/350, r1 A 0 (B has no comm: not averaged) */
	CHECK_NEAR(json_num(r, "overlap.average_overlap_ratio"), (200.0 / 350) / 2, 1e-12);
	CHECK_NEAR(json_num(r, "overlap.per_tag.TP"), 0.5, 1e-12);
	CHECK_NEAR(json_num(r, "overlap.per_tag.DP"), 0.25, 1e-12);
	CHECK_NEAR(json_num(r, "overlap.per_tag.OTHER"), 0, 1e-12);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.overlap_ratio"), 200.0 / 350, 1e-12);
	/* per-iteration bw: 10000 B over the union of sized events, 250 us */
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.bw_Bps"), 4e7, 1e-3);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.events_bytes_unknown"), 1, 0);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.1.events"), 0, 0);
	/* reconciliation: 400 + 250 us of comm kernels */
	CHECK_NEAR(json_num(r, "reconciliation.comm_kernel_time_us"), 650, 1e-9);
	CHECK_NEAR(json_num(r, "reconciliation.comm_time_in_iterations_us"), 650, 1e-9);
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
	CHECK_NEAR(json_num(w, "count"), 2, 0);
	CHECK_NEAR(json_num(w, "mean_us"), 180, 1e-9);
	CHECK_NEAR(json_num(w, "p50_us"), 180, 1e-9);
	CHECK_NEAR(json_num(w, "p95_us"), 150 + 0.95 * 60, 1e-9);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(w, "windows_us")), 2);
	w = window(r, "DP", "OTHER");
	CHECK(w && json_num(w, "count") == 1 && json_num(w, "mean_us") == 100);
	CHECK(!window(r, "OTHER", "TP"));
	/* TP: 4 × 4000 B in 100 us = 4e7 B/s; util 0.4; busbw factor 2(n-1)/n = 1 */
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 4, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.total_bytes"), 16000, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.avg_bw_Bps"), 4e7, 1e-3);
	CHECK_NEAR(json_num(r, "bandwidth.TP.avg_util"), 0.4, 1e-12);
	CHECK_NEAR(json_num(r, "bandwidth.TP.p95_util"), 0.4, 1e-12);
	CHECK_NEAR(json_num(r, "bandwidth.TP.busbw_Bps"), 4e7, 1e-3);
	/* DP all-gather: S = Out 1000 × BFloat16 2 = 2000 B, in 100 us (2e7) and
	 * 50 us (4e7); busbw factor (n-1)/n = 3/4 */
	CHECK_NEAR(json_num(r, "bandwidth.DP.avg_bw_Bps"), 3e7, 1e-3);
	CHECK_NEAR(json_num(r, "bandwidth.DP.algbw_Bps"), 4000 / 150e-6, 1e-3);
	CHECK_NEAR(json_num(r, "bandwidth.DP.avg_util"), 0.3, 1e-12);
	CHECK_NEAR(json_num(r, "bandwidth.DP.p95_util"), 0.2 + 0.95 * 0.2, 1e-12);
	CHECK_NEAR(json_num(r, "bandwidth.DP.global_avg_util"), 4000 / 150e-6 / 1e8, 1e-12);
	CHECK_NEAR(json_num(r, "bandwidth.DP.avg_busbw_Bps"), 2.25e7, 1e-3);
	CHECK_NEAR(json_num(r, "bandwidth.DP.busbw_Bps"), 3000 / 150e-6, 1e-3);
	/* the SendRecv without args: counted in time, bytes unknown */
	CHECK_NEAR(json_num(r, "bandwidth.OTHER.events"), 1, 0);
	CHECK_NEAR(json_num(r, "bandwidth.OTHER.events_bytes_unknown"), 1, 0);
	CHECK_NEAR(json_num(r, "bandwidth.OTHER.time_us"), 100, 1e-9);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(r, "bandwidth"), "OTHER"), "avg_bw_Bps")));
	/* volume: 2 iterations, 4 (iteration, rank) pairs */
	CHECK_NEAR(json_num(r, "volume.TP.bytes_per_iteration"), 8000, 0);
	CHECK_NEAR(json_num(r, "volume.TP.bytes_per_step_per_gpu"), 4000, 0);
	CHECK_NEAR(json_num(r, "volume.DP.bytes"), 4000, 0);
	/* unknown group listed for mapping */
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(r, "unmapped_groups")), 1);
	CHECK_STREQ(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "unmapped_groups"), 0)->valuestring,
		    "(unknown)");
	/* straggler: TP seq 0 spread 30 (rank 1 last), seq 1 spread 10 (rank 0),
	 * DP seq 0 spread 50 (rank 1); the SendRecv is on one rank only */
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "straggler"),
							    "groups")), 2);
	CHECK_NEAR(json_num(r, "straggler.groups.0.spread_max_us"), 30, 1e-9);
	CHECK_NEAR(json_num(r, "straggler.groups.0.spread_mean_us"), 20, 1e-9);
	CHECK_NEAR(json_num(r, "straggler.top_instances.0.spread_us"), 50, 1e-9);
	CHECK_NEAR(json_num(r, "straggler.top_instances.0.last_rank"), 1, 0);
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
	CHECK(r && json_num(r, "nranks") == 1);
	CHECK_NEAR(json_num(r, "breakdown.union.comm_us.TP"), 110, 1e-9);
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "straggler"),
							    "groups")), 0);
	cJSON_Delete(r);
	/* mappings: the rule wins over the name; ranks [0,1] → PP */
	r = run(tl, "{\"iteration\":\"iter\",\"tags\":[{\"match\":\"^mesh_tp$\",\"tag\":\"EP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.EP.events"), 4, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 0, 0);
	cJSON_Delete(r);
	r = run(tl, "{\"iteration\":\"iter\",\"tags\":[{\"ranks\":[0,1],\"tag\":\"PP\"},"
		    "{\"collective\":\"SendRecv\",\"tag\":\"EP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.PP.events"), 4, 0);
	CHECK_NEAR(json_num(r, "bandwidth.DP.events"), 2, 0); /* by name still */
	CHECK_NEAR(json_num(r, "bandwidth.EP.events"), 1, 0);
	cJSON_Delete(r);
	/* no iteration marks: each rank's GPU span is one iteration */
	r = run(tl, NULL, NULL);
	CHECK_NEAR(json_num(r, "iterations.count"), 1, 0);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.iteration_time_us"), 1200, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.1.breakdown.union.iteration_time_us"), 370, 1e-9);
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.total"), 1, 1e-12);
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
	CHECK_NEAR(json_num(r, "bandwidth.DP.total_bytes"), 8, 0);
	CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "groups"), 0),
					"tag_source")->valuestring, "sizes");
	cJSON_Delete(r);
	r = run(tl, NULL, NULL); /* no sizes: unmapped */
	CHECK_NEAR(json_num(r, "bandwidth.OTHER.events"), 1, 0);
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
	CHECK_NEAR(json_num(window(r, "TP", "DP"), "mean_us"), -100, 1e-9);
	CHECK_NEAR(json_num(window(r, "DP", "TP"), "mean_us"), 100, 1e-9);
	CHECK_NEAR(json_num(window(r, "TP", "DP"), "count"), 1, 0);
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

/* ---- every iteration, per-type rules, breakdowns, exact µs ------------- */

#define T0 4458676638291LL /* + .351: step 1 starts at 4458676639291.351 us */
#define PG_ARGS(coll, nelems)                                                                      \
	"\"Collective name\":\"" coll "\",\"In msg nelems\":" #nelems                              \
	",\"Out msg nelems\":" #nelems ",\"dtype\":\"Float\",\"Group size\":2,"                    \
	"\"Process Group Name\":\"0\",\"Process Group Description\":\"default_pg\","              \
	"\"Process Group Ranks\":\"[0, 1]\""

struct jb {
	char *s;
	size_t n, cap;
};

static void jb_add(struct jb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_add(struct jb *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->cap - b->n < 1024) {
		b->cap = b->cap ? b->cap * 2 : 8192;
		b->s = realloc(b->s, b->cap);
	}
	va_start(ap, fmt);
	k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	b->n += (size_t)k;
}

/* A launch (cuda_runtime) at us, and its kernel (or memcpy) at kus. */
static void launch(struct jb *b, int64_t us, int64_t kus, int dur, int corr, const char *cat,
		   const char *name, int stream, const char *args)
{
	jb_add(b, ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
		  "\"tid\":1,\"ts\":%lld.351,\"dur\":5,\"args\":{\"correlation\":%d}}",
	       (long long)us, corr);
	jb_add(b, ",{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":0,\"tid\":%d,"
		  "\"ts\":%lld.351,\"dur\":%d,\"args\":{\"stream\":%d,\"correlation\":%d%s%s}}",
	       cat, name, stream, (long long)kus, dur, stream, corr, args[0] ? "," : "", args);
}

/*
 * One rank, three ProfilerSteps of 1000 us from T0 + .351 (k = 0, 1, 2):
 * an all-reduce [100, 200) (4000 B), a gemm [150, 350), a memcpy [600,
 * 640), each launched inside the step; step 0 also a broadcast [400, 450)
 * (2000 B), all in default_pg. HTA's filter drops step 2 (from its start
 * on). short_last: step 2 has no gemm (2 kernels fewer than... 1 against
 * the fewest earlier, 2: incomplete).
 */
static struct timeline *steps(bool short_last)
{
	struct timeline *tl = NULL;
	struct import_opts o = { .rank = -1 };
	struct import_result res;
	struct jb b = { 0 };
	int rc;

	jb_add(&b, "{\"distributedInfo\":{\"rank\":0},\"traceEvents\":[");
	for (int k = 0; k < 3; k++) {
		int64_t s = T0 + 1000 * k;

		jb_add(&b, "%s{\"ph\":\"X\",\"cat\":\"user_annotation\","
			   "\"name\":\"ProfilerStep#%d\",\"pid\":1,\"tid\":1,"
			   "\"ts\":%lld.351,\"dur\":1000}",
		       k ? "," : "", k + 1, (long long)s);
		launch(&b, s + 10, s + 100, 100, 10 * k + 1, "kernel",
		       "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, PG_ARGS("allreduce", 1000));
		if (!(short_last && k == 2))
			launch(&b, s + 20, s + 150, 200, 10 * k + 2, "kernel", "gemm", 7, "");
		launch(&b, s + 40, s + 600, 40, 10 * k + 4, "gpu_memcpy", "Memcpy HtoD", 7,
		       "\"bytes\":4096");
		if (!k)
			launch(&b, s + 30, s + 400, 50, 3, "kernel",
			       "ncclDevKernel_Broadcast_RING_LL", 20, PG_ARGS("broadcast", 500));
	}
	jb_add(&b, "]}");
	if (timeline_new(&tl))
		return NULL;
	rc = timeline_import_buf(b.s, b.n, &o, tl, &res);
	free(b.s);
	if (rc) {
		fprintf(stderr, "import: %s\n", res.error_msg);
		timeline_free(tl);
		return NULL;
	}
	return tl;
}

/* The step HTA drops is counted (every complete iteration); iterations=hta
 * gives HTA's choice; the tail survives encode/decode. */
static void test_every_iteration(void)
{
	struct timeline *tl = steps(false), *tl2 = NULL;
	const struct tl_rank *tr;
	cJSON *r;
	void *enc = NULL;
	size_t len = 0;
	char why[128];

	CHECK(tl);
	if (!tl)
		return;
	tr = timeline_rank_at(tl, 0);
	CHECK(tr->flags & TL_RANK_STEP_FILTERED);
	CHECK(tr->flags & TL_RANK_TAIL_KEPT);
	/* step 2: its annotation and 3 GPU rows (not the 3 launches) */
	CHECK_EQ_INT(tr->ntail, 4);
	r = run(tl, NULL, NULL);
	CHECK(r);
	CHECK_NEAR(json_num(r, "iterations.count"), 3, 0);
	CHECK_STREQ(json_str(r, "iterations.policy"), "all");
	CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "iterations"),
							       "left_out")), 0);
	/* 3 all-reduces of 100 us + a broadcast of 50 */
	CHECK_NEAR(json_num(r, "bandwidth.DP.time_us"), 350, 1e-9);
	CHECK_NEAR(json_num(r, "bandwidth.DP.total_bytes"), 3 * 4000 + 2000, 0);
	CHECK_NEAR(json_num(r, "reconciliation.comm_kernel_time_us"), 350, 1e-9);
	CHECK_NEAR(json_num(r, "reconciliation.comm_time_outside_iterations_us"), 0, 0);
	CHECK_NEAR(json_num(r, "reconciliation.comm_time_left_out_us"), 0, 0);
	cJSON_Delete(r);

	r = run(tl, "{\"iterations\":\"hta\"}", NULL);
	CHECK(r);
	CHECK_NEAR(json_num(r, "iterations.count"), 2, 0);
	CHECK_STREQ(json_str(r, "iterations.policy"), "hta");
	CHECK(strstr(json_str(r, "iterations.left_out.0.reason"), "iterations=hta"));
	CHECK_NEAR(json_num(r, "iterations.left_out.0.start_us"), (double)(T0 + 2000) + 0.351,
		   1e-3);
	CHECK_NEAR(json_num(r, "bandwidth.DP.time_us"), 250, 1e-9);
	/* every comm kernel accounted for: 250 read, step 2's 100 left out */
	CHECK_NEAR(json_num(r, "reconciliation.comm_kernel_time_us"), 250, 1e-9);
	CHECK_NEAR(json_num(r, "reconciliation.comm_time_left_out_us"), 100, 1e-9);
	cJSON_Delete(r);
	CHECK(!run(tl, "{\"iterations\":\"some\"}", &(int){ 0 }));

	/* encoded and decoded: the same tail, the same three iterations */
	CHECK_EQ_INT(timeline_encode(tl, &enc, &len), 0);
	CHECK_EQ_INT(timeline_decode(enc, len, &tl2, why, sizeof(why)), 0);
	CHECK(tl2 && timeline_equal(tl, tl2));
	r = tl2 ? run(tl2, NULL, NULL) : NULL;
	CHECK_NEAR(json_num(r, "iterations.count"), 3, 0);
	cJSON_Delete(r);
	timeline_free(tl2);
	free(enc);
	timeline_free(tl);

	/* an incomplete last step (1 kernel against the fewest earlier, 2) */
	tl = steps(true);
	r = tl ? run(tl, NULL, NULL) : NULL;
	CHECK(r);
	CHECK_NEAR(json_num(r, "iterations.count"), 2, 0);
	CHECK(strstr(json_str(r, "iterations.left_out.0.reason"), "incomplete"));
	CHECK_NEAR(json_num(r, "reconciliation.comm_time_outside_iterations_us"), 100, 1e-9);
	CHECK_NEAR(json_num(r, "reconciliation.comm_kernel_time_us"), 350, 1e-9);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* A capture encoded before the tail (version 1: the same layout without
 * the tail sections): the last step is unavailable, and the result says so. */
static void test_old_capture(void)
{
	struct timeline *tl = steps(false), *old = NULL;
	const struct tl_rank *tr;
	uint8_t *enc = NULL;
	size_t len = 0, tail;
	char why[128];
	cJSON *r;

	CHECK(tl);
	if (!tl)
		return;
	tr = timeline_rank_at(tl, 0);
	CHECK_EQ_INT(timeline_encode(tl, (void **)&enc, &len), 0);
	/* one rank: its tail sections end the encoding */
	tail = 8 + (size_t)tr->ntail * 108 + (size_t)tr->ntail_args * 124;
	CHECK(enc && len > tail && enc[4] == 2);
	enc[4] = 1;
	CHECK_EQ_INT(timeline_decode(enc, len - tail, &old, why, sizeof(why)), 0);
	free(enc);
	timeline_free(tl);
	if (!old)
		return;
	tr = timeline_rank_at(old, 0);
	CHECK(!(tr->flags & TL_RANK_TAIL_KEPT) && !tr->ntail);
	r = run(old, NULL, NULL);
	CHECK_NEAR(json_num(r, "iterations.count"), 2, 0);
	CHECK(strstr(json_str(r, "iterations.left_out.0.reason"), "unavailable"));
	CHECK_NEAR(json_num(r, "bandwidth.DP.time_us"), 250, 1e-9);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "reconciliation"),
					       "comm_time_left_out_us")));
	cJSON_Delete(r);
	timeline_free(old);
}

/* "collective" rules apply per event: the first matching rule wins. */
static void test_rules_per_type(void)
{
	struct timeline *tl = steps(false);
	cJSON *r;

	CHECK(tl);
	if (!tl)
		return;
	r = run(tl, "{\"tags\":[{\"collective\":\"Broadcast\",\"tag\":\"PP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.PP.events"), 1, 0);
	CHECK_NEAR(json_num(r, "bandwidth.PP.time_us"), 50, 1e-9);
	CHECK_NEAR(json_num(r, "bandwidth.DP.events"), 3, 0);
	CHECK_STREQ(json_str(r, "groups.0.tag"), "DP");
	CHECK_STREQ(json_str(r, "groups.0.tag_source"), "default_pg");
	CHECK_STREQ(json_str(r, "groups.0.type_tags.Broadcast.tag"), "PP");
	CHECK_NEAR(json_num(r, "groups.0.type_tags.Broadcast.events"), 1, 0);
	CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(
		cJSON_GetObjectItem(r, "groups"), 0), "type_tags"), "AllReduce"));
	/* the DP phase then PP in step 0: one window, 400 - 200 */
	CHECK(window(r, "DP", "PP") && json_num(window(r, "DP", "PP"), "mean_us") == 200);
	cJSON_Delete(r);
	/* first match wins: a group rule before the type rule takes everything */
	r = run(tl, "{\"tags\":[{\"match\":\"default\",\"tag\":\"TP\"},"
		    "{\"collective\":\"Broadcast\",\"tag\":\"PP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 4, 0);
	CHECK_NEAR(json_num(r, "bandwidth.PP.events"), 0, 0);
	cJSON_Delete(r);
	/* ... and after it, the type rule moves its type first */
	r = run(tl, "{\"tags\":[{\"collective\":\"AllReduce\",\"tag\":\"EP\"},"
		    "{\"match\":\"default\",\"tag\":\"TP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.EP.events"), 3, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 1, 0);
	CHECK_STREQ(json_str(r, "groups.0.tag"), "TP");
	CHECK_STREQ(json_str(r, "groups.0.type_tags.AllReduce.tag"), "EP");
	cJSON_Delete(r);
	timeline_free(tl);
}

/* Per collective type, per (iteration, rank), the specification's compute
 * and idle beside the finer ones. */
static void test_breakdowns(void)
{
	struct timeline *tl = steps(false);
	cJSON *r = tl ? run(tl, NULL, NULL) : NULL;

	CHECK(r);
	CHECK_NEAR(json_num(r, "types.AllReduce.events"), 3, 0);
	CHECK_NEAR(json_num(r, "types.AllReduce.time_us"), 300, 1e-9);
	CHECK_NEAR(json_num(r, "types.AllReduce.bytes"), 12000, 0);
	CHECK_NEAR(json_num(r, "types.Broadcast.events"), 1, 0);
	CHECK_NEAR(json_num(r, "types.Broadcast.time_us"), 50, 1e-9);
	CHECK_NEAR(json_num(r, "types.Broadcast.bytes"), 2000, 0);
	CHECK_NEAR(json_num(r, "ranks.0.types.AllReduce.events"), 3, 0);
	/* step 0: T 1000, comm 150 (union 150), gemm 200, memcpy 40 */
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.comm_us.DP"), 150, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.compute_spec_us"), 850, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.compute_kernels_us"), 200, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.idle_spec_us"), 650, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.idle_us"), 610, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.memory_us"), 40, 1e-9);
	/* union side: gemm [150,350) minus comm [150,200) = 150; idle 1000 -
	 * 150 - 150 - 40 */
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.compute_union_us"), 150, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.0.breakdown.idle_union_us"), 660, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.2.breakdown.comm_us.DP"), 100, 1e-9);
	/* totals over 3 steps: compute = 3000 - 350, idle = 3000 - 600 - 350 */
	CHECK_NEAR(json_num(r, "breakdown.sum.compute_spec_us"), 2650, 1e-9);
	CHECK_NEAR(json_num(r, "breakdown.sum.idle_spec_us"), 2050, 1e-9);
	CHECK_NEAR(json_num(r, "breakdown.sum.idle_us"), 1930, 1e-9);
	CHECK_NEAR(json_num(r, "breakdown.sum.compute_us"), 600, 1e-9);
	CHECK_NEAR(json_num(r, "breakdown.sum.ratios.compute_spec"), 2650.0 / 3000, 1e-12);
	CHECK_NEAR(json_num(r, "breakdown.sum.ratios.idle_spec"), 2050.0 / 3000, 1e-12);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* µs from integer ns print exactly; unknown sizes print null, not 0. */
static void test_exact_us_and_null_bytes(void)
{
	struct timeline *tl = steps(false);
	cJSON *r = tl ? run(tl, NULL, NULL) : NULL;
	char *text = r ? cJSON_PrintUnformatted(r) : NULL;

	CHECK(text && strstr(text, "\"start_us\":4458676639291.351,"));
	CHECK(text && strstr(text, "\"start_us\":4458676638291.351,"));
	CHECK(text && strstr(text, "\"time_us\":350,")); /* bandwidth.DP: no ".000" */
	free(text);
	cJSON_Delete(r);
	timeline_free(tl);

	/* two_ranks(): rank 0's SendRecv has no args, alone in OTHER */
	tl = two_ranks();
	r = tl ? run(tl, "{\"iteration\":\"iter\",\"rank\":0}", NULL) : NULL;
	text = r ? cJSON_PrintUnformatted(r) : NULL;
	CHECK(text);
	if (text) {
		const char *v = strstr(text, "\"volume\":");
		const char *o = v ? strstr(v, "\"OTHER\":{") : NULL;

		CHECK(o && !strncmp(o, "\"OTHER\":{\"bytes\":null,", 22));
		CHECK(strstr(text, "\"SendRecv\":{\"events\":1,\"events_bytes_unknown\":1,"
				   "\"time_us\":100,\"bytes\":null}"));
		o = strstr(text, "\"bandwidth\":{\"DP\"");
		CHECK(o && strstr(o, "\"OTHER\":{\"events\":1,\"events_bytes_unknown\":1,"
				     "\"time_us\":100,\"total_bytes\":null,"));
	}
	free(text);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* nccl_parser_config (HTA's test trace, one rank, three complete steps of
 * 7 NCCL kernels): every step counted, then HTA's two. */
static void test_nccl_parser_config(void)
{
	const char *shared = getenv("GPUPROF_SHARED");
	char path[512];
	struct timeline *tl = NULL;
	struct import_result res;
	cJSON *r;
	char *text;
	int fd;

	if (!shared)
		return;
	snprintf(path, sizeof(path), "%s/reference/hta/traces/nccl_parser_config/nccl_data.json.gz",
		 shared);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(!timeline_new(&tl));
	CHECK_EQ_INT(timeline_import_any_fd(fd, NULL, tl, &res), 0);
	close(fd);
	r = run(tl, NULL, NULL);
	CHECK_NEAR(json_num(r, "iterations.count"), 3, 0);
	CHECK_NEAR(json_num(r, "bandwidth.DP.time_us"), 46876.493, 1e-6);
	CHECK_NEAR(json_num(r, "bandwidth.DP.total_bytes"), 307323096, 0);
	CHECK_NEAR(json_num(r, "reconciliation.comm_kernel_time_us"), 46876.493, 1e-6);
	CHECK_NEAR(json_num(r, "reconciliation.comm_time_in_iterations_us"), 46876.493, 1e-6);
	/* the step HTA drops is the slowest for communication */
	CHECK_NEAR(json_num(r, "ranks.0.iteration_list.2.comm_union_us"), 22587.443, 1e-6);
	CHECK_NEAR(json_num(r, "types.AllReduce.events"), 15, 0);
	CHECK_NEAR(json_num(r, "types.Broadcast.events"), 6, 0);
	text = cJSON_PrintUnformatted(r);
	CHECK(text && strstr(text, "\"start_us\":4458676639291.351,"));
	free(text);
	cJSON_Delete(r);
	r = run(tl, "{\"iterations\":\"hta\"}", NULL);
	CHECK_NEAR(json_num(r, "iterations.count"), 2, 0);
	CHECK_NEAR(json_num(r, "bandwidth.DP.time_us"), 24289.05, 1e-6);
	CHECK_NEAR(json_num(r, "bandwidth.DP.total_bytes"), 204882064, 0);
	CHECK_NEAR(json_num(r, "reconciliation.comm_time_left_out_us"), 46876.493 - 24289.05, 1e-6);
	cJSON_Delete(r);
	/* per-type rules: 10 all-reduces (24,211.804 us) of HTA's 2 steps, 15 of 3 */
	r = run(tl, "{\"iterations\":\"hta\","
		    "\"tags\":[{\"collective\":\"AllReduce\",\"tag\":\"TP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 10, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.time_us"), 24211.804, 1e-6);
	CHECK_NEAR(json_num(r, "bandwidth.DP.events"), 4, 0);
	cJSON_Delete(r);
	r = run(tl, "{\"tags\":[{\"collective\":\"AllReduce\",\"tag\":\"TP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 15, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.time_us"), 46762.159, 1e-6);
	cJSON_Delete(r);
	/* 4 broadcasts (77.246 us) of 14 kernels, 6 (114.334 us) of 21 */
	r = run(tl, "{\"iterations\":\"hta\","
		    "\"tags\":[{\"collective\":\"Broadcast\",\"tag\":\"PP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.PP.events"), 4, 0);
	CHECK_NEAR(json_num(r, "bandwidth.PP.time_us"), 77.246, 1e-6);
	CHECK_NEAR(json_num(r, "bandwidth.DP.events"), 10, 0);
	cJSON_Delete(r);
	r = run(tl, "{\"tags\":[{\"collective\":\"Broadcast\",\"tag\":\"PP\"}]}", NULL);
	CHECK_NEAR(json_num(r, "bandwidth.PP.events"), 6, 0);
	CHECK_NEAR(json_num(r, "bandwidth.PP.time_us"), 114.334, 1e-6);
	cJSON_Delete(r);
	timeline_free(tl);
}

/* cj_us_item(): the exact text of integral ns, a double otherwise. */
/*
 * The SVG legend's labels never reach the next swatch of their row: the
 * gap from a label's start to the next item is at least 0.65 em a
 * character (what wide sans-serif fonts need at 10 px), and every item
 * stays within the bars' 360 px.
 */
static void test_svg_legend(void)
{
	cJSON *r = cJSON_Parse("{\"analysis\":\"comm\",\"ranks\":[{\"rank\":0,\"breakdown\":"
			       "{\"union\":{\"ratios\":{\"compute\":0.5,\"comm\":{\"DP\":0.2},"
			       "\"idle\":0.3}}}}],\"phase_windows\":[]}");
	double py = -1, ptx = 0;
	char pname[64] = "", *svg = NULL;
	size_t len = 0;
	int items = 0;

	CHECK(r);
	CHECK_EQ_INT(comm_svg(r, &svg, &len), 0);
	for (const char *p = svg; (p = strstr(p, "<rect x=\"")); p++) {
		double x, y, tx;
		char name[64];

		if (sscanf(p, "<rect x=\"%lf\" y=\"%lf\" width=\"10\" height=\"10\" fill=\"%*[^\"]\"/>"
			      "<text x=\"%lf\" y=\"%*f\" font-size=\"10\">%63[^<]</text>",
			   &x, &y, &tx, name) != 4)
			continue;
		items++;
		CHECK(x >= 60 && tx + 0.65 * 10 * (double)strlen(name) <= 420);
		if (y == py && x - ptx < 0.65 * 10 * (double)strlen(pname))
			fprintf(stderr, "legend: \"%s\" at %g runs into the swatch at %g\n", pname,
				ptx, x);
		CHECK(y != py || x - ptx >= 0.65 * 10 * (double)strlen(pname));
		py = y;
		ptx = tx;
		snprintf(pname, sizeof(pname), "%s", name);
	}
	CHECK_EQ_INT(items, 8);
	free(svg);
	cJSON_Delete(r);
}

static void test_us_text(void)
{
	static const struct {
		double ns;
		const char *text;
	} cases[] = {
		{ 0, "0" },	      { 1, "0.001" },	   { 10, "0.01" },
		{ 1000, "1" },	      { -1500, "-1.5" },   { -999, "-0.999" },
		{ 4458676639291351.0, "4458676639291.351" }, { 120000, "120" },
		{ 1.5, "0.0015" },    { NAN, "null" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *x = cj_us_item(cases[i].ns);
		char *t = x ? cJSON_PrintUnformatted(x) : NULL;

		CHECK(t && !strcmp(t, cases[i].text));
		if (t && strcmp(t, cases[i].text))
			fprintf(stderr, "  %g ns: %s, want %s\n", cases[i].ns, t, cases[i].text);
		if (x && !isnan(cases[i].ns))
			CHECK_NEAR(cj_value(x), cases[i].ns / 1000, 0);
		free(t);
		cJSON_Delete(x);
	}
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
	RUN(test_every_iteration);
	RUN(test_old_capture);
	RUN(test_rules_per_type);
	RUN(test_breakdowns);
	RUN(test_exact_us_and_null_bytes);
	RUN(test_nccl_parser_config);
	RUN(test_us_text);
	RUN(test_svg_legend);
	return test_summary();
}
