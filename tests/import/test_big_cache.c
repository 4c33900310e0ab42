// SPDX-License-Identifier: MIT
/*
 * Recycled big scratch blocks (bigalloc_malloc / bigalloc_free in
 * daemon/alloc/bigalloc.c): a freed block of more than 32 MiB is reused
 * by a later request of about its size, never by a much smaller one; the
 * bytes kept stay within the cap; blocks past their age and everything on
 * a zero cap are freed; small blocks are freed at once; many threads at
 * once. Under ASan in CI a kept block is poisoned, so any use after
 * bigalloc_free() (or a leak of a kept block at exit) fails the run.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "test.h"

#include "alloc/bigalloc.h"
#include "timeline/timeline.h"
#include "timeline/timeline_int.h" /* bigalloc_popper */

#include <sys/mman.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static struct bigalloc_stats stats(void)
{
	struct bigalloc_stats s;

	bigalloc_stats(&s);
	return s;
}

static void test_reuse_same_size(void)
{
	struct bigalloc_stats s0, s1;
	uint8_t *a, *b;

	bigalloc_cache_config(256 * MiB, 60ull * 1000000000);
	a = bigalloc_malloc(40 * MiB);
	CHECK(a != NULL);
	memset(a, 0x5a, 40 * MiB);
	bigalloc_free(a);
	s0 = stats();
	CHECK(s0.cached >= 40 * MiB);
	b = bigalloc_malloc(40 * MiB - 12345); /* about the same size */
	s1 = stats();
	CHECK(b == a);
	CHECK_EQ_U64(s1.reused, s0.reused + 1);
	CHECK_EQ_U64(s1.cached, 0);
	b[0] = 1; /* usable again (ASan: unpoisoned) */
	b[40 * MiB - 12346] = 2;
	bigalloc_free(b);
	bigalloc_trim(true);
	CHECK_EQ_U64(stats().cached, 0);
}

static void test_no_reuse_for_smaller_or_larger(void)
{
	struct bigalloc_stats s0;
	void *a, *b, *c;

	bigalloc_cache_config(256 * MiB, 60ull * 1000000000);
	a = bigalloc_malloc(100 * MiB);
	bigalloc_free(a);
	s0 = stats();
	b = bigalloc_malloc(40 * MiB); /* under half: a fresh block */
	c = bigalloc_malloc(120 * MiB); /* larger: fresh */
	CHECK(b != a && c != a);
	CHECK_EQ_U64(stats().reused, s0.reused);
	CHECK_EQ_U64(stats().fresh, s0.fresh + 2);
	CHECK(stats().cached >= 100 * MiB);
	bigalloc_free(b);
	bigalloc_free(c);
	bigalloc_trim(true);
}

static void test_cap_and_eviction(void)
{
	void *a, *b, *c;
	struct bigalloc_stats s;

	bigalloc_cache_config(100 * MiB, 60ull * 1000000000);
	a = bigalloc_malloc(60 * MiB);
	b = bigalloc_malloc(60 * MiB);
	c = bigalloc_malloc(200 * MiB);
	bigalloc_free(a);
	bigalloc_free(b); /* a goes: both do not fit */
	s = stats();
	CHECK(s.cached >= 60 * MiB && s.cached <= 100 * MiB);
	CHECK_EQ_U64(s.cap, 100 * MiB);
	bigalloc_free(c); /* over the cap: freed at once */
	CHECK(stats().cached <= 100 * MiB);
	CHECK(bigalloc_malloc(60 * MiB) == b); /* the newest was kept */
	bigalloc_free(b);
	bigalloc_cache_config(0, 60ull * 1000000000); /* 0: keeps none, frees all */
	CHECK_EQ_U64(stats().cached, 0);
	a = bigalloc_malloc(60 * MiB);
	bigalloc_free(a);
	CHECK_EQ_U64(stats().cached, 0);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_age(void)
{
	void *a;
	struct timespec ts = { 0, 300 * 1000000 };
	double t0;
	size_t freed;

	bigalloc_cache_config(256 * MiB, 200ull * 1000000); /* 200 ms */
	a = bigalloc_malloc(40 * MiB);
	bigalloc_free(a);
	t0 = mono_s();
	CHECK(stats().cached >= 40 * MiB);
	freed = bigalloc_trim(false);
	if (mono_s() - t0 < 0.15) /* a stalled machine may take longer */
		CHECK_EQ_U64(freed, 0); /* not old yet */
	nanosleep(&ts, NULL);
	freed += bigalloc_trim(false);
	CHECK(freed >= 40 * MiB);
	CHECK_EQ_U64(stats().cached, 0);
	/* an old block is also dropped by the next allocation, not reused */
	a = bigalloc_malloc(40 * MiB);
	bigalloc_free(a);
	nanosleep(&ts, NULL);
	{
		uint64_t reused = stats().reused;
		void *b = bigalloc_malloc(40 * MiB);

		CHECK_EQ_U64(stats().reused, reused);
		CHECK_EQ_U64(stats().cached, 0);
		bigalloc_free(b);
	}
	bigalloc_trim(true);
}

static void test_small_blocks_not_kept(void)
{
	void *a = bigalloc_malloc(8 * MiB), *b = bigalloc_malloc(1000), *c = bigalloc_calloc(5, MiB);

	bigalloc_cache_config(256 * MiB, 60ull * 1000000000);
	bigalloc_free(a);
	bigalloc_free(b);
	bigalloc_free(c);
	bigalloc_free(NULL);
	CHECK_EQ_U64(stats().cached, 0);
}

static void test_calloc_zeroes_reused(void)
{
	uint8_t *a, *b;
	size_t i, nz = 0;

	bigalloc_cache_config(256 * MiB, 60ull * 1000000000);
	a = bigalloc_malloc(48 * MiB);
	memset(a, 0xff, 48 * MiB);
	bigalloc_free(a);
	b = bigalloc_calloc(48, MiB);
	CHECK(b == a);
	for (i = 0; i < 48 * MiB; i += 4093)
		nz += b[i] != 0;
	CHECK_EQ_U64(nz, 0);
	bigalloc_free(b);
	bigalloc_trim(true);
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < 40; i++) {
		size_t n = (33 + (seed = seed * 1103515245 + 12345) % 40) * MiB;
		uint8_t *p = bigalloc_malloc(n);

		if (!p)
			abort();
		p[0] = p[n - 1] = (uint8_t)i; /* the whole block is ours */
		if (p[0] != (uint8_t)i)
			abort();
		bigalloc_free(p);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[4];
	uint64_t reused = stats().reused;

	bigalloc_cache_config(160 * MiB, 60ull * 1000000000);
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(stats().cached <= 160 * MiB);
	CHECK(stats().reused > reused);
	bigalloc_trim(true);
	CHECK_EQ_U64(stats().cached, 0);
}

/* Resident 4 KiB pages of [p, p + len). */
static size_t resident(const char *p, size_t len)
{
	size_t n = (len + 4095) / 4096, r = 0;
	unsigned char *v = malloc(n);

	CHECK_EQ_INT(mincore((void *)p, len, v), 0);
	for (size_t i = 0; i < n; i++)
		r += v[i] & 1;
	free(v);
	return r;
}

/* bigalloc_popper populates the room it is given and nothing else, never
 * writes a byte, and stops at once when asked, while the owner writes
 * the array from the front. */
static void test_popper(void)
{
	size_t len = 64 * MiB, head = 8 * MiB;
	/* fresh memory (a recycled block may be resident already), on a
	 * 2 MiB boundary as the arrays it serves */
	char *m = mmap(NULL, len + 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	char *p = (char *)(((uintptr_t)m + 2 * MiB - 1) & ~(uintptr_t)(2 * MiB - 1));
	struct bigalloc_popper pop = { 0 };

	CHECK(m != MAP_FAILED);
	memset(p, 0x5a, head);
	/* the first half only, as an estimate's room past what is used */
	bigalloc_popper_start(&pop, false, p, head, len / 2, NULL, 0, 0);
	CHECK_EQ_INT(pop.running, bigalloc_two_cpus()); /* one CPU: no thread, by design */
	for (int i = 0; pop.running && i < 20000 &&
			resident(p + head, len / 2 - head) < (len / 2 - head) / 4096;
	     i++)
		usleep(1000);
	if (pop.running) /* an ordinary thread here: it gets there */
		CHECK_EQ_U64(resident(p + head, len / 2 - head), (len / 2 - head) / 4096);
	bigalloc_popper_stop(&pop);
	CHECK(!pop.running);
	for (size_t i = 0; i < head; i++)
		if (p[i] != 0x5a) {
			CHECK(p[i] == 0x5a);
			break;
		}
	/* nothing past its range (the second half was never touched; read
	 * before any read of it maps the zero page) */
	CHECK_EQ_U64(resident(p + len / 2, len / 2), 0);
	for (size_t i = head; i < len / 2; i += 4096)
		if (p[i]) {
			CHECK(p[i] == 0);
			break;
		}
	/* stopping twice, and a range smaller than a huge page: no thread */
	bigalloc_popper_stop(&pop);
	bigalloc_popper_start(&pop, false, p, 0, MiB, NULL, 0, 0);
	CHECK(!pop.running);
	munmap(m, len + 2 * MiB);
}

int main(void)
{
	RUN(test_reuse_same_size);
	RUN(test_no_reuse_for_smaller_or_larger);
	RUN(test_cap_and_eviction);
	RUN(test_age);
	RUN(test_small_blocks_not_kept);
	RUN(test_calloc_zeroes_reused);
	RUN(test_threads);
	RUN(test_popper);
	bigalloc_trim(true);
	return test_summary();
}
