// SPDX-License-Identifier: MIT
/*
 * Live captures: GPU job intervals + launches -> the timeline model
 * (timeline/live.c) -> the temporal and idle analyses, with numbers worked
 * out by hand below; the launch <-> interval match (capture/gpumatch.c);
 * and `folded --weight gpu-time` on the same kind of capture.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sym/capbuild.h"
#include "analysis/analysis.h"
#include "capture/gpumatch.h"
#include "analysis/comm/comm.h"
#include "folded.h"
#include "membuf.h"
#include "test.h"
#include "timeline.h"
#include "timeline/live.h"

#include "live_tl.h"

#define T0 1000000000000ull
#define US 1000ull

static void launch(struct capture *c, uint64_t ts_us, uint32_t pid, uint32_t comm, uint32_t name,
		   uint32_t stack, uint64_t corr)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + ts_us * US,
				     .pid = pid,
				     .tid = pid,
				     .comm = comm,
				     .stack = stack,
				     .name = name,
				     .type = STORE_REC_GPU_LAUNCH,
				     .aux32 = 7 /* cuLaunchKernel */,
				     .aux = {0, corr}});
}

/* An interval as the gpu_jobs collector writes it: ts = start, aux32 =
 * submission-to-start delay, cpu = group << 8 | engine, aux[0] = context. */
static void interval(struct capture *c, uint64_t submit_us, uint64_t start_us, uint64_t end_us,
		     uint32_t pid, uint32_t comm, uint32_t name, uint32_t stack, unsigned engine,
		     uint64_t ctx)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + start_us * US,
				     .dur_ns = (end_us - start_us) * US,
				     .pid = pid,
				     .tid = pid,
				     .comm = comm,
				     .stack = stack,
				     .name = name,
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = (uint16_t)(GPU_ENGINE_XE << 8 | engine),
				     .aux32 = (uint32_t)((start_us - submit_us) * US),
				     .aux = {ctx, 0}});
}

/*
 * pid 100 "app", µs from T0:
 *   launches gemm @0 (corr 1), relu @50 (corr 2), conv @300 (corr 3)
 *   I1 ccs ctx 7: submitted 10, runs [20, 120]   <- gemm (launched before 10)
 *   I2 ccs ctx 7: submitted 130, runs [200, 250] <- relu (50 in (10, 130])
 *   I3 ccs ctx 7: submitted 300, runs [310, 350] <- conv (300 in (130, 300])
 *   I4 bcs ctx 9: submitted 400, runs [400, 420] <- nothing: "Memcpy xe/bcs"
 * pid 200 "other": I5 ccs ctx 11 [1000, 1010], no launch.
 */
static struct capture *scene(void)
{
	struct capture *c = cb_live(T0, T0 + 2000 * US);
	uint32_t app = cb_str(c, "app"), other = cb_str(c, "other");
	uint32_t gemm = cb_str(c, "gemm"), relu = cb_str(c, "relu");
	/* a launch name carries its geometry after a NUL (gpu_launch_abi.h) */
	static const char convg[] = "conv\0grid=1,1,1 block=64,1,1";
	uint32_t conv = cb_strn(c, convg, sizeof(convg) - 1);
	uint32_t ccs = cb_str(c, "xe/ccs"), bcs = cb_str(c, "xe/bcs");
	launch(c, 0, 100, app, gemm, 0, 1);
	launch(c, 50, 100, app, relu, 0, 2);
	interval(c, 10, 20, 120, 100, app, ccs, 0, 5, 7);
	interval(c, 130, 200, 250, 100, app, ccs, 0, 5, 7);
	launch(c, 300, 100, app, conv, 0, 3);
	interval(c, 300, 310, 350, 100, app, ccs, 0, 5, 7);
	interval(c, 400, 400, 420, 100, app, bcs, 0, 3, 9);
	interval(c, 1000, 1000, 1010, 200, other, ccs, 0, 5, 11);
	return c;
}

static void test_match(void)
{
	struct capture *c = scene();
	struct gpu_match m;
	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_U64(m.nintervals, 5);
	CHECK_EQ_U64(m.nlaunches, 3);
	CHECK_EQ_U64(m.nmatched, 3);
	/* record order: L gemm 0, L relu 1, I1 2, I2 3, L conv 4, I3 5, I4 6, I5 7 */
	CHECK_EQ_INT(m.count[2], 1);
	CHECK_EQ_INT(m.launch[m.first[2]], 0);
	CHECK_EQ_INT(m.count[3], 1);
	CHECK_EQ_INT(m.launch[m.first[3]], 1);
	CHECK_EQ_INT(m.count[5], 1);
	CHECK_EQ_INT(m.launch[m.first[5]], 4);
	CHECK_EQ_INT(m.count[6], 0);
	CHECK_EQ_INT(m.count[7], 0);
	gpu_match_finish(&m);
	/* a correlation named by the interval wins over order */
	c->recs[2].aux[1] = 2;
	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_INT(m.count[2], 1);
	CHECK_EQ_INT(m.launch[m.first[2]], 1);
	CHECK_EQ_INT(m.count[3], 0); /* relu is taken, gemm came before I1 */
	gpu_match_finish(&m);
	capture_free(c);
}

static void test_timeline_model(void)
{
	struct capture *c = scene();
	struct timeline *tl = attached(c);
	if (!tl)
		goto out;
	CHECK_EQ_INT(timeline_nranks(tl), 2);
	const struct tl_rank *r = timeline_rank(tl, 100);
	CHECK(r != NULL);
	if (!r)
		goto out;
	CHECK_EQ_INT(r->nev, 7); /* 4 kernels + 3 launches */
	CHECK_EQ_INT(r->nstreams, 2);
	uint32_t kernels = 0, linked = 0;
	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];
		const char *n = timeline_str(tl, e->name, NULL);
		if (e->kind == TL_K_KERNEL) {
			kernels++;
			CHECK(e->flags & TL_EV_GPU_SIDE);
			if (e->stream == 9)
				CHECK_STREQ(n, "Memcpy xe/bcs");
			if (e->ts_ns == (int64_t)(T0 + 310 * US)) {
				CHECK_STREQ(n, "conv"); /* the name before the geometry */
				CHECK_EQ_INT(e->correlation, 3);
			}
			if (e->link >= 0) {
				linked++;
				CHECK_STREQ(timeline_str(tl, r->ev[e->link].name, NULL),
					    "cuLaunchKernel");
				CHECK_EQ_INT(r->ev[e->link].correlation, e->correlation);
			}
		}
	}
	CHECK_EQ_INT(kernels, 4);
	CHECK_EQ_INT(linked, 3);
	const struct tl_rank *r2 = timeline_rank(tl, 200);
	CHECK(r2 && r2->nev == 1 && !strcmp(timeline_str(tl, r2->ev[0].name, NULL), "xe/ccs"));
	/* attaching again adds nothing; a capture with no intervals gets none */
	size_t nx = c->nextras;
	CHECK_EQ_INT(timeline_live_attach(c), 0);
	CHECK_EQ_U64(c->nextras, nx);
out:
	timeline_free(tl);
	capture_free(c);
	struct capture *e;
	if (capture_new(&e) < 0)
		abort();
	launch(e, 0, 1, cb_str(e, "x"), cb_str(e, "k"), 0, 1);
	struct timeline *none = NULL;
	CHECK_EQ_INT(timeline_from_capture(e, &none), -ENODATA);
	CHECK_EQ_INT(timeline_live_attach(e), 0);
	CHECK(capture_find_extra(e, CAPSEC_TIMELINE) == NULL);
	capture_free(e);
}

static void test_temporal_idle(void)
{
	struct capture *c = scene();
	struct timeline *tl = attached(c);
	cJSON *res = NULL, *p = NULL;
	char err[256] = "";
	if (!tl)
		goto out;
	/* rank 100: GPU busy [20,120] [200,250] [310,350] [400,420]:
	 * span 420 - 20 = 400, busy 100 + 50 + 40 + 20 = 210, idle 190;
	 * compute = gemm + relu + conv = 190, memory = the copy 20. */
	CHECK_EQ_INT(analysis_run("temporal", tl, NULL, &res, err, sizeof(err)), 0);
	const cJSON *r = rank_obj(res, 100);
	CHECK(r != NULL);
	CHECK_NEAR(num(r, "kernel_time_us"), 400, 1e-9);
	CHECK_NEAR(num(r, "idle_time_us"), 190, 1e-9);
	CHECK_NEAR(num(r, "compute_time_us"), 190, 1e-9);
	CHECK_NEAR(num(r, "non_compute_time_us"), 20, 1e-9);
	CHECK_NEAR(num(cJSON_GetObjectItem(r, "non_compute_split"), "memory_time_us"), 20, 1e-9);
	r = rank_obj(res, 200);
	CHECK(r != NULL);
	CHECK_NEAR(num(r, "kernel_time_us"), 10, 1e-9);
	CHECK_NEAR(num(r, "idle_time_us"), 0, 1e-9);
	cJSON_Delete(res);
	res = NULL;

	/* idle, stream 7 of rank 100 (threshold 30 µs):
	 *   I2: gap 200 - 120 = 80; relu launched at 50, before I1 ended
	 *       (120): not host wait; 80 >= 30: "other" 80
	 *   I3: gap 310 - 250 = 60; conv launched at 300 > 250: host wait 60
	 * stream 9 has one row: only "other" with 0. */
	p = cJSON_Parse("{\"rank\": 100}");
	CHECK_EQ_INT(analysis_run("idle", tl, p, &res, err, sizeof(err)), 0);
	r = rank_obj(res, 100);
	CHECK(r != NULL);
	const cJSON *s;
	int streams = 0;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(r, "streams"))
	{
		const cJSON *k;
		double host = -1, other = -1, kern = -1;
		streams++;
		cJSON_ArrayForEach(k, cJSON_GetObjectItem(s, "categories"))
		{
			const char *cat = cJSON_GetObjectItem(k, "idle_category")->valuestring;
			double v = num(k, "idle_time_us");
			if (!strcmp(cat, "host_wait"))
				host = v;
			else if (!strcmp(cat, "other"))
				other = v;
			else
				kern = v;
		}
		if ((int)num(s, "stream") == 7) {
			CHECK_NEAR(host, 60, 1e-9);
			CHECK_NEAR(other, 80, 1e-9);
			CHECK_NEAR(kern, -1, 0);
		} else {
			CHECK_EQ_INT((int)num(s, "stream"), 9);
			CHECK_NEAR(other, 0, 1e-9);
			CHECK_NEAR(host, -1, 0);
		}
	}
	CHECK_EQ_INT(streams, 2);
out:
	cJSON_Delete(res);
	cJSON_Delete(p);
	timeline_free(tl);
	capture_free(c);
}

/*
 * gpu-time: I1 (1000 ns) carried gemm and relu -> 500 each; I2 (301 ns)
 * carried gemm again -> gemm 801 in all; I3 (77 ns, copy engine) carried no
 * launch -> its submission stack topped by xe/bcs; I4 (0 ns) counts nothing.
 */
static void test_folded_gpu_time(void)
{
	struct capture *c = cb_live(0, 0);
	uint32_t app = cb_str(c, "app"), gemm = cb_str(c, "gemm"), relu = cb_str(c, "relu");
	uint32_t bcs = cb_str(c, "xe/bcs"), ccs = cb_str(c, "xe/ccs");
	const uint64_t s1[] = {0x1003, 0x1002, 0x1001}, s2[] = {0x2002, 0x1001},
		       s3[] = {0x3001, 0x1001};
	uint32_t k1 = cb_stack(c, s1, 3, 0), k2 = cb_stack(c, s2, 2, 0), k3 = cb_stack(c, s3, 2, 0);
	launch(c, 1, 100, app, gemm, k1, 1);
	launch(c, 2, 100, app, relu, k2, 2);
	cb_put(c, (struct store_rec){.ts_ns = T0 + 5 * US,
				     .dur_ns = 1000,
				     .pid = 100,
				     .comm = app,
				     .name = ccs,
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = 5});
	launch(c, 10, 100, app, gemm, k1, 3);
	cb_put(c, (struct store_rec){.ts_ns = T0 + 11 * US,
				     .dur_ns = 301,
				     .pid = 100,
				     .comm = app,
				     .name = ccs,
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = 5});
	cb_put(c, (struct store_rec){.ts_ns = T0 + 20 * US,
				     .dur_ns = 77,
				     .pid = 100,
				     .comm = app,
				     .stack = k3,
				     .name = bcs,
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = 3});
	cb_put(c, (struct store_rec){.ts_ns = T0 + 30 * US,
				     .pid = 100,
				     .comm = app,
				     .name = ccs,
				     .type = STORE_REC_GPU_INTERVAL});
	struct folded_opts o = {.weight = FOLDED_WEIGHT_GPU_TIME};
	struct folded_totals t;
	struct membuf b = {0};
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, &t), 0);
	CHECK_STREQ(b.p, "app;0x1001;0x1002;0x1003;gemm_[G] 801\n"
			 "app;0x1001;0x2002;relu_[G] 500\n"
			 "app;0x1001;0x3001;xe/bcs_[G] 77\n");
	CHECK_EQ_U64(t.weight, 1378); /* 1000 + 301 + 77: every ns once */
	CHECK(!t.gpu_time_fallback);

	/* launches: the same stacks, one per launch */
	o.weight = FOLDED_WEIGHT_LAUNCHES;
	membuf_reset(&b);
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, &t), 0);
	CHECK_STREQ(b.p, "app;0x1001;0x1002;0x1003;gemm_[G] 2\n"
			 "app;0x1001;0x2002;relu_[G] 1\n");

	/* no intervals at all: gpu-time counts launches, and says so */
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].type == STORE_REC_GPU_INTERVAL)
			c->recs[i].type = STORE_REC_MARK;
	o.weight = FOLDED_WEIGHT_GPU_TIME;
	membuf_reset(&b);
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, &t), 0);
	CHECK(t.gpu_time_fallback);
	CHECK_STREQ(b.p, "app;0x1001;0x1002;0x1003;gemm_[G] 2\n"
			 "app;0x1001;0x2002;relu_[G] 1\n");
	free(b.p);
	capture_free(c);
}

/*
 * analyze.comm on a live capture (issue: "live captures, once GPU timelines
 * come from collectors"). pid 100, µs from T0, no ProfilerStep marks:
 *   gemm @0 -> [20, 120]; ncclDevKernel_AllReduce_Sum_f32_RING_LL @50 ->
 *   [200, 250]; gemm @300 -> [310, 350] (submitted 300).
 * One iteration = the GPU span [20, 350] = 330; compute 100 + 40 = 140;
 * comm 50, no args (probes see no NCCL sizes or groups): OTHER, bytes
 * unknown; idle 330 - 140 - 50 = 140; no comm/compute overlap.
 */
static void test_comm_live(void)
{
	struct capture *c = cb_live(T0, T0 + 2000 * US);
	uint32_t app = cb_str(c, "app"), gemm = cb_str(c, "gemm");
	uint32_t nccl = cb_str(c, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	uint32_t ccs = cb_str(c, "xe/ccs");
	launch(c, 0, 100, app, gemm, 0, 1);
	launch(c, 50, 100, app, nccl, 0, 2);
	interval(c, 10, 20, 120, 100, app, ccs, 0, 5, 7);
	interval(c, 130, 200, 250, 100, app, ccs, 0, 5, 7);
	launch(c, 300, 100, app, gemm, 0, 3);
	interval(c, 300, 310, 350, 100, app, ccs, 0, 5, 7);
	struct timeline *tl = attached(c);
	cJSON *res = NULL;
	char err[256] = "";
	if (!tl)
		goto out;
	CHECK_EQ_INT(comm_analyze(tl, NULL, NULL, &res, err, sizeof(err)), 0);
	if (!res) {
		fprintf(stderr, "comm: %s\n", err);
		goto out;
	}
	const cJSON *it = cJSON_GetObjectItem(res, "iterations");
	CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(it, "source")),
		    "none: each rank's GPU span is one iteration");
	CHECK_NEAR(num(it, "time_mean_us"), 330, 1e-9);
	const cJSON *u = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "breakdown"), "union");
	CHECK_NEAR(num(u, "compute_us"), 140, 1e-9);
	CHECK_NEAR(num(u, "all_comm_us"), 50, 1e-9);
	CHECK_NEAR(num(cJSON_GetObjectItem(u, "comm_us"), "OTHER"), 50, 1e-9);
	CHECK_NEAR(num(cJSON_GetObjectItem(u, "comm_us"), "DP"), 0, 1e-9);
	CHECK_NEAR(num(u, "idle_us"), 140, 1e-9);
	const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "bandwidth"), "OTHER");
	CHECK_NEAR(num(b, "events"), 1, 0);
	CHECK_NEAR(num(b, "events_bytes_unknown"), 1, 0);
	CHECK_NEAR(num(cJSON_GetObjectItem(res, "overlap"), "average_overlap_ratio"), 0, 1e-12);
	const cJSON *rc = cJSON_GetObjectItem(res, "reconciliation");
	CHECK_NEAR(num(rc, "comm_kernel_time_us"), 50, 1e-9);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(rc, "tags_sum_to_total")));
out:
	cJSON_Delete(res);
	timeline_free(tl);
	capture_free(c);
}

int main(void)
{
	RUN(test_match);
	RUN(test_timeline_model);
	RUN(test_temporal_idle);
	RUN(test_folded_gpu_time);
	RUN(test_comm_live);
	return test_summary();
}
