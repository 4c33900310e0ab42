/* SPDX-License-Identifier: MIT */
/*
 * Driver-side GPU job timelines (docs/collectors.md, "GPU jobs"): tp_btf
 * programs on the xe, i915 and dma_fence tracepoints (bpf/gpu_job.bpf.c),
 * each group loaded on its own so a missing driver disables only its group;
 * events paired into intervals (gpu_job_pair.h). Ops table:
 * gpu_job_collector_ops ("gpu_jobs").
 *
 * STORE_REC_GPU_INTERVAL fields as this collector fills them:
 *   ts_ns, dur_ns  start (or submission when no start event) and duration
 *   pid/tid/uid/comm  the submitting task; 0 when the submission was not seen
 *   stack   user stack at submission (the ioctl's callers), 0 if none
 *   name    the engine: "xe/ccs", "i915/rcs" (store/gpu_engine.h:
 *           gpu_engine_name()); for dma_fence, "fence/" + the symbol of the
 *           fence's get_driver_name less that suffix ("fence/i915_fence"),
 *           or "fence/0x<address>" when /proc/kallsyms cannot name it
 *   cpu     group << 8 | engine class (enum gpu_job_group, bpf/gpu_job.h)
 *   aux32   submission-to-start delay in ns (saturated at UINT32_MAX)
 *   aux[0]  fence context (one per exec queue / context timeline)
 *   aux[1]  0: the driver knows no launch correlation
 */
#ifndef GPUPROF_COLLECT_GPU_JOB_H
#define GPUPROF_COLLECT_GPU_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"

extern const struct collector_ops gpu_job_collector_ops;

#define GPU_JOB_PENDING_DEFAULT 4096

#endif
