/* SPDX-License-Identifier: MIT */
/*
 * NVIDIA PC samples (STORE_REC_GPU_PC) as every output draws them, shared
 * by the folded renderer (foldline.c, hence flame graphs and heat maps)
 * and the pprof export (pprof.c):
 *
 *   ...launch stack;KERNEL_[G];sass_instruction_[g];stall_reason_[g]
 *
 * the CPU stack of the latest launch of that kernel name in that pid at or
 * before the samples' drain (a PC sample spans a window and has no launch
 * of its own); the instruction's SASS text from the capture's
 * CAPSEC_CUPTI_SASS section (capture/capsass.h); the stall reason without
 * CUPTI's "smsp__pcsamp_warps_issue_stalled_" prefix.
 */
#ifndef GPUPROF_RENDER_PCSTALL_H
#define GPUPROF_RENDER_PCSTALL_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capsass.h"

struct capture;
struct store_rec;

struct pcstall_launch {
	uint64_t key; /* (pid, kernel name) */
	uint64_t ts;
	uint32_t stack;
};

struct pcstall {
	const struct capture *c;
	struct pcstall_launch *launches; /* with a stack, by (key, ts) */
	size_t nlaunches;
	struct capsass sass; /* empty without a section */
};

/* For c (read only, must outlive p). 0 or -ENOMEM; pcstall_finish()
 * after either. */
int pcstall_init(struct pcstall *p, const struct capture *c);
void pcstall_finish(struct pcstall *p);

/* The launch stack id of PC record r, 0 for none. */
uint32_t pcstall_stack(const struct pcstall *p, const struct store_rec *r);

/* The capture's SASS text of (cubin crc, function string id, pc offset),
 * not NUL-terminated, or NULL. */
const char *pcstall_insn(const struct pcstall *p, uint64_t crc, uint32_t name, uint32_t pc,
			 size_t *len);

/* The stall reason of string id reason, prefix stripped ("" for 0). */
const char *pcstall_reason(const struct capture *c, uint32_t reason, size_t *len);

#endif
