/* SPDX-License-Identifier: MIT */
/*
 * Continuous profiles (docs/operations.md, "Continuous profiles"): every
 * push.interval the loop cuts the last window out of the store, the way
 * `capture --last` does, and hands it to a builder thread, which
 * symbolizes it, renders it with the pprof exporter (render/flamegraph.h)
 * and gives the profile to the sinks: a rotating directory (dirsink.c)
 * and an upload queue that its own thread drains to a Pyroscope-compatible
 * ingest endpoint through libcurl (upload.c). Nothing here blocks the loop:
 * a window the builder is not ready for waits in the store and joins the
 * next one; a full queue drops its oldest profile and counts it.
 */
#ifndef GPUPROF_PUSH_H
#define GPUPROF_PUSH_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct capture;
struct gpd;
struct push;
struct symbolizer;

/*
 * A step each window takes on the builder thread after it is symbolized
 * and before it is rendered, for what the parts push must not know
 * (hooks.c: the SASS text of NVIDIA PC samples, as a saved capture keeps
 * it). The window is cut for no owner: what root's capture would hold.
 */
typedef void (*push_prepare_fn)(void *arg, struct capture *c);

/*
 * Start pushing as g->cfg.push says; *ret = NULL (and 0) when both
 * push.url and push.dir are empty. Reads the credential files and opens
 * push.dir now (as root, before any peer connects). sym may be NULL
 * (frames stay addresses); it must outlive push_free(). prepare (may be
 * NULL) runs on each window; what it reads must outlive push_join().
 * Returns 0 or a negative errno, logged here.
 */
int push_start(struct gpd *g, struct symbolizer *sym, push_prepare_fn prepare, void *prepare_arg,
	       struct push **ret);

/* On the loop, at shutdown: stop the timer (its handle closes with the
 * loop) and tell the threads to finish; returns at once. NULL is a no-op. */
void push_stop(struct push *p);

/* After push_stop(): wait for the builder thread to finish the window it
 * is building (it takes no other), so that what prepare reads (the
 * collectors) may go. NULL is a no-op. */
void push_join(struct push *p);

/* After the loop ended: join the threads, free what is queued. NULL is a
 * no-op. */
void push_free(struct push *p);

/* The "push" object of the status reply: counters for everyone; the
 * endpoint, the directory and the last errors only for privileged peers. NULL adds
 * {"enabled": false}. */
void push_status(struct push *p, cJSON *status, bool privileged);

#endif
