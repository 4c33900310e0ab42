/* SPDX-License-Identifier: MIT */
/*
 * The BPF path of the batch-buffer parser (docs/gpu-cs.md, "Paths"):
 * bpf/gpu_submit.bpf.c on the raw syscall tracepoints parses every xe exec
 * and i915 execbuffer in the submitting process's memory; its results come back through a ring
 * buffer and are fed to an xe_cs (kernel table, counters) like host parses.
 */
#ifndef GPUPROF_XE_CS_HOOK_H
#define GPUPROF_XE_CS_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_submit_abi.h"

struct xe;
struct xe_cs;
struct xe_cs_hook;

struct xe_cs_hook_opts {
	uint32_t target_tgid;	/* 0: every process */
	bool accept_failed;	/* tests only: see gpu_submit.bpf.c */
	uint32_t ringbuf_bytes; /* power of two >= 64 KiB; 0 = 1 MiB */
};

/* Load and attach. Returns 0, or -errno with why filled in (the program
 * types refused, not root, ...): the caller stays on the host path. */
int xe_cs_hook_open(const struct xe_cs_hook_opts *o, struct xe_cs_hook **ret, char *why,
		    size_t whylen);
void xe_cs_hook_free(struct xe_cs_hook *h); /* NULL: no-op */

/* The ring buffer's epoll fd (readable when events wait). */
int xe_cs_hook_fd(const struct xe_cs_hook *h);

/* Feed every waiting event to cs (KSPs to x, which may be NULL); returns
 * how many, or -errno. */
int xe_cs_hook_consume(struct xe_cs_hook *h, struct xe_cs *cs, struct xe *x);

/* Also hand every event to fn (tests; NULL to stop), before it is fed. */
void xe_cs_hook_observe(struct xe_cs_hook *h,
			void (*fn)(void *arg, const struct gpu_submit_event *ev), void *arg);

/* The BPF side's counters (enum gpu_submit_counter), summed over CPUs. */
void xe_cs_hook_counters(const struct xe_cs_hook *h, uint64_t out[GPU_SUBMIT_NCOUNTERS]);

#endif
