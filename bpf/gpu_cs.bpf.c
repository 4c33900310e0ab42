// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/*
 * The batch-buffer parser (gpu_cs_parse.h) in BPF (docs/gpu-cs.md). A
 * BPF_PROG_TYPE_SYSCALL program, run with BPF_PROG_TEST_RUN: its context
 * names the batch start and up to GPU_CS_RUN_MAPS windows of GPU memory,
 * each backed by memory of the calling process, which the parser reads
 * with bpf_probe_read_user() exactly as a submission hook reads a
 * batch from the submitting process. The result stays in the `jobs` map
 * for userspace to read.
 *
 * It proves that the verifier accepts the parser as written and lets
 * tests compare its results with the host build's on the same buffers.
 * The xe/i915 submission hooks that would call it on every exec are not
 * part of this object (docs/gpu-cs.md, "Paths").
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "gpu_cs_parse.h"
#include "gpu_cs_run_abi.h"
#include "gpu_cs_user.bpf.h"

/* bpf_probe_read_user() is gpl_only. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct gpu_cs_job {
	struct gpu_cs cs;
	struct gpu_cs_run_args args;
};

/* One job: test runs are serial (the test and the benchmark). A hook on
 * submissions would keep one per CPU (BPF_MAP_TYPE_PERCPU_ARRAY). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpu_cs_job);
} jobs SEC(".maps");

static __always_inline int gpu_cs_read(void *rctx, __u64 addr, __u32 *dst, __u32 max_dw)
{
	struct gpu_cs_run_args *a = rctx;

	for (__u32 i = 0; i < GPU_CS_RUN_MAPS; i++) {
		__u64 g, len, off;

		if (i >= a->nmaps)
			break;
		g = a->maps[i].gpu;
		len = a->maps[i].len;
		if (addr < g || addr - g >= len)
			continue;
		off = addr - g;
		return gpu_cs_read_user(dst, a->maps[i].user + off, len - off, max_dw);
	}
	return -14;
}

struct loop_ctx {
	struct gpu_cs_job *j;
};

static long step_cb(__u32 index, void *arg)
{
	struct loop_ctx *lc = arg;
	struct gpu_cs_job *j = lc->j;

	return gpu_cs_step(&j->cs, &j->args);
}

SEC("syscall")
int gpu_cs_run(struct gpu_cs_run_args *ctx)
{
	struct loop_ctx lc;
	struct gpu_cs_job *j;
	__u32 k = 0;

	j = bpf_map_lookup_elem(&jobs, &k);
	if (!j)
		return -1;
	j->args.start = ctx->start;
	j->args.nmaps = ctx->nmaps;
#pragma unroll
	for (int i = 0; i < GPU_CS_RUN_MAPS; i++) {
		j->args.maps[i].gpu = ctx->maps[i].gpu;
		j->args.maps[i].user = ctx->maps[i].user;
		j->args.maps[i].len = ctx->maps[i].len;
	}
	gpu_cs_begin(&j->cs, j->args.start);
	lc.j = j;
	bpf_loop(GPU_CS_MAX_COMMANDS, step_cb, &lc, 0);
	gpu_cs_finish(&j->cs);
	return (int)j->cs.r.status;
}
