// SPDX-License-Identifier: MIT
/*
 * Program e: built -O2 -fomit-frame-pointer -pthread. Four threads, each
 * thread_worker -> thread_work -> thread_hash, CPU-bound; the main thread
 * only waits in pthread_join. Every sample's stack should reach the start
 * routine thread_worker (above it, libc's start_thread and clone3).
 *
 *   unwind_threads [seconds]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

#define NTHREADS 4

static volatile uint64_t sink;
static double end;

FRAME static uint64_t thread_hash(uint64_t h, unsigned char *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h = (h ^ buf[i]) * 1099511628211ull;
		buf[i] = (unsigned char)(h >> 21);
	}
	return h;
}

FRAME static uint64_t thread_work(uint64_t h)
{
	unsigned char buf[2048]; /* a real frame on each thread's stack */

	memset(buf, (int)(h & 0xff), sizeof(buf));
	for (int r = 0; r < 16; r++)
		h = thread_hash(h, buf, sizeof(buf));
	sink += h;
	return h;
}

FRAME static void *thread_worker(void *arg)
{
	uint64_t h = (uint64_t)(uintptr_t)arg;

	while (prog_now() < end)
		h = thread_work(h);
	sink += h;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];

	end = prog_now() + prog_seconds(argc, argv, 4.0);
	for (uintptr_t i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, thread_worker, (void *)(i + 1))) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	printf("%llu\n", (unsigned long long)(sink & 1));
	return 0;
}
