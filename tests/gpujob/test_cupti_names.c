// SPDX-License-Identifier: MIT
/*
 * Launches the probes knew only by function handle ("0x<handle>": the
 * process got its handles before the daemon attached) take the kernel name
 * of the CUPTI interval joined to them, and lend it to the other launches
 * of their handle in the same process (capture/gpumatch.h, m->name); the
 * outputs that draw launches use it: folded (launches, gpu-time), pprof,
 * the Chrome trace, the live timeline's driver-side intervals, and
 * gpu.top's count from a copy of its window.
 *
 * pid 300 "train" (uid 1000), thread 300; µs from T0:
 *   L1 @10 handle A, S1; c1 [10, 14] -> _Z4gemmPf [20, 40]
 *   L2 @15 handle B (with geometry), S2; c2 [15, 18] -> _Z4reluPf [41, 50]
 *   L3 @60 A, S1; L4 @62 B, S2; L5 @64 handle C, S1: no call (CUPTI's
 *      window closed, a buffer dropped): L3 gemm, L4 relu by handle, L5 C
 *   L6 @70 handle D, S3; c3 -> _Z1xv [73, 75]
 *   L7 @76 D, S3; c4 -> _Z1yv [79, 80]
 *   L8 @81 D, S3, no call: D had two names, it stays "0x…"
 * pid 500 "other" (uid 1001): L9 @90 handle A, no call: another process's
 *   handle, it stays "0x…"
 * pid 600 "spoof": L10 @100 A (uid 1000), with a call and a gemm interval
 *   of uid 2000: joined by pid, but a name is taken only from the
 *   launch's own owner; it stays "0x…"
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/capbuild.h"
#include "capture/gpumatch.h"
#include "collect/gpu_top.h"
#include "flamegraph.h"
#include "folded.h"
#include "gunzip.h"
#include "membuf.h"
#include "test.h"
#include "timeline.h"
#include "timeline/live.h"

#define T0 1000000000000ull
#define US 1000ull
#define HA "0x7f00a000"
#define HB "0x7f00b000"
#define HC "0x7f00c000"
#define HD "0x7f00d000"

struct who {
	uint32_t pid, uid, comm;
};

static struct store_rec *rec(struct capture *c, const struct who *w)
{
	size_t i = cb_put(c, (struct store_rec){.pid = w->pid,
						.tid = w->pid,
						.uid = w->uid,
						.comm = w->comm});

	return &c->recs[i];
}

static uint32_t probe(struct capture *c, const struct who *w, uint32_t name, uint64_t ts,
		      uint32_t stack)
{
	struct store_rec *r = rec(c, w);

	r->ts_ns = T0 + ts * US;
	r->stack = stack;
	r->name = name;
	r->type = STORE_REC_GPU_LAUNCH;
	r->aux32 = 7; /* cuLaunchKernel */
	return (uint32_t)(c->nrecs - 1);
}

/* A cudaLaunchKernel call [t0, t0 + 2] and the kernel it ran [k0, k1]. */
static void kernel(struct capture *c, const struct who *w, const char *name, uint64_t t0,
		   uint64_t k0, uint64_t k1, uint32_t corr)
{
	struct store_rec *r = rec(c, w);

	r->ts_ns = T0 + t0 * US;
	r->dur_ns = 2 * US;
	r->name = cb_str(c, "cudaLaunchKernel");
	r->type = STORE_REC_GPU_API;
	r->cpu = 2;
	r->aux[1] = corr;
	r = rec(c, w);
	r->tid = 0;
	r->ts_ns = T0 + k0 * US;
	r->dur_ns = (k1 - k0) * US;
	r->name = cb_str(c, name);
	r->type = STORE_REC_GPU_INTERVAL;
	r->cpu = GPU_ENGINE_CUPTI << 8 | GPU_CUPTI_KERNEL;
	r->aux[0] = STORE_CUPTI_WHERE(0, 1, 7);
	r->aux[1] = corr;
}

static uint32_t L[11];

static struct capture *scene(void)
{
	struct capture *c = cb_live(T0, T0 + 1000 * US);
	static const char hb_geom[] = HB "\0grid=4,1,1 block=128,1,1";

	struct who train = {300, 1000, cb_str(c, "train")}, other = {500, 1001, cb_str(c, "other")},
		   spoof = {600, 1000, cb_str(c, "spoof")};
	const uint64_t s1[] = {0x1003, 0x1002, 0x1001}, s2[] = {0x2002, 0x1001},
		       s3[] = {0x3003, 0x3001};
	uint32_t st1 = cb_stack(c, s1, 3, 0), st2 = cb_stack(c, s2, 2, 0),
		 st3 = cb_stack(c, s3, 2, 0);

	L[1] = probe(c, &train, cb_str(c, HA), 10, st1);
	L[2] = probe(c, &train, cb_strn(c, hb_geom, sizeof(hb_geom) - 1), 15, st2);
	kernel(c, &train, "_Z4gemmPf", 10, 20, 40, 1);
	kernel(c, &train, "_Z4reluPf", 15, 41, 50, 2);
	L[3] = probe(c, &train, cb_str(c, HA), 60, st1);
	L[4] = probe(c, &train, cb_strn(c, hb_geom, sizeof(hb_geom) - 1), 62, st2);
	L[5] = probe(c, &train, cb_str(c, HC), 64, st1);
	L[6] = probe(c, &train, cb_str(c, HD), 70, st3);
	kernel(c, &train, "_Z1xv", 70, 73, 75, 3);
	L[7] = probe(c, &train, cb_str(c, HD), 76, st3);
	kernel(c, &train, "_Z1yv", 76, 79, 80, 4);
	L[8] = probe(c, &train, cb_str(c, HD), 81, st3);
	L[9] = probe(c, &other, cb_str(c, HA), 90, st1);
	L[10] = probe(c, &spoof, cb_str(c, HA), 100, st1);
	spoof.uid = 2000;
	kernel(c, &spoof, "_Z4gemmPf", 100, 103, 120, 1);
	return c;
}

static bool named(const struct capture *c, const struct gpu_match *m, uint32_t i, const char *s)
{
	size_t len;
	const char *n = m->name && m->name[i] ? capture_str(c, m->name[i], &len) : NULL;

	if (!s)
		return !n;
	return n && len == strlen(s) && !memcmp(n, s, len);
}

static void test_match(void)
{
	struct capture *c = scene();
	struct gpu_match m;

	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_U64(m.ncupti_launch, 5);
	CHECK(m.name != NULL);
	CHECK_EQ_U64(m.nnamed_join, 4);
	CHECK_EQ_U64(m.nnamed_handle, 2);
	if (!m.name)
		goto out;
	CHECK(named(c, &m, L[1], "_Z4gemmPf"));
	CHECK(named(c, &m, L[2], "_Z4reluPf"));
	CHECK(named(c, &m, L[3], "_Z4gemmPf"));
	CHECK(named(c, &m, L[4], "_Z4reluPf"));
	CHECK(named(c, &m, L[5], NULL));
	CHECK(named(c, &m, L[6], "_Z1xv"));
	CHECK(named(c, &m, L[7], "_Z1yv"));
	CHECK(named(c, &m, L[8], NULL));
	CHECK(named(c, &m, L[9], NULL));
	CHECK(named(c, &m, L[10], NULL));
	/* no other record is given a name */
	size_t n = 0;
	for (size_t i = 0; i < c->nrecs; i++)
		n += m.name[i] != 0;
	CHECK_EQ_U64(n, 6);
out:
	gpu_match_finish(&m);
	capture_free(c);
}

/* Without any handle-named launch, or without CUPTI: nothing built. */
static void test_none(void)
{
	struct capture *c;
	uint32_t *names = (uint32_t *)1;

	if (capture_new(&c) < 0)
		abort();
	struct who w = {300, 1000, cb_str(c, "train")};
	probe(c, &w, cb_str(c, HA), 10, 0);
	CHECK_EQ_INT(gpu_launch_names(c, &names), 0);
	CHECK(names == NULL);
	probe(c, &w, cb_str(c, "_Z4gemmPf"), 20, 0);
	kernel(c, &w, "_Z4gemmPf", 20, 25, 30, 1);
	CHECK_EQ_INT(gpu_launch_names(c, &names), 0);
	CHECK(names == NULL);
	capture_free(c);
}

/*
 * Three processes with the same 100 handles (addresses repeat across
 * processes), each handle a different kernel in each: one joined launch
 * and one later launch without a call per handle. Every later launch takes
 * its own process's name (the table grows past its first size).
 */
static void test_many(void)
{
	struct capture *c;
	uint32_t later[3][100];
	char b[32];

	if (capture_new(&c) < 0)
		abort();
	for (uint32_t p = 0; p < 3; p++) {
		struct who w = {1000 + p, 1000, cb_str(c, "many")};

		for (uint32_t k = 0; k < 100; k++) {
			uint64_t t = 10 * k;

			snprintf(b, sizeof(b), "0x7f%06x", 0x1000 * (k + 1));
			probe(c, &w, cb_str(c, b), t, 0);
			snprintf(b, sizeof(b), "k%u_%u", p, k);
			kernel(c, &w, b, t, t + 3, t + 5, k + 1);
		}
		for (uint32_t k = 0; k < 100; k++) {
			snprintf(b, sizeof(b), "0x7f%06x", 0x1000 * (k + 1));
			later[p][k] = probe(c, &w, cb_str(c, b), 2000 + k, 0);
		}
	}
	struct gpu_match m;

	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_U64(m.nnamed_join, 300);
	CHECK_EQ_U64(m.nnamed_handle, 300);
	size_t ok = 0;
	for (uint32_t p = 0; p < 3; p++)
		for (uint32_t k = 0; k < 100; k++) {
			snprintf(b, sizeof(b), "k%u_%u", p, k);
			ok += named(c, &m, later[p][k], b);
		}
	CHECK_EQ_U64(ok, 300);
	gpu_match_finish(&m);
	capture_free(c);
}

static void test_folded(void)
{
	struct capture *c = scene();
	struct folded_opts o = {.weight = FOLDED_WEIGHT_LAUNCHES, .pid = true};
	struct membuf b = {0};

	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, NULL), 0);
	CHECK_STREQ(b.p, "other-500;0x1001;0x1002;0x1003;" HA "_[G] 1\n"
			 "spoof-600;0x1001;0x1002;0x1003;" HA "_[G] 1\n"
			 "train-300;0x1001;0x1002;0x1003;" HC "_[G] 1\n"
			 "train-300;0x1001;0x1002;0x1003;_Z4gemmPf_[G] 2\n"
			 "train-300;0x1001;0x2002;_Z4reluPf_[G] 2\n"
			 "train-300;0x3001;0x3003;" HD "_[G] 1\n"
			 "train-300;0x3001;0x3003;_Z1xv_[G] 1\n"
			 "train-300;0x3001;0x3003;_Z1yv_[G] 1\n");
	/* GPU time: on the launches joined; the spoofed name not taken */
	o.weight = FOLDED_WEIGHT_GPU_TIME;
	membuf_reset(&b);
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, NULL), 0);
	CHECK_STREQ(b.p, "spoof-600;0x1001;0x1002;0x1003;" HA "_[G] 17000\n"
			 "train-300;0x1001;0x1002;0x1003;_Z4gemmPf_[G] 20000\n"
			 "train-300;0x1001;0x2002;_Z4reluPf_[G] 9000\n"
			 "train-300;0x3001;0x3003;_Z1xv_[G] 2000\n"
			 "train-300;0x3001;0x3003;_Z1yv_[G] 1000\n");
	free(b.p);
	capture_free(c);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* The Chrome trace's launch events: by kernel name where one was learnt. */
static void test_chrome(void)
{
	struct capture *c = scene();
	struct membuf m = {0};
	struct export_totals t;

	CHECK_EQ_INT(chrome_export(c, NULL, membuf_write, &m, &t), 0);
	if (!m.p)
		goto out;
	CHECK_EQ_U64(count(m.p, "\"cat\":\"gpu_launch\""), 10);
	CHECK_EQ_U64(count(m.p, "\"name\":\"_Z4reluPf\",\"dur\":0.000"), 2);
	CHECK_EQ_U64(count(m.p, "\"name\":\"_Z4gemmPf\",\"dur\":0.000"), 2);
	CHECK(strstr(m.p, HB) == NULL);
	CHECK_EQ_U64(count(m.p, "\"name\":\"" HA "\""), 2); /* pids 500 and 600 */
out:
	free(m.p);
	capture_free(c);
}

/* pprof: the launches' samples by kernel name too. */
static void test_pprof(void)
{
	struct capture *c = scene();
	struct membuf m = {0};
	struct export_totals t;
	size_t n;
	char *out;

	CHECK_EQ_INT(pprof_export(c, NULL, 1000000, membuf_write, &m, &t), 0);
	out = membuf_gunzip(&m, &n);
	CHECK(out != NULL);
	if (!out)
		goto out;
	CHECK(memmem(out, n, "_Z4reluPf_[G]", 13) != NULL);
	CHECK(memmem(out, n, HB, strlen(HB)) == NULL);
	CHECK(memmem(out, n, HC "_[G]", strlen(HC) + 4) != NULL);
	/* (pid, comm, kernel) samples: train gemm relu C xv yv D, other A,
	 * spoof A and its interval's gemm */
	CHECK_EQ_U64(t.events, 9);
out:
	free(out);
	free(m.p);
	capture_free(c);
}

/*
 * A driver-side job interval (the gpu_jobs collector's, not CUPTI's) of a
 * process that also loads the CUPTI library is named after its last
 * launch, as the join names that launch: L1 @10 handle A joined to gemm;
 * L2 @50 handle A, no call; the job submitted @55 runs [60, 70] and takes
 * L2: "_Z4gemmPf", not "0x7f00a000".
 */
static void test_live_interval(void)
{
	struct capture *c;
	struct timeline *tl = NULL;
	const struct tl_rank *r;
	unsigned jobs = 0;

	if (capture_new(&c) < 0)
		abort();
	c->kind = CAPTURE_LIVE;
	c->t0_ns = T0;
	c->t1_ns = T0 + 1000 * US;
	struct who w = {300, 1000, cb_str(c, "train")};
	probe(c, &w, cb_str(c, HA), 10, 0);
	kernel(c, &w, "_Z4gemmPf", 10, 20, 40, 1);
	probe(c, &w, cb_str(c, HA), 50, 0);
	struct store_rec *iv = rec(c, &w);
	iv->ts_ns = T0 + 60 * US;
	iv->dur_ns = 10 * US;
	iv->name = cb_str(c, "xe/ccs");
	iv->type = STORE_REC_GPU_INTERVAL;
	iv->cpu = GPU_ENGINE_XE << 8 | 5;
	iv->aux32 = 5 * US; /* submitted @55 */
	iv->aux[0] = 7;
	CHECK_EQ_INT(timeline_from_capture(c, &tl), 0);
	r = tl ? timeline_rank(tl, 300) : NULL;
	CHECK(r != NULL);
	for (uint32_t i = 0; r && i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];

		if (e->ts_ns != (int64_t)(T0 + 60 * US) || e->kind != TL_K_KERNEL)
			continue;
		jobs++;
		CHECK_STREQ(timeline_str(tl, e->name, NULL), "_Z4gemmPf");
	}
	CHECK_EQ_INT(jobs, 1);
	timeline_free(tl);
	capture_free(c);
}

/* The count of kernel name s in t, -1 when t has no such row. */
static int64_t top_count(const struct gpu_top *t, const char *s)
{
	for (size_t i = 0; i < t->nk; i++)
		if (!strcmp(t->k[i].name, s))
			return (int64_t)t->k[i].count;
	return -1;
}

/*
 * gpu.top's count of a window named as the capture names it: the launches
 * the join named are counted under the kernel's name (with their own
 * geometry and call sites); a member's query (uid 1001) counts only its
 * own process's launch, which keeps its handle.
 */
static void test_top(void)
{
	struct capture *c = scene();
	struct gpu_top t = {0};
	uint32_t *names = NULL;
	struct gpu_top_query q = {.t0_ns = T0, .all_uids = true, .limit = 100};

	CHECK_EQ_INT(gpu_launch_names(c, &names), 0);
	CHECK(names != NULL);
	CHECK_EQ_INT(gpu_top_count_capture(c, names, &q, &t), 0);
	CHECK_EQ_U64(t.total, 10);
	CHECK_EQ_INT(top_count(&t, "_Z4gemmPf"), 2);
	CHECK_EQ_INT(top_count(&t, "_Z4reluPf"), 2);
	CHECK_EQ_INT(top_count(&t, "_Z1xv"), 1);
	CHECK_EQ_INT(top_count(&t, "_Z1yv"), 1);
	CHECK_EQ_INT(top_count(&t, HC), 1);
	CHECK_EQ_INT(top_count(&t, HD), 1);
	CHECK_EQ_INT(top_count(&t, HA), 2); /* L9 another's, L10 the spoof */
	for (size_t i = 0; i < t.nk; i++)
		if (!strcmp(t.k[i].name, "_Z4reluPf")) {
			CHECK_STREQ(t.k[i].geometry, "grid=4,1,1 block=128,1,1");
			CHECK_EQ_U64(t.k[i].nsites, 1);
			CHECK_EQ_U64(t.k[i].sites[0].ip, 0x2002);
		}
	gpu_top_free(&t);

	q.all_uids = false;
	q.uid = 1001;
	CHECK_EQ_INT(gpu_top_count_capture(c, names, &q, &t), 0);
	CHECK_EQ_U64(t.total, 1);
	CHECK_EQ_U64(t.nk, 1);
	CHECK_EQ_INT(top_count(&t, HA), 1);
	gpu_top_free(&t);
	free(names);
	capture_free(c);
}

int main(void)
{
	RUN(test_match);
	RUN(test_none);
	RUN(test_many);
	RUN(test_folded);
	RUN(test_chrome);
	RUN(test_pprof);
	RUN(test_live_interval);
	RUN(test_top);
	return test_summary();
}
