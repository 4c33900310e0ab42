/* SPDX-License-Identifier: MIT */
/*
 * Internals of the folded-stack renderer shared by folded.c (aggregation,
 * output, per-record lines) and foldline.c (the text of one line).
 */
#ifndef GPUPROF_FOLDED_INT_H
#define GPUPROF_FOLDED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "folded.h"
#include "pcstall.h"

struct store_rec;

struct sym_table;

struct agg {
	uint32_t stack, pid, tid, comm;
	uint32_t name;	 /* GPU kernel string id, 0 for CPU samples */
	uint64_t count;	 /* 0: empty slot */
	uint32_t cgroup; /* launch's cgroup string id with opts.cgroup, else 0 */
	/* stalls: the pc offset and the stall reason's string id (0 otherwise) */
	uint32_t pc, reason;
	uint64_t crc; /* the cubin's */
};

struct arena {
	char *p;
	size_t len, cap;
};

struct ctx {
	const struct capture *c;
	const struct folded_opts *o;
	struct sym_table *syms;
	struct agg *slots;
	size_t cap, used;
	uint8_t *comm_ok; /* per string id: 0 unknown, 1 no, 2 yes */
	uint32_t *pids, *tids;
	struct arena a;
	/* gpu-time: ns per record index: a launch's share of the intervals
	 * matched to it (capture/gpumatch.h), an unmatched interval's own
	 * duration, 0 otherwise. NULL when the capture has no intervals:
	 * launches count 1 each then (gpu_fallback). */
	uint64_t *share;
	/* launches and gpu-time: per record index, the kernel name of a
	 * launch named only by handle (capture/gpumatch.h), or NULL */
	uint32_t *kname;
	bool gpu_fallback;
	uint64_t cupti[3];  /* folded_totals.cupti_intervals, _no_call, _no_launch */
	struct pcstall pcs; /* stalls only: launch stacks, SASS text */
	/* stalls: SASS text of an instruction, or NULL (offsets printed) */
	folded_insn_fn insn;
	void *insn_ctx;
};

/* The line of one key, without its count, appended to x->a (foldline.c).
 * Returns 0 or -ENOMEM. */
int folded_build_line(struct ctx *x, const struct agg *k);

#endif
