// SPDX-License-Identifier: MIT
/*
 * Zebin-like ELF files for tests (tests/xe/test_xe_zebin.c, the compile_kernel
 * USDT test in tests/gpu): built with libelf, an addressed .text holding
 * zebin_test_isa (add (16|M0) r10.0<1>:f r11.0<1;1,0>:f r12.0<1;1,0>:f, then
 * nop; XeHPC) and, with symtab, two STT_FUNC kernels "kern_a" (offset 0,
 * 32 bytes) and "kern_b" (offset 16); without, no symbols.
 */
#ifndef GPUPROF_TESTS_ZEBIN_BUILDER_H
#define GPUPROF_TESTS_ZEBIN_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZEBIN_TEST_TEXT_VA 0xffff800000010000ull /* canonical (sign-extended) */
#define ZEBIN_TEST_CANON_VA 0x800000010000ull	 /* as the parser reports it */

extern const uint8_t zebin_test_isa[32];

/* The ELF in memory (malloc()ed into *out); returns its length, or 0 (and
 * *out NULL) when libelf or the temporary file fails. */
size_t zebin_test_build(bool symtab, uint8_t **out);

#endif
