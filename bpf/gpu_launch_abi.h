/* SPDX-License-Identifier: MIT */
/*
 * GPU launch probes: the ring-buffer records shared by gpu_launch.bpf.c and
 * daemon/collect/gpu_launch.c. Limits and fixed-width types only: compiled
 * both against vmlinux.h (BPF) and against <linux/types.h>.
 */
#ifndef GPUPROF_BPF_GPU_LAUNCH_ABI_H
#define GPUPROF_BPF_GPU_LAUNCH_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "pystack_abi.h"
#include "ustack_abi.h"

#define GPU_LAUNCH_REC_TYPE 0x474c /* "GL": one kernel launch */
#define GPU_PROC_REC_TYPE 0x4750   /* "GP": process event of the library watcher */
#define GPU_ZEBIN_REC_TYPE 0x475a  /* "GZ": NEO wrote a debug zebin */
/* 3: gpu_launch_rec.cgroup_id; 4: .us, the stack copy; 5: .npy, Python frames */
#define GPU_LAUNCH_REC_VERSION 5

#define GPU_LAUNCH_MAX_FRAMES 127 /* bpf_get_stack()'s default ceiling */
#define GPU_LAUNCH_COMM_LEN 16
/* Kernel names longer than this are cut (mangled C++ templates can be). */
#define GPU_LAUNCH_NAME_LEN 256
/* File names the mmap watcher compares against (basename prefixes). */
#define GPU_WATCH_MAX 8
#define GPU_WATCH_LEN 32

#define GPU_LAUNCH_DEFAULT_RINGBUF_BYTES (8u << 20)
#define GPU_LAUNCH_NAMES_MAX 16384  /* (pid, handle) -> name, LRU */
#define GPU_LAUNCH_PENDING_MAX 4096 /* threads inside a naming call */
#define GPU_LAUNCH_TRACKED_MAX 8192 /* processes mapping a runtime */
#define GPU_LAUNCH_SITES_MAX 16384  /* (tid, kernel, call site) stack sampling, LRU */

/* Which entry point produced a launch (store_rec.aux32 of a launch). */
enum gpu_api {
	GPU_API_UNKNOWN = 0,
	GPU_API_ZE_APPEND = 1,		/* zeCommandListAppendLaunchKernel */
	GPU_API_ZE_COOPERATIVE = 2,	/* ...AppendLaunchCooperativeKernel */
	GPU_API_ZE_INDIRECT = 3,	/* ...AppendLaunchKernelIndirect */
	GPU_API_ZE_WITH_PARAMS = 4,	/* ...AppendLaunchKernelWithParameters */
	GPU_API_ZE_WITH_ARGS = 5,	/* ...AppendLaunchKernelWithArguments */
	GPU_API_ZE_USDT = 6,		/* NEO's level_zero:launch_kernel USDT */
	GPU_API_CU_LAUNCH = 7,		/* cuLaunchKernel[_ptsz] */
	GPU_API_CU_LAUNCH_EX = 8,	/* cuLaunchKernelEx[_ptsz] */
	GPU_API_CU_COOPERATIVE = 9,	/* cuLaunchCooperativeKernel */
	GPU_API_HIP_LAUNCH = 10,	/* hipLaunchKernel[_spt] */
	GPU_API_HIP_MODULE_LAUNCH = 11, /* hipModuleLaunchKernel */
	GPU_API_HIP_EXT_LAUNCH = 12,	/* hipExtLaunchKernel */
	GPU_API_MAX,
};

/* gpu_launch_rec.flags */
#define GPU_LAUNCH_F_GRID 0x1  /* grid[] valid */
#define GPU_LAUNCH_F_BLOCK 0x2 /* block[] valid */
#define GPU_LAUNCH_F_NAME 0x4  /* name[] valid (else only handle is known) */
/* Stack not taken (stack sampling): nuser is 0, the stack is the one last
 * seen for (tid, handle, caller). */
#define GPU_LAUNCH_F_NOSTACK 0x8

/*
 * One launch. Sent variable-length: the header, the fixed name buffer, then
 * only the nuser captured user frames (leaf first: ips[0] is the probed
 * entry point itself; userspace trims runtime-library frames), then npy
 * Python frame nodes, then the us.len bytes of user stack. With stack
 * copying on (stack_bytes > 0 in the program) a launch that takes a stack
 * sends the registers and the copy
 * for the daemon's CFI unwinder and no frames (nuser 0); with it off (or
 * the ring over half full), us is empty and nuser holds the frame-pointer
 * walk. F_NOSTACK launches carry neither.
 */
struct gpu_launch_rec {
	__u16 type;    /* GPU_LAUNCH_REC_TYPE */
	__u16 version; /* GPU_LAUNCH_REC_VERSION */
	__u32 pid;     /* tgid */
	__u32 tid;
	__u32 uid; /* owner: uid, or root only (owner.bpf.h) */
	__u16 api; /* enum gpu_api */
	__u16 flags;
	__u16 nuser;
	__u16 cpu;
	__u64 ts_ns;
	__u64 correlation; /* per-launch counter, unique while the daemon runs */
	__u64 queue;	   /* command list / stream handle (0 = default stream) */
	__u64 handle;	   /* kernel / function handle or host stub address */
	__u64 gpu_addr;	   /* kernel ISA GPU VA (USDT only), else 0 */
	__u64 iba;	   /* instruction base address (USDT only), else 0 */
	__u64 isa_size;	   /* kernel ISA bytes (USDT only), 0 = unknown */
	/* Entry probes: the return address at the stack pointer, i.e. the
	 * call site (the stack-sampling key). CFI unwinding finds it by itself
	 * (at a function's first instruction CFA = sp + 8, the return address
	 * at CFA - 8); frame-pointer unwinding skips it unless the kernel adds
	 * it (x86, 6.11+, only when the probed function starts with push
	 * %rbp), or when the probed object has no CFI and the unwinder falls
	 * back to frame pointers: userspace puts it back when ips[1] lacks
	 * it. 0 for USDT (mid-function). */
	__u64 caller;
	/* cgroup v2 id of the launching task (bpf_get_current_cgroup_id(),
	 * the inode number of its cgroup directory); on a cgroup v1-only
	 * host the root's. Userspace resolves it to a path (cgpath.h). */
	__u64 cgroup_id;
	__u32 grid[3];
	__u32 block[3];
	char comm[GPU_LAUNCH_COMM_LEN];
	char name[GPU_LAUNCH_NAME_LEN]; /* NUL-terminated when F_NAME */
	struct ustack_hdr us;		/* registers and stack bytes sent (len 0: none) */
	/* Python frame nodes (pystack_abi.h) sent between the frames and the
	 * stack bytes; with the stack copy only */
	__u16 npy;
	__u16 pyflags; /* PYSTACK_F_* */
	__u32 pad;
	__u64 ips[GPU_LAUNCH_MAX_FRAMES];
};

#define GPU_LAUNCH_HDR_BYTES (176 + GPU_LAUNCH_NAME_LEN) /* offsetof(ips) */

_Static_assert(__builtin_offsetof(struct gpu_launch_rec, ips) == GPU_LAUNCH_HDR_BYTES,
	       "gpu_launch_rec layout changed: bump GPU_LAUNCH_REC_VERSION");

enum gpu_proc_event {
	GPU_PROC_MMAP = 1, /* mapped a watched library executable */
	GPU_PROC_EXEC = 2, /* a tracked process exec'd: its old mappings are gone */
	GPU_PROC_EXIT = 3, /* a tracked process exited (whole thread group) */
	GPU_PROC_FORK = 4, /* a tracked process forked: the child inherits maps */
};

struct gpu_proc_rec {
	__u16 type;    /* GPU_PROC_REC_TYPE */
	__u16 version; /* GPU_LAUNCH_REC_VERSION */
	__u32 event;   /* enum gpu_proc_event */
	__u32 pid;
	__u32 ppid;		  /* FORK: the parent */
	__u64 ino;		  /* MMAP: inode of the mapped file */
	char file[GPU_WATCH_LEN]; /* MMAP: its basename (maybe cut) */
};

/* Path of a debug zebin (NEO's level_zero:compile_kernel USDT), cut here. */
#define GPU_ZEBIN_PATH_LEN 256

/* NEO's level_zero:compile_kernel(char *path) fired after a module link: it
 * wrote a debug zebin ELF (kernel names + ISA) to path, in pid's mount
 * namespace. Sent in full; path is NUL-terminated. */
struct gpu_zebin_rec {
	__u16 type;    /* GPU_ZEBIN_REC_TYPE */
	__u16 version; /* GPU_LAUNCH_REC_VERSION */
	__u32 pid;     /* tgid */
	__u32 tid;
	__u32 pad;
	__u64 ts_ns;
	char path[GPU_ZEBIN_PATH_LEN];
};

/* Key of the name map: the runtime's handle within one process. */
struct gpu_name_key {
	__u32 pid;
	__u32 pad;
	__u64 handle;
};

/* Key of the stack-sampling map: one call site of one kernel on one thread. */
struct gpu_site_key {
	__u32 tid;
	__u32 pad;
	__u64 handle;
	__u64 caller;
};

/* Value of the name map. zeKernelSetGroupSize fills block[]. */
struct gpu_name_val {
	__u32 block[3];
	__u32 has_block;
	char name[GPU_LAUNCH_NAME_LEN];
};

#endif
