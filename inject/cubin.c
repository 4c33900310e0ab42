// SPDX-License-Identifier: MIT
/*
 * The cubins PC samples point into, so the daemon can disassemble them:
 * copied at MODULE_LOADED (CUPTI's copy is valid only in the callback),
 * keyed by cuptiGetCubinCrc (the crc PC records carry), at most one copy
 * per CRC and a bounded total per process. The sender sends each one
 * whole once per connection, in GPI_CUBIN chunks, in order; a dropped
 * batch or a new connection sends them all again (the daemon keeps one
 * per CRC and ignores repeats).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pcsamp.h"
#include "inject.h"

/* chunks per sender tick: a large module set must not crowd out the
 * activity records (64 chunks = 2 MiB per tick) */
#define CHUNKS_PER_TICK 64

struct cubin {
	struct cubin *next;
	uint64_t crc;
	size_t size, sent; /* sent: bytes of it sent on this connection */
	uint8_t bytes[];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct cubin *head, **tail = &head;
static size_t total, cap;
struct cubin_counters cubin_n;

void cubin_init(size_t max)
{
	cap = max;
}

void cubin_keep(const void *bytes, size_t size)
{
	struct cubin *c;
	uint64_t crc;

	if (!bytes || !size || size > UINT32_MAX)
		return;
	if (pcsamp_crc(bytes, size, &crc)) {
		pthread_mutex_lock(&mu);
		cubin_n.refused++;
		pthread_mutex_unlock(&mu);
		return;
	}
	pthread_mutex_lock(&mu);
	for (c = head; c; c = c->next) {
		if (c->crc == crc) {
			cubin_n.dup++;
			goto out;
		}
	}
	if (size > cap - total || !(c = malloc(sizeof(*c) + size))) {
		cubin_n.refused++;
		goto out;
	}
	c->next = NULL;
	c->crc = crc;
	c->size = size;
	c->sent = 0;
	memcpy(c->bytes, bytes, size);
	__atomic_store_n(tail, c, __ATOMIC_RELEASE); /* read by the sender unlocked */
	tail = &c->next;
	total += size;
	cubin_n.kept++;
	cubin_n.bytes = total;
out:
	pthread_mutex_unlock(&mu);
}

void cubin_stats(uint64_t *kept, uint64_t *refused, uint64_t *bytes)
{
	pthread_mutex_lock(&mu);
	*kept = cubin_n.kept;
	*refused = cubin_n.refused;
	*bytes = cubin_n.bytes;
	pthread_mutex_unlock(&mu);
}

void cubin_forget_sent(void)
{
	pthread_mutex_lock(&mu);
	for (struct cubin *c = head; c; c = c->next)
		c->sent = 0;
	pthread_mutex_unlock(&mu);
}

/* Sender thread. The list only grows, and only this thread moves sent: a
 * cubin is read without the lock once found. */
void cubin_emit(void)
{
	int budget = CHUNKS_PER_TICK;
	struct cubin *c;

	c = __atomic_load_n(&head, __ATOMIC_ACQUIRE);
	for (; c && budget; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE)) {
		while (c->sent < c->size && budget--) {
			size_t n = c->size - c->sent;
			struct gpi_cubin *r;

			if (n > GPI_CUBIN_CHUNK)
				n = GPI_CUBIN_CHUNK;
			r = emit(GPI_CUBIN, sizeof(*r) + n);
			if (!r)
				return;
			/* emit() may have dropped a batch and so reset sent:
			 * this record then restarts the cubin */
			r->crc = c->crc;
			r->size = (uint32_t)c->size;
			r->offset = (uint32_t)c->sent;
			r->len = (uint32_t)n;
			memcpy(r->data, c->bytes + c->sent, n);
			c->sent += n;
		}
	}
}
