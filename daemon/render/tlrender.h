/* SPDX-License-Identifier: MIT */
/*
 * Outputs of an imported capture, whose data is a timeline (timeline.h)
 * rather than stack samples: the Chrome / Perfetto trace events it was
 * imported from, and folded CPU-op stacks (docs/render.md, "Imported
 * captures"). Pure functions of a finalized timeline; thread-safe for
 * distinct outputs.
 */
#ifndef GPUPROF_TLRENDER_H
#define GPUPROF_TLRENDER_H

#include <stdint.h>

#include "flamegraph.h"
#include "folded.h"

struct timeline;

/*
 * Trace Event Format JSON of one rank (rank >= 0; -1: the only one, -EDOM
 * when there are several): every kept event as a complete "X" event (cat,
 * name, pid, tid, ts, dur, and the args the importer keeps), the process /
 * thread name metadata, deviceProperties, distributedInfo.rank,
 * traceName and baseTimeNanoseconds. Importing the output again gives the
 * same kept events (same order, times, ids, args). -ENOENT: no such rank.
 * name and id go into otherData.
 */
int timeline_chrome_export(const struct timeline *tl, int32_t rank, const char *name, uint64_t id,
			   folded_write_fn fn, void *ctx, struct export_totals *t);

/*
 * Folded stacks of the CPU side: per rank, process and thread, the CPU
 * events (not GPU-side, duration > 0, not duplicates) nested by time
 * containment, each stack weighted by its leaf's exclusive duration in ns.
 * Root frames "rank R", "<process name> (pid P)" or "pid P", "<thread
 * name> (tid T)" or "tid T". t->samples counts the events, t->weight the
 * ns. -ENODATA when no CPU event has a duration.
 */
int timeline_folded_write(const struct timeline *tl, folded_write_fn fn, void *ctx,
			  struct folded_totals *t);

#endif
