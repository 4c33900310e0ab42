// SPDX-License-Identifier: MIT
/*
 * Per-thread single-producer single-consumer rings of API records. The
 * application thread that makes a CUDA call is the only producer of its
 * ring; the sender thread is the only consumer of all of them. A thread's
 * first record allocates its ring and links it in under a mutex; after
 * that a push is two atomic loads, a copy and a release store (and a
 * write(2) to wake the sender when the ring reaches half full). A full
 * ring drops the record and counts it: the application never waits.
 */
#include <pthread.h>
#include <stdlib.h>

#include "inject.h"

/* records per thread, a power of two: 128 KiB, about 20 ms of launches
 * at 200,000 per second; the sender is woken when a ring is half full */
#define RING_N 4096u
#define RINGS_MAX 4096u

struct apiring {
	_Atomic uint32_t head; /* written by the owning thread */
	_Atomic uint32_t tail; /* written by the sender */
	_Atomic int dead;      /* the thread exited: free once drained */
	struct apiring *next;
	struct api_ev ev[RING_N];
};

static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct apiring *rings;
static unsigned nrings;
static pthread_key_t ring_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct apiring *my_ring;
static __thread int my_ring_off; /* no ring: out of memory, or exiting */

static void ring_dtor(void *p)
{
	struct apiring *r = p;

	/* later CUDA calls from other destructors of this thread drop */
	my_ring = NULL;
	my_ring_off = 1;
	atomic_store_explicit(&r->dead, 1, memory_order_release);
}

static void key_init(void)
{
	if (pthread_key_create(&ring_key, ring_dtor))
		ring_key = (pthread_key_t)-1;
}

static struct apiring *ring_new(void)
{
	struct apiring *r;

	pthread_once(&key_once, key_init);
	if (ring_key == (pthread_key_t)-1)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_lock(&rings_lock);
	if (nrings >= RINGS_MAX) {
		pthread_mutex_unlock(&rings_lock);
		free(r);
		return NULL;
	}
	r->next = rings;
	rings = r;
	nrings++;
	pthread_mutex_unlock(&rings_lock);
	pthread_setspecific(ring_key, r);
	return r;
}

void apiring_push(const struct api_ev *ev)
{
	struct apiring *r = my_ring;
	uint32_t h, t;

	if (!r) {
		if (my_ring_off || !(r = ring_new())) {
			my_ring_off = 1;
			atomic_fetch_add_explicit(&gpi.n.api_dropped, 1, memory_order_relaxed);
			return;
		}
		my_ring = r;
	}
	h = atomic_load_explicit(&r->head, memory_order_relaxed);
	t = atomic_load_explicit(&r->tail, memory_order_acquire);
	if (h - t >= RING_N) {
		atomic_fetch_add_explicit(&gpi.n.api_dropped, 1, memory_order_relaxed);
		return;
	}
	r->ev[h & (RING_N - 1)] = *ev;
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
	if (h + 1 - t == RING_N / 2)
		buffers_wake();
}

static size_t ring_drain(struct apiring *r, void (*fn)(const struct api_ev *, void *), void *arg)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	size_t n = h - t;

	for (; t != h; t++)
		fn(&r->ev[t & (RING_N - 1)], arg);
	atomic_store_explicit(&r->tail, t, memory_order_release);
	return n;
}

size_t apiring_drain(void (*fn)(const struct api_ev *ev, void *arg), void *arg)
{
	struct apiring **pp, *r;
	size_t n = 0;

	pthread_mutex_lock(&rings_lock);
	for (pp = &rings; (r = *pp);) {
		/* read dead first: a ring seen dead and then drained is final */
		int dead = atomic_load_explicit(&r->dead, memory_order_acquire);

		n += ring_drain(r, fn, arg);
		if (dead) {
			*pp = r->next;
			nrings--;
			free(r);
			continue;
		}
		pp = &r->next;
	}
	pthread_mutex_unlock(&rings_lock);
	return n;
}

void apiring_atfork_child(void)
{
	/* the forking thread is the child's only one: the lock may have been
	 * held by the parent's sender */
	pthread_mutex_init(&rings_lock, NULL);
}
