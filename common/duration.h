/* SPDX-License-Identifier: MIT */
#ifndef GPUPROF_COMMON_DURATION_H
#define GPUPROF_COMMON_DURATION_H

#include <stdint.h>

/* "500ms", "5s", "2m", "1h", "250us", or a bare number of seconds, into
 * milliseconds (us rounds up to whole ms). 0 or -EINVAL / -ERANGE. */
int duration_parse_ms(const char *text, uint64_t *ms);

#endif
