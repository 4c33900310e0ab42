// SPDX-License-Identifier: MIT
/* The ring store: interning, refcounts, eviction, reclamation, budget. */
#include "store/store.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>

static struct store *mk(size_t budget)
{
	struct store_config cfg = { .budget_bytes = budget };
	struct store *s = NULL;

	if (store_new(&cfg, &s) < 0)
		return NULL;
	return s;
}

static struct store_rec rec(uint64_t ts, uint32_t comm, uint32_t stack, uint32_t name)
{
	return (struct store_rec){ .ts_ns = ts, .pid = 1, .tid = 1, .comm = comm, .stack = stack,
				   .name = name, .type = STORE_REC_CPU_SAMPLE };
}

static void test_new_limits(void)
{
	struct store_config cfg = { .budget_bytes = 1024 };
	struct store *s = NULL;
	struct store_stats st;

	CHECK_EQ_INT(store_new(&cfg, &s), -EINVAL);
	CHECK(s == NULL);
	store_free(NULL);
	s = mk(1 << 20);
	CHECK(s != NULL);
	store_get_stats(s, &st);
	CHECK_EQ_U64(st.capacity, (1 << 19) / 64);
	CHECK_EQ_U64(st.budget_bytes, 1 << 20);
	CHECK_EQ_U64(st.table_budget, 1 << 19);
	CHECK(st.table_bytes <= st.table_budget);
	CHECK_EQ_U64(st.oldest_ts_ns, 0);
	store_free(s);
}

static void test_str_intern(void)
{
	struct store *s = mk(1 << 20);
	struct store_stats st;
	uint32_t a = store_str_intern(s, "python3", 7);
	uint32_t b = store_str_intern(s, "python3xyz", 7); /* same 7 bytes */
	uint32_t c = store_str_intern(s, "bash", 4);
	size_t len;

	CHECK(a != 0);
	CHECK_EQ_INT(a, b);
	CHECK(c != a);
	CHECK_STREQ(store_str(s, a, &len), "python3");
	CHECK_EQ_INT(len, 7);
	store_get_stats(s, &st);
	CHECK_EQ_INT(st.strings, 2);
	/* Two references on a: one unref keeps it, the second frees it. */
	store_str_unref(s, a);
	CHECK_STREQ(store_str(s, a, NULL), "python3");
	store_str_unref(s, b);
	CHECK(store_str(s, a, &len) == NULL);
	CHECK_EQ_INT(len, 0);
	/* The freed id is reused. */
	CHECK_EQ_INT(store_str_intern(s, "other", 5), a);
	/* Unknown ids and kinds are harmless. */
	store_str_unref(s, 0);
	store_str_unref(s, 999999);
	CHECK(store_str(s, 999999, NULL) == NULL);
	CHECK(store_stack(s, c, NULL, NULL) == NULL);
	/* Empty and over-long strings. */
	CHECK(store_str_intern(s, "", 0) != 0);
	{
		static char big[5000];
		uint32_t id;

		memset(big, 'x', sizeof(big));
		id = store_str_intern(s, big, sizeof(big));
		CHECK(id != 0);
		store_str(s, id, &len);
		CHECK_EQ_INT(len, 4095);
	}
	store_free(s);
}

static void test_stack_intern(void)
{
	struct store *s = mk(1 << 20);
	uint64_t ips[4] = { 0x1000, 0x2000, 0xffffffff81000000ull, 0xffffffff82000000ull };
	uint32_t a = store_stack_intern(s, ips, 2, 2);
	uint32_t b = store_stack_intern(s, ips, 2, 2);
	uint32_t c = store_stack_intern(s, ips, 3, 1); /* same ips, different split */
	uint32_t d = store_stack_intern(s, ips, 4, 0);
	uint32_t str = store_str_intern(s, "x", 1);
	const uint64_t *p;
	uint16_t nu, nk;
	struct store_stats st;

	CHECK(a != 0);
	CHECK_EQ_INT(a, b);
	CHECK(c != a);
	CHECK(d != a && d != c);
	p = store_stack(s, c, &nu, &nk);
	CHECK(p != NULL);
	CHECK_EQ_INT(nu, 3);
	CHECK_EQ_INT(nk, 1);
	CHECK_EQ_U64(p[3], ips[3]);
	store_get_stats(s, &st);
	CHECK_EQ_INT(st.stacks, 3);
	CHECK_EQ_INT(st.strings, 1);
	/* A string id is not a stack id, even though the id space is shared. */
	CHECK(store_stack(s, str, NULL, NULL) == NULL);
	CHECK(store_str(s, a, NULL) == NULL);
	/* Over-deep stacks are refused. */
	CHECK_EQ_INT(store_stack_intern(s, ips, STORE_MAX_FRAMES + 1, 0), 0);
	store_free(s);
}

static void test_append_evict_order(void)
{
	struct store *s = mk(64 * 1024);
	struct store_stats st;
	size_t cap;

	store_get_stats(s, &st);
	cap = st.capacity;
	CHECK_EQ_U64(cap, 512);
	for (uint64_t i = 1; i <= cap + 100; i++) {
		struct store_rec r = rec(i * 10, 0, 0, 0);

		r.aux[0] = i;
		store_append(s, &r);
	}
	store_get_stats(s, &st);
	CHECK_EQ_U64(st.appended, cap + 100);
	CHECK_EQ_U64(st.evicted, 100);
	CHECK_EQ_U64(st.records, cap);
	CHECK_EQ_INT(store_count(s), cap);
	CHECK_EQ_U64(store_at(s, 0)->aux[0], 101);
	CHECK_EQ_U64(store_at(s, cap - 1)->aux[0], cap + 100);
	CHECK(store_at(s, cap) == NULL);
	CHECK_EQ_U64(st.oldest_ts_ns, 1010);
	CHECK_EQ_U64(st.newest_ts_ns, (cap + 100) * 10);
	/* Eviction history: nothing newer than the newest evicted record was
	 * lost; the estimate for an older bound covers the real count. */
	CHECK_EQ_U64(store_evicted_since(s, 1001), 0);
	CHECK(store_evicted_since(s, 500) >= 51);
	CHECK(store_evicted_since(s, 500) <= 51 + cap / 32);
	CHECK_EQ_U64(store_evicted_since(s, 0), 100);
	store_free(s);
}

static void test_refs_follow_records(void)
{
	struct store *s = mk(64 * 1024);
	uint64_t ips[2] = { 1, 2 };
	uint32_t comm = store_str_intern(s, "worker", 6);
	uint32_t stack = store_stack_intern(s, ips, 2, 0);
	struct store_rec r = rec(1, comm, stack, 0);
	struct store_stats st;

	/* One record takes the caller's references; the second needs its
	 * own, as the contract says. */
	store_append(s, &r);
	r.comm = store_str_intern(s, "worker", 6);
	r.stack = store_stack_intern(s, ips, 2, 0);
	CHECK_EQ_INT(r.comm, comm);
	store_append(s, &r);
	/* Push both out with id-less records: the entries must go. */
	for (size_t i = 0; i < 512; i++) {
		struct store_rec z = rec(2 + i, 0, 0, 0);

		store_append(s, &z);
	}
	store_get_stats(s, &st);
	CHECK_EQ_INT(st.strings, 0);
	CHECK_EQ_INT(st.stacks, 0);
	CHECK(store_str(s, comm, NULL) == NULL);
	store_free(s);
}

/* A launch's cgroup string is one more reference the record holds; on
 * other record types the same bytes are dur_ns and hold nothing. */
static void test_launch_cgroup_ref(void)
{
	struct store *s = mk(64 * 1024);
	uint32_t cg = store_str_intern(s, "/system.slice/a.service", 23);
	struct store_rec r = rec(1, 0, 0, 0);
	struct store_stats st;

	r.type = STORE_REC_GPU_LAUNCH;
	r.cgroup = cg;
	store_append(s, &r);
	CHECK_EQ_INT(store_rec_cgroup(store_at(s, 0)), cg);
	r = rec(2, 0, 0, 0);
	r.type = STORE_REC_GPU_INTERVAL;
	r.dur_ns = cg; /* a duration that happens to equal the id */
	store_append(s, &r);
	CHECK_EQ_INT(store_rec_cgroup(store_at(s, 1)), 0);
	CHECK_EQ_U64(store_at(s, 1)->dur_ns, cg);
	/* an unknown id is dropped, as for comm and name */
	r = rec(3, 0, 0, 0);
	r.type = STORE_REC_GPU_LAUNCH;
	r.cgroup = 4242;
	store_append(s, &r);
	CHECK_EQ_INT(store_at(s, 2)->cgroup, 0);
	for (size_t i = 0; i < 512; i++) {
		struct store_rec z = rec(4 + i, 0, 0, 0);

		store_append(s, &z);
	}
	store_get_stats(s, &st);
	CHECK_EQ_INT(st.strings, 0); /* the launch's reference went with it */
	store_free(s);
}

/* The detail string of a CUPTI interval or a mark (store_rec_detail()) is
 * a reference the record holds; other records' aux[1] holds nothing. */
static void test_detail_ref(void)
{
	struct store *s = mk(64 * 1024);
	uint32_t det = store_str_intern(s, "grid [1,1,1] block [32,1,1]", 27);
	uint32_t dom = store_str_intern(s, "NCCL", 4);
	struct store_rec r = rec(1, 0, 0, 0);
	struct store_stats st;

	r.type = STORE_REC_GPU_INTERVAL;
	r.cpu = GPU_ENGINE_CUPTI << 8 | GPU_CUPTI_KERNEL;
	r.aux[1] = (uint64_t)det << 32 | 77;
	store_append(s, &r);
	CHECK_EQ_INT(store_rec_detail(store_at(s, 0)), det);
	r = rec(2, 0, 0, 0);
	r.type = STORE_REC_MARK;
	r.aux[1] = (uint64_t)dom << 32;
	store_append(s, &r);
	CHECK_EQ_INT(store_rec_detail(store_at(s, 1)), dom);
	/* an xe interval's aux[1] is its own business */
	r = rec(3, 0, 0, 0);
	r.type = STORE_REC_GPU_INTERVAL;
	r.cpu = GPU_ENGINE_XE << 8;
	r.aux[1] = (uint64_t)det << 32;
	store_append(s, &r);
	CHECK_EQ_INT(store_rec_detail(store_at(s, 2)), 0);
	CHECK_EQ_U64(store_at(s, 2)->aux[1], (uint64_t)det << 32);
	/* an unknown id is dropped, the correlation in the low half kept */
	r = rec(4, 0, 0, 0);
	r.type = STORE_REC_GPU_INTERVAL;
	r.cpu = GPU_ENGINE_CUPTI << 8 | GPU_CUPTI_MEMCPY;
	r.aux[1] = (uint64_t)4242 << 32 | 9;
	store_append(s, &r);
	CHECK_EQ_U64(store_at(s, 3)->aux[1], 9);
	store_get_stats(s, &st);
	CHECK_EQ_INT(st.strings, 2);
	for (size_t i = 0; i < 512; i++) {
		struct store_rec z = rec(5 + i, 0, 0, 0);

		store_append(s, &z);
	}
	store_get_stats(s, &st);
	CHECK_EQ_INT(st.strings, 0); /* both references went with their records */
	store_free(s);
}

static void test_invalid_ids(void)
{
	struct store *s = mk(64 * 1024);
	uint32_t str = store_str_intern(s, "a", 1);
	struct store_rec r = rec(1, 12345, str /* a string id as a stack */, 0xffffffff);

	CHECK_EQ_INT(store_append(s, &r), 0);
	CHECK_EQ_INT(store_at(s, 0)->comm, 0);
	CHECK_EQ_INT(store_at(s, 0)->stack, 0);
	CHECK_EQ_INT(store_at(s, 0)->name, 0);
	CHECK_EQ_INT(store_append(s, NULL), -EINVAL);
	store_str_unref(s, str);
	store_free(s);
}

/* The "memory stays flat" property: days of ever-new strings and stacks
 * under a small budget never take the tables over budget, and the live
 * entry count stays bounded by what the ring can reference. */
static void test_flat_memory(void)
{
	struct store *s = mk(256 * 1024);
	struct store_stats st;
	size_t max_strings = 0;
	const size_t n = 400000;
	char buf[64];

	for (size_t i = 0; i < n; i++) {
		uint64_t ips[8];
		struct store_rec r;
		int len = snprintf(buf, sizeof(buf), "kernel_%zu_%s", i, i % 3 ? "fwd" : "bwd");

		for (int k = 0; k < 8; k++)
			ips[k] = i * 8 + (uint64_t)k;
		r = rec(i, store_str_intern(s, buf, (size_t)len), store_stack_intern(s, ips, 6, 2),
			0);
		CHECK(r.comm != 0 && r.stack != 0);
		store_append(s, &r);
		store_get_stats(s, &st);
		if (st.table_bytes > st.table_budget) {
			TEST_FAIL_AT("table_bytes %zu > budget %zu at %zu", st.table_bytes,
				     st.table_budget, i);
			break;
		}
		if (st.strings > max_strings)
			max_strings = st.strings;
	}
	store_get_stats(s, &st);
	CHECK(max_strings <= st.capacity);
	CHECK_EQ_U64(st.dropped, 0);
	CHECK(st.evicted > n / 2);
	/* Ids stay small: reused, not ever-increasing. */
	CHECK(store_at(s, st.records - 1)->comm < 2 * st.capacity + 1024);
	store_free(s);
}

static void test_drop_when_full(void)
{
	struct store *s = mk(64 * 1024);
	struct store_stats st;
	static char big[4000];
	uint32_t ids[64];
	size_t n = 0;

	/* The caller keeps every reference, so no record can be evicted to
	 * make room: interning must eventually fail and count a drop. */
	memset(big, 'a', sizeof(big));
	for (n = 0; n < 64; n++) {
		big[0] = (char)('A' + n);
		ids[n] = store_str_intern(s, big, sizeof(big));
		if (!ids[n])
			break;
	}
	CHECK(n > 0 && n < 64);
	store_get_stats(s, &st);
	CHECK_EQ_U64(st.dropped, 1);
	CHECK(st.table_bytes <= st.table_budget);
	/* Existing strings still intern (no new bytes needed). */
	CHECK_EQ_INT(store_str_intern(s, big, sizeof(big)), 0); /* big[0] changed: new */
	big[0] = 'A';
	CHECK_EQ_INT(store_str_intern(s, big, sizeof(big)), ids[0]);
	store_str_unref(s, ids[0]);
	for (size_t i = 0; i < n; i++)
		store_str_unref(s, ids[i]);
	store_get_stats(s, &st);
	CHECK_EQ_INT(st.strings, 0);
	CHECK(store_str_intern(s, big, sizeof(big)) != 0);
	store_free(s);
}

static void test_evict_to_fit(void)
{
	struct store *s = mk(64 * 1024);
	static char big[4000];
	struct store_stats st;

	/* Records holding big strings are evicted, oldest first, to make
	 * room for new ones: no drops, the newest record survives. */
	memset(big, 'b', sizeof(big));
	for (int i = 0; i < 100; i++) {
		struct store_rec r;

		snprintf(big, 16, "%015d", i);
		r = rec((uint64_t)i, 0, 0, store_str_intern(s, big, sizeof(big)));
		CHECK(r.name != 0);
		store_append(s, &r);
	}
	store_get_stats(s, &st);
	CHECK_EQ_U64(st.dropped, 0);
	CHECK(st.evicted > 0);
	CHECK(st.records < 100);
	CHECK_EQ_U64(st.newest_ts_ns, 99);
	CHECK_EQ_U64(st.oldest_ts_ns, 100 - st.records);
	CHECK(strncmp(store_str(s, store_at(s, st.records - 1)->name, NULL), "000000000000099",
		      15) == 0);
	store_free(s);
}

int main(void)
{
	RUN(test_new_limits);
	RUN(test_str_intern);
	RUN(test_stack_intern);
	RUN(test_append_evict_order);
	RUN(test_refs_follow_records);
	RUN(test_launch_cgroup_ref);
	RUN(test_detail_ref);
	RUN(test_invalid_ids);
	RUN(test_flat_memory);
	RUN(test_drop_when_full);
	RUN(test_evict_to_fit);
	return test_summary();
}
