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
 * Single-threaded: owned by the event loop.
 */
#ifndef GPUPROF_PYREG_H
#define GPUPROF_PYREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct pyreg;
struct pystack_node;

#define PYREG_IP_FLAG (1ull << 63)
#define PYREG_IS_PY(ip) (((ip)&PYREG_IP_FLAG) != 0)

struct pyreg_opts {
	size_t budget_bytes;  /* frame table + per-process caches; default 32 MiB */
	unsigned max_procs;   /* default 4096 (the BPF map's size) */
	const char *proc_dir; /* default "/proc" (tests) */
	bool no_bpf;	      /* tests: no py_procs map */
};

int pyreg_new(const struct pyreg_opts *opts, struct pyreg **ret);
void pyreg_free(struct pyreg *r);

/* The py_procs map every program that reads Python frames shares (reuse it
 * with bpf_map__reuse_fd() before loading); -1 without BPF. */
int pyreg_map_fd(const struct pyreg *r);

/* A process was seen for the first time, or exec'd: (re)recognize it. */
void pyreg_note_pid(struct pyreg *r, uint32_t pid, bool exec);

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
 * The name of a Python frame ip (PYREG_IS_PY): "qualname (file)_[p]"
 * (SYMTAB_PY_SUFFIX in sym/symtab.h, which every output recognizes), file
 * shortened to its package path; line gets "file:line" with the full file
 * name. False when ip names no frame.
 */
bool pyreg_frame_name(const struct pyreg *r, uint64_t ip, char *name, size_t len, char *line,
		      size_t linelen);

/* "python" object for status: processes recognized, frames, table use;
 * with_processes adds each process's version and why one has no frames. */
void pyreg_status(const struct pyreg *r, struct cJSON *obj, bool with_processes);

#endif
