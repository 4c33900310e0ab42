/* SPDX-License-Identifier: (MIT OR GPL-2.0-only) */
/*
 * task_owner(): the owner recorded with a task's events (owner_abi.h). An
 * unprivileged peer sees a process's events only if it could read them
 * itself, and the kernel's rule for that (__ptrace_may_access() with
 * PTRACE_MODE_READ_FSCREDS, as /proc/PID/maps and perf use) is: the
 * target's uids all equal the caller's, its gids all equal the caller's, it
 * is dumpable, and its permitted capabilities are a subset of the caller's
 * (empty for an unprivileged caller). Here the caller is not known yet, so
 * the owner is the task's uid when every uid (real, effective, saved, fs)
 * is that uid, every gid is one gid, the mm is SUID_DUMP_USER and no
 * capability is permitted; otherwise GPUPROF_OWNER_ROOT_ONLY. A setuid-root
 * program started by a user thus never carries that user's uid, while the
 * filter the daemon applies (record owner == peer uid) stays one compare.
 *
 * Not covered: whether that one gid is the peer's own. A record has no room
 * for it (struct store_rec is 64 bytes, full), so a task of the peer's uid
 * running under a single group the peer lacks (a service given Group= by
 * root) is still shown to that peer. capture.start checks named pids
 * exactly, gid included.
 *
 * Reads go through probe reads (BPF_CORE_READ) so every program type that
 * records a task (perf_event, uprobe, tracepoint, tp_btf) can call it.
 * Needs vmlinux.h and <bpf/bpf_core_read.h> included first.
 */
#ifndef GPUPROF_BPF_OWNER_BPF_H
#define GPUPROF_BPF_OWNER_BPF_H

#include "owner_abi.h"

#define OWNER_MMF_DUMPABLE_MASK 3 /* MMF_DUMPABLE_BITS = 2, include/linux/sched/coredump.h */
#define OWNER_SUID_DUMP_USER 1

static __always_inline __u32 task_owner(struct task_struct *task)
{
	/* the objective credentials, as __task_cred() in the ptrace check */
	const struct cred *cred = BPF_CORE_READ(task, real_cred);
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__u32 uid, gid;
	__u64 caps = 0, flags = 0;

	if (!cred)
		return GPUPROF_OWNER_ROOT_ONLY;
	uid = BPF_CORE_READ(cred, uid.val);
	/* root's tasks are visible to privileged peers only anyway: keep the
	 * uid meaningful for them */
	if (uid == 0)
		return 0;
	if (BPF_CORE_READ(cred, euid.val) != uid || BPF_CORE_READ(cred, suid.val) != uid ||
	    BPF_CORE_READ(cred, fsuid.val) != uid)
		return GPUPROF_OWNER_ROOT_ONLY;
	gid = BPF_CORE_READ(cred, gid.val);
	if (BPF_CORE_READ(cred, egid.val) != gid || BPF_CORE_READ(cred, sgid.val) != gid ||
	    BPF_CORE_READ(cred, fsgid.val) != gid)
		return GPUPROF_OWNER_ROOT_ONLY;
	/* kernel_cap_t is a u64 since 6.3 and two u32 before: 8 bytes either
	 * way, zero when nothing is permitted */
	if (bpf_core_read(&caps, sizeof(caps), &cred->cap_permitted) || caps)
		return GPUPROF_OWNER_ROOT_ONLY;
	/* a kernel thread, or an exiting task, has no mm: nothing to read */
	if (!mm)
		return GPUPROF_OWNER_ROOT_ONLY;
	/* mm->flags is an unsigned long, or on newer kernels an mm_flags_t
	 * bitmap whose first word holds the same bits: the dumpable mode is
	 * bits 0-1 */
	if (bpf_core_read(&flags, sizeof(unsigned long), &mm->flags) ||
	    (flags & OWNER_MMF_DUMPABLE_MASK) != OWNER_SUID_DUMP_USER)
		return GPUPROF_OWNER_ROOT_ONLY;
	return uid;
}

/* The owner of the task running now. */
static __always_inline __u32 current_owner(void)
{
	return task_owner((struct task_struct *)bpf_get_current_task());
}

#endif
