/* SPDX-License-Identifier: MIT */
/* Fixtures shared by the capture tests. */
#ifndef GPUPROF_TEST_CAPTURE_UTIL_H
#define GPUPROF_TEST_CAPTURE_UTIL_H

#include "capture/capture.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * n records under a 64 KiB budget (512 slots): ts = i * 10, pid = 100 + i % 10,
 * uid = 1000 + i % 2, comm "comm<pid % 3>", stack {0x1000 + i % 5, 0x2000 |
 * 0xffffffff81000000}; the first ten also carry the name "early".
 */
static inline struct store *fill_store(size_t n)
{
	struct store_config cfg = { .budget_bytes = 64 * 1024 };
	struct store *s = NULL;

	if (store_new(&cfg, &s) < 0)
		abort();
	for (size_t i = 0; i < n; i++) {
		uint64_t ips[3] = { 0x1000 + i % 5, 0x2000, 0xffffffff81000000ull };
		char comm[8];
		struct store_rec r = { .ts_ns = i * 10, .pid = 100 + (uint32_t)(i % 10),
				       .tid = 7, .uid = 1000 + (uint32_t)(i % 2), .cpu = 1,
				       .type = STORE_REC_CPU_SAMPLE, .aux32 = 1 };

		snprintf(comm, sizeof(comm), "comm%u", r.pid % 3);
		r.comm = store_str_intern(s, comm, 5);
		r.stack = store_stack_intern(s, ips, 2, 1);
		if (i < 10)
			r.name = store_str_intern(s, "early", 5);
		store_append(s, &r);
	}
	return s;
}

/* A capture with every field set, odd values included. */
static inline struct capture *sample_capture(void)
{
	static const char blob[] = "python3cudaLaunchKernel";
	struct capture *c = NULL;

	if (capture_new(&c) < 0)
		abort();
	c->id = 42;
	c->owner_uid = 1000;
	c->kind = CAPTURE_IMPORT;
	c->state = CAPTURE_READY;
	snprintf(c->name, sizeof(c->name), "train step 7");
	c->created_realtime_ns = 1700000000123456789ull;
	c->t0_ns = 1000;
	c->t1_ns = UINT64_MAX - 1;
	c->mono_to_realtime_ns = -123456789;
	c->pids[0] = 5;
	c->pids[1] = -1;
	c->pids[2] = 0x7fffffff;
	c->npids = 3;
	c->uid_filter = true;
	c->filter_uid = 4294967294u;
	c->store_evicted_in_window = 17;
	c->warnings = 3;

	c->str_blob_len = sizeof(blob) - 1;
	c->str_blob = malloc(c->str_blob_len);
	memcpy(c->str_blob, blob, c->str_blob_len);
	c->nstrs = 3;
	c->strs = malloc(3 * sizeof(*c->strs));
	c->strs[0] = (struct capture_str){ 0, 7 };
	c->strs[1] = (struct capture_str){ 7, 16 };
	c->strs[2] = (struct capture_str){ 23, 0 }; /* empty string */

	c->nips = 4;
	c->ips = malloc(4 * sizeof(*c->ips));
	c->ips[0] = 0x401000;
	c->ips[1] = 0x402000;
	c->ips[2] = 0xffffffff81000000ull;
	c->ips[3] = UINT64_MAX;
	c->nstacks = 2;
	c->stacks = malloc(2 * sizeof(*c->stacks));
	c->stacks[0] = (struct capture_stack){ .off = 0, .nuser = 2, .nkernel = 2 };
	c->stacks[1] = (struct capture_stack){ .off = 4, .nuser = 0, .nkernel = 0 };

	c->nrecs = 4;
	c->recs = calloc(4, sizeof(*c->recs));
	for (uint32_t i = 0; i < 4; i++)
		c->recs[i] = (struct store_rec){
			.ts_ns = 1000 + i, .dur_ns = i * 7, .pid = 5, .tid = 6 + i, .uid = 1000,
			.comm = 1, .stack = i % 3, .name = i == 3 ? 3 : 2, .type = (uint16_t)(i + 1),
			.cpu = (uint16_t)(65535 - i), .aux32 = 0xdeadbeef,
			.aux = { UINT64_MAX - i, 0x0102030405060708ull } };
	/* record 1 is a launch: its dur_ns bytes hold a cgroup string id */
	c->recs[1].dur_ns = 0;
	c->recs[1].cgroup = 1;
	/* record 3 is a mark: aux[1]'s high half is its detail string id */
	c->recs[3].aux[1] = (uint64_t)2 << 32 | 0x05060708;
	capture_add_extra(c, CAPSEC_SYMBOLS, "sym\0bols", 8);
	capture_add_extra(c, 4242, NULL, 0);
	return c;
}

static inline bool captures_equal(const struct capture *a, const struct capture *b)
{
#define SAME(f)                                                                                    \
	do {                                                                                       \
		if (a->f != b->f) {                                                                \
			fprintf(stderr, "field %s differs\n", #f);                                 \
			return false;                                                              \
		}                                                                                  \
	} while (0)
	SAME(id);
	SAME(owner_uid);
	SAME(kind);
	SAME(state);
	SAME(created_realtime_ns);
	SAME(t0_ns);
	SAME(t1_ns);
	SAME(mono_to_realtime_ns);
	SAME(npids);
	SAME(uid_filter);
	SAME(filter_uid);
	SAME(store_evicted_in_window);
	SAME(warnings);
	SAME(nstrs);
	SAME(nstacks);
	SAME(nrecs);
	SAME(nextras);
#undef SAME
	if (strcmp(a->name, b->name) || memcmp(a->pids, b->pids, a->npids * sizeof(a->pids[0])))
		return false;
	for (uint32_t i = 1; i <= a->nstrs; i++) {
		size_t la, lb;
		const char *sa = capture_str(a, i, &la), *sb = capture_str(b, i, &lb);

		if (!sa || !sb || la != lb || memcmp(sa, sb, la))
			return false;
	}
	for (uint32_t i = 1; i <= a->nstacks; i++) {
		uint16_t ua, ka, ub, kb;
		const uint64_t *pa = capture_stack(a, i, &ua, &ka), *pb = capture_stack(b, i, &ub, &kb);

		if (!pa || !pb || ua != ub || ka != kb || memcmp(pa, pb, 8 * ((size_t)ua + ka)))
			return false;
	}
	if (a->nrecs && memcmp(a->recs, b->recs, a->nrecs * sizeof(*a->recs)))
		return false;
	for (size_t i = 0; i < a->nextras; i++)
		if (a->extras[i].type != b->extras[i].type || a->extras[i].len != b->extras[i].len ||
		    (a->extras[i].len && memcmp(a->extras[i].data, b->extras[i].data,
						a->extras[i].len)))
			return false;
	return true;
}

#endif
