/* SPDX-License-Identifier: MIT */
/*
 * Collectors are a table of ops walked by one registry (collect/registry.c),
 * the way seatd walks its backends. The contract lives here, with the
 * daemon's context, so a collector outside collect/ (daemon/xe) implements
 * it without depending on the registry that lists it. Each runs on the
 * daemon's event loop and must never block it or allocate per event on its
 * hot path.
 */
#ifndef GPUPROF_COLLECTOR_H
#define GPUPROF_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

struct gpd;

enum collector_state {
	COLLECTOR_OFF = 0,     /* not opened yet / stopped */
	COLLECTOR_ATTACHED,    /* running */
	COLLECTOR_UNAVAILABLE, /* cannot run on this host: reason says why */
	COLLECTOR_BUSY,	       /* a resource is held by someone else, retrying */
	COLLECTOR_PAUSED,      /* released on request */
	COLLECTOR_FAILED,      /* ran, then broke: reason says why */
};

struct collector;

struct collector_ops {
	const char *name;
	/* Probe and set up; on a host that cannot support it, set state
	 * UNAVAILABLE with a reason and return 0 (not an error). */
	int (*open)(struct collector *c);
	int (*start)(struct collector *c);
	void (*stop)(struct collector *c);
	/* Add collector-specific members to its status object. May be NULL. */
	void (*status)(struct collector *c, cJSON *obj);
	/* Release everything; handles closed through the loop. Work the
	 * collector queued on the thread pool (uv_queue_work) may outlive
	 * this call: it stays an active request of the loop and frees what
	 * it still uses when it ends. So whoever closes the loop runs it
	 * (UV_RUN_DEFAULT) until it returns, then calls uv_loop_close(), as
	 * daemon/main.c does; a bounded number of retries can give up while
	 * a job still runs. */
	void (*free)(struct collector *c);
};

struct collector {
	const struct collector_ops *ops;
	struct gpd *gpd; /* daemon context: loop, store, config */
	enum collector_state state;
	char reason[256];
	uint64_t events; /* records delivered to the store */
	uint64_t drops;	 /* records lost (ring buffer full, tables full, ...) */
	void *priv;
};

/* A "pid seen" hook: collectors that find processes (cpu samples, GPU
 * launches) tell a symbolizer early, so it can snapshot their maps while
 * they live. exec: the pid was reported before and runs another program
 * since (its command name changed), so its snapshot is stale now. fn
 * NULL: no hook. */
typedef void (*collector_pid_fn)(void *arg, uint32_t pid, bool exec);
struct collector_pid_hook {
	collector_pid_fn fn;
	void *arg;
};

static inline void collector_pid_hook_set(struct collector_pid_hook *h, collector_pid_fn fn,
					  void *arg)
{
	h->fn = fn;
	h->arg = arg;
}

static inline void collector_pid_hook_call(const struct collector_pid_hook *h, uint32_t pid,
					   bool exec)
{
	if (h->fn)
		h->fn(h->arg, pid, exec);
}

const char *collector_state_name(enum collector_state st);
/* printf-style helper to set state and reason; logs once at info level. */
void collector_set_state(struct collector *c, enum collector_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
