/* SPDX-License-Identifier: MIT */
/*
 * GPU launch attribution on stock runtimes: uprobes and USDT probes on the
 * launch and kernel-naming entry points of Level Zero, CUDA and HIP,
 * attached per library file while any process maps it; each launch becomes
 * a STORE_REC_GPU_LAUNCH (docs/collectors.md, "GPU launches"). Ops table:
 * gpu_launch_collector_ops ("gpu").
 *
 * STORE_REC_GPU_LAUNCH fields as this collector fills them:
 *   stack   user stack, leaf = the call site (runtime frames trimmed)
 *   name    the kernel name; when the launch gave its geometry, followed by
 *           a NUL and "grid=X,Y,Z block=X,Y,Z" (either part may be absent).
 *           Unknown names read "0x<handle>". Use gpu_launch_name_len().
 *   aux32   enum gpu_api (bpf/gpu_launch.h): which entry point
 *   aux[0]  command list / stream handle; aux[1] correlation id
 *   cgroup  the launching task's cgroup v2 path relative to the cgroup2
 *           mount ("/system.slice/foo.service"), 0 when unknown (no
 *           cgroup2 mount, cgroup gone before it was resolved)
 */
#ifndef GPUPROF_COLLECT_GPU_LAUNCH_H
#define GPUPROF_COLLECT_GPU_LAUNCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "collector.h"

extern const struct collector_ops gpu_launch_collector_ops;

/*
 * Called on the event loop for each process found mapping a runtime (and
 * again when it first launches), so a symbolizer can snapshot its maps
 * while it lives. fn NULL removes the hook. Returns 0 or -ENOMEM.
 */
int gpu_launch_set_pid_hook(struct collector *c, collector_pid_fn fn, void *arg);

/* A kernel a launch located in GPU memory: NEO's level_zero:launch_kernel
 * USDT (iba, gpu_addr, size, name). Pointers are valid during the call. */
struct gpu_launch_kernel {
	uint64_t gpu_addr; /* kernel ISA start, GPU VA */
	uint64_t size;	   /* ISA bytes; 0 = unknown */
	uint64_t iba;	   /* instruction base address */
	uint32_t pid, uid; /* launching tgid and its uid */
	const char *name;  /* kernel name, NULL when the probe gave none */
	const char *comm;
	const char *cgroup;	/* launcher's cgroup v2 path, NULL when unknown */
	const uint64_t *ustack; /* launch stack, leaf = call site (runtime
				 * frames trimmed); NULL when not walked */
	uint16_t nustack;
};
typedef void (*gpu_launch_kernel_fn)(void *arg, const struct gpu_launch_kernel *k);

/*
 * Called on the event loop for every such launch (repeats included: the
 * receiver dedups), before the launch record is stored, so an EU-stall
 * kernel table learns the kernel's address range and name. fn NULL removes
 * the hook. Returns 0 or -ENOMEM.
 */
int gpu_launch_set_kernel_hook(struct collector *c, gpu_launch_kernel_fn fn, void *arg);

/*
 * Debug zebins NEO announces through its level_zero:compile_kernel USDT
 * (path of the ELF it wrote). The collector opens /proc/PID/root/PATH on
 * the thread pool (regular file, last component not a symlink, at most
 * max_bytes), hands the descriptor to read() there, then load() on the
 * event loop; discard() frees what read() made when load() cannot run.
 * At most GL_ZEBIN_PENDING files in flight: more are dropped and counted.
 */
struct gpu_launch_zebin_hook {
	/* Worker thread: read and parse fd into *state. 0, or -errno with why. */
	int (*read)(int fd, void **state, char *why, size_t whylen);
	/* Loop: add the kernels for pid from file path and free state. Kernels
	 * added, -ENODEV when there is no kernel table, or -errno with why. */
	int (*load)(void *arg, void *state, uint32_t pid, const char *path, char *why,
		    size_t whylen);
	void (*discard)(void *state);
	void *arg;
	size_t max_bytes; /* larger files are refused (-EFBIG) */
};

/* Install (copied) or remove (NULL) the zebin hook. Returns 0 or -ENOMEM. */
int gpu_launch_set_zebin_hook(struct collector *c, const struct gpu_launch_zebin_hook *h);

/* Length of the kernel-name part of a launch's name string. */
static inline size_t gpu_launch_name_len(const char *s, size_t len)
{
	const char *nul = s ? memchr(s, '\0', len) : NULL;

	return nul ? (size_t)(nul - s) : len;
}

#endif
