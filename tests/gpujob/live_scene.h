/* SPDX-License-Identifier: MIT */
/*
 * Randomized live captures for tests/gpujob/test_gpu_job_ref.c: launches,
 * GPU job intervals and CPU samples over several pids, with the cases the
 * match and the live timeline must order exactly (see that file).
 */
#ifndef GPUPROF_TESTS_LIVE_SCENE_H
#define GPUPROF_TESTS_LIVE_SCENE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/capbuild.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static uint64_t below(uint64_t n)
{
	return rnd() % n;
}

#define NPIDS 6
static const uint32_t pids[NPIDS] = {0, 100, 101, 4242, 70000, (1u << 20) + 5};
#define LAUNCH_ONLY_PID 555u

/* Launch APIs the scene uses (aux32) and the entry point / category the
 * live timeline names them after (docs/collectors.md); 50 is unknown. */
static const struct {
	uint32_t aux32;
	const char *name, *cat;
} apis[] = {
    {0, "launch", "cuda_runtime"},	  {1, "zeCommandListAppendLaunchKernel", "xpu_runtime"},
    {7, "cuLaunchKernel", "cuda_driver"}, {10, "hipLaunchKernel", "cuda_runtime"},
    {50, "launch", "cuda_runtime"},
};
#define NAPIS (sizeof(apis) / sizeof(apis[0]))

struct scene_ids {
	uint32_t comm[NPIDS + 1];
	uint32_t kern[6];
	uint32_t eng[5]; /* interval names; plus 0 (none) */
	uint32_t stack[4];
};

/* An engine (cpu = group << 8 | engine) per interval name. */
static const uint16_t engines[] = {0 << 8 | 5, 0 << 8 | 3, 1 << 8 | 1, 2 << 8 | 0, 0 << 8 | 9};

static struct capture *scene(uint64_t seed, size_t n, bool corr_named)
{
	struct capture *c = cb_live(0, 0);
	struct scene_ids id;
	uint64_t corr = 1, t = 1000000000000ull, last_submit[NPIDS + 1] = {0};

	rng_state = seed;
	for (int i = 0; i <= NPIDS; i++) {
		char b[16];
		snprintf(b, sizeof(b), "app%d", i);
		id.comm[i] = cb_str(c, b);
	}
	for (int i = 0; i < 5; i++) {
		char b[16];
		snprintf(b, sizeof(b), "k%d", i);
		id.kern[i] = cb_str(c, b);
	}
	/* a launch name with its geometry after a NUL (gpu_launch_abi.h) */
	static const char convg[] = "conv\0grid=1,1,1";
	id.kern[5] = cb_strn(c, convg, sizeof(convg) - 1);
	const char *en[] = {"xe/ccs", "xe/bcs", "i915/bcs", "", "xe/class9"};
	for (int i = 0; i < 5; i++)
		id.eng[i] = cb_str(c, en[i]);
	for (int i = 0; i < 4; i++) {
		uint64_t ips[3] = {0x1000 + (uint64_t)i * 16, 0x2000 + (uint64_t)i, 0x3000};
		id.stack[i] = i ? cb_stack(c, ips, (uint16_t)(1 + i % 3), 0) : 0;
	}
	c->recs = malloc((n + 1) * sizeof(*c->recs));
	if (!c->recs)
		abort();
	for (size_t i = 0; i < n; i++) {
		unsigned p = (unsigned)below(NPIDS + 1);
		uint32_t pid = p < NPIDS ? pids[p] : LAUNCH_ONLY_PID;
		uint64_t ts;
		struct store_rec *r = &c->recs[c->nrecs++];

		t += below(4000);
		/* out of order by up to 3 µs, or exactly the previous time;
		 * the last pid anywhere in a 2^40 ns range (no local order) */
		ts = below(6) == 0 && i ? c->recs[i - 1].ts_ns : t + below(3000);
		if (p == NPIDS - 1)
			ts = 1000000000000ull + below(1ull << 40);
		*r = (struct store_rec){.ts_ns = ts,
					.pid = pid,
					.tid = pid + (uint32_t)below(3),
					.comm = id.comm[p],
					.stack = id.stack[below(4)]};
		uint64_t what = below(20);
		if (what == 0) {
			r->type = STORE_REC_CPU_SAMPLE;
			r->aux32 = 1;
		} else if (what < 11 || pid == LAUNCH_ONLY_PID) {
			r->type = STORE_REC_GPU_LAUNCH;
			if (last_submit[p] && below(4) == 0) /* at a submission before it */
				r->ts_ns = last_submit[p];
			r->name = id.kern[below(6)];
			r->aux32 = apis[below(NAPIS)].aux32;
			uint64_t k = below(10);
			r->aux[1] = k == 0 ? 0 : k == 1 ? corr - 1 : corr++;
		} else {
			unsigned e = (unsigned)below(6);
			r->type = STORE_REC_GPU_INTERVAL;
			r->name = e < 5 ? id.eng[e] : 0;
			/* mostly the engine the name says, else any (the copy
			 * naming follows the engine, not the name) */
			r->cpu = engines[below(4) ? (e < 5 ? e : 0) : below(5)];
			r->dur_ns = below(8) ? below(5000) : 0;
			r->aux32 = (uint32_t)below(3000); /* submission ts - aux32 */
			last_submit[p] = ts - r->aux32;
			r->aux[0] = 7 + 2 * below(3);
			if (corr_named && below(8) == 0)
				r->aux[1] = corr > 20 ? corr - below(20) : corr;
		}
	}
	/* a submission "before 0" (clamped) */
	c->recs[0] = (struct store_rec){.ts_ns = 100,
					.dur_ns = 50,
					.pid = pids[1],
					.comm = id.comm[1],
					.name = id.eng[0],
					.type = STORE_REC_GPU_INTERVAL,
					.cpu = engines[0],
					.aux32 = 1000,
					.aux = {7, 0}};
	return c;
}

#endif
