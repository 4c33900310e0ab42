/* SPDX-License-Identifier: MIT */
/* Small helpers with no dependency beyond libc, for every part of the daemon. */
#ifndef GPUPROF_UTIL_H
#define GPUPROF_UTIL_H

#include <stddef.h>

/*
 * Read a whole text file of the proc file system (/proc/PID/maps and the
 * like: sizes unknown in advance, reads short) into a NUL-terminated
 * malloc'd buffer of at most max bytes (more is cut). 0, or -errno; -ESRCH
 * for an empty file (the process exited).
 */
int gpd_read_text(const char *path, size_t max, char **out, size_t *len);

#endif
