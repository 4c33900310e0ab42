/* SPDX-License-Identifier: MIT */
/*
 * User-stack unwinding from call-frame information (docs/collectors.md,
 * "Native stacks").
 *
 * The BPF programs copy the interrupted user registers (ip, sp, bp) and the
 * top of the user stack (bpf/ustack_abi.h); this module turns that copy into a
 * list of return addresses, leaf first, with the CFI of each mapped object
 * (.eh_frame, else .debug_frame, read with libdw) and frame pointers where an
 * object has no CFI. The copy is only ever read here: the caller drops it as
 * soon as unwind_user() returns, so raw stack bytes (which may hold secrets)
 * never reach the store, a capture or a log.
 *
 * Per process: a snapshot of its file mappings, each opened through
 * /proc/PID/map_files (so deleted or replaced files and other mount
 * namespaces unwind), refreshed when an address falls outside every known
 * mapping (dlopen, exec). Per object, keyed by device and inode and shared
 * by every process mapping it: the ELF, its CFI and a cache of compact
 * per-address rules. Both caches are LRU under one byte budget.
 *
 * Single-threaded: owned by the event loop (the collectors' ring callbacks).
 */
#ifndef GPUPROF_UNWIND_H
#define GPUPROF_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct unwinder;

/*
 * The user frame that says "this stack goes on, but could not be followed
 * further": appended as the outermost user frame of a stack whose unwinding
 * stopped before its end (stack copy exhausted, no rule for an address,
 * depth limit). The symbolizer names it "[truncated]". Never a real user
 * address (page 0 is never mapped: vm.mmap_min_addr).
 */
#define UNWIND_IP_TRUNCATED 0x1ull

struct unwind_opts {
	size_t budget_bytes;  /* processes + objects + rule caches; default 64 MiB */
	unsigned max_frames;  /* default 127 */
	const char *proc_dir; /* default "/proc" (tests) */
	bool maps_text;	      /* read mappings as text even where PROCMAP_QUERY works (tests) */
};

/* The registers BPF captured, as user mode left them. */
struct unwind_regs {
	uint64_t ip, sp, bp;
};

enum unwind_result {
	UNWIND_COMPLETE = 0, /* reached the outermost frame (_start, clone) */
	UNWIND_TRUNCATED,    /* stopped early; UNWIND_IP_TRUNCATED appended */
};

int unwind_new(const struct unwind_opts *opts, struct unwinder **ret);
void unwind_free(struct unwinder *u);

/*
 * Unwind pid's user stack. stack holds len bytes copied from regs->sp
 * upward. Writes at most max addresses to ips (leaf first: ips[0] =
 * regs->ip, then return addresses) and sets *n. Returns an enum
 * unwind_result; a truncated stack ends with UNWIND_IP_TRUNCATED (counted
 * within max).
 */
int unwind_user(struct unwinder *u, uint32_t pid, const struct unwind_regs *regs, const void *stack,
		size_t len, uint64_t *ips, unsigned max, unsigned *n);

/*
 * unwind_user() that also gives each frame's canonical frame address in
 * cfas (max entries): frame i's stack is [cfas[i - 1] (regs->sp for the
 * leaf), cfas[i]); UINT64_MAX where not known (the outermost frame).
 */
int unwind_user_cfas(struct unwinder *u, uint32_t pid, const struct unwind_regs *regs,
		     const void *stack, size_t len, uint64_t *ips, uint64_t *cfas, unsigned max,
		     unsigned *n);

/*
 * Read pid's mappings and open their objects now, if not known yet: for a
 * collector that learns of a process before its first stack (the GPU
 * launch collector sees it map a runtime), so that stacks of a process
 * that has exited by the time its records are read still unwind. 0, or
 * -ESRCH when it is gone or unreadable.
 */
int unwind_prepare(struct unwinder *u, uint32_t pid);

/*
 * Where a process's mappings were just read by another reader (the
 * symbolizer snapshots every new pid right before its first stack): fn
 * gives each executable mapping of pid, in address order, to each() and
 * returns 0 when it holds a read younger than max_age_ns, else a negative
 * errno; the unwinder then reads for itself. Used on first sight only: a
 * re-read (an address outside every mapping) always reads. fn NULL: none.
 * Lets a new process cost one read of its mappings instead of two.
 */
struct pmq_map;
typedef int (*unwind_maps_fn)(void *arg, uint32_t pid, uint64_t max_age_ns,
			      void (*each)(void *ctx, const struct pmq_map *m, const char *name),
			      void *ctx);
void unwind_set_maps_source(struct unwinder *u, unwind_maps_fn fn, void *arg);

/* A process exited (or exec'd): drop what is cached for it. */
void unwind_forget_pid(struct unwinder *u, uint32_t pid);

/* "unwind" object for status: budget, bytes, processes, objects, samples,
 * truncated by cause; with_processes adds the busiest processes' pids,
 * modes and failures (for privileged peers only). */
void unwind_status(struct unwinder *u, struct cJSON *obj, bool with_processes);

#endif
