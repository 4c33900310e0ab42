/* SPDX-License-Identifier: MIT */
/*
 * SASS text of the instructions PC samples point at, from nvdisasm on the
 * cubins the cupti collector keeps (cupti_sass.c): the instruction hook of
 * `folded --weight stalls` (render/folded.h, folded_insn_fn).
 */
#ifndef GPUPROF_COLLECT_CUPTI_SASS_H
#define GPUPROF_COLLECT_CUPTI_SASS_H

#include <stdint.h>

struct cupti;
struct cupti_sass;

/* For a render by a peer that may see uid's cubins (0: all). tool:
 * cupti.nvdisasm ("" = PATH, then the CUDA prefix; "off" = none). *out
 * is NULL (no hook: offsets) when there is no collector or no nvdisasm.
 * Returns 0 or -ENOMEM. */
int cupti_sass_new(struct cupti *cu, const char *tool, uint32_t uid, struct cupti_sass **out);
/* folded_insn_fn: the text at pc of function name in cubin crc, or NULL;
 * valid until cupti_sass_free(). */
const char *cupti_sass_insn(void *ctx, uint32_t pid, uint64_t crc, const char *name, uint32_t pc);
void cupti_sass_free(struct cupti_sass *s);

#endif
