/* SPDX-License-Identifier: MIT */
/*
 * Writers over a decoded CAPSEC_XE_EU_STALL section (docs/xe.md):
 *
 *   folded      comm;pid;cpu frames...;-;file_[G];kernel_[G];insn_[g];
 *               reason_[g];0xoffset_[g] count  (flamegraph.pl --colors=gpu)
 *   iaprof      iaprof's tab-separated stream (iaprof's output): string,
 *               interval, kernel, eustall lines, per interval deltas
 *   flamescope  per-interval totals by reason and the top kernel, TSV
 *
 * Stall reasons are always printed by name (iaprof's output: iaprof's collapse
 * script prints indices and misreads columns; we do neither). Pure
 * functions of the section: safe on worker threads.
 */
#ifndef GPUPROF_XE_OUTPUT_H
#define GPUPROF_XE_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "section.h"

struct sym_table;

/* Receives output in chunks; returns 0 or -errno (stops the writer). */
typedef int (*xe_write_fn)(void *ctx, const void *buf, size_t len);

struct xe_out_opts {
	bool cgroup;	    /* folded: the owner's cgroup path as the root frame */
	uint32_t pid;	    /* only this process's kernels; 0 = all */
	uint64_t bucket_ns; /* flamescope bucket; 0 = 100 ms */
	/* The capture's decoded CAPSEC_SYMBOLS section (symtab.h), or NULL:
	 * CPU frames of kernels whose launch stack it covers (by the kernel's
	 * pid and stack id, as the folded renderer looks records up) print
	 * as names, the others as 0x addresses. */
	const struct sym_table *syms;
};

struct xe_out_totals {
	uint64_t lines;
	uint64_t samples;      /* sum of the counters written */
	uint64_t unattributed; /* of which in "[unattributed]" rows */
	uint64_t kernels;
};

/* Instruction text at an offset of a kernel, or NULL to print the offset.
 * A hook for IGA (iga.c); may be NULL. */
typedef const char *(*xe_insn_fn)(void *ctx, const struct xe_sec_kernel *k, uint32_t off);

int xe_write_folded(const struct xe_capdata *d, const struct xe_out_opts *o, xe_insn_fn insn,
		    void *insn_ctx, xe_write_fn fn, void *ctx, struct xe_out_totals *t);
int xe_write_iaprof(const struct xe_capdata *d, const struct xe_out_opts *o, xe_insn_fn insn,
		    void *insn_ctx, xe_write_fn fn, void *ctx, struct xe_out_totals *t);
int xe_write_flamescope(const struct xe_capdata *d, const struct xe_out_opts *o, xe_write_fn fn,
			void *ctx, struct xe_out_totals *t);

#endif
