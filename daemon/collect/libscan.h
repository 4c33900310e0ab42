/* SPDX-License-Identifier: MIT */
/*
 * GPU runtime library discovery for the launch collector (gpu_launch.c):
 * which file names count as a runtime, where a process maps them
 * (/proc/PID/maps), and what a library file exports (ELF dynamic symbols,
 * SDT notes). No state; no BPF.
 */
#ifndef GPUPROF_COLLECT_LIBSCAN_H
#define GPUPROF_COLLECT_LIBSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum gpu_runtime {
	GPU_RT_ZE = 0,	 /* Level Zero loader: libze_loader.so* */
	GPU_RT_NEO = 1,	 /* Intel's Level Zero driver: libze_intel_gpu.so* (USDT only) */
	GPU_RT_CUDA = 2, /* CUDA driver: libcuda.so* */
	GPU_RT_HIP = 3,	 /* HIP runtime: libamdhip64.so* */
	GPU_RT_COUNT,
};

/* The watched basename prefix of a runtime ("libcuda.so"). */
const char *libscan_prefix(enum gpu_runtime rt);
const char *libscan_runtime_name(enum gpu_runtime rt);
/* The runtime a mapped file's basename belongs to, or -1. */
int libscan_match(const char *basename);

#define LIBSCAN_MAX_RANGES 8

/* One runtime library file as one process maps it. */
struct libscan_hit {
	enum gpu_runtime rt;
	dev_t dev;
	ino_t ino;
	char path[4096]; /* as /proc/PID/maps shows it (the process's mount ns) */
	unsigned nranges;
	struct {
		uint64_t lo, hi;
	} ranges[LIBSCAN_MAX_RANGES]; /* its executable mappings */
};

/*
 * Read <proc_dir>/<pid>/maps (proc_dir NULL: "/proc") and fill hits[0..max)
 * with the watched libraries it maps, one entry per file. Returns the
 * number found, or -errno (-ENOENT: the process is gone).
 */
int libscan_pid(const char *proc_dir, uint32_t pid, struct libscan_hit *hits, size_t max);

/*
 * Which of names[0..n) the ELF file at path defines in its dynamic symbol
 * table (present[i]); and, when sdt_provider is non-NULL, whether it has a
 * .note.stapsdt probe sdt_provider:sdt_name (*has_sdt). Returns 0 or -errno.
 */
int libscan_symbols(const char *path, const char *const *names, size_t n, bool *present,
		    const char *sdt_provider, const char *sdt_name, bool *has_sdt);

#endif
