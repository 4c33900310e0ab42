/* SPDX-License-Identifier: MIT */
/*
 * The daemon context every part receives: the loop, the store, the
 * configuration, the collectors and the captures. One per process; owned
 * by main.c.
 */
#ifndef GPUPROF_GPD_H
#define GPUPROF_GPD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "config.h"
#include "log.h"
#include "membudget.h"

struct store;
struct collector;
struct capreg;
struct rpc_server;
struct unwinder;
struct pyreg;
struct push;
struct symbolizer;

#define GPD_MAX_COLLECTORS 8
#define GPD_MAX_JOBS 64 /* the largest limits.max_jobs (config.c) */

struct tlcache;
struct cp_cache;

struct gpd {
	uv_loop_t *loop;
	struct config cfg;
	struct store *store;
	struct capreg *captures;
	struct tlcache *tlcache; /* decoded timelines between analyses (rpc/tlcache.h) */
	/* built critical-path graphs between requests (analysis/critpath/cpcache.h) */
	struct cp_cache *cpcache;
	struct rpc_server *rpc;
	struct push *push; /* continuous profiles (push/push.h); NULL when off */
	struct collector *collectors[GPD_MAX_COLLECTORS];
	unsigned ncollectors;
	/* The collectors' BPF ring buffers (collect/rbloop.c), and a call that
	 * empties them all into the store now: records otherwise wait for the
	 * next drain tick (250 ms), and a window cut from the past must hold
	 * everything that happened before it was asked for. NULL without
	 * collectors. */
	struct rbloop *rbloops;
	/* CFI unwinding of the user stacks the collectors copy (unwind/unwind.h);
	 * NULL when sampling.stack_bytes is 0. Loop thread only. */
	struct unwinder *unwinder;
	/* Python frames in those stacks (pyframes/pyreg.h); NULL when
	 * sampling.python is off or BPF maps cannot be made. Loop thread only. */
	struct pyreg *pyreg;
	/* Resolves user and kernel frames (sym.h): created by hooks_init(),
	 * freed by hooks_finish(); NULL when it could not be created.
	 * Thread-safe: jobs resolve call sites with it. */
	struct symbolizer *symbolizer;
	void (*drain_rings)(struct gpd *g);
	uint64_t start_mono_ns;
	bool stopping;
	unsigned jobs_running;
	/* jobs running per peer uid, for limits.user_jobs (jobs.c); no more
	 * uids than running jobs, so max_jobs entries suffice */
	struct gpd_job_uid {
		uid_t uid;
		unsigned n; /* 0 = free entry */
	} job_uids[GPD_MAX_JOBS];
	/* Called on the loop thread whenever a job slot frees, before any
	 * request can take it: the capture registry starts the persists
	 * waiting for a slot there (capreg.c), so they go first. */
	void (*job_slot_free)(void *arg);
	void *job_slot_arg;
	/* memory.jobs_max: what running jobs reserved (membudget.h) */
	struct membudget jobs_mem;
	/* memory.idle_trim after the last job ends: malloc_trim(0) (jobs.c) */
	uv_timer_t trim_timer;
	uint64_t heap_trims, heap_trims_released;
};

/* CLOCK_MONOTONIC in ns (the clock BPF's bpf_ktime_get_ns() uses). */
uint64_t gpd_now_ns(void);
/* CLOCK_REALTIME - CLOCK_MONOTONIC, in ns, now. */
int64_t gpd_mono_to_realtime_ns(void);

#endif
