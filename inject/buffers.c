// SPDX-License-Identifier: MIT
/*
 * Activity buffers: a fixed pool allocated once and zeroed by us (CUPTI's
 * ZEROED_OUT_ACTIVITY_BUFFER is set, so CUPTI does not zero them on the
 * application's thread). The request callback hands out a free buffer or
 * declines (NULL: CUPTI drops records and counts them); the complete
 * callback only queues the buffer for the sender thread, which walks it
 * and gives it back. Memory is bounded at POOL_N * BUF_SIZE. The
 * sender sleeps on an eventfd that any thread may kick without a lock.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "inject.h"

/* CUPTI keeps a buffer open per thread that records (its default,
 * PER_THREAD_ACTIVITY_BUFFER): the pool must outnumber the launching
 * threads. calloc'd memory is mapped lazily, so the pool costs resident
 * memory only for the buffers CUPTI has filled at least once. */
#define POOL_N 64u
#define BUF_SIZE (128u * 1024u) /* about 600 kernel records */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* wakes the sender: written without a lock from any thread (an API ring
 * half full, a buffer completed, exit) */
static int kick_fd = -1;
/* one block, so that a buffer is known to be ours by its address: CUPTI's
 * buffer callbacks are process-global, and another tool's buffer must
 * never enter the pool */
static uint8_t *pool;
static uint8_t *free_bufs[POOL_N];
static unsigned nfree;
static struct {
	uint8_t *buf;
	size_t valid;
} full[POOL_N];
static unsigned full_head, nfull;
/* requests so far: coexist.c's sign that our registration still stands */
static _Atomic uint64_t requests;

int buffers_init(void)
{
	pool = calloc(POOL_N, BUF_SIZE); /* zeroed, aligned to 16 */
	if (!pool)
		return -ENOMEM;
	for (unsigned i = 0; i < POOL_N; i++)
		free_bufs[nfree++] = pool + (size_t)i * BUF_SIZE;
	return 0;
}

void buffers_request_cb(uint8_t **buf, size_t *size, size_t *max_records)
{
	uint8_t *b = NULL;

	atomic_fetch_add_explicit(&requests, 1, memory_order_relaxed);
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
	if (!buf || !pool || buf < pool || buf >= pool + (size_t)POOL_N * BUF_SIZE ||
	    (size_t)(buf - pool) % BUF_SIZE)
		return; /* not one of ours: another tool's, which it still owns */
	pthread_mutex_lock(&lock);
	/* at most POOL_N buffers exist, so the queue cannot overflow */
	full[(full_head + nfull) % POOL_N].buf = buf;
	full[(full_head + nfull) % POOL_N].valid = valid < size ? valid : size;
	nfull++;
	pthread_mutex_unlock(&lock);
	buffers_wake();
}

uint64_t buffers_requests(void)
{
	return atomic_load_explicit(&requests, memory_order_relaxed);
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

int buffers_wake_init(void)
{
	kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return kick_fd < 0 ? -errno : 0;
}

void buffers_wake(void)
{
	uint64_t one = 1;

	if (kick_fd >= 0 && write(kick_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is full, the sender is woken anyway */
	}
}

void buffers_wait(unsigned ms)
{
	struct pollfd p = {.fd = kick_fd, .events = POLLIN};
	uint64_t n;

	if (kick_fd < 0) {
		usleep(ms * 1000u);
		return;
	}
	if (poll(&p, 1, (int)ms) > 0 && read(kick_fd, &n, sizeof(n)) < 0) {
		/* EAGAIN: another read took it */
	}
}

void buffers_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	/* the eventfd is shared with the parent: the child's kicks must not
	 * wake the parent's sender */
	if (kick_fd >= 0)
		close(kick_fd);
	kick_fd = -1;
}
