// SPDX-License-Identifier: MIT
/*
 * A live capture of a CUDA process as the CUPTI library's records put it
 * in the store (store.h: GPU_ENGINE_CUPTI intervals, STORE_REC_GPU_API,
 * NVTX marks), beside the launch probes: the join (capture/gpumatch.c),
 * the Kineto-shaped timeline (timeline/live.c), every analysis on it with
 * the numbers worked out by hand below, `folded --weight gpu-time` and the
 * Chrome trace export; analyze.comm on a capture with an NCCL kernel.
 *
 * pid 300 "train", device 0, context 1; µs from T0.
 * Thread 300 (stream 7):
 *   NVTX "step" [0, 200], "forward" [5, 100]
 *   c1 cudaLaunchKernel [10, 15] (its cuLaunchKernel [11, 14] shares c1;
 *      launch probe @11, stack S1) -> gemm_kernel [20, 60]
 *   c2 cudaLaunchKernel [30, 34] (probe @30, S2) -> relu_kernel [62, 72]
 *   c3 cudaMemcpyAsync [40, 43] (no probe) -> Memcpy HtoD [80, 90], 4096 B
 *   c4 cudaLaunchKernel [95, 99] (probe @95, S1) -> gemm_kernel [150, 180]
 *   c5 cudaStreamSynchronize [101, 185] -> Stream Sync [101, 185] stream 7
 *   c9 cudaEventSynchronize [186, 188] -> Event Sync [186, 188], event 5
 * Thread 301 (stream 13):
 *   NVTX "side" [10, 90]
 *   c6 cudaLaunchKernel [12, 16] (probe @12, S3) -> attn_kernel [25, 45]
 *   c7 cudaMemsetAsync [50, 52] (no probe) -> Memset (Device) [55, 57], 1 MiB
 *   c8 cudaLaunchKernel [60, 64] (probe @60, S3) -> attn_kernel [66, 76]
 *   c99 (no API record) -> orphan_kernel [190, 195] stream 13
 * The launch probes carry their own correlation ids (2, 1, 7, 4, 6): the
 * other id space, which must not be joined with CUPTI's.
 * pid 400 "xeapp": an Intel interval with its launch (the old path).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "sym/capbuild.h"
#include "analysis/analysis.h"
#include "analysis/comm/comm.h"
#include "capture/gpumatch.h"
#include "flamegraph.h"
#include "import/import.h"
#include "folded.h"
#include "gunzip.h"
#include "membuf.h"
#include "test.h"
#include "timeline.h"
#include "timeline/live.h"

#include "live_tl.h"

#define T0 1000000000000ull
#define US 1000ull
#define PID 300u
#define MAIN 300u
#define WORKER 301u

struct ids {
	uint32_t comm, s1, s2, s3;
};

static void api(struct capture *c, const struct ids *id, uint32_t tid, const char *name,
		unsigned domain, uint64_t t0, uint64_t t1, uint32_t corr)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + t0 * US,
				     .dur_ns = (t1 - t0) * US,
				     .pid = PID,
				     .tid = tid,
				     .comm = id->comm,
				     .name = cb_str(c, name),
				     .type = STORE_REC_GPU_API,
				     .cpu = (uint16_t)domain,
				     .aux = {0, corr}});
}

static void probe(struct capture *c, const struct ids *id, uint32_t tid, const char *kernel,
		  uint64_t ts, uint32_t stack, uint64_t probe_corr)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + ts * US,
				     .pid = PID,
				     .tid = tid,
				     .comm = id->comm,
				     .stack = stack,
				     .name = cb_str(c, kernel),
				     .type = STORE_REC_GPU_LAUNCH,
				     .aux32 = 7 /* cuLaunchKernel */,
				     .aux = {0, probe_corr}});
}

static void activity(struct capture *c, const struct ids *id, unsigned kind, const char *name,
		     uint64_t t0, uint64_t t1, uint32_t stream, uint32_t corr, uint32_t aux32)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + t0 * US,
				     .dur_ns = (t1 - t0) * US,
				     .pid = PID,
				     .comm = id->comm,
				     .name = cb_str(c, name),
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = (uint16_t)(GPU_ENGINE_CUPTI << 8 | kind),
				     .aux32 = aux32,
				     .aux = {STORE_CUPTI_WHERE(0, 1, stream),
					     corr | (uint64_t)cb_str(c, "grid [128,1,1] block "
									"[256,1,1]")
							     << 32}});
}

static void nvtx(struct capture *c, const struct ids *id, uint32_t tid, const char *name,
		 uint64_t t0, uint64_t t1)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + t0 * US,
				     .dur_ns = (t1 - t0) * US,
				     .pid = PID,
				     .tid = tid,
				     .comm = id->comm,
				     .name = cb_str(c, name),
				     .type = STORE_REC_MARK,
				     .cpu = 1});
}

#define MEMCPY_NAME "Memcpy HtoD (Pageable -> Device)"

/* Records roughly in the order the collector appends them: API calls and
 * NVTX ranges when they end, activity in batches later. */
static struct capture *scene_of(bool xe)
{
	struct capture *c = cb_live(T0, T0 + 1000 * US);
	struct ids id;

	id.comm = cb_str(c, "train");
	const uint64_t s1[] = {0x1003, 0x1002, 0x1001}, s2[] = {0x2002, 0x1001},
		       s3[] = {0x3003, 0x3001};
	id.s1 = cb_stack(c, s1, 3, 0);
	id.s2 = cb_stack(c, s2, 2, 0);
	id.s3 = cb_stack(c, s3, 2, 0);

	probe(c, &id, MAIN, "gemm_kernel", 11, id.s1, 2);
	probe(c, &id, WORKER, "attn_kernel", 12, id.s3, 6);
	api(c, &id, MAIN, "cuLaunchKernel", 1, 11, 14, 1); /* inner: ends first */
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 10, 15, 1);
	api(c, &id, WORKER, "cudaLaunchKernel", 2, 12, 16, 6);
	probe(c, &id, MAIN, "relu_kernel", 30, id.s2, 1);
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 30, 34, 2);
	api(c, &id, MAIN, "cudaMemcpyAsync", 2, 40, 43, 3);
	activity(c, &id, GPU_CUPTI_KERNEL, "gemm_kernel", 20, 60, 7, 1, 32);
	activity(c, &id, GPU_CUPTI_KERNEL, "attn_kernel", 25, 45, 13, 6, 40);
	api(c, &id, WORKER, "cudaMemsetAsync", 2, 50, 52, 7);
	probe(c, &id, WORKER, "attn_kernel", 60, id.s3, 7);
	api(c, &id, WORKER, "cudaLaunchKernel", 2, 60, 64, 8);
	activity(c, &id, GPU_CUPTI_MEMSET, "Memset (Device)", 55, 57, 13, 7,
		 STORE_BYTES32(1u << 20));
	activity(c, &id, GPU_CUPTI_KERNEL, "relu_kernel", 62, 72, 7, 2, 16);
	activity(c, &id, GPU_CUPTI_KERNEL, "attn_kernel", 66, 76, 13, 8, 40);
	activity(c, &id, GPU_CUPTI_MEMCPY, MEMCPY_NAME, 80, 90, 7, 3, STORE_BYTES32(4096));
	nvtx(c, &id, WORKER, "side", 10, 90);
	probe(c, &id, MAIN, "gemm_kernel", 95, id.s1, 4);
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 95, 99, 4);
	nvtx(c, &id, MAIN, "forward", 5, 100);
	activity(c, &id, GPU_CUPTI_KERNEL, "gemm_kernel", 150, 180, 7, 4, 32);
	api(c, &id, MAIN, "cudaStreamSynchronize", 2, 101, 185, 5);
	activity(c, &id, GPU_CUPTI_SYNC, "Stream Sync", 101, 185, 7, 5, 0);
	api(c, &id, MAIN, "cudaEventSynchronize", 2, 186, 188, 9);
	activity(c, &id, GPU_CUPTI_SYNC, "Event Sync", 186, 188, UINT32_MAX, 9, 5);
	activity(c, &id, GPU_CUPTI_KERNEL, "orphan_kernel", 190, 195, 13, 99, 8);
	nvtx(c, &id, MAIN, "step", 0, 200);
	if (!xe)
		return c;

	/* pid 400: an Intel job interval and the launch it carried */
	uint32_t xc = cb_str(c, "xeapp");
	cb_put(c, (struct store_rec){.ts_ns = T0,
				     .pid = 400,
				     .tid = 400,
				     .comm = xc,
				     .name = cb_str(c, "xe_k"),
				     .type = STORE_REC_GPU_LAUNCH,
				     .aux32 = 1,
				     .aux = {0, 1}});
	cb_put(c, (struct store_rec){.ts_ns = T0 + 2 * US,
				     .dur_ns = 3 * US,
				     .pid = 400,
				     .comm = xc,
				     .name = cb_str(c, "xe/ccs"),
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = GPU_ENGINE_XE << 8 | 5,
				     .aux32 = 1 * US,
				     .aux = {9, 0}});
	return c;
}

static struct capture *scene(void)
{
	return scene_of(true);
}

/* The record index of the first record of this type and name. */
static uint32_t find(const struct capture *c, uint16_t type, const char *name, unsigned nth)
{
	for (uint32_t i = 0; i < c->nrecs; i++) {
		size_t len;
		const char *s = capture_str(c, c->recs[i].name, &len);
		if (c->recs[i].type == type && s && len == strlen(name) && !memcmp(s, name, len) &&
		    !nth--)
			return i;
	}
	return UINT32_MAX;
}

static uint32_t launch_of(const struct gpu_match *m, uint32_t i)
{
	return m->count[i] == 1 ? m->launch[m->first[i]] : UINT32_MAX;
}

static void test_join(void)
{
	struct capture *c = scene();
	struct gpu_match m;

	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_U64(m.ncupti, 10);
	CHECK_EQ_U64(m.napi, 10);
	CHECK_EQ_U64(m.ncupti_call, 9);	  /* all but the orphan */
	CHECK_EQ_U64(m.ncupti_launch, 5); /* the kernels: copies, sets, syncs had no probe */
	CHECK_EQ_U64(m.nmatched, 6);	  /* and the Intel one */
	uint32_t gemm0 = find(c, STORE_REC_GPU_INTERVAL, "gemm_kernel", 0);
	uint32_t gemm1 = find(c, STORE_REC_GPU_INTERVAL, "gemm_kernel", 1);
	uint32_t relu = find(c, STORE_REC_GPU_INTERVAL, "relu_kernel", 0);
	uint32_t attn0 = find(c, STORE_REC_GPU_INTERVAL, "attn_kernel", 0);
	uint32_t attn1 = find(c, STORE_REC_GPU_INTERVAL, "attn_kernel", 1);
	uint32_t cpy = find(c, STORE_REC_GPU_INTERVAL, MEMCPY_NAME, 0);
	uint32_t orphan = find(c, STORE_REC_GPU_INTERVAL, "orphan_kernel", 0);
	CHECK_EQ_INT(launch_of(&m, gemm0), find(c, STORE_REC_GPU_LAUNCH, "gemm_kernel", 0));
	CHECK_EQ_INT(launch_of(&m, gemm1), find(c, STORE_REC_GPU_LAUNCH, "gemm_kernel", 1));
	CHECK_EQ_INT(launch_of(&m, relu), find(c, STORE_REC_GPU_LAUNCH, "relu_kernel", 0));
	CHECK_EQ_INT(launch_of(&m, attn0), find(c, STORE_REC_GPU_LAUNCH, "attn_kernel", 0));
	CHECK_EQ_INT(launch_of(&m, attn1), find(c, STORE_REC_GPU_LAUNCH, "attn_kernel", 1));
	CHECK_EQ_INT(m.count[cpy], 0);
	CHECK_EQ_INT(m.count[orphan], 0);
	/* the outer call of c1 is the runtime's; its driver call points at it */
	uint32_t rt = find(c, STORE_REC_GPU_API, "cudaLaunchKernel", 0);
	uint32_t drv = find(c, STORE_REC_GPU_API, "cuLaunchKernel", 0);
	CHECK_EQ_INT(m.call[gemm0], rt + 1);
	CHECK_EQ_INT(m.call[drv], rt + 1);
	CHECK_EQ_INT(m.call[rt], 0);
	CHECK_EQ_INT(m.call[orphan], 0);
	/* pid 400 keeps the launch-probe path */
	uint32_t xe = find(c, STORE_REC_GPU_INTERVAL, "xe/ccs", 0);
	CHECK_EQ_INT(launch_of(&m, xe), find(c, STORE_REC_GPU_LAUNCH, "xe_k", 0));
	gpu_match_finish(&m);
	capture_free(c);
}

static const struct tl_event *row(const struct timeline *tl, const struct tl_rank *r,
				  const char *name, unsigned nth)
{
	for (uint32_t i = 0; i < r->nev; i++)
		if (!strcmp(timeline_str(tl, r->ev[i].name, NULL), name) && !nth--)
			return &r->ev[i];
	return NULL;
}

static void test_timeline(void)
{
	struct capture *c = scene();
	struct timeline *tl = attached(c);
	const struct tl_event *e, *l;
	const struct tl_args *a;

	if (!tl)
		goto out;
	CHECK_EQ_INT(timeline_nranks(tl), 2);
	const struct tl_rank *r = timeline_rank(tl, PID);
	CHECK(r != NULL);
	if (!r)
		goto out;
	/* 3 NVTX + 9 API calls (the nested driver call is not a row) + 10
	 * activities; no launch probes */
	CHECK_EQ_INT(r->nev, 22);
	CHECK(row(tl, r, "cuLaunchKernel", 0) == NULL);
	CHECK_EQ_INT(r->nstreams, 2);

	e = row(tl, r, "gemm_kernel", 0);
	CHECK(e != NULL);
	if (!e)
		goto out;
	CHECK_EQ_INT(e->kind, TL_K_KERNEL);
	CHECK_STREQ(timeline_str(tl, e->cat, NULL), "kernel");
	CHECK_EQ_INT(e->pid, 0); /* the device's row */
	CHECK_EQ_INT(e->tid, 7);
	CHECK_EQ_INT(e->stream, 7);
	CHECK_EQ_INT(e->device, 0);
	CHECK_EQ_INT(e->correlation, 1);
	CHECK(e->flags & TL_EV_GPU_SIDE);
	CHECK(e->flags & TL_EV_GPU_KERNEL_FILTER);
	CHECK_EQ_INT(e->dur_ns, 40 * US);
	a = tl_event_args(r, e);
	CHECK(a && a->context == 1 && a->bytes == -1);
	CHECK(e->link >= 0);
	l = e->link >= 0 ? &r->ev[e->link] : NULL;
	CHECK(l && !strcmp(timeline_str(tl, l->name, NULL), "cudaLaunchKernel"));
	CHECK(l && l->kind == TL_K_RUNTIME && l->pid == PID && l->tid == MAIN);
	CHECK(l && l->ts_ns == (int64_t)(T0 + 10 * US) && l->dur_ns == (int64_t)(5 * US));
	CHECK(l && (l->flags & TL_EV_LAUNCH_STATS) && l->link == (int32_t)(e - r->ev));

	e = row(tl, r, MEMCPY_NAME, 0);
	CHECK(e && e->kind == TL_K_MEMCPY && e->stream == 7 && e->correlation == 3);
	CHECK(e && !strcmp(timeline_str(tl, e->cat, NULL), "gpu_memcpy"));
	a = e ? tl_event_args(r, e) : NULL;
	CHECK(a && a->bytes == 4096);
	e = row(tl, r, "Memset (Device)", 0);
	CHECK(e && e->kind == TL_K_MEMSET && e->stream == 13);
	a = e ? tl_event_args(r, e) : NULL;
	CHECK(a && a->bytes == 1 << 20);

	e = row(tl, r, "Stream Sync", 0);
	CHECK(e && e->kind == TL_K_SYNC && e->sync == TL_SYNC_STREAM && e->stream == 7);
	CHECK(e && (e->flags & TL_EV_GPU_SIDE) && e->link >= 0);
	CHECK(e && e->link >= 0 &&
	      !strcmp(timeline_str(tl, r->ev[e->link].name, NULL), "cudaStreamSynchronize"));
	e = row(tl, r, "Event Sync", 0);
	CHECK(e && e->sync == TL_SYNC_EVENT && e->stream == -1 && e->tid == -1);
	CHECK(e && !(e->flags & TL_EV_GPU_SIDE) && (e->flags & TL_EV_GPU_KERNEL_FILTER));
	a = e ? tl_event_args(r, e) : NULL;
	CHECK(a && a->wait_on_event_id == 5 && a->wait_on_event_record_corr == -1);
	CHECK(e && e->link >= 0 && (r->ev[e->link].flags & TL_EV_EVENT_SYNC_CALL));

	e = row(tl, r, "orphan_kernel", 0);
	CHECK(e && e->correlation == 99 && e->link == -1);
	e = row(tl, r, "forward", 0);
	CHECK(e && e->kind == TL_K_USER_ANNOTATION && e->tid == MAIN && e->stream == -1);
	CHECK(e && !strcmp(timeline_str(tl, e->cat, NULL), "user_annotation"));
	e = row(tl, r, "side", 0);
	CHECK(e && e->tid == WORKER && e->dur_ns == (int64_t)(80 * US));
	e = row(tl, r, "cudaMemsetAsync", 0);
	CHECK(e && e->tid == WORKER && (e->flags & TL_EV_MEM_ASYNC) && e->correlation == 7);
	/* rows in time order: index = position */
	for (uint32_t i = 1; i < r->nev; i++)
		CHECK(r->ev[i].ts_ns >= r->ev[i - 1].ts_ns && r->ev[i].index == i);

	const struct tl_rank *x = timeline_rank(tl, 400);
	CHECK(x && x->nev == 2);
	e = x ? row(tl, x, "xe_k", 0) : NULL;
	CHECK(e && e->correlation == 1 && e->stream == 9 && e->link >= 0);
out:
	timeline_free(tl);
	capture_free(c);
}

static cJSON *run(const struct timeline *tl, const char *name, const char *params)
{
	cJSON *p = params ? cJSON_Parse(params) : NULL, *res = NULL;
	char err[256] = "";
	int rc = analysis_run(name, tl, p, &res, err, sizeof(err));

	if (rc)
		fprintf(stderr, "%s: %d %s\n", name, rc, err);
	CHECK_EQ_INT(rc, 0);
	cJSON_Delete(p);
	return res;
}

/*
 * temporal, rank 300: GPU rows (stream != -1, the Stream Sync included as
 * HTA counts it) span [20, 195] = 175; their union [20,60] [62,76] [80,90]
 * [101,185] [190,195] = 40 + 14 + 10 + 84 + 5 = 153, idle 22; compute =
 * gemm 40 + 30, relu and attn [62,76] 14, attn [25,45] inside gemm's,
 * orphan 5 = 89; non-compute 64 = memory (the copy) 10 + other (Stream
 * Sync outside compute, 84 - 30) 54.
 */
static void check_temporal(const struct timeline *tl)
{
	cJSON *res = run(tl, "temporal", NULL);
	const cJSON *r = rank_obj(res, PID);

	CHECK(r != NULL);
	CHECK_NEAR(num(r, "kernel_time_us"), 175, 1e-9);
	CHECK_NEAR(num(r, "idle_time_us"), 22, 1e-9);
	CHECK_NEAR(num(r, "compute_time_us"), 89, 1e-9);
	CHECK_NEAR(num(r, "non_compute_time_us"), 64, 1e-9);
	CHECK_NEAR(num(r, "idle_time_pctg"), 100.0 * 22 / 175, 1e-9);
	CHECK_NEAR(num(r, "compute_time_pctg"), 100.0 * 89 / 175, 1e-9);
	const cJSON *s = cJSON_GetObjectItem(r, "non_compute_split");
	CHECK_NEAR(num(s, "memory_time_us"), 10, 1e-9);
	CHECK_NEAR(num(s, "other_time_us"), 54, 1e-9);
	CHECK_NEAR(num(s, "communication_time_us"), 0, 1e-9);
	r = rank_obj(res, 400);
	CHECK(r && num(r, "kernel_time_us") == 3);
	cJSON_Delete(res);
}

/*
 * idle (30 µs threshold), kernels / copies / sets per stream:
 *  stream 7: relu gap 2, its launch (30) before gemm's end: kernel wait;
 *    the copy gap 8, launch 40 < 72: kernel wait; gemm#2 gap 60, launch
 *    95 > 90: host wait 60.
 *  stream 13: the set gap 10, launch 50 > 45: host wait; attn#2 gap 9,
 *    launch 60 > 57: host wait (19 in all); the orphan gap 114, no
 *    launch: other.
 */
static void check_idle(const struct timeline *tl)
{
	cJSON *res = run(tl, "idle", "{\"rank\": 300}");
	const cJSON *r = rank_obj(res, PID), *s;
	int streams = 0;

	CHECK(r != NULL);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(r, "streams"))
	{
		const cJSON *k;
		double v[3] = {-1, -1, -1};
		static const char *const cat[3] = {"host_wait", "kernel_wait", "other"};

		streams++;
		cJSON_ArrayForEach(k, cJSON_GetObjectItem(s, "categories"))
		{
			const char *n = cJSON_GetObjectItem(k, "idle_category")->valuestring;
			for (int i = 0; i < 3; i++)
				if (!strcmp(n, cat[i]))
					v[i] = num(k, "idle_time_us");
		}
		if ((int)num(s, "stream") == 7) {
			CHECK_NEAR(v[0], 60, 1e-9);
			CHECK_NEAR(v[1], 10, 1e-9);
			CHECK_NEAR(v[2], 0, 1e-9);
		} else {
			CHECK_EQ_INT((int)num(s, "stream"), 13);
			CHECK_NEAR(v[0], 19, 1e-9);
			CHECK_NEAR(v[1], -1, 0);
			CHECK_NEAR(v[2], 114, 1e-9);
		}
	}
	CHECK_EQ_INT(streams, 2);
	cJSON_Delete(res);
}

/* The per-kernel entry of name in a kernels result. */
static const cJSON *kernel_entry(const cJSON *res, const char *name)
{
	const cJSON *k;
	cJSON_ArrayForEach(k, cJSON_GetObjectItem(res, "kernels"))
	{
		const cJSON *n = cJSON_GetObjectItem(k, "name");
		if (cJSON_IsString(n) && !strcmp(n->valuestring, name) && num(k, "rank") == PID)
			return k;
	}
	return NULL;
}

static void check_kernels(const struct timeline *tl)
{
	cJSON *res = run(tl, "kernels", "{\"rank\": 300, \"num_kernels\": 20}");
	static const struct {
		const char *name;
		double sum_us, count;
	} want[] = {{"gemm_kernel", 70, 2}, {"attn_kernel", 30, 2},    {"relu_kernel", 10, 1},
		    {MEMCPY_NAME, 10, 1},   {"Memset (Device)", 2, 1}, {"orphan_kernel", 5, 1}};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const cJSON *k = kernel_entry(res, want[i].name);
		CHECK(k != NULL);
		if (!k) {
			fprintf(stderr, "no %s in %s\n", want[i].name, cJSON_PrintUnformatted(res));
			continue;
		}
		CHECK_NEAR(num(k, "sum_us"), want[i].sum_us, 1e-9);
		CHECK_NEAR(num(k, "count"), want[i].count, 0);
	}
	cJSON_Delete(res);
}

/*
 * launch (HTA's: delay = max(0, GPU start - call end)), pairs in call
 * order c1, c6, c2, c3, c7, c8, c4:
 *   cpu 5 4 4 3 2 4 4 = 26; gpu 40 20 10 10 2 10 30 = 122;
 *   delay 20-15=5, 25-16=9, 62-34=28, 80-43=37, 55-52=3, 66-64=2, 150-99=51
 *   = 135.
 */
static void check_launch(const struct timeline *tl)
{
	cJSON *res = run(tl, "launch", "{\"rank\": 300}");
	const cJSON *r = rank_obj(res, PID);
	const double corr[] = {1, 6, 2, 3, 7, 8, 4}, cpu[] = {5, 4, 4, 3, 2, 4, 4},
		     delay[] = {5, 9, 28, 37, 3, 2, 51};

	CHECK(r != NULL);
	CHECK_NEAR(num(r, "count"), 7, 0);
	const cJSON *l = cJSON_GetObjectItem(r, "launches");
	for (int i = 0; i < 7; i++) {
		CHECK_NEAR(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "correlation"), i)->valuedouble,
			   corr[i], 0);
		CHECK_NEAR(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "cpu_duration_us"), i)
				   ->valuedouble,
			   cpu[i], 1e-9);
		CHECK_NEAR(cJSON_GetArrayItem(cJSON_GetObjectItem(l, "launch_delay_us"), i)
				   ->valuedouble,
			   delay[i], 1e-9);
	}
	const cJSON *s = cJSON_GetObjectItem(r, "summary");
	CHECK_NEAR(num(cJSON_GetObjectItem(s, "cpu_duration_us"), "mean"), 26.0 / 7, 1e-9);
	CHECK_NEAR(num(cJSON_GetObjectItem(s, "gpu_duration_us"), "mean"), 122.0 / 7, 1e-9);
	CHECK_NEAR(num(cJSON_GetObjectItem(s, "launch_delay_us"), "mean"), 135.0 / 7, 1e-9);
	CHECK_NEAR(num(cJSON_GetObjectItem(s, "launch_delay_us"), "max"), 51, 1e-9);
	cJSON_Delete(res);
}

/* The number at a path of object keys, -1 when absent. */
static double at(const cJSON *o, const char *k1, const char *k2)
{
	return num(cJSON_GetObjectItem(o, k1), k2);
}

static double at3(const cJSON *o, const char *k1, const char *k2, const char *k3)
{
	return num(cJSON_GetObjectItem(cJSON_GetObjectItem(o, k1), k2), k3);
}

/*
 * The others, with what this capture makes of them:
 *  overlap: no communication kernels, nothing overlaps.
 *  queue (+1 per launch call, -1 when its GPU row starts): stream 7 goes
 *    1 0 1 2 1 0 1 0 (c1 @10, gemm @20, c2 @30, c3 @40, relu @62, copy
 *    @80, c4 @95, gemm @150): 8 rows, mean 0.75, max 2; stream 13 goes
 *    1 0 1 0 1 0: 6 rows, max 1.
 *  sequences under the NVTX range "forward": the GPU rows of c1..c4.
 *  critical_path bounded by the NVTX range "step": c1 5, c2 4, c3 3 on
 *    the main thread, then c4's launch (95) to its kernel (150) 55 and
 *    gemm 30 = 97 µs, 55 of it launch overhead.
 *  comm: no NCCL kernel: -ENODATA with the reason.
 */
static void check_others(const struct timeline *tl)
{
	cJSON *res = run(tl, "overlap", "{\"rank\": 300}");
	const cJSON *r = rank_obj(res, PID), *s;
	CHECK(r && num(r, "communication_time_us") == 0 && num(r, "overlap_time_us") == 0);
	cJSON_Delete(res);

	res = run(tl, "queue", "{\"rank\": 300}");
	int streams = 0;
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(rank_obj(res, PID), "streams"))
	{
		bool s7 = num(s, "stream") == 7;
		streams++;
		CHECK_NEAR(at(s, "summary", "count"), s7 ? 8 : 6, 0);
		CHECK_NEAR(at(s, "summary", "mean"), s7 ? 0.75 : 0.5, 1e-12);
		CHECK_NEAR(at(s, "summary", "max"), s7 ? 2 : 1, 0);
	}
	CHECK_EQ_INT(streams, 2);
	cJSON_Delete(res);

	res = run(tl, "sequences", "{\"rank\": 300, \"operator\": \"forward\"}");
	r = rank_obj(res, PID);
	const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "patterns"), 0);
	CHECK(p != NULL);
	CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(p, "pattern")),
		    "forward|gemm_kernel|relu_kernel|" MEMCPY_NAME "|gemm_kernel");
	CHECK_NEAR(num(p, "count"), 1, 0);
	CHECK_NEAR(num(p, "gpu_kernel_duration_us"), 90, 1e-9);
	CHECK_NEAR(num(p, "cpu_op_duration_us"), 95, 1e-9);
	cJSON_Delete(res);

	res = run(tl, "critical_path", "{\"rank\": 300, \"annotation\": \"step\"}");
	const cJSON *path = cJSON_GetObjectItem(res, "path");
	CHECK_NEAR(num(path, "length_us"), 97, 1e-9);
	CHECK_NEAR(at(path, "length_by_type_us", "critical_path_kernel_launch_delay"), 55, 1e-9);
	CHECK_NEAR(at(path, "length_by_type_us", "critical_path_operator"), 42, 1e-9);
	CHECK_NEAR(at(res, "bound_by_us", "gpu_compute_bound"), 30, 1e-9);
	cJSON_Delete(res);

	cJSON *out = NULL;
	char err[256] = "";
	CHECK_EQ_INT(analysis_run("comm", tl, NULL, &out, err, sizeof(err)), -ENODATA);
	CHECK(strstr(err, "no communication kernels") != NULL);
	cJSON_Delete(out);
}

static void test_analyses(void)
{
	struct capture *c = scene();
	struct timeline *tl = attached(c);

	if (tl) {
		check_temporal(tl);
		check_idle(tl);
		check_kernels(tl);
		check_launch(tl);
		check_others(tl);
	}
	timeline_free(tl);
	capture_free(c);
}

/*
 * gpu-time of pid 300: S1 gemm 40 + 30 µs, S2 relu 10, S3 attn 20 + 10;
 * the copy and the set had no launch probe and the orphan no call: on no
 * stack; the syncs are the CPU waiting: nothing.
 */
static void test_folded(void)
{
	struct capture *c = scene();
	const uint32_t pids[] = {PID};
	struct folded_opts o = {.weight = FOLDED_WEIGHT_GPU_TIME, .pids = pids, .npids = 1};
	struct folded_totals t;
	struct membuf b = {0};

	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, &t), 0);
	CHECK_STREQ(b.p, "train;0x1001;0x1002;0x1003;gemm_kernel_[G] 70000\n"
			 "train;0x1001;0x2002;relu_kernel_[G] 10000\n"
			 "train;0x3001;0x3003;attn_kernel_[G] 30000\n"
			 "train;" MEMCPY_NAME "_[G] 10000\n"
			 "train;Memset (Device)_[G] 2000\n"
			 "train;orphan_kernel_[G] 5000\n");
	CHECK_EQ_U64(t.weight, 127000);
	CHECK_EQ_U64(t.cupti_intervals, 10);
	CHECK_EQ_U64(t.cupti_no_call, 1);
	CHECK_EQ_U64(t.cupti_no_launch, 4); /* copy, set, two syncs */
	CHECK(!t.gpu_time_fallback);
	free(b.p);
	capture_free(c);
}

/*
 * The Chrome trace: activity on its (device, stream) rows with Kineto's
 * categories and args, calls on their threads, flows from call to
 * activity; read back by the Kineto importer, it gives the same temporal
 * breakdown as the live timeline.
 */
static void test_chrome(void)
{
	struct capture *c = scene_of(false);
	struct membuf m = {0};
	struct export_totals t;
	struct timeline *tl = NULL;
	struct import_result res;

	CHECK_EQ_INT(chrome_export(c, NULL, membuf_write, &m, &t), 0);
	if (!m.p)
		goto out;
	CHECK(strstr(m.p, "{\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":300,\"tid\":1001000007,"
			  "\"ts\":1000000020.000,\"name\":\"gemm_kernel\",\"dur\":40.000,"
			  "\"args\":{\"correlation\":1,\"device\":0,\"context\":1,\"stream\":7,"
			  "\"registers per thread\":32,\"detail\":\"grid [128,1,1] block "
			  "[256,1,1]\"}}") != NULL);
	CHECK(strstr(m.p, "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",") != NULL);
	CHECK(strstr(m.p, "\"cat\":\"gpu_memcpy\"") && strstr(m.p, "\"bytes\":4096"));
	CHECK(strstr(m.p, "\"name\":\"Event Sync\"") && strstr(m.p, "\"stream\":-1"));
	CHECK(strstr(m.p, "\"cat\":\"cuda_driver\"") &&
	      strstr(m.p, "\"runtime_correlation\":1,\"cbid\":0}"));
	CHECK(strstr(m.p, "\"name\":\"GPU 0 stream 13\"") != NULL);
	CHECK(strstr(m.p, "\"cat\":\"user_annotation\",\"pid\":300,\"tid\":301") != NULL);
	CHECK_EQ_INT(timeline_new(&tl), 0);
	int rc = timeline_import_buf(m.p, m.len, NULL, tl, &res);
	CHECK_EQ_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "import: %s\n", res.error_msg);
		goto out;
	}
	CHECK_EQ_INT(res.flows, 2 * 9); /* every activity with a call */
	CHECK_EQ_INT(timeline_finalize(tl, TL_FIN_NO_STEP_FILTER), 0);
	/* the numbers of check_temporal() and check_launch() */
	cJSON *out = run(tl, "temporal", NULL);
	const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(out, "ranks"), 0);
	CHECK_NEAR(num(r, "kernel_time_us"), 175, 1e-9);
	CHECK_NEAR(num(r, "idle_time_us"), 22, 1e-9);
	CHECK_NEAR(num(r, "compute_time_us"), 89, 1e-9);
	CHECK_NEAR(num(r, "non_compute_time_us"), 64, 1e-9);
	cJSON_Delete(out);
	out = run(tl, "launch", NULL);
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(out, "ranks"), 0);
	CHECK_NEAR(num(r, "count"), 7, 0);
	CHECK_NEAR(at3(r, "summary", "launch_delay_us", "mean"), 135.0 / 7, 1e-9);
	CHECK_NEAR(at3(r, "summary", "cpu_duration_us", "mean"), 26.0 / 7, 1e-9);
	cJSON_Delete(out);
out:
	timeline_free(tl);
	free(m.p);
	capture_free(c);
}

/*
 * analyze.comm on a CUDA capture, µs from T0: gemm [20, 120], an NCCL
 * all-reduce kernel [200, 250], gemm [310, 350], each launched by its own
 * cudaLaunchKernel. One iteration = the GPU span 330; compute 140, comm 50
 * (OTHER: no sizes or groups without Kineto's args), idle 140.
 */
static void test_comm(void)
{
	struct capture *c;
	struct ids id;
	struct timeline *tl = NULL;
	cJSON *res = NULL;
	char err[256] = "";

	c = cb_live(0, 0);
	id.comm = cb_str(c, "train");
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 0, 2, 1);
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 50, 52, 2);
	activity(c, &id, GPU_CUPTI_KERNEL, "gemm_kernel", 20, 120, 7, 1, 32);
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 300, 302, 3);
	activity(c, &id, GPU_CUPTI_KERNEL, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 200, 250, 7,
		 2, 32);
	activity(c, &id, GPU_CUPTI_KERNEL, "gemm_kernel", 310, 350, 7, 3, 32);
	tl = attached(c);
	if (!tl)
		goto out;
	CHECK_EQ_INT(comm_analyze(tl, NULL, NULL, &res, err, sizeof(err)), 0);
	if (!res) {
		fprintf(stderr, "comm: %s\n", err);
		goto out;
	}
	const cJSON *it = cJSON_GetObjectItem(res, "iterations");
	CHECK_NEAR(num(it, "time_mean_us"), 330, 1e-9);
	const cJSON *u = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "breakdown"), "union");
	CHECK_NEAR(num(u, "compute_us"), 140, 1e-9);
	CHECK_NEAR(num(u, "all_comm_us"), 50, 1e-9);
	CHECK_NEAR(num(cJSON_GetObjectItem(u, "comm_us"), "OTHER"), 50, 1e-9);
	CHECK_NEAR(num(u, "idle_us"), 140, 1e-9);
	const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(res, "bandwidth"), "OTHER");
	CHECK_NEAR(num(b, "events_bytes_unknown"), 1, 0);
out:
	cJSON_Delete(res);
	timeline_free(tl);
	capture_free(c);
}

/* pprof: GPU time per kernel; a sync interval (the CPU waiting) is none. */
static void test_pprof(void)
{
	struct capture *c = scene_of(false);
	struct membuf m = {0};
	struct export_totals t;

	CHECK_EQ_INT(pprof_export(c, NULL, 1000000, membuf_write, &m, &t), 0);
	size_t n;
	char *out = membuf_gunzip(&m, &n);
	CHECK(out != NULL);
	if (!out)
		goto out;
	CHECK(memmem(out, n, "gpu", 3) != NULL);
	CHECK(memmem(out, n, "gemm_kernel_[G]", 15) != NULL);
	CHECK(memmem(out, n, MEMCPY_NAME "_[G]", strlen(MEMCPY_NAME) + 4) != NULL);
	CHECK(memmem(out, n, "Stream Sync", 11) == NULL);
	CHECK(memmem(out, n, "Event Sync", 10) == NULL);
out:
	free(out);
	free(m.p);
	capture_free(c);
}

/*
 * Graph launches, kinds this build does not know, a pid with CUPTI
 * activity but no API calls, and Intel intervals in a CUPTI pid.
 */
static void test_edges(void)
{
	struct capture *c = scene_of(false);
	struct ids id = {.comm = cb_str(c, "train")};
	struct timeline *tl = NULL;
	const struct tl_event *e;

	api(c, &id, MAIN, "cudaGraphLaunch", 2, 300, 303, 20);
	activity(c, &id, GPU_CUPTI_GRAPH, "CUDA Graph", 310, 400, 7, 20, 0);
	activity(c, &id, 9, "future kind", 310, 320, 7, 21, 0);
	/* an Intel interval of the same pid, with a launch probe whose id
	 * equals a CUPTI one */
	probe(c, &id, MAIN, "xe_k", 500, 0, 20);
	cb_put(c, (struct store_rec){.ts_ns = T0 + 505 * US,
				     .dur_ns = US,
				     .pid = PID,
				     .comm = id.comm,
				     .name = cb_str(c, "xe/ccs"),
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = GPU_ENGINE_XE << 8 | 5,
				     .aux32 = US,
				     .aux = {3, 0}});
	/* unnamed: a call and a kernel each get their own fallback name */
	cb_put(c, (struct store_rec){.ts_ns = T0 + 600 * US,
				     .dur_ns = US,
				     .pid = PID,
				     .tid = WORKER,
				     .type = STORE_REC_GPU_API,
				     .cpu = 2,
				     .aux = {0, 30}});
	cb_put(c, (struct store_rec){.ts_ns = T0 + 610 * US,
				     .dur_ns = US,
				     .pid = PID,
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = GPU_ENGINE_CUPTI << 8 | GPU_CUPTI_KERNEL,
				     .aux = {STORE_CUPTI_WHERE(0, 1, 7), 30}});
	/* pid 500: activity, no calls (API callbacks off) */
	cb_put(c, (struct store_rec){.ts_ns = T0 + 10 * US,
				     .dur_ns = 5 * US,
				     .pid = 500,
				     .type = STORE_REC_GPU_INTERVAL,
				     .cpu = GPU_ENGINE_CUPTI << 8 | GPU_CUPTI_KERNEL,
				     .aux = {STORE_CUPTI_WHERE(1, 2, 4), 1}});
	cb_put(c, (struct store_rec){.ts_ns = T0 + 9 * US,
				     .pid = 500,
				     .tid = 500,
				     .name = cb_str(c, "k500"),
				     .type = STORE_REC_GPU_LAUNCH,
				     .aux = {0, 1}});
	struct gpu_match m;
	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_U64(m.ncupti, 14);
	CHECK_EQ_U64(m.ncupti_call, 11); /* + the graph, the future kind, the unnamed */
	uint32_t iv500 = c->nrecs - 2, xe = find(c, STORE_REC_GPU_INTERVAL, "xe/ccs", 0);
	CHECK_EQ_INT(m.count[iv500], 0); /* no call: its probe's id is not CUPTI's */
	CHECK_EQ_INT(m.count[xe], 1);	 /* the Intel rule still works */
	gpu_match_finish(&m);

	CHECK_EQ_INT(timeline_from_capture(c, &tl), 0);
	if (!tl)
		goto out;
	const struct tl_rank *r = timeline_rank(tl, PID);
	/* + the graph call and launch, the Intel row, the unnamed pair */
	CHECK(r && r->nev == 22 + 2 + 1 + 2);
	e = r ? row(tl, r, "cuda/kernel", 0) : NULL;
	CHECK(e && e->link >= 0 &&
	      !strcmp(timeline_str(tl, r->ev[e->link].name, NULL), "cuda call"));
	e = r ? row(tl, r, "CUDA Graph", 0) : NULL;
	CHECK(e && e->kind == TL_K_KERNEL && e->link >= 0 &&
	      !strcmp(timeline_str(tl, r->ev[e->link].name, NULL), "cudaGraphLaunch"));
	CHECK(r && row(tl, r, "future kind", 0) == NULL);
	/* the Intel interval, named after its launch, which is no row
	 * beside CUPTI's calls; its probe id (= a CUPTI id) is not shown */
	e = r ? row(tl, r, "xe_k", 0) : NULL;
	CHECK(e && e->kind == TL_K_KERNEL && e->correlation == -1 && e->stream == 3);
	CHECK(r && row(tl, r, "xe_k", 1) == NULL);
	r = timeline_rank(tl, 500);
	CHECK(r && r->nev == 1);
	e = r ? &r->ev[0] : NULL;
	CHECK(e && e->pid == 1 && e->device == 1 && e->stream == 4 && e->link == -1);
	CHECK(e && !strcmp(timeline_str(tl, e->name, NULL), "cuda/kernel"));
out:
	timeline_free(tl);
	capture_free(c);
}

/*
 * Waits on CUDA events joined to the records they wait on, as Kineto joins
 * them, and the cross-stream edges critical path builds from that. pid 300,
 * thread 300, device 0, context 1; µs from T0:
 *   e1 cudaEventRecord [1, 2]: event 5 on stream 7 (an older record)
 *   c2 cudaLaunchKernel [10, 12] -> ka [20, 60] stream 7
 *   e3 cudaEventRecord [13, 14]: event 5 on stream 7
 *   w4 cudaStreamWaitEvent [15, 16] -> Stream Wait Event stream 13, event 5
 *   c5 cudaLaunchKernel [17, 19] -> kb [60, 80] stream 13 (after ka: the wait)
 *   e6 cudaEventRecord [20, 21]: event 6 on stream 13
 *   s7 cudaEventSynchronize [22, 81] -> Event Sync [22, 81], event 6
 *   e8 cudaEventRecord [90, 91]: event 5 again (later than w4: not its record)
 *   w9 cudaStreamWaitEvent [92, 93] -> Stream Wait Event, event 9 (no record)
 * The event records come last and out of order, as CUPTI buffers of other
 * threads may bring them.
 */
static void event_rec(struct capture *c, const struct ids *id, uint64_t t, uint32_t event,
		      uint32_t stream, uint32_t corr)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + t * US,
				     .pid = PID,
				     .comm = id->comm,
				     .type = STORE_REC_GPU_EVENT,
				     .aux32 = event,
				     .aux = {STORE_CUPTI_WHERE(0, 1, stream), corr}});
}

static struct capture *event_scene(void)
{
	struct capture *c = cb_live(T0, T0 + 1000 * US);
	struct ids id;

	id.comm = cb_str(c, "train");
	api(c, &id, MAIN, "cudaEventRecord", 2, 1, 2, 1);
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 10, 12, 2);
	api(c, &id, MAIN, "cudaEventRecord", 2, 13, 14, 3);
	api(c, &id, MAIN, "cudaStreamWaitEvent", 2, 15, 16, 4);
	api(c, &id, MAIN, "cudaLaunchKernel", 2, 17, 19, 5);
	api(c, &id, MAIN, "cudaEventRecord", 2, 20, 21, 6);
	api(c, &id, MAIN, "cudaEventSynchronize", 2, 22, 81, 7);
	api(c, &id, MAIN, "cudaEventRecord", 2, 90, 91, 8);
	api(c, &id, MAIN, "cudaStreamWaitEvent", 2, 92, 93, 9);
	activity(c, &id, GPU_CUPTI_SYNC, "Stream Wait Event", 15, 16, 13, 4, 5);
	activity(c, &id, GPU_CUPTI_KERNEL, "ka", 20, 60, 7, 2, 32);
	activity(c, &id, GPU_CUPTI_KERNEL, "kb", 60, 80, 13, 5, 32);
	activity(c, &id, GPU_CUPTI_SYNC, "Event Sync", 22, 81, UINT32_MAX, 7, 6);
	activity(c, &id, GPU_CUPTI_SYNC, "Stream Wait Event", 92, 93, 13, 9, 9);
	event_rec(c, &id, 90, 5, 7, 8);
	event_rec(c, &id, 20, 6, 13, 6);
	event_rec(c, &id, 13, 5, 7, 3);
	event_rec(c, &id, 1, 5, 7, 1);
	return c;
}

static void check_wait(const struct tl_rank *r, const struct tl_event *e, int64_t stream,
		       int64_t corr, int64_t event)
{
	const struct tl_args *a = e ? tl_event_args(r, e) : NULL;

	CHECK(a != NULL);
	if (!a)
		return;
	CHECK_EQ_INT(a->wait_on_stream, stream);
	CHECK_EQ_INT(a->wait_on_event_record_corr, corr);
	CHECK_EQ_INT(a->wait_on_event_id, event);
}

/* r: the rank of pid 300 (an imported trace numbers its one rank 0);
 * dev: the device of the work, which the syncs take from their context */
static void check_event_rows(const struct timeline *tl, const struct tl_rank *r, int dev)
{
	CHECK(r != NULL);
	if (!r)
		return;
	for (unsigned k = 0; k < 2; k++) {
		const struct tl_event *w = row(tl, r, "Stream Wait Event", k);
		CHECK(w && w->device == dev);
	}
	check_wait(r, row(tl, r, "Stream Wait Event", 0), 7, 3, 5);
	check_wait(r, row(tl, r, "Event Sync", 0), 13, 6, 6);
	check_wait(r, row(tl, r, "Stream Wait Event", 1), -1, -1, 9);
	/* the records themselves are no rows */
	CHECK_EQ_INT(r->nev, 9 + 5);
}

/* dev: every kernel and event record on that device; the syncs name none
 * (device 0 in the store, as the collector writes them) */
static void event_waits_on(uint32_t dev)
{
	struct capture *c = event_scene();
	struct timeline *tl = NULL, *back = NULL;
	struct gpu_match m;
	struct membuf mb = {0};
	struct export_totals t;
	struct import_result res;

	for (uint32_t i = 0; i < c->nrecs; i++) {
		struct store_rec *x = &c->recs[i];
		if ((gpu_is_cupti(x) && (x->cpu & 0xff) != GPU_CUPTI_SYNC) ||
		    x->type == STORE_REC_GPU_EVENT)
			x->aux[0] = STORE_CUPTI_WHERE(dev, 1, STORE_CUPTI_STREAM(x->aux[0]));
	}
	tl = attached(c);
	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_INT(gpu_match_sync_device(
			     &m, &c->recs[find(c, STORE_REC_GPU_INTERVAL, "Event Sync", 0)]),
		     dev);
	CHECK_EQ_U64(m.nevents, 4);
	CHECK_EQ_U64(m.nwaits_linked, 2);
	CHECK_EQ_INT(m.wait[find(c, STORE_REC_GPU_INTERVAL, "Stream Wait Event", 0)],
		     c->nrecs - 2 + 1); /* e3, not e1 nor the later e8 */
	CHECK_EQ_INT(m.wait[find(c, STORE_REC_GPU_INTERVAL, "Stream Wait Event", 1)], 0);
	gpu_match_finish(&m);
	if (!tl)
		goto out;
	check_event_rows(tl, timeline_rank(tl, PID), (int)dev);

	/* critical path: ka's end -> kb's start across the streams (the
	 * wait), kb's end -> the end of cudaEventSynchronize */
	cJSON *cp = run(tl, "critical_path", "{\"rank\": 300}");
	const cJSON *g = cJSON_GetObjectItem(cp, "graph");
	CHECK_NEAR(at(g, "edges_by_type", "critical_path_sync_dependency"), 2, 0);
	const struct tl_rank *r = timeline_rank(tl, PID);
	const struct tl_event *ka = row(tl, r, "ka", 0), *kb = row(tl, r, "kb", 0);
	bool cross = false;
	const cJSON *x;
	cJSON_ArrayForEach(x, cJSON_GetObjectItem(cp, "critical_edges"))
	{
		const cJSON *ty = cJSON_GetObjectItem(x, "type");
		if (ka && kb && !strcmp(ty->valuestring, "critical_path_sync_dependency") &&
		    num(x, "from_event") == ka->index && num(x, "to_event") == kb->index)
			cross = true;
	}
	CHECK(cross); /* on the path: kb waited for ka */
	cJSON_Delete(cp);

	/* the Chrome export writes the args as Kineto does; imported back,
	 * the same rows carry the same args */
	CHECK_EQ_INT(chrome_export(c, NULL, membuf_write, &mb, &t), 0);
	CHECK(mb.p && strstr(mb.p, "\"wait_on_stream\":7,\"wait_on_cuda_event_record_corr_id\":3,"
				   "\"wait_on_cuda_event_id\":5"));
	CHECK(mb.p && strstr(mb.p, "\"wait_on_stream\":-1,\"wait_on_cuda_event_record_corr_id\":-1,"
				   "\"wait_on_cuda_event_id\":9"));
	CHECK_EQ_INT(timeline_new(&back), 0);
	CHECK_EQ_INT(timeline_import_buf(mb.p, mb.len, NULL, back, &res), 0);
	CHECK_EQ_INT(timeline_finalize(back, TL_FIN_NO_STEP_FILTER), 0);
	check_event_rows(back, timeline_rank(back, 0), (int)dev);
	cp = run(back, "critical_path", "{\"rank\": 0}");
	g = cJSON_GetObjectItem(cp, "graph");
	CHECK_NEAR(at(g, "edges_by_type", "critical_path_sync_dependency"), 2, 0);
	cJSON_Delete(cp);
out:
	timeline_free(back);
	timeline_free(tl);
	free(mb.p);
	capture_free(c);
}

static void test_event_waits(void)
{
	event_waits_on(0);
	event_waits_on(2); /* a process on another GPU: its syncs too */
}

/*
 * The join against a direct reading of its rules on random captures:
 * several pids and threads, calls with and without a nested driver call,
 * probes anywhere, intervals naming calls that may not exist, equal
 * times everywhere.
 */
static uint64_t rng = 88172645463325252ull;

static uint64_t below(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* The outer call of (pid, corr) and its innermost entry, directly. */
static int64_t ref_call(const struct capture *c, uint32_t pid, uint32_t corr, uint64_t *in)
{
	int64_t o = -1;

	for (uint32_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *x = &c->recs[i];
		if (x->type != STORE_REC_GPU_API || x->pid != pid || (uint32_t)x->aux[1] != corr)
			continue;
		if (o < 0) {
			o = i;
			*in = x->ts_ns;
			continue;
		}
		const struct store_rec *y = &c->recs[o];
		if (x->ts_ns < y->ts_ns || (x->ts_ns == y->ts_ns && x->cpu > y->cpu))
			o = i;
		if (x->ts_ns > *in)
			*in = x->ts_ns;
	}
	return o;
}

static int64_t ref_launch(const struct capture *c, uint32_t pid, uint32_t corr)
{
	uint64_t in = 0, prev = 0;
	bool have_prev = false;
	int64_t o = ref_call(c, pid, corr, &in);

	if (o < 0)
		return -2; /* no call */
	uint32_t tid = c->recs[o].tid;
	/* the previous call on the thread: the latest (entry, corr) before ours */
	for (uint32_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *x = &c->recs[i];
		uint64_t in2 = 0;
		uint32_t k = (uint32_t)x->aux[1];
		if (x->type != STORE_REC_GPU_API || x->pid != pid || !k || k == corr)
			continue;
		int64_t o2 = ref_call(c, pid, k, &in2);
		if (o2 != (int64_t)i || x->tid != tid)
			continue; /* each call once, by its outer record */
		if ((in2 < in || (in2 == in && k < corr)) && (!have_prev || in2 > prev))
			prev = in2, have_prev = true;
	}
	int64_t best = -1;
	for (uint32_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *x = &c->recs[i];
		if (x->type != STORE_REC_GPU_LAUNCH || x->pid != pid || x->tid != tid ||
		    x->ts_ns > in || (have_prev && x->ts_ns <= prev))
			continue;
		if (best < 0 || x->ts_ns >= c->recs[best].ts_ns)
			best = i;
	}
	return best;
}

static void test_join_random(void)
{
	for (int round = 0; round < 6; round++) {
		struct capture *c;
		if (capture_new(&c) < 0)
			abort();
		uint32_t nm = cb_str(c, "k");
		size_t n = 400 + below(400);
		for (size_t i = 0; i < n; i++) {
			uint32_t pid = 10 + (uint32_t)below(3), tid = pid + (uint32_t)below(3);
			uint64_t ts = T0 + below(3000) * 100;
			uint32_t corr = 1 + (uint32_t)below(150);
			uint64_t what = below(10);
			size_t k = cb_put(c, (struct store_rec){.ts_ns = ts,
								.pid = pid,
								.tid = tid,
								.name = nm});
			struct store_rec *x = &c->recs[k];
			if (what < 3) {
				x->type = STORE_REC_GPU_LAUNCH;
				x->aux[1] = corr; /* the probe's own ids */
			} else if (what < 6) {
				x->type = STORE_REC_GPU_API;
				x->cpu = (uint16_t)(1 + below(2));
				x->dur_ns = below(500);
				x->aux[1] = corr;
			} else if (what < 9) {
				x->type = STORE_REC_GPU_INTERVAL;
				x->cpu = GPU_ENGINE_CUPTI << 8 | (uint16_t)below(5);
				x->dur_ns = below(1000);
				x->tid = 0;
				x->aux[0] = STORE_CUPTI_WHERE(0, 1, below(3));
				x->aux[1] = below(20) ? corr : 0;
			} else {
				x->type = STORE_REC_GPU_INTERVAL; /* Intel */
				x->cpu = 5;
				x->dur_ns = below(1000);
				x->aux[0] = 7;
			}
		}
		struct gpu_match m;
		size_t ncall = 0, nlaunch = 0, bad = 0;
		CHECK_EQ_INT(gpu_match_build(c, &m), 0);
		for (uint32_t i = 0; i < c->nrecs; i++) {
			const struct store_rec *x = &c->recs[i];
			if (!gpu_is_cupti(x))
				continue;
			uint32_t corr = (uint32_t)x->aux[1];
			int64_t want = corr ? ref_launch(c, x->pid, corr) : -2;
			int64_t got = m.count[i] ? (int64_t)m.launch[m.first[i]] : -1;
			uint64_t in;
			ncall += want != -2;
			nlaunch += want >= 0;
			if (want == -2)
				bad += m.call[i] != 0 || m.count[i];
			else
				bad += m.call[i] != ref_call(c, x->pid, corr, &in) + 1 ||
				       got != want;
		}
		CHECK_EQ_U64(bad, 0);
		CHECK_EQ_U64(m.ncupti_call, ncall);
		CHECK_EQ_U64(m.ncupti_launch, nlaunch);
		CHECK(nlaunch > 10 && ncall > nlaunch);
		gpu_match_finish(&m);
		/* and the timeline builds, whatever the mix */
		struct timeline *tl = NULL;
		CHECK_EQ_INT(timeline_from_capture(c, &tl), 0);
		timeline_free(tl);
		capture_free(c);
	}
}

int main(void)
{
	RUN(test_join);
	RUN(test_timeline);
	RUN(test_analyses);
	RUN(test_folded);
	RUN(test_chrome);
	RUN(test_comm);
	RUN(test_pprof);
	RUN(test_edges);
	RUN(test_event_waits);
	RUN(test_join_random);
	return test_summary();
}
