/* SPDX-License-Identifier: MIT */
/*
 * Wiring between parts that must not know each other: the CPU collector
 * tells the symbolizer about new pids; the capture registry asks the
 * symbolizer to resolve a capture before it is persisted; continuous
 * profiles get the SASS text of their PC samples from the cupti collector.
 */
#ifndef GPUPROF_HOOKS_H
#define GPUPROF_HOOKS_H

struct gpd;

/* Creates g->symbolizer and wires the parts to it. */
void hooks_init(struct gpd *g);
void hooks_finish(struct gpd *g);

struct capture;
/* push_prepare_fn (push/push.h) for push_start(); arg: the struct gpd.
 * Runs on the push builder thread: the collectors must outlive
 * push_join(). */
void hooks_push_window(void *arg, struct capture *c);

#endif
