/* SPDX-License-Identifier: MIT */
/*
 * The xe submission hook (gpu_submit.bpf.c, docs/gpu-cs.md "Paths"):
 * what it sends to userspace and the limits of its GPU VA -> user address
 * tracking. Shared by the BPF program and daemon/xe/cs_hook.c.
 */
#ifndef GPUPROF_BPF_GPU_SUBMIT_ABI_H
#define GPUPROF_BPF_GPU_SUBMIT_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "gpu_cs_abi.h"

/* xe uAPI (xe_drm.h). */
#define GPU_SUBMIT_XE_GEM_MMAP_OFFSET 0xc0286442u
#define GPU_SUBMIT_XE_VM_BIND 0x40886445u
#define GPU_SUBMIT_XE_EXEC 0x40386449u
#define GPU_SUBMIT_XE_BIND_MAP 0u
#define GPU_SUBMIT_XE_BIND_UNMAP 1u
#define GPU_SUBMIT_XE_BIND_MAP_USERPTR 2u

/* i915 uAPI (i915_drm.h): softpinned exec objects give the GPU VA layout. */
#define GPU_SUBMIT_I915_EXECBUFFER2 0x40406469u
#define GPU_SUBMIT_I915_EXECBUFFER2_WR 0xc0406469u
#define GPU_SUBMIT_I915_GEM_MMAP 0xc028645eu	    /* legacy: returns addr_ptr */
#define GPU_SUBMIT_I915_GEM_MMAP_OFFSET 0xc0206464u /* then mmap(fd, offset) */
#define GPU_SUBMIT_I915_GEM_USERPTR 0xc0186473u
#define GPU_SUBMIT_I915_BATCH_FIRST (1ull << 18)
#define GPU_SUBMIT_I915_OBJECTS 128 /* exec objects looked at per execbuffer */

enum gpu_submit_driver { GPU_SUBMIT_XE = 1, GPU_SUBMIT_I915 = 2 };

/*
 * A binding is indexed under every 2 MiB bucket of GPU VA it covers (the
 * first GPU_SUBMIT_MAX_BUCKETS of them: 128 MiB; batch buffers are small),
 * each bucket holding up to GPU_SUBMIT_BINDS bindings of one (process, DRM
 * fd). Reads past what is indexed fail and the parse ends `retry` or
 * `truncated`, never reads a wrong address.
 */
#define GPU_SUBMIT_BUCKET_SHIFT 21
#define GPU_SUBMIT_MAX_BUCKETS 64
#define GPU_SUBMIT_BINDS 4
#define GPU_SUBMIT_VEC_OPS 16 /* ops read from one vector VM_BIND */
/* A parse that ends `retry` (its memory not bound or not written yet) is
 * parsed again at the process's next submission, up to this many parses
 * in all (iaprof: 5); one waits per process, the latest. */
#define GPU_SUBMIT_MAX_ATTEMPTS 5

enum gpu_submit_bind_kind {
	GPU_SUBMIT_BIND_NONE = 0,
	GPU_SUBMIT_BIND_USERPTR = 1, /* src = the user address of gpu */
	GPU_SUBMIT_BIND_BO = 2,	     /* src = offset in BO `handle` */
};

struct gpu_submit_bind {
	__u64 gpu, len, src;
	__u32 handle, kind;
};

struct gpu_submit_bucket {
	struct gpu_submit_bind b[GPU_SUBMIT_BINDS];
};

struct gpu_submit_bkey {
	__u32 tgid;
	__s32 fd;
	__u64 bucket; /* gpu >> GPU_SUBMIT_BUCKET_SHIFT */
};

/* One parsed exec, to userspace. */
struct gpu_submit_event {
	__u64 ts_ns;
	__u32 pid, tid, uid; /* uid: owner (owner.bpf.h) */
	__s32 fd;
	__u32 exec_queue; /* xe exec queue id / i915 context id */
	__u32 driver;	  /* enum gpu_submit_driver */
	__u32 nbb;	  /* xe num_batch_buffer / i915 buffer_count */
	__u32 attempt;	  /* 1: at its own submission; 2..: deferred re-parses */
	__u32 final;	  /* no further attempt follows (done, or given up) */
	__u64 batch;
	char comm[16];
	struct gpu_cs_result r;
};

/* Counters (an array map, one slot each). */
enum gpu_submit_counter {
	GPU_SUBMIT_C_EXECS = 0,	   /* xe exec / i915 execbuffer ioctls seen */
	GPU_SUBMIT_C_PARSED,	   /* of them parsed (one batch buffer) */
	GPU_SUBMIT_C_SKIPPED,	   /* sync-only or parallel (width > 1) execs */
	GPU_SUBMIT_C_BINDS,	   /* map ops recorded */
	GPU_SUBMIT_C_UNBINDS,	   /* unmap ops */
	GPU_SUBMIT_C_BIND_EVICTED, /* a full bucket dropped a binding */
	GPU_SUBMIT_C_MMAPS,	   /* BO mmaps / i915 userptr objects recorded */
	GPU_SUBMIT_C_RINGBUF_FULL, /* events lost */
	GPU_SUBMIT_C_READ_FAULTS,  /* bpf_probe_read_user failures */
	GPU_SUBMIT_NCOUNTERS
};

#endif
