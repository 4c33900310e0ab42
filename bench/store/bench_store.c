// SPDX-License-Identifier: MIT
/*
 * Store and capture throughput. Prints figures; asserts nothing.
 *
 *   bench_store [records]     (default 20,000,000 appends per case)
 */
#include "capture/capture.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VOCAB 10000
#define DEPTH 24

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static struct store *mk(size_t budget)
{
	struct store_config cfg = { .budget_bytes = budget };
	struct store *s = NULL;

	if (store_new(&cfg, &s) < 0) {
		fprintf(stderr, "store_new failed\n");
		exit(1);
	}
	return s;
}

/* Stack k of the vocabulary: DEPTH frames, the leaf varying with k. */
static void vocab_stack(uint64_t *ips, unsigned k)
{
	for (int i = 0; i < DEPTH; i++)
		ips[i] = 0x400000 + (uint64_t)k * 4096 + (uint64_t)i * 16;
	ips[DEPTH - 4] = 0xffffffff81000000ull + k % 97;
}

static void print_stats(const struct store *s)
{
	struct store_stats st;

	store_get_stats(s, &st);
	printf("    records %zu/%zu, evicted %" PRIu64 ", dropped %" PRIu64
	       ", strings %zu, stacks %zu, tables %zu/%zu bytes\n",
	       st.records, st.capacity, st.evicted, st.dropped, st.strings, st.stacks,
	       st.table_bytes, st.table_budget);
}

/* (a) Ids interned once; each record takes its references with
 * store_*_ref (what a collector caching per-pid comms does). */
static void bench_reuse(size_t n)
{
	struct store *s = mk(64u << 20);
	uint64_t ips[DEPTH];
	uint32_t comm, stack;
	double t;

	vocab_stack(ips, 1);
	comm = store_str_intern(s, "python3", 7);
	stack = store_stack_intern(s, ips, DEPTH - 4, 4);
	t = now_s();
	for (size_t i = 0; i < n; i++) {
		struct store_rec r = { .ts_ns = i, .pid = 1234, .tid = 1235, .uid = 1000,
				       .type = STORE_REC_CPU_SAMPLE, .aux32 = 1 };

		r.comm = store_str_ref(s, comm);
		r.stack = store_stack_ref(s, stack);
		store_append(s, &r);
	}
	t = now_s() - t;
	printf("(a) append, interned ids:        %6.1f M records/s (%zu in %.3f s)\n",
	       (double)n / t / 1e6, n, t);
	print_stats(s);
	store_str_unref(s, comm);
	store_stack_unref(s, stack);
	store_free(s);
}

/* (b) Each record interns its stack (from a 10,000-stack vocabulary) and
 * its comm: the hash + lookup path a CPU sampler takes per sample. */
static void bench_intern(size_t n)
{
	struct store *s = mk(64u << 20);
	uint64_t ips[DEPTH];
	double t;

	t = now_s();
	for (size_t i = 0; i < n; i++) {
		unsigned k = (unsigned)(next_rand() % VOCAB);
		struct store_rec r = { .ts_ns = i, .pid = 1000 + k % 50, .tid = 7, .uid = 1000,
				       .type = STORE_REC_CPU_SAMPLE, .aux32 = 1 };

		vocab_stack(ips, k);
		r.stack = store_stack_intern(s, ips, DEPTH - 4, 4);
		r.comm = store_str_intern(s, "python3", 7);
		store_append(s, &r);
	}
	t = now_s() - t;
	printf("(b) intern stack + append:       %6.1f M records/s (%zu in %.3f s)\n",
	       (double)n / t / 1e6, n, t);
	print_stats(s);
	store_free(s);
}

/* (c) Cut and serialise 1,000,000 records (a 160 MiB budget holds them). */
static void bench_capture(void)
{
	const size_t n = 1000000;
	struct store *s = mk(160u << 20);
	struct capture *c = NULL;
	uint64_t ips[DEPTH];
	void *buf = NULL;
	size_t len = 0;
	double t0, t1, t2;

	for (size_t i = 0; i < n; i++) {
		unsigned k = (unsigned)(next_rand() % VOCAB);
		char comm[16];
		int l = snprintf(comm, sizeof(comm), "proc%u", k % 50);
		struct store_rec r = { .ts_ns = 1000 + i, .pid = 1000 + k % 50, .tid = 7,
				       .uid = 1000, .type = STORE_REC_CPU_SAMPLE, .aux32 = 1 };

		vocab_stack(ips, k);
		r.stack = store_stack_intern(s, ips, DEPTH - 4, 4);
		r.comm = store_str_intern(s, comm, (size_t)l);
		store_append(s, &r);
	}
	t0 = now_s();
	if (capture_take(s, NULL, 0, UINT64_MAX, &c) < 0) {
		fprintf(stderr, "capture_take failed\n");
		exit(1);
	}
	t1 = now_s();
	if (capture_encode(c, &buf, &len) < 0) {
		fprintf(stderr, "capture_encode failed\n");
		exit(1);
	}
	t2 = now_s();
	printf("(c) capture_take %zu records:  %7.1f ms (%u strings, %u stacks)\n", c->nrecs,
	       (t1 - t0) * 1e3, c->nstrs, c->nstacks);
	printf("    capture_encode:               %7.1f ms (%.1f MiB, %.0f MiB/s)\n",
	       (t2 - t1) * 1e3, (double)len / (1 << 20), (double)len / (1 << 20) / (t2 - t1));
	free(buf);
	capture_free(c);
	store_free(s);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 20000000;

	bench_reuse(n);
	bench_intern(n / 4);
	bench_capture();
	return 0;
}
