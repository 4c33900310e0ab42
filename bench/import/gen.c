// SPDX-License-Identifier: MIT
/*
 * Synthetic Kineto trace writer shared by gen_kineto and bench_import:
 * ProfilerStep#N annotations, cpu_ops launching kernels on several
 * streams (cudaLaunchKernel + correlation + ac2g flows), NCCL collectives
 * with their args on a comm stream, memcpy/memset, event record / stream
 * wait / stream sync with cuda_sync rows. Streams its output.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

struct g {
	FILE *f;
	uint64_t bytes;
	uint64_t corr, ext;
	int64_t t; /* CPU clock, ns */
	int64_t gpu_t[8]; /* per stream: end of the last GPU op */
	bool first;
	const struct gen_opts *o;
	int pid;
};

static void out(struct g *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct g *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(g->f, fmt, ap);
	va_end(ap);
	if (n > 0)
		g->bytes += (uint64_t)n;
}

static void sep(struct g *g)
{
	out(g, g->first ? "\n  " : ",\n  ");
	g->first = false;
}

/* µs with ns precision, like Kineto's float output */
#define US(ns) (double)(ns) / 1000.0

static void x_event(struct g *g, const char *cat, const char *name, int pid, int tid,
		    int64_t ts, int64_t dur, const char *args)
{
	sep(g);
	out(g, "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, "
	       "\"ts\": %.3f, \"dur\": %.3f, \"args\": {%s}}",
	    cat, name, pid, tid, US(ts), US(dur), args);
}

static void flow(struct g *g, char ph, uint64_t id, int pid, int tid, int64_t ts)
{
	sep(g);
	out(g, "{\"ph\": \"%c\", \"id\": %" PRIu64 ", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
	       "\"cat\": \"ac2g\", \"name\": \"ac2g\"%s}",
	    ph, id, pid, tid, US(ts), ph == 'f' ? ", \"bp\": \"e\"" : "");
}

/* A runtime call on the main thread and its GPU op on stream s. */
static void launch(struct g *g, const char *rt, const char *gcat, const char *gname, int s,
		   int64_t gdur, const char *gargs)
{
	char a[512];
	uint64_t c = ++g->corr;
	int64_t rdur = 4000 + (int64_t)(c % 7) * 500, gts;
	int stream = 7 + s;

	snprintf(a, sizeof(a), "\"External id\": %" PRIu64 ", \"cbid\": 211, \"correlation\": %" PRIu64,
		 g->ext, c);
	x_event(g, "cuda_runtime", rt, g->pid, g->pid, g->t, rdur, a);
	flow(g, 's', c, g->pid, g->pid, g->t);
	gts = g->t + rdur + 2000;
	if (gts < g->gpu_t[s])
		gts = g->gpu_t[s];
	snprintf(a, sizeof(a),
		 "\"External id\": %" PRIu64 ", \"queued\": 0, \"device\": 0, \"context\": 1, "
		 "\"stream\": %d, \"correlation\": %" PRIu64 "%s%s",
		 g->ext, stream, c, gargs ? ", " : "", gargs ? gargs : "");
	x_event(g, gcat, gname, 0, stream, gts, gdur, a);
	flow(g, 'f', c, 0, stream, gts);
	g->gpu_t[s] = gts + gdur;
	g->t += rdur + 1000;
}

static void op(struct g *g, const char *name, int nk, int s)
{
	static const char *const kernels[] = {
		"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
		"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
		"at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
		"at::detail::Array<char*, 3>)",
		"ampere_sgemm_128x64_tn",
		"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
		"at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >",
	};
	int64_t t0 = g->t;
	char a[256];

	g->ext++;
	g->t += 3000;
	for (int k = 0; k < nk; k++)
		launch(g, "cudaLaunchKernel", "kernel", kernels[(g->corr + k) % 4], s,
		       20000 + (int64_t)((g->corr * 7919) % 50000),
		       "\"grid\": [128, 4, 1], \"block\": [256, 1, 1], \"registers per thread\": 64, "
		       "\"shared memory\": 16384");
	snprintf(a, sizeof(a), "\"External id\": %" PRIu64 ", \"Record function id\": 0, "
		 "\"Sequence number\": %" PRIu64 ", \"Fwd thread id\": 0", g->ext, g->ext);
	x_event(g, "cpu_op", name, g->pid, g->pid, t0, g->t - t0 + 2000, a);
	g->t += 3000;
}

static void collective(struct g *g, int rank)
{
	int64_t t0 = g->t;
	char a[768];

	g->ext++;
	g->t += 2000;
	launch(g, "cudaLaunchKernel", "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 3,
	       300000 + (int64_t)(g->corr % 13) * 10000, NULL);
	snprintf(a, sizeof(a),
		 "\"External id\": %" PRIu64 ", \"Collective name\": \"allreduce\", "
		 "\"In msg nelems\": 2049000, \"Out msg nelems\": 2049000, \"Group size\": %d, "
		 "\"dtype\": \"Float\", \"In split size\": \"[]\", \"Out split size\": \"[]\", "
		 "\"Process Group Name\": \"0\", \"Process Group Description\": \"default_pg\", "
		 "\"Process Group Ranks\": \"[0, 1, 2, 3, 4, 5, 6, 7]\", \"Global rank start\": 0, "
		 "\"Global rank stride\": 1, \"rank\": %d",
		 g->ext, g->o->world, rank);
	x_event(g, "cpu_op", "record_param_comms", g->pid, g->pid, t0, g->t - t0 + 1000, a);
	g->t += 2000;
}

static void sync_ops(struct g *g)
{
	char a[512];
	uint64_t rec = ++g->corr, wait;

	/* cudaEventRecord on compute stream 7, cudaStreamWaitEvent on comm stream */
	snprintf(a, sizeof(a), "\"cbid\": 135, \"correlation\": %" PRIu64, rec);
	x_event(g, "cuda_runtime", "cudaEventRecord", g->pid, g->pid, g->t, 3000, a);
	g->t += 4000;
	wait = ++g->corr;
	snprintf(a, sizeof(a), "\"cbid\": 147, \"correlation\": %" PRIu64, wait);
	x_event(g, "cuda_runtime", "cudaStreamWaitEvent", g->pid, g->pid, g->t, 2500, a);
	snprintf(a, sizeof(a),
		 "\"cuda_sync_kind\": \"Stream Wait Event\", \"wait_on_stream\": 7, "
		 "\"wait_on_cuda_event_record_corr_id\": %" PRIu64 ", \"wait_on_cuda_event_id\": 3, "
		 "\"stream\": 10, \"correlation\": %" PRIu64 ", \"device\": 0, \"context\": 1",
		 rec, wait);
	x_event(g, "cuda_sync", "Stream Wait Event", 0, 10, g->t + 2000, 0, a);
	g->t += 3500;
}

static void iteration(struct g *g, uint64_t step, int rank)
{
	int64_t t0 = g->t;
	char a[256];
	uint64_t c;

	g->t += 5000;
	launch(g, "cudaMemcpyAsync", "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 30000,
	       "\"bytes\": 1048576, \"memory bandwidth (GB/s)\": 35.0");
	launch(g, "cudaMemsetAsync", "gpu_memset", "Memset (Device)", 0, 2000,
	       "\"bytes\": 4096, \"memory bandwidth (GB/s)\": 2.0");
	for (int i = 0; i < 24; i++)
		op(g, i % 3 ? "aten::linear" : "aten::mm", 1 + i % 3, i % g->o->streams);
	sync_ops(g);
	collective(g, rank);
	c = ++g->corr;
	snprintf(a, sizeof(a), "\"cbid\": 131, \"correlation\": %" PRIu64, c);
	x_event(g, "cuda_runtime", "cudaStreamSynchronize", g->pid, g->pid, g->t, 50000, a);
	snprintf(a, sizeof(a), "\"cuda_sync_kind\": \"Stream Sync\", \"stream\": 7, "
		 "\"correlation\": %" PRIu64 ", \"device\": 0, \"context\": 1", c);
	x_event(g, "cuda_sync", "Stream Sync", 0, 7, g->t + 1000, 48000, a);
	g->t += 52000;
	snprintf(a, sizeof(a), "\"External id\": %" PRIu64, ++g->ext);
	{
		char name[64];

		snprintf(name, sizeof(name), "ProfilerStep#%" PRIu64, step);
		x_event(g, "user_annotation", name, g->pid, g->pid, t0, g->t - t0, a);
	}
	g->t += 10000;
}

uint64_t gen_kineto_write(FILE *f, const struct gen_opts *o, int rank)
{
	struct g g = { .f = f, .first = true, .o = o, .pid = 1000 + rank };

	/* steady-clock µs with ns decimals, like CUDA traces Kineto writes with %.3f */
	g.t = 4458676416789000ll + (int64_t)rank * 1000;
	out(&g, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": "
		"\"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 85029158912, \"computeMajor\": 9, "
		"\"computeMinor\": 0, \"numSms\": 132, \"warpSize\": 32}],\n"
		"  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d},\n"
		"  \"traceEvents\": [",
	    rank, o->world);
	sep(&g);
	out(&g, "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": %d, \"tid\": 0, "
		"\"args\": {\"name\": \"python3\"}}", g.pid);
	for (uint64_t it = 0; (o->iters && it < o->iters) ||
			      (!o->iters && g.bytes + 64 < o->size); it++)
		iteration(&g, it + 1, rank);
	out(&g, "\n  ],\n  \"traceName\": \"gen_kineto_rank%d.json\"\n}\n", rank);
	return g.bytes;
}

uint64_t gen_parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return 0;
	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	case '\0': break;
	default: return 0;
	}
	return (uint64_t)v;
}
