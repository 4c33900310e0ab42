/* SPDX-License-Identifier: MIT */
/*
 * The CPU sampler's ring-buffer record, shared by cpu_sample.bpf.c and
 * daemon/collect/cpu.c. Limits and fixed-width types only: this header is
 * compiled both against vmlinux.h (BPF) and against <linux/types.h>.
 */
#ifndef GPUPROF_BPF_CPU_SAMPLE_ABI_H
#define GPUPROF_BPF_CPU_SAMPLE_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "pystack_abi.h"
#include "ustack_abi.h"

#define CPU_SAMPLE_REC_TYPE 0x4350 /* "CP" */
#define CPU_SAMPLE_REC_VERSION 3

/* bpf_get_stack() takes at most sysctl_perf_event_max_stack (127 by
 * default) frames per stack; we ask for user and kernel separately. */
#define CPU_SAMPLE_MAX_FRAMES 127
#define CPU_SAMPLE_COMM_LEN 16 /* TASK_COMM_LEN */

#define CPU_SAMPLE_DEFAULT_RINGBUF_BYTES (4u << 20)

/*
 * One sample. Only the header, the nuser + nkernel frames that were
 * captured and the us.len bytes of user stack are sent (the ring record is
 * variable-length): ips[0, nuser) are user frames, then ips[nuser, nuser +
 * nkernel) kernel frames, each leaf first -- the order store_stack_intern()
 * takes -- then npy Python frame nodes (pystack_abi.h), then the stack copy.
 * With stack copying on (stack_bytes > 0) the program takes no
 * frame-pointer user frames (nuser 0): the daemon unwinds the copy; with it
 * off, us.len is 0 and nuser holds the frame-pointer walk.
 */
struct cpu_sample_rec {
	__u16 type;    /* CPU_SAMPLE_REC_TYPE */
	__u16 version; /* CPU_SAMPLE_REC_VERSION */
	__u32 pid;     /* tgid */
	__u32 tid;
	__u32 uid; /* owner: uid, init user namespace, or root only (owner.bpf.h) */
	__u32 cpu;
	__u16 nuser;
	__u16 nkernel;
	__u64 ts_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	char comm[CPU_SAMPLE_COMM_LEN];
	struct ustack_hdr us;
	__u16 npy;     /* Python frame nodes following the frames */
	__u16 pyflags; /* PYSTACK_F_* */
	__u32 pad;
	__u64 ips[2 * CPU_SAMPLE_MAX_FRAMES];
};

#define CPU_SAMPLE_HDR_BYTES 88 /* offsetof(struct cpu_sample_rec, ips) */

/* The program's per-CPU staging area (an ARRAY indexed by CPU: the stack
 * room exceeds a per-CPU map value's 32 KiB limit). */
struct cpu_sample_scratch {
	struct cpu_sample_rec r;
	struct pystack_scratch py;
	__u8 stack[USTACK_MAX_BYTES + USTACK_PAGE];
};

_Static_assert(__builtin_offsetof(struct cpu_sample_rec, ips) == CPU_SAMPLE_HDR_BYTES,
	       "cpu_sample_rec header layout changed: bump CPU_SAMPLE_REC_VERSION");

#endif
