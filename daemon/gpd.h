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

#include <uv.h>

#include "config.h"
#include "log.h"
#include "membudget.h"

struct store;
struct collector;
struct capreg;
struct rpc_server;

#define GPD_MAX_COLLECTORS 8

struct tlcache;

struct gpd {
	uv_loop_t *loop;
	struct config cfg;
	struct store *store;
	struct capreg *captures;
	struct tlcache *tlcache; /* decoded timelines between analyses (rpc/tlcache.h) */
	struct rpc_server *rpc;
	struct collector *collectors[GPD_MAX_COLLECTORS];
	unsigned ncollectors;
	uint64_t start_mono_ns;
	bool stopping;
	unsigned jobs_running;
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
