/* SPDX-License-Identifier: (MIT OR GPL-2.0-only) */
/*
 * Read the sampled thread's Python frame chain (pystack_abi.h) for processes
 * whose interpreter layout the daemon put in py_procs. Included by the
 * programs that record user stacks. Every loop has a constant bound; every
 * read of the target may fail (the process can lie or race): a failed read
 * ends the chain there.
 */
#ifndef GPUPROF_BPF_PYSTACK_BPF_H
#define GPUPROF_BPF_PYSTACK_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "pystack_abi.h"

/* Layouts by tgid, written by the daemon (shared by every program through
 * one map the daemon creates). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYSTACK_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct pystack_layout);
} py_procs SEC(".maps");

/* Thread state of a thread (pid_tgid), found by walking the thread list
 * once; re-checked on every use against the thread's fsbase. */
struct pystack_ts {
	__u64 tstate;
	__u32 generation;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct pystack_ts);
} py_threads SEC(".maps");

static __always_inline __u64 pystack_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* The thread pointer: glibc's and musl's pthread_self(), which CPython
 * stores as PyThreadState.thread_id. */
static __always_inline __u64 pystack_thread_pointer(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ(task, thread.uw.tp_value);
#else
	return 0;
#endif
}

static __always_inline __u64 pystack_find_tstate(const struct pystack_layout *l, __u64 id,
						 __u64 self)
{
	struct pystack_ts *c = bpf_map_lookup_elem(&py_threads, &id), n = {};
	__u64 t;

	if (c && c->generation == l->generation && c->tstate &&
	    pystack_u64(c->tstate + l->ts_thread_id) == self)
		return c->tstate;
	t = pystack_u64(l->threads_head);
	for (int i = 0; i < PYSTACK_MAX_THREADS && t; i++) {
		if (pystack_u64(t + l->ts_thread_id) == self) {
			n.tstate = t;
			n.generation = l->generation;
			bpf_map_update_elem(&py_threads, &id, &n, BPF_ANY);
			return t;
		}
		t = pystack_u64(t + l->ts_next);
	}
	return 0;
}

/*
 * The current thread's user stack, [*lo, *hi): from its user-mode stack
 * pointer up to its struct pthread (the thread pointer), which glibc and
 * musl put above a thread's stack, or to mm->start_stack for the main
 * thread. False when unknown.
 */
static __always_inline bool pystack_user_stack(__u64 self, __u64 *lo, __u64 *hi)
{
#if defined(__TARGET_ARCH_x86)
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;

	if (!task->mm)
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	*lo = BPF_CORE_READ(regs, sp);
	*hi = task->pid == task->tgid ? BPF_CORE_READ(task, mm, start_stack) : self;
	return *lo && *lo < *hi;
#else
	return false;
#endif
}

/* The walk of the subinterpreters' thread lists, a bpf_loop() context
 * (on the stack; the layout's offsets copied in). */
struct pystack_subwalk {
	__u64 interp, t, main, self, lo, hi;
	__u64 a, b, c; /* thread states found, in order; 0: none */
	__u32 interps, is_next, is_threads, ts_next, ts_thread_id, on_stack;
};

/* Does thread state t, outside the main interpreter, run on this thread? */
static __always_inline bool pystack_sub_mine(const struct pystack_subwalk *w, __u64 t)
{
	__u64 c;

	if (w->on_stack == PYSTACK_NONE)
		return pystack_u64(t + w->ts_thread_id) == w->self;
	c = pystack_u64(t + w->on_stack);
	return c >= w->lo && c < w->hi;
}

/* One step: to an interpreter's thread list, or one thread state on. */
static long pystack_sub_step(__u64 i, void *ctx)
{
	struct pystack_subwalk *w = ctx;

	if (!w->t) {
		/* the main interpreter ends the subinterpreters */
		if (!w->interp || w->interp == w->main || w->interps >= PYSTACK_MAX_INTERPS)
			return 1;
		w->t = pystack_u64(w->interp + w->is_threads);
		w->interp = pystack_u64(w->interp + w->is_next);
		w->interps++;
		return 0;
	}
	if (pystack_sub_mine(w, w->t)) {
		if (!w->a) {
			w->a = w->t;
		} else if (!w->b) {
			w->b = w->t;
		} else {
			w->c = w->t;
			return 1;
		}
	}
	w->t = pystack_u64(w->t + w->ts_next);
	return 0;
}

/*
 * The thread's thread states in subinterpreters, newest interpreter first,
 * at most three (w->a, b, c). A process that never made one pays a single
 * read: interpreters.head is then the main interpreter. A bpf_loop(): its
 * step is verified once, where an inlined loop would multiply the states
 * of the frame walk after it.
 */
static __always_inline void pystack_sub_tstates(const struct pystack_layout *l, __u64 self,
						struct pystack_subwalk *w)
{
	__builtin_memset(w, 0, sizeof(*w));
	if (!l->interps_head)
		return;
	w->interp = pystack_u64(l->interps_head);
	if (!w->interp || w->interp == l->main_interp)
		return;
	if (l->ts_on_stack != PYSTACK_NONE && !pystack_user_stack(self, &w->lo, &w->hi))
		return;
	w->main = l->main_interp;
	w->self = self;
	w->is_next = l->is_next;
	w->is_threads = l->is_threads;
	w->ts_next = l->ts_next;
	w->ts_thread_id = l->ts_thread_id;
	w->on_stack = l->ts_on_stack;
	bpf_loop(PYSTACK_MAX_SUBSTEPS, pystack_sub_step, w, 0);
}

/* The newest frame of a thread state's chain. */
static __always_inline __u64 pystack_first(const struct pystack_layout *l, __u64 ts)
{
	__u64 f = pystack_u64(ts + l->ts_first);

	if (f && l->cf_current != PYSTACK_NONE)
		f = pystack_u64(f + l->cf_current);
	return f;
}

/* A u64 / byte at a daemon-given offset of the frame buffer, bounded for
 * the verifier. */
static __always_inline __u64 pystack_at64(const __u8 *buf, __u32 off)
{
	__u64 v;

	if (off > PYSTACK_FRAME_BYTES - 8)
		return 0;
	__builtin_memcpy(&v, buf + off, sizeof(v));
	return v;
}

static __always_inline __u8 pystack_at8(const __u8 *buf, __u32 off)
{
	if (off > PYSTACK_FRAME_BYTES - 1)
		return 0;
	return buf[off];
}

/*
 * Fill ps->nodes with the current thread's chain, leaf first. Returns the
 * node count; *flags gets PYSTACK_F_*. 0 nodes and no flags for a process
 * with no layout (not Python, or not recognized yet).
 *
 * A thread running code in subinterpreters has a chain in each: those are
 * read first (the innermost, when each interpreter's code was run from an
 * older interpreter's, as code runs an interpreter it made), then the main
 * interpreter's. Every chain ends at a run boundary (a shim in 3.12+, an
 * entry frame in 3.11, any frame before), so the daemon reads them as one.
 */
static __always_inline __u32 pystack_take(struct pystack_scratch *ps, __u32 tgid, __u64 id,
					  __u16 *flags)
{
	const struct pystack_layout *l = bpf_map_lookup_elem(&py_procs, &tgid);
	struct pystack_subwalk w;
	__u64 self, main, f;
	__u32 n = 0, k;

	*flags = 0;
	if (!l)
		return 0;
	self = pystack_thread_pointer();
	if (!self) {
		*flags = PYSTACK_F_NOTHREAD;
		return 0;
	}
	pystack_sub_tstates(l, self, &w);
	main = pystack_find_tstate(l, id, self);
	if (!main && !w.a) {
		*flags = PYSTACK_F_NOTHREAD;
		return 0;
	}
	if (w.a)
		*flags |= PYSTACK_F_SUBINTERP;
	/* the chains in order: the subinterpreters', then the main one's */
	ps->heads[0] = w.a ? pystack_first(l, w.a) : 0;
	ps->heads[1] = w.b ? pystack_first(l, w.b) : 0;
	ps->heads[2] = w.c ? pystack_first(l, w.c) : 0;
	ps->heads[3] = main ? pystack_first(l, main) : 0;
	ps->next_head = 0;
	f = 0;
	for (int i = 0; i < PYSTACK_MAX_NODES; i++) {
		struct pystack_node *nd;
		__u64 code;

		/* a chain ended (or none began): the next non-empty one */
		for (int j = 0; j < PYSTACK_MAX_TSTATES && !f; j++) {
			k = ps->next_head;
			if (k >= PYSTACK_MAX_TSTATES)
				return n;
			ps->next_head = k + 1;
			/* masked after the check: the compiler must not compute
			 * the address from the unchecked value */
			asm volatile("" : "+r"(k));
			f = ps->heads[k & (PYSTACK_MAX_TSTATES - 1)];
		}
		if (!f)
			return n;
		if (bpf_probe_read_user(ps->frame, sizeof(ps->frame), (void *)f)) {
			*flags |= PYSTACK_F_FAULT;
			return n;
		}
		if (n >= PYSTACK_MAX_NODES)
			break;
		nd = &ps->nodes[n];
		code = pystack_at64(ps->frame, l->f_code);
		nd->frame = f;
		nd->code = code;
		nd->instr = pystack_at64(ps->frame, l->f_instr);
		nd->owner = l->f_owner == PYSTACK_NONE ? 0 : pystack_at8(ps->frame, l->f_owner);
		nd->entry = l->f_entry == PYSTACK_NONE ? 0 : pystack_at8(ps->frame, l->f_entry);
		nd->pad = 0;
		nd->ident = 0;
		/* shims (owner 3 and up) have no code object worth reading */
		if (code && nd->owner < 3 &&
		    !bpf_probe_read_user(ps->code, sizeof(ps->code),
					 (void *)((code & ~7ull) + l->co_ident)))
			nd->ident = pystack_code_ident(ps->code);
		n++;
		f = pystack_at64(ps->frame, l->f_prev);
	}
	if (f)
		*flags |= PYSTACK_F_TRUNCATED;
	return n;
}

#endif
