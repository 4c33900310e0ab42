/* SPDX-License-Identifier: MIT */
/* Times on the command line (timearg.c). */
#ifndef GPUPROF_CLI_TIMEARG_H
#define GPUPROF_CLI_TIMEARG_H

#include <stdbool.h>
#include <stdint.h>

/*
 * text as ns into *ns: digits alone are the daemon's CLOCK_MONOTONIC ns
 * (*realtime false), as a capture's window reports them; "@SECONDS[.F]"
 * (since the epoch) and ISO-8601 "YYYY-MM-DDTHH:MM:SS[.F]" with "Z" or
 * "+HH:MM" are wall-clock times (*realtime true), to at most 9 fraction
 * digits. 0, -EINVAL (not such a time), -EDOM (ISO-8601 without a
 * zone), -ERANGE (a field or the value out of range).
 */
int cli_parse_time(const char *text, uint64_t *ns, bool *realtime);

#endif
