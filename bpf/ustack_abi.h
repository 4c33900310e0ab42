/* SPDX-License-Identifier: MIT */
/*
 * A copy of the interrupted user registers and of the top of the user
 * stack, taken in BPF and unwound in the daemon from call-frame information
 * (daemon/unwind/). Shared by the BPF programs and the daemon: limits and
 * fixed-width types only.
 *
 * The copy is raw memory of the profiled thread and may hold secrets: the
 * daemon reads it only to unwind and drops it right after (never stored,
 * exported or logged).
 */
#ifndef GPUPROF_BPF_USTACK_ABI_H
#define GPUPROF_BPF_USTACK_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Largest copy (sampling.stack_bytes); a power of two. */
#define USTACK_MAX_BYTES 65536
#define USTACK_DEFAULT_BYTES 16384
#define USTACK_PAGE 4096
/* Pages one copy may touch: the partial first page, then whole pages. */
#define USTACK_MAX_CHUNKS (USTACK_MAX_BYTES / USTACK_PAGE + 1)

/* ustack_hdr.flags */
#define USTACK_F_REGS 0x1 /* ip, sp, bp are the user registers */
/* the copy stopped at an unreadable page before the configured size (end of
 * mapping, swapped) */
#define USTACK_F_SHORT 0x2
#define USTACK_F_MAINTOP 0x4 /* the main thread's stack, copied up to its top */

struct ustack_hdr {
	__u64 ip, sp, bp;
	__u32 len;   /* bytes of stack copied from sp upward, following the record */
	__u32 flags; /* USTACK_F_* */
};

#define USTACK_HDR_BYTES 32

_Static_assert(sizeof(struct ustack_hdr) == USTACK_HDR_BYTES, "ustack_hdr layout");

#endif
