/* SPDX-License-Identifier: MIT */
/*
 * The always-on CPU stack sampler: a BPF perf_event program on a per-CPU
 * software cpu-clock event, records delivered through a BPF ring buffer to
 * the store as STORE_REC_CPU_SAMPLE. Ops table: cpu_collector_ops ("cpu").
 */
#ifndef GPUPROF_COLLECT_CPU_H
#define GPUPROF_COLLECT_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector.h"

extern const struct collector_ops cpu_collector_ops;

/*
 * Called from the event loop, once for each pid when it is first seen in a
 * sample (and again after it has dropped out of a bounded set of recently
 * seen pids), so a symbolizer can start reading its maps early. Set before
 * or after open; fn NULL removes the hook. Returns 0 or -ENOMEM.
 */
int cpu_collector_set_pid_hook(struct collector *c, collector_pid_fn fn, void *arg);

/*
 * Load-time settings; effective only when called before ops->open.
 * ringbuf_bytes is rounded up to a power of two of at least one page
 * (the kernel's BPF_MAP_TYPE_RINGBUF requirement); 0 keeps the default
 * (CPU_SAMPLE_DEFAULT_RINGBUF_BYTES). skip_self: do not sample this process.
 * Returns 0 or -ENOMEM.
 */
int cpu_collector_configure(struct collector *c, size_t ringbuf_bytes, bool skip_self);
/* Least time between two wake-ups of the loop for new programs' first
 * samples (their mappings read while they live); 0: one for each. Default
 * 50 ms, a fifth of the drain period. Before open; for the bench and tests. */
int cpu_collector_set_new_wake_gap(struct collector *c, uint64_t gap_ns);

/*
 * Parse a kernel CPU list ("0-3,5,7-8\n", as in
 * /sys/devices/system/cpu/online) into mask[0..n). CPUs >= n are ignored.
 * Returns the number of CPUs set, or -EINVAL on malformed input.
 */
int cpu_parse_cpulist(const char *s, bool *mask, int n);

#endif
