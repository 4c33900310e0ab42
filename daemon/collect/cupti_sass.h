/* SPDX-License-Identifier: MIT */
/*
 * SASS text of the instructions PC samples point at, from nvdisasm on the
 * cubins the cupti collector keeps (cupti_sass.c): the instruction hook of
 * `folded --weight stalls` (render/folded.h, folded_insn_fn).
 */
#ifndef GPUPROF_COLLECT_CUPTI_SASS_H
#define GPUPROF_COLLECT_CUPTI_SASS_H

#include <stddef.h>
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

struct capture;
struct cupti_sass_memo; /* cupti_sassmemo.h */

struct cupti_sass_totals {
	size_t keys;	  /* distinct (cubin, function, offset) of the PC records */
	size_t texts;	  /* kept in the section */
	size_t missing;	  /* no text: cubin not kept or not the owner's, not disassembled */
	size_t capped;	  /* over the section's bounds (capture/capsass.h) */
	size_t bytes;	  /* the section's */
	size_t memo_hits; /* keys the memo answered (no nvdisasm) */
};

/*
 * Before a live capture is saved (on its worker): the SASS text of every
 * instruction its PC records name, as the capture's owner may see it (a
 * uid-filtered capture: that uid's cubins; else all), into the capture as
 * a CAPSEC_CUPTI_SASS section, so outputs show instructions after a
 * restart without cubins or nvdisasm. No section when nothing resolved
 * (no collector, no nvdisasm, no PC records, no cubin). memo (may be
 * NULL; used only for a capture without an owner filter): texts earlier
 * captures of the same kind resolved, consulted first and added to, so
 * that successive windows of a continuous profile run nvdisasm only on
 * what is new. 0 or -ENOMEM.
 */
int cupti_sass_attach(struct cupti *cu, const char *tool, struct capture *c,
		      struct cupti_sass_memo *memo, struct cupti_sass_totals *t);

#endif
