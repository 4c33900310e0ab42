// SPDX-License-Identifier: MIT
/*
 * The decoded-timeline cache (daemon/rpc/tlcache.c): hits and misses, the
 * byte budget with least-recently-used eviction, a timeline larger than the
 * budget used once, a capture deleted while a job still reads its timeline,
 * and many threads getting and releasing at once (under ASan in CI: any
 * use after free or leak fails the run).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

#include "rpc/tlcache.h"
#include "timeline/timeline_int.h"

/* A timeline of roughly kib KiB (its string table). */
static struct timeline *tl_of(unsigned kib)
{
	struct timeline *tl;
	char s[1100];

	if (timeline_new(&tl))
		abort();
	for (unsigned i = 0; i < kib; i++) {
		int n = snprintf(s, sizeof(s), "%u-", i);

		memset(s + n, 'x', 1000);
		if (strtab_intern(&tl->st, s, (size_t)n + 1000) < 0)
			abort();
	}
	return tl;
}

static void test_hits_and_eviction(void)
{
	struct tlcache *c;
	struct cache_stats st;
	struct timeline *a = tl_of(300), *b = tl_of(300), *d = tl_of(300);
	size_t one = timeline_mem_bytes(a);

	CHECK_EQ_INT(tlcache_new(2 * one + one / 2, &c), 0); /* room for two */
	CHECK(tlcache_get(c, 1) == NULL);
	CHECK(tlcache_put(c, 1, a) == a);
	tlcache_release(c, a);
	CHECK(tlcache_get(c, 1) == a);
	tlcache_release(c, a);
	CHECK(tlcache_put(c, 2, b) == b);
	tlcache_release(c, b);
	CHECK(tlcache_get(c, 1) == a); /* 1 is now the most recently used */
	tlcache_release(c, a);
	CHECK(tlcache_put(c, 3, d) == d); /* over budget: 2 goes */
	tlcache_release(c, d);
	CHECK(tlcache_get(c, 2) == NULL);
	CHECK(tlcache_get(c, 1) == a);
	tlcache_release(c, a);
	CHECK(tlcache_get(c, 3) == d);
	tlcache_release(c, d);
	tlcache_get_stats(c, &st);
	CHECK_EQ_U64(st.entries, 2);
	CHECK(st.bytes <= st.budget);
	CHECK_EQ_U64(st.evicted, 1);
	CHECK_EQ_U64(st.hits, 4);
	CHECK_EQ_U64(st.misses, 2);
	tlcache_free(c);
}

static void test_too_large_and_drop(void)
{
	struct tlcache *c;
	struct cache_stats st;
	struct timeline *big = tl_of(400), *small = tl_of(10);
	const struct timeline *x;

	CHECK_EQ_INT(tlcache_new(timeline_mem_bytes(small) * 3, &c), 0);
	CHECK(tlcache_put(c, 7, big) == big); /* used once, not kept */
	CHECK(tlcache_get(c, 7) == NULL);
	tlcache_release(c, big); /* freed here (ASan: no leak) */
	/* deleted while a job reads it: freed at the job's release */
	CHECK(tlcache_put(c, 8, small) == small);
	tlcache_drop(c, 8);
	CHECK(tlcache_get(c, 8) == NULL);
	CHECK_EQ_INT(timeline_nstrs(small), 11); /* still readable */
	tlcache_release(c, small);
	/* the same id decoded twice by racing jobs: the later one is kept */
	struct timeline *s1 = tl_of(5), *s2 = tl_of(5);
	CHECK(tlcache_put(c, 9, s1) == s1);
	CHECK(tlcache_put(c, 9, s2) == s2);
	x = tlcache_get(c, 9);
	CHECK(x == s2);
	tlcache_release(c, x);
	tlcache_release(c, s1);
	tlcache_release(c, s2);
	tlcache_get_stats(c, &st);
	CHECK_EQ_U64(st.entries, 1);
	CHECK_EQ_U64(st.too_large, 1);
	tlcache_drop(NULL, 1); /* no cache: no-op */
	tlcache_free(c);
}

static struct tlcache *shared;

static void *hammer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < 2000; i++) {
		uint64_t id = (seed = seed * 1103515245u + 12345u) >> 16 & 7;
		const struct timeline *t = tlcache_get(shared, id);

		if (!t)
			t = tlcache_put(shared, id, tl_of(1 + (unsigned)id));
		if (timeline_nstrs(t) != 2 + id) /* the right one, intact */
			abort();
		if ((seed >> 8) % 5 == 0)
			tlcache_drop(shared, id);
		tlcache_release(shared, t);
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[4];
	struct timeline *probe = tl_of(4);

	/* room for about four of the eight */
	CHECK_EQ_INT(tlcache_new(timeline_mem_bytes(probe) * 4, &shared), 0);
	timeline_free(probe);
	for (uintptr_t i = 0; i < 4; i++)
		CHECK_EQ_INT(pthread_create(&th[i], NULL, hammer, (void *)(i + 1)), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	struct cache_stats st;
	tlcache_get_stats(shared, &st);
	CHECK(st.bytes <= st.budget);
	CHECK(st.hits > 0 && st.misses > 0 && st.evicted > 0);
	tlcache_free(shared);
}

int main(void)
{
	RUN(test_hits_and_eviction);
	RUN(test_too_large_and_drop);
	RUN(test_threads);
	return test_summary();
}
