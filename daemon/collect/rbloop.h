/* SPDX-License-Identifier: MIT */
/*
 * A BPF ring buffer drained on the event loop: its epoll fd on a uv_poll_t,
 * plus a periodic timer that drains what the BPF side committed without a
 * wake-up (collectors batch wake-ups) and runs the collector's housekeeping.
 * Each drain handles at most `budget` records so one busy collector cannot
 * hold the loop. Shared by the CPU and GPU-launch collectors.
 */
#ifndef GPUPROF_COLLECT_RBLOOP_H
#define GPUPROF_COLLECT_RBLOOP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <bpf/libbpf.h>
#include <uv.h>

struct collector;
struct gpd;

struct rbloop {
	struct ring_buffer *rb;
	uv_poll_t *poll;
	uv_timer_t *timer;
	struct collector *c;
	const char *name; /* for log lines */
	unsigned budget, budget_max;
	void (*tick)(void *arg); /* after each timer drain; may be NULL */
	void *arg;
	struct rbloop *next; /* in gpd.rbloops while started */
};

/* What a sample callback returns once the drain's budget is spent. */
#define RBLOOP_STOP (-EAGAIN)

/*
 * Start draining map_fd's ring buffer into fn(ctx, ...). On failure the
 * collector is set FAILED with the reason, nothing is left allocated, and a
 * negative errno is returned.
 */
int rbloop_start(struct rbloop *l, struct collector *c, const char *name, int map_fd,
		 ring_buffer_sample_fn fn, void *ctx, unsigned budget, uint64_t tick_ms,
		 void (*tick)(void *arg), void *arg);

/* For the sample callback: count one record; 0 to go on, RBLOOP_STOP to stop. */
static inline int rbloop_took(struct rbloop *l)
{
	return --l->budget ? 0 : RBLOOP_STOP;
}

/* Drain once, up to the budget. */
void rbloop_drain(struct rbloop *l);

/* Empty every started ring buffer of the daemon into its collector now
 * (gpd.drain_rings points here once one has started). */
void rbloop_drain_all(struct gpd *g);

/* Close the handles (through the loop), deliver every record already
 * committed, free the ring buffer. Safe to call when not started. */
void rbloop_stop(struct rbloop *l);

/*
 * Sum one key of a BPF per-CPU array of u64 counters (the collectors' loss
 * counters); buf has room for ncpus values. 0 and *sum set, or -errno and
 * *sum untouched.
 */
int rbloop_percpu_sum(const struct bpf_map *map, uint32_t key, uint64_t *buf, int ncpus,
		      uint64_t *sum);

static inline bool rbloop_running(const struct rbloop *l)
{
	return l->rb != NULL;
}

#endif
