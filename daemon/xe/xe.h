/* SPDX-License-Identifier: MIT */
/*
 * Intel Xe EU-stall profiling core (docs/xe.md): the GPU-kernel table that
 * launch probes feed, the attribution of decoded EU-stall samples to
 * (kernel, offset, reason) counters per interval, the bounded deferral of
 * samples whose kernel is not known yet, and the export of a capture
 * window as the CAPSEC_XE_EU_STALL section.
 *
 * Thread-safety: every function here takes the core's mutex, so the loop
 * thread (streams, launch probes) and capture workers (export) may call
 * them concurrently. The hot path takes it once per read() batch.
 */
#ifndef GPUPROF_XE_H
#define GPUPROF_XE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"

/* Capture section holding a window's EU-stall profile (section.c). Not in
 * capture.h's enum: unknown section types round-trip unchanged, and a
 * high number keeps clear of the types other parts add. */
#define CAPSEC_XE_EU_STALL 0x5845 /* "XE" */

/* GPU virtual addresses are compared in their low 48 bits: NEO and the
 * driver hand out canonical (sign-extended) VAs, and iaprof masks kernels
 * with 0xFFFFFFFFFF00 (the Xe PRMs). */
#define XE_VA_MASK 0xFFFFFFFFFFFFull
/* Kernel size when the launch did not say (a Level Zero kernel's ISA is
 * almost always smaller; a wrong guess only widens its range). */
#define XE_KERNEL_DEFAULT_SIZE (64u * 1024)

struct xe;

struct xe_config {
	uint64_t interval_ns;	  /* aggregation granularity; default 100 ms */
	uint32_t max_rows;	  /* (interval, kernel, offset) rows; default 1 << 18 */
	uint32_t max_kernels;	  /* kernel table entries; default 65536 */
	uint32_t max_deferred;	  /* samples waiting for their kernel; default 65536 */
	uint32_t defer_intervals; /* how long a sample may wait; default 50 (5 s) */
	bool demangle;		  /* kernel names demangled when added (symbols.demangle) */
};

/*
 * One GPU kernel as a launch probe / USDT sees it (NEO's sources
 * level_zero:launch_kernel(iba, baseAddress, size, name)). Strings are
 * copied; NULL means unknown. Called on every launch: a repeat of a known
 * (range, iba, pid) is a cheap look-up.
 */
struct xe_kernel_info {
	uint64_t gpu_addr; /* kernel ISA start, full GPU VA */
	uint64_t size;	   /* ISA bytes; 0 = unknown (XE_KERNEL_DEFAULT_SIZE) */
	uint64_t iba;	   /* instruction base address the EU IPs are relative to;
			    * 0 when the runtime runs heapless (full VAs) */
	uint32_t pid, uid; /* owner (tgid) and its real uid (authorization) */
	const char *name;  /* kernel symbol */
	const char *file;  /* module / source file, e.g. the zebin path */
	const char *comm;
	const char *cgroup;	/* cgroup v2 path of the owner: per-container split */
	const uint64_t *ustack; /* launch call stack, leaf first (may be NULL) */
	uint16_t nustack;
	/* A guess (a batch buffer's KSP): never replaces a kernel a launch
	 * probe named covering gpu_addr (the add is a no-op, returns 0), and
	 * is clipped to end where such a kernel starts, so it only fills
	 * gaps. Weak over weak and named over weak follow the VA-reuse rule. */
	bool weak;
};

struct xe_stats {
	uint64_t records;		/* EU-stall records decoded */
	uint64_t empty;			/* records with every counter 0 (skipped) */
	uint64_t attributed;		/* records added to a kernel's profile */
	uint64_t deferred;		/* records that had to wait (ever) */
	uint64_t deferred_now;		/* waiting now */
	uint64_t late_attributed;	/* of the deferred, attributed later */
	uint64_t unattributed;		/* gave up: kept as "[unattributed]" rows */
	uint64_t rows, rows_evicted;	/* aggregation table; evicted with their interval */
	uint64_t kernels, kernels_full; /* table entries; adds refused (table full) */
	uint64_t ibas;			/* distinct instruction base addresses known */
};

int xe_new(const struct xe_config *cfg, uint64_t epoch_ns, struct xe **ret);
void xe_free(struct xe *x);

/* Register a kernel (see struct xe_kernel_info). Retries deferred samples
 * when the kernel is new. Returns 0 or -EINVAL / -ENOMEM / -ENOSPC (table
 * full even after reclaiming kernels without retained samples). */
int xe_ktab_add(struct xe *x, const struct xe_kernel_info *k);
/* Forget a process's kernels (its exit); their rows stay exportable. */
void xe_ktab_remove_pid(struct xe *x, uint32_t pid);

/*
 * Decode and attribute len bytes of records (a whole number of rec_size
 * strides; the rest is ignored) read at now_ns (CLOCK_MONOTONIC: records
 * carry no time, the xe driver's EU-stall stream). Returns the number of records.
 */
size_t xe_ingest(struct xe *x, const struct xe_decoder *d, const uint8_t *buf, size_t len,
		 size_t rec_size, uint64_t now_ns);

/* Retry deferred samples; with give_up, or for samples older than the
 * defer window at now_ns, move what still has no kernel to the
 * "[unattributed]" rows (counted, never dropped). */
void xe_retry_deferred(struct xe *x, uint64_t now_ns, bool give_up);

/* Filters of an export, as a capture's (NULL/0 = all). */
struct xe_export_filter {
	const int32_t *pids;
	size_t npids;
	bool uid_filter;
	uint32_t uid;
};

/*
 * Encode the profile of [t0_ns, t1_ns] (whole intervals overlapping it) as
 * a CAPSEC_XE_EU_STALL section into a malloc()ed buffer. Deferred samples
 * of the window are retried first. Returns 0 (with *len 0 and *buf NULL
 * when the window holds nothing) or -ENOMEM.
 */
int xe_export(struct xe *x, uint64_t t0_ns, uint64_t t1_ns, const struct xe_export_filter *f,
	      void **buf, size_t *len);

void xe_get_stats(struct xe *x, struct xe_stats *st);

#endif
