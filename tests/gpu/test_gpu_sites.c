// SPDX-License-Identifier: MIT
/*
 * The GPU launch collector's per-call-site stack cache (gpu_sites.c) against
 * a real store: a remembered stack comes back with a reference of its own,
 * a site is keyed by all of (pid, tid, handle, call site), the table stays
 * bounded (older sites replaced, their references given back), and
 * dropping a process or clearing gives every reference back.
 */
#include <stdint.h>
#include <string.h>

#include "collect/gpu_sites.h"
#include "store/store.h"
#include "test.h"

static struct store *mk(void)
{
	struct store_config sc = {.budget_bytes = 64u << 20};
	struct store *s = NULL;

	CHECK_EQ_INT(store_new(&sc, &s), 0);
	return s;
}

static size_t live_stacks(struct store *s)
{
	struct store_stats st;

	store_get_stats(s, &st);
	return st.stacks;
}

static uint32_t stack_of(struct store *s, uint64_t leaf)
{
	uint64_t ips[3] = {leaf, 0x401000, 0x400100};

	return store_stack_intern(s, ips, 3, 0);
}

static void remembers_per_site(void)
{
	struct store *s = mk();
	struct gpu_sites t = {0};
	uint32_t a = stack_of(s, 0x1111), b = stack_of(s, 0x2222), got;
	uint16_t nu, nk;

	gpu_sites_put(&t, s, 10, 11, 0xaa, 0x5000, a);
	gpu_sites_put(&t, s, 10, 12, 0xaa, 0x5000, b); /* another thread */
	got = gpu_sites_get(&t, s, 10, 11, 0xaa, 0x5000);
	CHECK_EQ_U64(got, a);
	store_stack_unref(s, got);
	got = gpu_sites_get(&t, s, 10, 12, 0xaa, 0x5000);
	CHECK_EQ_U64(got, b);
	store_stack_unref(s, got);
	/* Any part of the key differing: nothing. */
	CHECK_EQ_U64(gpu_sites_get(&t, s, 10, 11, 0xab, 0x5000), 0);
	CHECK_EQ_U64(gpu_sites_get(&t, s, 10, 11, 0xaa, 0x5008), 0);
	CHECK_EQ_U64(gpu_sites_get(&t, s, 9, 11, 0xaa, 0x5000), 0);
	CHECK_EQ_U64(t.reused, 2);
	CHECK_EQ_U64(t.misses, 3);
	/* A newer stack at the same site replaces the old one. */
	gpu_sites_put(&t, s, 10, 11, 0xaa, 0x5000, b);
	got = gpu_sites_get(&t, s, 10, 11, 0xaa, 0x5000);
	CHECK_EQ_U64(got, b);
	store_stack_unref(s, got);
	/* The cache's references keep the stacks alive past the caller's. */
	store_stack_unref(s, a);
	store_stack_unref(s, b);
	CHECK_EQ_U64(live_stacks(s), 1); /* b, held by both sites */
	CHECK(store_stack(s, b, &nu, &nk) && nu == 3);
	gpu_sites_drop_pid(&t, s, 10);
	CHECK_EQ_U64(live_stacks(s), 0);
	CHECK_EQ_U64(gpu_sites_get(&t, s, 10, 12, 0xaa, 0x5000), 0);
	gpu_sites_clear(&t, s);
	store_free(s);
}

static void bounded(void)
{
	struct store *s = mk();
	struct gpu_sites t = {0};
	unsigned n = 4 * GPU_SITES_SLOTS, hits = 0;
	uint32_t last;

	for (unsigned i = 0; i < n; i++) {
		uint32_t id = stack_of(s, 0x10000 + i);

		CHECK(id);
		gpu_sites_put(&t, s, 1 + i % 3, 100 + i, 0xbb, 0x6000 + 8 * i, id);
		store_stack_unref(s, id);
	}
	CHECK(live_stacks(s) <= GPU_SITES_SLOTS);
	/* The most recent sites are the ones kept: the last put is there. */
	for (unsigned i = n - 64; i < n; i++) {
		uint32_t id = gpu_sites_get(&t, s, 1 + i % 3, 100 + i, 0xbb, 0x6000 + 8 * i);

		hits += id != 0;
		if (id)
			store_stack_unref(s, id);
	}
	CHECK(hits >= 60); /* 4-way sets: a recent one can lose to a busier set */
	last = gpu_sites_get(&t, s, 1 + (n - 1) % 3, 100 + n - 1, 0xbb, 0x6000 + 8 * (n - 1));
	CHECK(last);
	gpu_sites_clear(&t, s);
	CHECK(t.slot == NULL);
	/* Only the reference the get above handed us is left. */
	CHECK_EQ_U64(live_stacks(s), last ? 1 : 0);
	if (last)
		store_stack_unref(s, last);
	CHECK_EQ_U64(live_stacks(s), 0);
	store_free(s);
}

int main(void)
{
	RUN(remembers_per_site);
	RUN(bounded);
	return test_summary();
}
