/* SPDX-License-Identifier: MIT */
/*
 * Instruction text from Intel's IGA (libiga64.so.1, Debian's libigc1),
 * loaded with dlopen at run time: optional, nothing links against it.
 * The platform comes from the graphics IP version; the library says
 * which it knows (iga_platforms_list), so a newer IGA adds Xe2/Xe3 with
 * no change here. Debian 12's 1.0.12504.6 stops at XeHPC (PVC, 12.60):
 * docs/xe.md. Where there is no IGA or no platform, callers print the
 * offset.
 */
#ifndef GPUPROF_XE_IGA_H
#define GPUPROF_XE_IGA_H

#include <stddef.h>
#include <stdint.h>

struct xe_iga;

/*
 * Load IGA ($GPUPROF_IGA_LIB, else libiga64.so.1) with a context for
 * graphics IP ver_major.ver_minor. Returns 0, -ENOENT (no library),
 * -EOPNOTSUPP (no IGA platform for this IP, or an IP without EU stall),
 * -EPROTO (a symbol missing, the context refused).
 */
int xe_iga_new(unsigned ver_major, unsigned ver_minor, struct xe_iga **ret);
void xe_iga_free(struct xe_iga *g);
/* The IGA platform name used ("xehpc"). */
const char *xe_iga_platform(const struct xe_iga *g);

/*
 * Disassemble the instruction at isa[off] (16 bytes, 8 when compacted)
 * into out: one line, no leading blanks. Returns its length, -EINVAL when
 * the instruction runs past len, -EBADMSG when IGA cannot decode it.
 */
int xe_iga_insn(struct xe_iga *g, const uint8_t *isa, size_t len, size_t off, char *out,
		size_t outlen);

#endif
