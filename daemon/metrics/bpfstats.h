/* SPDX-License-Identifier: MIT */
/*
 * Run time of the daemon's own BPF programs, as the kernel accounts it
 * when BPF statistics are on (sysctl kernel.bpf_stats_enabled, or the
 * daemon holding them on with metrics.bpf_stats). Loop thread only.
 */
#ifndef GPUPROF_METRICS_BPFSTATS_H
#define GPUPROF_METRICS_BPFSTATS_H

#include <stdbool.h>

struct msnap;

/* Turn the kernel's accounting on for as long as the returned descriptor
 * stays open (close it to give it back); negative errno when refused. */
int bpfstats_enable(void);

/* Add the programs' run time and run count, summed by program name, to s;
 * nothing when the kernel does not account them (on = the daemon holds
 * accounting on). */
void bpfstats_emit(struct msnap *s, bool on);

#endif
