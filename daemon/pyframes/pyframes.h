/* SPDX-License-Identifier: MIT */
/*
 * Python frames of a live CPython process, read from outside it
 * (docs/pyframes.md).
 *
 * pyf_attach() recognizes the interpreter (where _PyRuntime lives, which
 * version) and settles the layout of its structures: written-down offset
 * tables for 3.9 to 3.12, the interpreter's own _Py_DebugOffsets for 3.13
 * and later. pyf_thread_stack() then walks one thread's frame chain through
 * /proc/PID/mem, and pyf_resolve() turns a code object and an instruction
 * offset into a qualified name, a file and a line.
 *
 * The target is never stopped and never written to: everything read may be
 * inconsistent (the interpreter runs on) or hostile (the process may lie).
 * Every read is length-checked, every walk bounded; bad memory gives an
 * error or a shorter stack, never a crash or an endless loop.
 *
 * Single-threaded: a struct pyf_proc belongs to one caller.
 */
#ifndef GPUPROF_PYFRAMES_H
#define GPUPROF_PYFRAMES_H

#include <stdbool.h>
#include <stdint.h>

struct pyf_proc;

/* Frame flags */
/*
 * The oldest Python frame run by one native interpreter activation
 * (_PyEval_EvalFrameDefault): walking leaf to root, an activation's frames
 * end at and including this one. In 3.9/3.10 every frame is its own
 * activation and carries it.
 */
#define PYF_FRAME_ENTRY 0x1u

/* pyf_thread_stack() return value when the chain went on past max (or
 * past the walk's own bound) */
#define PYF_TRUNCATED 1

struct pyf_frame {
	uint64_t code;	/* the code object (validated by pyf_resolve) */
	uint64_t frame; /* the frame: PyFrameObject (3.9/3.10) or _PyInterpreterFrame */
	/*
	 * PYF_FRAME_ENTRY frames only, 0 when unknown: an address inside the
	 * native stack frame of the activation that ran this run, for splicing
	 * into a CFI-unwound stack (it lies in that frame's [SP, CFA)). 3.11:
	 * the activation's _PyCFrame; 3.12+: its shim entry frame (owner 3).
	 * 3.9/3.10 have none: activations pair with frames one to one.
	 */
	uint64_t marker;
	int32_t instr;	/* instruction offset in bytes; -1: before the first */
	uint32_t flags; /* PYF_FRAME_* */
	/* pyf_from_nodes(): which code object code was at the sample, as BPF
	 * read it (pystack_code_ident()); 0 unknown */
	uint32_t ident;
	uint32_t pad;
};

/*
 * Attach to pid (read-only). Returns 0 with *ret set when the process could
 * be read, whether or not it is a CPython this reader handles: see
 * pyf_reason(). Negative errno when the process is gone or unreadable
 * (-ESRCH, -EACCES: reading another user's memory needs CAP_SYS_PTRACE) or
 * on allocation failure; *ret is then untouched. proc_dir NULL means
 * "/proc" (tests may pass another). Free with pyf_free().
 */
int pyf_attach(uint32_t pid, const char *proc_dir, struct pyf_proc **ret);
void pyf_free(struct pyf_proc *p);

/* NULL when frames can be read; else why not, for status ("not a CPython
 * process", "CPython 3.8 is not supported", ...). Lives as long as p. */
const char *pyf_reason(const struct pyf_proc *p);

/* The kind of pyf_reason(), for decisions: whether attaching again later
 * may succeed. */
enum pyf_refusal {
	PYF_REFUSED_NONE,	 /* frames can be read */
	PYF_REFUSED_NOT_PYTHON,	 /* no _PyRuntime in any mapped file (yet: a process
				  * caught before the loader mapped libpython) */
	PYF_REFUSED_STARTING,	 /* the interpreter is not initialized yet, or its
				  * runtime could not be read (yet) */
	PYF_REFUSED_UNSUPPORTED, /* a version, build or layout this reader refuses */
};

enum pyf_refusal pyf_refusal(const struct pyf_proc *p);

/*
 * Whether p still reads the program the process runs. Its /proc/PID/mem,
 * opened at attach, holds that moment's address space: once the process
 * execs (even the same interpreter binary, whose /proc/PID/exe is then
 * unchanged) or exits, reads through it return nothing. Not when it was
 * attached between a vfork() and the exec (subprocess spawns that way):
 * that address space was its parent's, which lives on. thorough also reads
 * the runtime through a /proc/PID/mem opened now and compares (an open
 * more, for a process whose samples never had frames).
 */
bool pyf_same_image(struct pyf_proc *p, bool thorough);

/* PY_VERSION_HEX of the interpreter (0x030b07f0 for 3.11.7; for 3.9/3.10
 * from sys.version where the binary names its buffer, else the minor only,
 * e.g. 0x03090000), 0 when not a CPython. */
uint32_t pyf_version(const struct pyf_proc *p);

/* How the layout was obtained, for status and tests: "table 3.11",
 * "_Py_DebugOffsets", or "" when none. Lives as long as p. */
const char *pyf_layout_source(const struct pyf_proc *p);

/*
 * The Python frames of thread tid (a kernel TID of the process, as the host
 * sees it), leaf first, at most max: those of the subinterpreters it runs
 * code in (newest interpreter first), then its main interpreter's. Shim frames are skipped; a frame
 * still in its prologue (CPython's "incomplete" frames, before
 * _co_firsttraceable) is kept, pyf_resolve() giving it its function's
 * first line. Returns 0 (whole chain), PYF_TRUNCATED, or negative errno:
 * -ENOTSUP (pyf_reason() is set), -ENOENT (the thread has no Python thread
 * state: a native thread, or not started yet), -EFAULT (memory unreadable,
 * e.g. the process exited). *n is set in every case.
 */
int pyf_thread_stack(struct pyf_proc *p, uint32_t tid, struct pyf_frame *frames, unsigned max,
		     unsigned *n);

/*
 * Name a frame: qualified name (3.11+: co_qualname; 3.9/3.10 only have
 * co_name), file (co_filename as compiled) and line (from the code
 * object's line table; -1 when the instruction has no line). Code objects
 * are cached by address and re-validated on every call, so a freed and
 * reused address never gives a stale name. The strings stay valid until
 * the next pyf_* call on p. Returns 0, -EINVAL (not a code object), -EFAULT.
 */
int pyf_resolve(struct pyf_proc *p, uint64_t code, int32_t instr, const char **qualname,
		const char **file, int *line);

/* ---- for the BPF walk (bpf/pystack_abi.h) ---- */

struct pystack_layout;
struct pystack_node;

/*
 * The layout BPF needs to read p's frames (the main interpreter's thread
 * list, the runtime's interpreter list for subinterpreters, the chain's
 * offsets). 0, -ENOTSUP (pyf_reason() set, or an offset
 * BPF cannot use), -EAGAIN (the interpreter is not set up yet: later),
 * -EFAULT.
 */
int pyf_bpf_layout(struct pyf_proc *p, struct pystack_layout *out);

/*
 * Interpret the raw chain BPF read (leaf first) as pyf_thread_stack() does
 * a live one: shims skipped, activation boundaries flagged with their
 * markers, instruction offsets computed. Writes at most max frames.
 */
unsigned pyf_from_nodes(const struct pyf_proc *p, const struct pystack_node *nodes, unsigned n,
			struct pyf_frame *out, unsigned max);

/*
 * pyf_resolve() for a code object BPF saw with this ident (a hash of fields
 * fixed for the object's life, read at the sample: pystack_code_ident()). A
 * code object cached with the same address and ident is taken as it is,
 * without reading the process again. Else it is read afresh, and when the
 * object at that address now is not the one sampled (freed since, its
 * address reused), -ESTALE: naming it would give another function's name
 * and line. ident 0 (unknown): pyf_resolve().
 */
int pyf_resolve_seen(struct pyf_proc *p, uint64_t code, uint32_t ident, int32_t instr,
		     const char **qualname, const char **file, int *line);

/*
 * The cache of code objects named from the interpreter's file rather than
 * from each process (3.11/3.12's deep-frozen modules), shared by every
 * process of that file: counts since start, and what it holds now.
 */
struct pyf_static_stats {
	uint64_t hits;	/* code objects named from it without reading the file */
	uint64_t fills; /* read from the file */
	uint64_t full;	/* read, but not kept: its byte bound reached */
	uint64_t entries, bytes;
};

void pyf_static_stats(struct pyf_static_stats *out);

/* Where _PyEval_EvalFrameDefault (and its split-off parts) lie in the
 * process: ranges[i] = {start, end}; returns how many (at most max). */
unsigned pyf_eval_ranges(const struct pyf_proc *p, uint64_t (*ranges)[2], unsigned max);

#endif
