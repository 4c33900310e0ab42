/* SPDX-License-Identifier: (MIT OR GPL-2.0-only) */
/*
 * Take the user registers and copy the top of the user stack (ustack.h),
 * for the daemon's CFI unwinder. Included by the programs that record user
 * stacks: the CPU sampler, the GPU launch probes, the GPU job hooks.
 */
#ifndef GPUPROF_BPF_USTACK_BPF_H
#define GPUPROF_BPF_USTACK_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "ustack_abi.h"

/*
 * The registers saved at the current task's last entry to the kernel: its
 * user-mode state when a program runs in kernel context (a sample in a
 * syscall or interrupt, a kernel tracepoint). False for kernel threads,
 * which have no user stack.
 */
static __always_inline bool ustack_task_regs(__u64 *ip, __u64 *sp, __u64 *bp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;

	if (!task->mm)
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	*ip = BPF_CORE_READ(regs, ip);
	*sp = BPF_CORE_READ(regs, sp);
	*bp = BPF_CORE_READ(regs, bp);
	return true;
}

/*
 * Fill h with the user registers (ip, sp, bp) and copy at most cap bytes of
 * stack from sp upward into dst (USTACK_MAX_BYTES + USTACK_PAGE bytes of
 * room). Page by page: bpf_probe_read_user() never faults pages in and
 * zeroes its whole destination on any failure, so one unreadable page (the
 * end of the mapping, a swapped-out page) ends the copy without losing the
 * pages before it. The main thread's copy stops at the stack's top
 * (mm->start_stack, where argc sits): nothing above it is a frame.
 */
static __always_inline void ustack_copy(struct ustack_hdr *h, __u8 *dst, __u32 cap, __u64 ip,
					__u64 sp, __u64 bp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 top, off = 0;

	h->ip = ip;
	h->sp = sp;
	h->bp = bp;
	h->flags = USTACK_F_REGS;
	if (cap > USTACK_MAX_BYTES)
		cap = USTACK_MAX_BYTES;
	top = BPF_CORE_READ(task, mm, start_stack);
	if (sp < top && top - sp < cap) {
		cap = (__u32)(top - sp) + 8;
		h->flags |= USTACK_F_MAINTOP;
	}
	for (int i = 0; i < USTACK_MAX_CHUNKS; i++) {
		__u64 addr = sp + off, chunk;

		if (off >= cap)
			break;
		chunk = USTACK_PAGE - (addr & (USTACK_PAGE - 1));
		if (chunk > cap - off)
			chunk = cap - off;
		/* Bounds the verifier can follow (64-bit, unsigned, checked
		 * after the compiler's last chance to merge them). */
		barrier_var(chunk);
		barrier_var(off);
		if (off > USTACK_MAX_BYTES || chunk > USTACK_PAGE || chunk == 0)
			break;
		if (bpf_probe_read_user(dst + off, chunk, (void *)addr)) {
			h->flags |= USTACK_F_SHORT;
			break;
		}
		off += chunk;
	}
	h->len = (__u32)off;
}

/* Registers from the task (kernel context), then the copy; an empty
 * header for kernel threads. */
static __always_inline void ustack_take_task(struct ustack_hdr *h, __u8 *dst, __u32 cap)
{
	__u64 ip, sp, bp;

	h->len = 0;
	h->flags = 0;
	h->ip = h->sp = h->bp = 0;
	if (ustack_task_regs(&ip, &sp, &bp))
		ustack_copy(h, dst, cap, ip, sp, bp);
}

#endif
