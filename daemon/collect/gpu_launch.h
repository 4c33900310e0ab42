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
int gpu_launch_set_pid_hook(struct collector *c, void (*fn)(void *arg, uint32_t pid), void *arg);

/* Length of the kernel-name part of a launch's name string. */
static inline size_t gpu_launch_name_len(const char *s, size_t len)
{
	const char *nul = s ? memchr(s, '\0', len) : NULL;

	return nul ? (size_t)(nul - s) : len;
}

#endif
