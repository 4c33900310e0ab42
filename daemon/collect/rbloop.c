// SPDX-License-Identifier: MIT
#include "rbloop.h"

#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "gpd.h"
#include "log.h"

void rbloop_drain(struct rbloop *l)
{
	if (!l->rb)
		return;
	l->budget = l->budget_max;
	int r = ring_buffer__consume(l->rb);
	if (r < 0 && r != RBLOOP_STOP)
		log_debug("%s: ring_buffer__consume: %s", l->name, strerror(-r));
}

/* Until empty: a drain that ends with budget left has emptied the buffer. */
static void drain_empty(struct rbloop *l)
{
	while (l->rb) {
		rbloop_drain(l);
		if (l->budget)
			break;
	}
}

void rbloop_drain_all(struct gpd *g)
{
	for (struct rbloop *l = g->rbloops; l; l = l->next)
		drain_empty(l);
}

static void unlink_loop(struct rbloop *l)
{
	struct gpd *g = l->c ? l->c->gpd : NULL;

	if (!g)
		return;
	for (struct rbloop **p = &g->rbloops; *p; p = &(*p)->next)
		if (*p == l) {
			*p = l->next;
			break;
		}
	l->next = NULL;
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct rbloop *l = h->data;

	if (status < 0) {
		/* Only happens if the epoll fd itself broke: nothing will
		 * arrive any more, say so rather than look attached. */
		uv_poll_stop(h);
		collector_set_state(l->c, COLLECTOR_FAILED, "ring buffer poll: %s",
				    uv_strerror(status));
		return;
	}
	rbloop_drain(l);
}

static void on_tick(uv_timer_t *t)
{
	struct rbloop *l = t->data;

	rbloop_drain(l);
	if (l->tick)
		l->tick(l->arg);
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

static void close_handles(struct rbloop *l)
{
	if (l->poll) {
		/* uv_poll_stop() removes the fd from the loop's epoll set at
		 * once, so ring_buffer__free() may close it afterwards. */
		uv_poll_stop(l->poll);
		uv_close((uv_handle_t *)l->poll, free_handle);
		l->poll = NULL;
	}
	if (l->timer) {
		uv_timer_stop(l->timer);
		uv_close((uv_handle_t *)l->timer, free_handle);
		l->timer = NULL;
	}
}

int rbloop_start(struct rbloop *l, struct collector *c, const char *name, int map_fd,
		 ring_buffer_sample_fn fn, void *ctx, unsigned budget, uint64_t tick_ms,
		 void (*tick)(void *arg), void *arg)
{
	uv_loop_t *loop = c->gpd->loop;
	int r;

	memset(l, 0, sizeof(*l));
	l->c = c;
	l->name = name;
	l->budget_max = budget ? budget : 1;
	l->tick = tick;
	l->arg = arg;
	l->rb = ring_buffer__new(map_fd, fn, ctx, NULL);
	if (!l->rb) {
		r = -errno;
		collector_set_state(c, COLLECTOR_FAILED, "ring_buffer__new: %s", strerror(-r));
		return r;
	}
	l->poll = malloc(sizeof(*l->poll));
	l->timer = malloc(sizeof(*l->timer));
	if (!l->poll || !l->timer) {
		free(l->poll);
		free(l->timer);
		l->poll = NULL;
		l->timer = NULL;
		r = -ENOMEM;
		goto err;
	}
	uv_timer_init(loop, l->timer); /* cannot fail on Linux */
	l->timer->data = l;
	r = uv_poll_init(loop, l->poll, ring_buffer__epoll_fd(l->rb));
	if (r < 0) {
		free(l->poll);
		l->poll = NULL;
		goto err;
	}
	l->poll->data = l;
	r = uv_poll_start(l->poll, UV_READABLE, on_poll);
	if (r < 0)
		goto err;
	uv_timer_start(l->timer, on_tick, tick_ms, tick_ms);
	l->next = c->gpd->rbloops;
	c->gpd->rbloops = l;
	c->gpd->drain_rings = rbloop_drain_all;
	return 0;
err:
	close_handles(l);
	ring_buffer__free(l->rb);
	l->rb = NULL;
	/* libuv's codes are negative errno values on Linux. */
	collector_set_state(c, COLLECTOR_FAILED, "ring buffer on event loop: %s", strerror(-r));
	return r;
}

void rbloop_stop(struct rbloop *l)
{
	if (l->rb)
		unlink_loop(l);
	close_handles(l);
	/* Deliver what was committed before the caller detached its programs. */
	drain_empty(l);
	ring_buffer__free(l->rb);
	l->rb = NULL;
}

int rbloop_percpu_sum(const struct bpf_map *map, uint32_t key, uint64_t *buf, int ncpus,
		      uint64_t *sum)
{
	uint64_t t = 0;

	if (!map || !buf || ncpus <= 0)
		return -EINVAL;
	if (bpf_map__lookup_elem(map, &key, sizeof(key), buf, sizeof(uint64_t) * (size_t)ncpus, 0))
		return -errno;
	for (int i = 0; i < ncpus; i++)
		t += buf[i];
	*sum = t;
	return 0;
}
