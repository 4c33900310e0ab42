/* SPDX-License-Identifier: MIT */
/*
 * The actual GPU clock as the Intel xe and i915 drivers publish it in
 * sysfs, read when a snapshot is built. Other drivers publish none there
 * (NVIDIA's is in NVML), so no series appears for them.
 */
#ifndef GPUPROF_METRICS_GPUFREQ_H
#define GPUPROF_METRICS_GPUFREQ_H

struct msnap;

/* drm_root: "/sys/class/drm" (tests pass a tree of their own). */
void gpufreq_emit(struct msnap *s, const char *drm_root);

#endif
