// SPDX-License-Identifier: MIT
/*
 * bench_comm [--ranks 8] [--iters 100] [--comm 2000] [--compute 1000] [--runs 5]
 *            [--params JSON] [--dump FILE]
 *
 * Times comm_analyze() (all metrics, straggler view included; best of N,
 * wall clock and the process's CPU time, which a busy machine inflates less) on a synthetic timeline shaped like the reference traces:
 * per iteration a ProfilerStep-style annotation, NCCL kernels named as in
 * nccl_parser_config / the nsys export on two comm streams, in phases of
 * TP all-reduces, EP all-to-alls, PP send/recvs and DP reduce-scatters /
 * all-gathers with Kineto's collective args (four process groups), and
 * compute kernels overlapping them on the compute stream. Built directly
 * into the timeline model (timeline_int.h) so the bench times the metrics,
 * not the JSON parser. --params replaces the request parameters (default
 * {"link_bandwidth":450e9}); --dump writes the last run's result (JSON) to FILE,
 * to check that a speed change keeps every metric identical.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/comm/comm.h"
#include "timeline/timeline_int.h"

static double clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

static uint32_t id(struct timeline *tl, const char *s)
{
	int64_t v = strtab_intern(&tl->st, s, strlen(s));

	if (v < 0)
		abort();
	return (uint32_t)v;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

struct shape {
	const char *kernel, *coll, *desc, *pg, *ranks;
	int64_t nel;
};

static const struct shape shapes[4] = {
	{ "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "allreduce", "mesh_tp", "1", "[0, 1]", 1 << 20 },
	{ "ncclDevKernel_SendRecv", "all_to_all", "mesh_ep", "2", "[0, 2]", 1 << 18 },
	{ "ncclDevKernel_SendRecv", "send", "mesh_pp", "3", "[0, 4]", 1 << 16 },
	{ "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "_reduce_scatter_base", "mesh_dp", "4",
	  "[0, 8]", 1 << 22 },
};

static struct timeline *build(int nranks, int iters, int ncomm, int ncomp)
{
	struct timeline *tl;
	uint32_t kcat, acat, gemm, step, names[4];
	struct tl_args args[4];

	if (timeline_new(&tl))
		abort();
	kcat = id(tl, "kernel");
	acat = id(tl, "user_annotation");
	gemm = id(tl, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64");
	step = id(tl, "ProfilerStep#1");
	for (int k = 0; k < 4; k++) {
		memset(&args[k], 0, sizeof(args[k]));
		args[k].wait_on_stream = args[k].wait_on_event_record_corr = -1;
		args[k].wait_on_event_id = args[k].queued = args[k].bytes = args[k].context = -1;
		args[k].collective_name = id(tl, shapes[k].coll);
		args[k].in_msg_nelems = args[k].out_msg_nelems = shapes[k].nel;
		args[k].group_size = 2;
		args[k].dtype = id(tl, "BFloat16");
		args[k].pg_name = id(tl, shapes[k].pg);
		args[k].pg_desc = id(tl, shapes[k].desc);
		args[k].pg_ranks = id(tl, shapes[k].ranks);
		names[k] = id(tl, shapes[k].kernel);
	}
	for (int r = 0; r < nranks; r++) {
		struct tl_rank *rk = tl_rank_alloc(r);
		uint32_t n = (uint32_t)(iters * (ncomm + ncomp + 1)), e = 0;
		int64_t t0 = 1000000000ll + r * 3000;

		rk->ev = bigalloc_calloc(n, sizeof(*rk->ev)); /* as timeline_decode() */
		rk->args = malloc(sizeof(args));
		memcpy(rk->args, args, sizeof(args));
		rk->nargs = 4;
		for (int it = 0; it < iters; it++) {
			int64_t s = t0 + (int64_t)it * 60000000, t = s + 10000, c = s + 5000;
			struct tl_event *a = &rk->ev[e++];

			*a = (struct tl_event){ .ts_ns = s, .dur_ns = 59000000, .pid = 1, .tid = 1,
						.stream = -1, .correlation = -1, .external_id = -1,
						.name = step, .cat = acat, .args = TL_NO_ARGS,
						.flags = TL_EV_PROFILER_STEP, .link = -1, .device = -1,
						.kind = TL_K_USER_ANNOTATION };
			for (int k = 0; k < ncomm; k++) {
				struct tl_event *v = &rk->ev[e++];
				int sh = (k * 4 / ncomm) % 4; /* phases TP, EP, PP, DP */
				int64_t d = 2000 + rnd(20000);

				*v = (struct tl_event){ .ts_ns = t, .dur_ns = d, .pid = 0,
							.tid = 20 + (k & 1), .stream = 20 + (k & 1),
							.correlation = e, .external_id = -1,
							.name = names[sh], .cat = kcat, .args = (uint32_t)sh,
							.flags = TL_EV_GPU_SIDE | TL_EV_GPU_KERNEL_FILTER,
							.link = -1, .device = 0, .kind = TL_K_KERNEL };
				t += d / 2 + rnd(8000);
			}
			for (int k = 0; k < ncomp; k++) {
				struct tl_event *v = &rk->ev[e++];
				int64_t d = 5000 + rnd(40000);

				*v = (struct tl_event){ .ts_ns = c, .dur_ns = d, .pid = 0, .tid = 7,
							.stream = 7, .correlation = e, .external_id = -1,
							.name = gemm, .cat = kcat, .args = TL_NO_ARGS,
							.flags = TL_EV_GPU_SIDE | TL_EV_GPU_KERNEL_FILTER,
							.link = -1, .device = 0, .kind = TL_K_KERNEL };
				c += d + rnd(5000);
			}
		}
		for (uint32_t i = 0; i < e; i++)
			rk->ev[i].index = i;
		rk->nev = e;
		rk->min_ts_ns = t0;
		if (tl_insert_rank(tl, rk))
			abort();
	}
	if (timeline_finalize(tl, TL_FIN_NO_STEP_FILTER))
		abort();
	return tl;
}

static int dump_json(const cJSON *res, const char *path)
{
	char *txt = cJSON_Print(res);
	FILE *f = txt ? fopen(path, "w") : NULL;
	int bad = !f || fputs(txt, f) < 0;

	if (f && fclose(f))
		bad = 1;
	if (bad)
		fprintf(stderr, "--dump %s: cannot write\n", path);
	free(txt);
	return bad;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "ranks", 1, 0, 'r' }, { "iters", 1, 0, 'i' },
					      { "comm", 1, 0, 'c' },  { "compute", 1, 0, 'k' },
					      { "runs", 1, 0, 'n' },  { "dump", 1, 0, 'd' },
					      { "params", 1, 0, 'p' }, {} };
	int nranks = 8, iters = 100, ncomm = 2000, ncomp = 1000, runs = 5, o;
	double best = 1e30, best_cpu = 1e30, t, cpu;
	const char *dump = NULL;
	struct timeline *tl;
	cJSON *p = cJSON_Parse("{\"link_bandwidth\":450e9}");

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int v = atoi(optarg);

		if (o == 'd' || o == 'p') {
			if (o == 'p')
				cJSON_Delete(p), p = cJSON_Parse(optarg);
			else
				dump = optarg;
			continue;
		}
		if (v <= 0)
			return 2;
		switch (o) {
		case 'r': nranks = v; break;
		case 'i': iters = v; break;
		case 'c': ncomm = v; break;
		case 'k': ncomp = v; break;
		case 'n': runs = v; break;
		default: return 2;
		}
	}
	if (!p) {
		fprintf(stderr, "--params: not JSON\n");
		return 2;
	}
	t = now_ms();
	tl = build(nranks, iters, ncomm, ncomp);
	printf("timeline: %d ranks x %d iterations x %d comm + %d compute kernels (built in %.0f ms)\n",
	       nranks, iters, ncomm, ncomp, now_ms() - t);
	for (int i = 0; i < runs; i++) {
		cJSON *res = NULL;
		char err[200];

		t = now_ms();
		cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
		if (comm_analyze(tl, p, NULL, &res, err, sizeof(err))) {
			fprintf(stderr, "comm_analyze: %s\n", err);
			return 1;
		}
		cpu = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - cpu;
		t = now_ms() - t;
		best = t < best ? t : best;
		best_cpu = cpu < best_cpu ? cpu : best_cpu;
		printf("run %d: %.1f ms wall, %.1f ms CPU\n", i + 1, t, cpu);
		if (dump && i == runs - 1 && dump_json(res, dump))
			return 1;
		cJSON_Delete(res);
	}
	printf("comm_analyze (all metrics, one thread): best %.1f ms wall, %.1f ms CPU over %d runs "
	       "(target < 100 ms)\n", best, best_cpu, runs);
	cJSON_Delete(p);
	timeline_free(tl);
	return 0;
}
