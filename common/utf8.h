/* SPDX-License-Identifier: MIT */
/* UTF-8 decoding shared by the daemon (reply repair, parameter checks) and
 * gpuprofctl (terminal escaping). */
#ifndef GPUPROF_COMMON_UTF8_H
#define GPUPROF_COMMON_UTF8_H

#include <stddef.h>
#include <stdint.h>

/*
 * Length of the valid UTF-8 character at s (1..4, len > 0), 0 if s does not
 * start one (RFC 3629: no overlongs, surrogates or code points past
 * U+10FFFF). *cp (optional) receives its code point.
 */
size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cp);

#endif
