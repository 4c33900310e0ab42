/* SPDX-License-Identifier: MIT */
/*
 * BPF only: the last step of a gpu_cs_read() in the BPF programs
 * (gpu_cs.bpf.c, gpu_submit.bpf.c), once the GPU address is resolved to an
 * address of the submitting (or calling) process with avail bytes mapped
 * from there: copy what fits the window.
 */
#ifndef GPUPROF_BPF_GPU_CS_USER_BPF_H
#define GPUPROF_BPF_GPU_CS_USER_BPF_H

#include "gpu_cs_abi.h"

/* Up to max_dw dwords (and the window) from user into dst: how many, 0 at
 * the end of the mapping, -14 (EFAULT) when the read faults. */
static __always_inline int gpu_cs_read_user(__u32 *dst, __u64 user, __u64 avail, __u32 max_dw)
{
	__u64 n = avail / 4;

	if (n > max_dw)
		n = max_dw;
	if (n > GPU_CS_WIN_DW)
		n = GPU_CS_WIN_DW;
	if (!n)
		return 0;
	if (bpf_probe_read_user(dst, n * 4, (const void *)user))
		return -14;
	return (int)n;
}

#endif
