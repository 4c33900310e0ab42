/* SPDX-License-Identifier: MIT */
/*
 * A process's mappings one at a time through PROCMAP_QUERY (Linux 6.11), an
 * ioctl on an open /proc/PID/maps: binary fields, a filter (executable
 * only), and a path only when asked for. Reading the text of every mapping
 * -- each with its path, readable or not -- and parsing it costs far more
 * on a host that starts many processes, where every new one is read once
 * by the unwinder, the symbolizer and the Python registry. Callers fall back
 * to the text where the kernel answers -ENOTTY.
 *
 * Thread-safe: no state.
 */
#ifndef GPUPROF_PROCMAPQ_H
#define GPUPROF_PROCMAPQ_H

#include <stddef.h>
#include <stdint.h>

struct pmq_map {
	uint64_t start, end, off; /* off: file offset of start */
	uint64_t ino;		  /* 0: not a file mapping */
	uint32_t dev_major, dev_minor;
	uint64_t flags; /* PMQ_READ... */
};

#define PMQ_READ 0x01
#define PMQ_WRITE 0x02
#define PMQ_EXEC 0x04
#define PMQ_SHARED 0x08

/*
 * The first mapping that ends above addr (the one holding it, else the next)
 * and has every flag in want_flags (PMQ_EXEC: executable ones), into *m.
 * name (size bytes, may be NULL) receives its name as /proc/PID/maps shows
 * it ("/usr/lib/x.so", "/x (deleted)", "[vdso]", "" when it has none);
 * asking for it costs the kernel a path. 0; -ENOENT past the last one;
 * -ESRCH when the process has no address space (gone, a zombie, a kernel
 * thread); -ENOTTY where the kernel (or the file: not procfs) has no such
 * ioctl; else a negative errno.
 */
int pmq_next(int maps_fd, uint64_t addr, uint64_t want_flags, struct pmq_map *m, char *name,
	     size_t size);

/* The name of the mapping holding addr, as pmq_next() gives it. 0 or a
 * negative errno (-ENOENT: nothing mapped there). */
int pmq_name(int maps_fd, uint64_t addr, char *name, size_t size);

#endif
