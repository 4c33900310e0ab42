/* SPDX-License-Identifier: MIT */
/*
 * Python frames in sampled stacks (docs/pyframes.md, "In stacks").
 *
 * The registry recognizes CPython processes as the collectors first see
 * them (pyf_attach), hands BPF each one's layout through the py_procs map
 * (bpf/pystack_abi.h), and turns the raw chains BPF reads at each sample into
 * Python frames spliced into the unwound native stack: every activation
 * of the interpreter's frame evaluator is replaced by the Python frames it
 * was running.
 *
 * A Python frame goes into a stored stack as a user "address" with bit 63
 * set (never a user address: user space ends below 2^47 or 2^56) whose low
 * bits index the registry's table of distinct (function, file, line)
 * triples; the symbolizer names it through pyreg_frame_name(). The table is
 * bounded (memory.python_max); when full, new frames are named
 * "[python: frame table full]" and counted.
 *
 * Recognizing a process inspects the ELF files it maps (3-11 ms): that
 * runs on the loop's thread pool, at most PYREG_MAX_SCANS at once, and the
 * result is applied on the loop; samples of the process meanwhile keep
 * their native frames, as those of an interpreter still starting do.
 *
 * Single-threaded: owned by the event loop (but pyreg_frame_name()).
 */
#ifndef GPUPROF_PYREG_H
#define GPUPROF_PYREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct pyreg;
struct pystack_node;
struct unwinder;
struct ustack_hdr;
struct uv_loop_s;

#define PYREG_IP_FLAG (1ull << 63)
#define PYREG_IS_PY(ip) (((ip)&PYREG_IP_FLAG) != 0)
/* Processes inspected on the thread pool at once; more wait their turn. */
#define PYREG_MAX_SCANS 2

struct pyreg_opts {
	size_t budget_bytes;  /* frame table + per-process caches; default 32 MiB */
	unsigned max_procs;   /* default 4096 (the BPF map's size) */
	const char *proc_dir; /* default "/proc" (tests) */
	bool no_bpf;	      /* tests: no py_procs map */
	/* where processes are inspected off the loop; NULL: at once, in
	 * pyreg_note_pid() (tests) */
	struct uv_loop_s *loop;
};

int pyreg_new(const struct pyreg_opts *opts, struct pyreg **ret);
/* Inspections still running on the thread pool finish on their own and
 * free the rest then: the loop must run until they are done (as the
 * daemon's shutdown does) before it is closed. */
void pyreg_free(struct pyreg *r);

/* The py_procs map every program that reads Python frames shares (reuse it
 * with bpf_map__reuse_fd() before loading); -1 without BPF. */
int pyreg_map_fd(const struct pyreg *r);

/* A process was seen for the first time, or exec'd: (re)recognize it
 * (with a maps source: on its first sample, after the source's read). */
void pyreg_note_pid(struct pyreg *r, uint32_t pid, bool exec);

/*
 * Where a new process's executable mappings were just read (the
 * symbolizer snapshots every new pid before its first stack is handled):
 * fn gives each to each() and returns 0 when it holds a read of pid younger
 * than max_age_ns, else a negative errno, and the registry reads for
 * itself. Whether a process maps a Python is then decided on the loop from
 * that read, and a process that maps none costs no read of its own: on a
 * host full of short-lived compilers, opening /proc/PID/maps and querying
 * it was most of what recognizing each cost. fn NULL: none (the default).
 */
struct pmq_map;
typedef int (*pyreg_maps_fn)(void *arg, uint32_t pid, uint64_t max_age_ns,
			     void (*each)(void *ctx, const struct pmq_map *m, const char *name),
			     void *ctx);
void pyreg_set_maps_source(struct pyreg *r, pyreg_maps_fn fn, void *arg);

/*
 * Splice the Python frames of one sample into its native user stack.
 * ips[0, nu): the unwound user stack, leaf first; cfas (may be NULL: no CFA
 * known, activations pair with runs in order) the canonical frame address
 * of each; sp the leaf's stack pointer. nodes/nn/flags: what BPF read
 * (PYSTACK_F_*). Writes at most max frames to out and returns how many;
 * out may not alias ips.
 */
unsigned pyreg_splice(struct pyreg *r, uint32_t pid, const uint64_t *ips, const uint64_t *cfas,
		      unsigned nu, uint64_t sp, const struct pystack_node *nodes, unsigned nn,
		      unsigned flags, uint64_t *out, unsigned max);

/*
 * One sampled user stack as the collectors' BPF records carry it: the
 * registers and stack copy of bpf/ustack_abi.h, the frames BPF walked
 * (frame pointers), and the Python nodes of bpf/pystack_abi.h.
 */
struct pyreg_sample {
	uint32_t pid;
	const struct ustack_hdr *us;
	const void *stack;  /* the copied stack bytes */
	size_t stack_avail; /* bytes the record holds from stack on */
	const uint64_t *ips;
	unsigned nips;	   /* frames BPF walked, leaf first */
	const void *nodes; /* nnodes struct pystack_node, any alignment */
	unsigned nnodes;   /* more than PYSTACK_MAX_NODES: none used */
	unsigned pyflags;  /* PYSTACK_F_* */
};

/*
 * The sample's user stack, leaf first, into out (at most max): unwound
 * through u from the stack copy when the record has the registers (u may
 * be NULL: no unwinding), else the frames BPF walked; then the Python
 * frames spliced in (r may be NULL: none). *fp_fallback (may be NULL)
 * tells that an unwinder was there but the record had no copy. The stack
 * bytes are only read here. Returns how many frames were written.
 */
unsigned pyreg_user_stack(struct pyreg *r, struct unwinder *u, const struct pyreg_sample *s,
			  uint64_t *out, unsigned max, bool *fp_fallback);

/*
 * The name of a Python frame ip (PYREG_IS_PY): "qualname (file)_[p]"
 * (SYMTAB_PY_SUFFIX in sym/symtab.h, which every output recognizes), file
 * shortened to its package path; line gets "file:line" with the full file
 * name. False when ip names no frame.
 */
bool pyreg_frame_name(const struct pyreg *r, uint64_t ip, char *name, size_t len, char *line,
		      size_t linelen);

/* "python" object for status: processes recognized, frames, table use,
 * inspections; with_processes adds each process's version and why one has
 * no frames (a cause name for programs, a reason text for people). */
void pyreg_status(const struct pyreg *r, struct cJSON *obj, bool with_processes);

#endif
