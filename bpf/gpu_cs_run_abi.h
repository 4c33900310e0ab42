/* SPDX-License-Identifier: MIT */
/*
 * Context of gpu_cs.bpf.c's test-run program (BPF_PROG_TEST_RUN of a
 * BPF_PROG_TYPE_SYSCALL program): the batch start and the windows of GPU
 * memory the parser may read, each backed by memory of the caller.
 */
#ifndef GPUPROF_BPF_GPU_CS_RUN_ABI_H
#define GPUPROF_BPF_GPU_CS_RUN_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define GPU_CS_RUN_MAPS 8

struct gpu_cs_run_map {
	__u64 gpu;  /* GPU VA of the window */
	__u64 user; /* caller's address of its bytes */
	__u64 len;  /* bytes */
};

struct gpu_cs_run_args {
	__u64 start; /* GPU VA of the first command */
	__u32 nmaps;
	__u32 pad;
	struct gpu_cs_run_map maps[GPU_CS_RUN_MAPS];
};

#endif
