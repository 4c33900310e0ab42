/* SPDX-License-Identifier: MIT */
/*
 * Driver-side GPU job timelines: the ring-buffer record shared by
 * gpu_job.bpf.c and daemon/collect/gpu_job.c (docs/collectors.md, "GPU
 * jobs"). Limits and fixed-width types only: compiled both against
 * vmlinux.h (BPF) and against <linux/types.h>.
 */
#ifndef GPUPROF_BPF_GPU_JOB_ABI_H
#define GPUPROF_BPF_GPU_JOB_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "pystack_abi.h"
#include "ustack_abi.h"

#define GPU_JOB_REC_TYPE 0x474a /* "GJ": one job-lifecycle event */
/* 2: gpu_job_rec.us, the stack copy; 3: npy, pyflags, Python frame nodes */
#define GPU_JOB_REC_VERSION 3

#define GPU_JOB_MAX_FRAMES 127 /* user frames at submission (bpf_get_stack's ceiling) */
#define GPU_JOB_COMM_LEN 16
#define GPU_JOB_DEFAULT_RINGBUF_BYTES (4u << 20)

/* Which tracepoint group produced a record; loaded independently. */
enum gpu_job_group {
	GPU_JOB_G_XE = 0,    /* xe_sched_job_*, xe_hw_fence_signal (module BTF "xe") */
	GPU_JOB_G_I915 = 1,  /* i915_request_* (module BTF "i915") */
	GPU_JOB_G_FENCE = 2, /* dma_fence_* (core kernel): the generic fallback */
	GPU_JOB_G_COUNT,
};

/* What happened to the job. */
enum gpu_job_ev {
	GPU_JOB_SUBMIT = 1, /* work handed to the driver by a process (ioctl path) */
	GPU_JOB_START = 2,  /* handed to the hardware / firmware, or started */
	GPU_JOB_END = 3,    /* completion seen (fence signalled, request out/retired) */
	GPU_JOB_FREE = 4,   /* the job/fence went away: forget it if still pending */
};

/* gpu_job_rec.flags */
#define GPU_JOB_F_OBJ_KEY 0x1 /* ctx/seqno not known yet: key the job by obj */
#define GPU_JOB_F_KTHREAD 0x2 /* recorded in a kernel thread (no submitter) */
/* a full record (struct gpu_job_rec): a SUBMIT from a user task with user
 * stacks on */
#define GPU_JOB_F_USER 0x4

/* The fixed part of every record: fill() in gpu_job.bpf.c writes only this
 * much into a header-sized reservation (the records without a stack). */
#define GPU_JOB_REC_HEADER                                                                   \
	__u16 type;	     /* GPU_JOB_REC_TYPE */                                          \
	__u8 version;	     /* GPU_JOB_REC_VERSION */                                       \
	__u8 ev;	     /* enum gpu_job_ev */                                           \
	__u8 group;	     /* enum gpu_job_group */                                        \
	__u8 flags;	     /* GPU_JOB_F_* */                                               \
	__u8 engine;	     /* engine class (driver numbering), 0xff unknown */             \
	__u8 pyflags;	     /* PYSTACK_F_* (full records only) */                           \
	__u16 nuser;	     /* user frames in ips[] (full records only) */                  \
	__u16 npy;	     /* Python frame nodes after ips[] (full records only) */        \
	__u32 pid, tid, uid; /* uid: owner (owner.bpf.h) */                                  \
	__u64 ts_ns;	     /* bpf_ktime_get_ns(): CLOCK_MONOTONIC, as the store */         \
	__u64 obj;	     /* job / request / fence address: the key until ctx is known */ \
	__u64 ctx;	     /* fence context (per exec queue / context timeline) */         \
	__u64 seqno;	     /* fence seqno in that context */                               \
	__u64 ops;	     /* fence->ops->get_driver_name: which driver made it */         \
	__u64 release;	     /* fence->ops->release: which kind of fence it is */            \
	char comm[GPU_JOB_COMM_LEN];

/* A record without a stack (every event but a SUBMIT from a user task). */
struct gpu_job_hdr {
	GPU_JOB_REC_HEADER
};

/*
 * A SUBMIT from a user task (GPU_JOB_F_USER): the header, the user
 * registers, the nuser frames, the npy Python frame nodes (pystack_abi.h),
 * then the us.len bytes of user stack, sent variable-length. With stack copying on (stack_bytes > 0 in the program)
 * the registers and the copy go to the daemon's CFI unwinder and nuser is
 * 0; with it off (or the ring over half full), us is empty and ips[] holds
 * the frame-pointer walk (leaf first).
 */
struct gpu_job_rec {
	GPU_JOB_REC_HEADER
	struct ustack_hdr us;
	__u64 ips[GPU_JOB_MAX_FRAMES];
};

#define GPU_JOB_HDR_BYTES sizeof(struct gpu_job_hdr)
#define GPU_JOB_FULL_BYTES 120 /* offsetof(struct gpu_job_rec, ips) */

_Static_assert(__builtin_offsetof(struct gpu_job_rec, ips) == GPU_JOB_FULL_BYTES &&
		       sizeof(struct gpu_job_hdr) + USTACK_HDR_BYTES == GPU_JOB_FULL_BYTES,
	       "gpu_job_rec layout changed: bump GPU_JOB_REC_VERSION");

/* The programs' staging area for a full record and its stack copy, one per
 * CPU (an ARRAY indexed by CPU: the room exceeds a per-CPU map value's 32
 * KiB). busy: a SUBMIT program on this CPU is using it (an interrupt's
 * tracepoint can fire inside another's). */
struct gpu_job_scratch {
	struct gpu_job_rec r;
	__u32 busy;
	__u32 pad;
	struct pystack_scratch py;
	__u8 stack[USTACK_MAX_BYTES + USTACK_PAGE];
};

#endif
