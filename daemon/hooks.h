/* SPDX-License-Identifier: MIT */
/*
 * Wiring between parts that must not know each other: the CPU collector
 * tells the symbolizer about new pids; the capture registry asks the
 * symbolizer to resolve a capture before it is persisted.
 */
#ifndef GPUPROF_HOOKS_H
#define GPUPROF_HOOKS_H

struct gpd;

/* Creates g->symbolizer and wires the parts to it. */
void hooks_init(struct gpd *g);
void hooks_finish(struct gpd *g);

#endif
