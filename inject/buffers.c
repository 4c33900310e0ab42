// SPDX-License-Identifier: MIT
/*
 * Activity buffers: a fixed pool allocated once and zeroed by us (CUPTI's
 * ZEROED_OUT_ACTIVITY_BUFFER is set, so CUPTI does not zero them on the
 * application's thread). The request callback hands out a free buffer or
 * declines (NULL: CUPTI drops records and counts them); the complete
 * callback only queues the buffer for the sender thread, which walks it
 * and gives it back. Memory is bounded at POOL_N * BUF_SIZE.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inject.h"

#define POOL_N 16u
#define BUF_SIZE (256u * 1024u) /* about 1200 kernel records */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static uint8_t *free_bufs[POOL_N];
static unsigned nfree;
static struct {
	uint8_t *buf;
	size_t valid;
} full[POOL_N];
static unsigned full_head, nfull;
static int woken;

int buffers_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &ca);
	pthread_condattr_destroy(&ca);
	for (unsigned i = 0; i < POOL_N; i++) {
		uint8_t *b = aligned_alloc(8, BUF_SIZE);

		if (!b)
			return -ENOMEM;
		memset(b, 0, BUF_SIZE);
		free_bufs[nfree++] = b;
	}
	return 0;
}

void buffers_request_cb(uint8_t **buf, size_t *size, size_t *max_records)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&lock);
	if (nfree)
		b = free_bufs[--nfree];
	pthread_mutex_unlock(&lock);
	if (!b)
		atomic_fetch_add_explicit(&gpi.n.buffers_refused, 1, memory_order_relaxed);
	*buf = b;
	*size = b ? BUF_SIZE : 0;
	*max_records = 0; /* as many as fit */
}

void buffers_complete_cb(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
	if (!buf)
		return;
	pthread_mutex_lock(&lock);
	/* at most POOL_N buffers exist, so the queue cannot overflow */
	full[(full_head + nfull) % POOL_N].buf = buf;
	full[(full_head + nfull) % POOL_N].valid = valid < size ? valid : size;
	nfull++;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

uint8_t *buffers_take(size_t *valid)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&lock);
	if (nfull) {
		b = full[full_head].buf;
		*valid = full[full_head].valid;
		full_head = (full_head + 1) % POOL_N;
		nfull--;
	}
	pthread_mutex_unlock(&lock);
	return b;
}

void buffers_put(uint8_t *buf, size_t valid)
{
	memset(buf, 0, valid); /* records never extend past valid */
	pthread_mutex_lock(&lock);
	free_bufs[nfree++] = buf;
	pthread_mutex_unlock(&lock);
}

void buffers_wake(void)
{
	pthread_mutex_lock(&lock);
	woken = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

void buffers_wait(unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&lock);
	while (!nfull && !woken)
		if (pthread_cond_timedwait(&cond, &lock, &ts))
			break;
	woken = 0;
	pthread_mutex_unlock(&lock);
}

void buffers_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
}
