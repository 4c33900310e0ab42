/* SPDX-License-Identifier: MIT */
/*
 * Python frames read in BPF at the moment of a sample (pystack.bpf.h): the
 * frame chain of the sampled thread's CPython thread state, raw. The daemon
 * (daemon/pyframes/) recognizes each interpreter, hands BPF its layout per
 * process (struct pystack_layout in the py_procs map), and afterwards
 * interprets the nodes: which are shims, where each native interpreter
 * activation's run ends, the instruction offset, the names. Shared by the
 * BPF programs and the daemon: limits and fixed-width types only.
 */
#ifndef GPUPROF_BPF_PYSTACK_ABI_H
#define GPUPROF_BPF_PYSTACK_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Frame nodes read per sample, shims included; a longer chain is cut there
 * and flagged PYSTACK_F_TRUNCATED. */
#define PYSTACK_MAX_NODES 96
/* Thread states walked to find the sampled thread's (then cached). */
#define PYSTACK_MAX_THREADS 64
/* Subinterpreters looked through at each sample (only when the process
 * has any), and the steps (an interpreter or a thread state) that takes. */
#define PYSTACK_MAX_INTERPS 8
#define PYSTACK_MAX_SUBSTEPS 64
/* Thread states of one thread whose chains are read: a thread running code
 * in subinterpreters has one in each, besides its main interpreter's. */
#define PYSTACK_MAX_TSTATES 4
/* Bytes of a frame read at once: every offset used lies below. */
#define PYSTACK_FRAME_BYTES 128
/* Bytes of a code object hashed into a node's ident (see pystack_code_ident) */
#define PYSTACK_CODE_IDENT_BYTES 64
#define PYSTACK_NONE 0xffffffffu
#define PYSTACK_MAX_PROCS 4096

/* Flags of a sample's Python part */
#define PYSTACK_F_TRUNCATED 0x1 /* the chain went on past PYSTACK_MAX_NODES */
#define PYSTACK_F_NOTHREAD 0x2	/* no thread state of this thread (native thread) */
#define PYSTACK_F_FAULT 0x4	/* a read failed: the nodes are the ones before it */
#define PYSTACK_F_SUBINTERP 0x8 /* nodes of a subinterpreter's thread state lead */

/*
 * How to read one process's interpreter, by byte offsets (PYSTACK_NONE: the
 * version has no such field). Frames are the nodes of a singly linked chain
 * from the thread state: PyFrameObject (3.9/3.10) or _PyInterpreterFrame
 * (3.11+). All offsets but threads_head are below PYSTACK_FRAME_BYTES where
 * they index a frame.
 *
 * Interpreters form a list from _PyRuntime.interpreters.head, newest first:
 * the main interpreter, created first, is its last. A thread that runs code
 * in a subinterpreter has a thread state there too (the one whose frames
 * run), found by walking the interpreters ahead of the main one (none when
 * interps_head is 0). Up to 3.12, _xxsubinterpreters.run_string() runs its
 * code on the interpreter's first thread state, whatever thread calls it:
 * thread_id names the thread that made the interpreter, and the thread
 * that runs it is told by ts_on_stack.
 */
struct pystack_layout {
	__u64 threads_head; /* address of the main interpreter's threads.head */
	__u64 interps_head; /* address of _PyRuntime.interpreters.head */
	__u64 main_interp;  /* the main interpreter */
	__u32 is_next;	    /* PyInterpreterState.next */
	__u32 is_threads;   /* PyInterpreterState's threads.head (tstate_head) */
	__u32 ts_next;	    /* PyThreadState.next */
	__u32 ts_thread_id; /* PyThreadState.thread_id: pthread_self(), the fsbase */
	__u32 ts_first;	    /* ->frame (3.9/3.10), ->cframe (3.11/3.12), ->current_frame */
	__u32 cf_current;   /* _PyCFrame.current_frame (3.11/3.12), else NONE */
	__u32 f_prev, f_code, f_instr; /* f_back/previous, f_code/f_executable, lasti/instr */
	__u32 f_owner, f_entry;	       /* owner byte (3.11+), is_entry byte (3.11) */
	__u32 co_ident;		       /* in the code object: its ident's bytes */
	__u32 generation;	       /* set by the daemon: which attach this is */
	/* PyThreadState.cframe (3.10-3.12): a local of the evaluator running
	 * the thread state, so on that thread's C stack; PYSTACK_NONE: a
	 * subinterpreter's thread state is the thread's whose thread_id it has */
	__u32 ts_on_stack;
};

/* One node of the chain, raw. */
struct pystack_node {
	__u64 frame;	   /* the node's address (3.12+ shims are activation markers) */
	__u64 code;	   /* f_code / f_executable as read (3.14+: tag bits included) */
	__u64 instr;	   /* 3.9/3.10: f_lasti (low 32 bits); 3.11+: the instruction pointer */
	__u32 ident;	   /* pystack_code_ident() of code, 0 when unreadable */
	__u8 owner, entry; /* as read; 0 when the version has none */
	__u16 pad;
};

#define PYSTACK_NODE_BYTES 32

/*
 * Which code object a node's code address held when it was sampled: a hash
 * of PYSTACK_CODE_IDENT_BYTES bytes at co_ident, the 64 bytes that end with
 * co_linetable, where every version has fields fixed for the object's life
 * (its file, name and line-table pointers; 3.12+ its co_version). The
 * daemon names frames later, from a cache by address, and addresses are
 * reused: a module's code object is freed once the module ran, and the next
 * code object of its size takes its place (all with co_firstlineno 1). Never
 * 0, which means unreadable.
 */
static inline __u32 pystack_code_ident(const __u64 *w)
{
	__u64 h = 0;

	for (int i = 0; i < PYSTACK_CODE_IDENT_BYTES / 8; i++)
		h = (h ^ w[i]) * 0x9e3779b97f4a7c15ull;
	return (__u32)(h >> 32) | 1;
}

_Static_assert(sizeof(struct pystack_node) == PYSTACK_NODE_BYTES, "pystack_node layout");
_Static_assert(sizeof(struct pystack_layout) == 80, "pystack_layout layout");

/* The per-CPU working area of the walk (inside a program's scratch). */
struct pystack_scratch {
	struct pystack_node nodes[PYSTACK_MAX_NODES];
	__u8 frame[PYSTACK_FRAME_BYTES];
	__u64 code[PYSTACK_CODE_IDENT_BYTES / 8]; /* the node's code object's ident bytes */
	/* the first frames of the chains still to read, and which is next:
	 * kept in map memory, whose values the verifier does not track, so
	 * moving to the next chain does not multiply the walk's states */
	__u64 heads[PYSTACK_MAX_TSTATES];
	__u32 next_head, pad;
};

#endif
