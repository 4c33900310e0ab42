/* SPDX-License-Identifier: MIT */
/*
 * Kernel binaries from NEO debug zebins (docs/xe.md, NEO's sources): the ELF
 * that patched NEO writes to /tmp/dumped_zebin_module[_N].elf when a module
 * links. As iaprof reads it: each STT_FUNC of SHT_SYMTAB is a kernel whose
 * st_value is its GPU VA and whose bytes run from that offset of its
 * section to the section's end; without a symbol table each SHT_PROGBITS
 * section with an sh_addr is one kernel named after the section.
 *
 * The parser is bounded (file size, sections, symbols capped; every offset
 * and size checked) and hostile input gives -EBADMSG with a reason.
 *
 * struct xe_kbin keeps kernel binaries for the instruction text of the
 * outputs: a fixed byte budget (XE_KBIN_MAX_BYTES), oldest dropped and
 * counted, keyed by the kernel's owner pid and canonical (48-bit) start VA
 * (processes share VA layouts); look-ups fall back to pid 0 (a zebin fed
 * without an owner). Thread-safe.
 */
#ifndef GPUPROF_XE_ZEBIN_H
#define GPUPROF_XE_ZEBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output.h"

#define XE_ZEBIN_MAX_FILE (64u << 20) /* bytes of one zebin */
#define XE_ZEBIN_MAX_SECTIONS 4096
#define XE_ZEBIN_MAX_SYMBOLS 65536
#define XE_ZEBIN_MAX_KERNELS 4096
#define XE_KBIN_MAX_BYTES (64u << 20) /* kernel binaries kept, all together */

struct xe_zebin_kernel {
	char *name;	      /* symbol (or section) name, NUL-terminated */
	uint64_t gpu_va;      /* canonical: masked to XE_VA_MASK */
	uint64_t size;	      /* bytes */
	const uint8_t *bytes; /* into the zebin's buffer */
};

struct xe_zebin {
	uint8_t *buf; /* owned copy of the file */
	size_t len;
	struct xe_zebin_kernel *k;
	size_t nk;
};

/* Parse len bytes (copied). Returns 0, -EBADMSG (why says what), -EFBIG
 * (over XE_ZEBIN_MAX_FILE) or -ENOMEM. */
int xe_zebin_parse(const void *buf, size_t len, struct xe_zebin *z, char *why, size_t whylen);
/* Read a zebin from fd (regular file or pipe) and parse it. -errno of the
 * read, or as xe_zebin_parse. */
int xe_zebin_read_fd(int fd, struct xe_zebin *z, char *why, size_t whylen);
void xe_zebin_finish(struct xe_zebin *z);
/* The same on the heap, shaped for gpu_launch_zebin_hook's read / discard
 * (collect/gpu_launch.h): *state is a malloc()ed struct xe_zebin. */
int xe_zebin_read_new(int fd, void **state, char *why, size_t whylen);
void xe_zebin_free(void *state);

struct xe;
struct xe_kbin;

/* Add z's kernels to the kernel table (name, file, pid, uid) and their
 * bytes to kb (may be NULL). Returns kernels added or a negative errno of
 * xe_ktab_add. */
int xe_zebin_load(struct xe *x, struct xe_kbin *kb, const struct xe_zebin *z, const char *file,
		  uint32_t pid, uint32_t uid);

struct xe_kbin_stats {
	uint64_t kernels, bytes, dropped; /* held now; dropped for the budget */
};

/* max_bytes 0: XE_KBIN_MAX_BYTES */
int xe_kbin_new(size_t max_bytes, struct xe_kbin **ret);
void xe_kbin_free(struct xe_kbin *kb);
/* Keep a copy of a kernel's binary (replacing one of the same pid and
 * VA). 0,
 * -EFBIG (larger than the whole budget), -ENOMEM. */
int xe_kbin_put(struct xe_kbin *kb, uint32_t pid, uint64_t gpu_va, const uint8_t *bytes,
		size_t len);
void xe_kbin_stats(struct xe_kbin *kb, struct xe_kbin_stats *st);

/*
 * Instruction text for the outputs (an xe_insn_fn over kb and an IGA
 * context): decoded text of the instruction at an offset of a kernel
 * whose binary kb holds, cached per (kernel, offset); NULL (print the
 * offset) otherwise. One per output run: not thread-safe itself.
 */
struct xe_iga;
struct xe_insn_src;
/* own_iga: xe_insn_src_free frees iga too. */
int xe_insn_src_new(struct xe_kbin *kb, struct xe_iga *iga, bool own_iga, struct xe_insn_src **ret);
void xe_insn_src_free(struct xe_insn_src *s);
const char *xe_insn_src_text(void *src, const struct xe_sec_kernel *k, uint32_t off);

#endif
