// SPDX-License-Identifier: MIT
/*
 * `folded --weight stalls` on NVIDIA PC samples (STORE_REC_GPU_PC, store.h):
 * the stall frames after the kernel frame, the stall reason without
 * CUPTI's prefix, offsets when there is no SASS text (and the text from
 * the hook when there is), the CPU stack of the latest launch of that
 * kernel name in that pid at or before the drain, samples summed.
 *
 * pid 300 "train": gemm launched @10 µs from stack S1 and @50 from S2;
 * PC samples drained @40 (gemm +0x1a0 barrier 30, long_scoreboard 12; an
 * unnamed reason 4) join S1, @90 (gemm +0x1a0 barrier 8) joins S2; relu
 * (never launched in the capture) samples stand on no stack; pid 301's
 * gemm samples do not take pid 300's launches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/capbuild.h"
#include "folded.h"
#include "test.h"

#define T0 1000000000000ull
#define US 1000ull
#define STALLED "smsp__pcsamp_warps_issue_stalled_"

static struct store_rec *rec(struct capture *c)
{
	cb_rec(c, 0, 0, 0, 0, 0);
	struct store_rec *r = &c->recs[c->nrecs - 1];
	memset(r, 0, sizeof(*r));
	return r;
}

static void launch(struct capture *c, uint32_t pid, uint32_t comm, const char *k, uint64_t ts,
		   uint32_t stack)
{
	*rec(c) = (struct store_rec){.ts_ns = T0 + ts * US,
				     .pid = pid,
				     .tid = pid,
				     .comm = comm,
				     .stack = stack,
				     .name = cb_str(c, k),
				     .type = STORE_REC_GPU_LAUNCH,
				     .aux32 = 7};
}

static void pcs(struct capture *c, uint32_t pid, uint32_t comm, const char *k, uint64_t ts,
		uint32_t pc, const char *reason, uint32_t samples)
{
	*rec(c) = (struct store_rec){.ts_ns = T0 + ts * US,
				     .pid = pid,
				     .comm = comm,
				     .name = cb_str(c, k),
				     .type = STORE_REC_GPU_PC,
				     .aux32 = samples,
				     .aux = {0xabcdef, (uint64_t)cb_str(c, reason) << 32 | pc}};
}

static struct capture *scene(void)
{
	struct capture *c;

	if (capture_new(&c) < 0)
		abort();
	c->kind = CAPTURE_LIVE;
	c->t0_ns = T0;
	c->t1_ns = T0 + 1000 * US;
	uint32_t train = cb_str(c, "train"), other = cb_str(c, "other");
	const uint64_t s1[] = {0x1002, 0x1001}, s2[] = {0x2002, 0x1001};
	uint32_t S1 = cb_stack(c, s1, 2, 0), S2 = cb_stack(c, s2, 2, 0);

	launch(c, 300, train, "gemm", 10, S1);
	pcs(c, 300, train, "gemm", 40, 0x1a0, STALLED "barrier", 30);
	pcs(c, 300, train, "gemm", 40, 0x1a0, STALLED "long_scoreboard", 12);
	pcs(c, 300, train, "gemm", 40, 0x40, "stall_9", 4);
	launch(c, 300, train, "gemm", 50, S2);
	pcs(c, 300, train, "gemm", 90, 0x1a0, STALLED "barrier", 8);
	pcs(c, 300, train, "relu", 90, 0x10, STALLED "wait", 3);
	pcs(c, 301, other, "gemm", 95, 0x20, STALLED "wait", 5);
	return c;
}

struct buf {
	char p[4096];
	size_t n;
};

static int to_buf(void *ctx, const void *data, size_t len)
{
	struct buf *b = ctx;
	if (b->n + len >= sizeof(b->p))
		return -ENOSPC;
	memcpy(b->p + b->n, data, len);
	b->n += len;
	b->p[b->n] = '\0';
	return 0;
}

static void test_offsets(void)
{
	struct capture *c = scene();
	struct folded_opts o = {.weight = FOLDED_WEIGHT_STALLS};
	struct folded_totals t;
	struct buf b = {.n = 0};

	CHECK_EQ_INT(folded_write(c, &o, to_buf, &b, &t), 0);
	CHECK_STREQ(b.p, "other;gemm_[G];+0x20_[g];wait_[g] 5\n"
			 "train;0x1001;0x1002;gemm_[G];+0x1a0_[g];barrier_[g] 30\n"
			 "train;0x1001;0x1002;gemm_[G];+0x1a0_[g];long_scoreboard_[g] 12\n"
			 "train;0x1001;0x1002;gemm_[G];+0x40_[g];stall_9_[g] 4\n"
			 "train;0x1001;0x2002;gemm_[G];+0x1a0_[g];barrier_[g] 8\n"
			 "train;relu_[G];+0x10_[g];wait_[g] 3\n");
	CHECK_EQ_U64(t.weight, 62);
	CHECK_EQ_U64(t.samples, 6);
	capture_free(c);
}

static const char *insn(void *ctx, uint32_t pid, uint64_t crc, const char *name, uint32_t pc)
{
	static char s[64];

	(*(int *)ctx)++;
	if (crc != 0xabcdef || strcmp(name, "gemm") || pid != 300)
		return NULL;
	snprintf(s, sizeof(s), "BAR.SYNC;DEFER @%x", pc); /* ';' must not split the frame */
	return s;
}

static void test_sass_text(void)
{
	struct capture *c = scene();
	const uint32_t pids[] = {300};
	int calls = 0;
	struct folded_opts o = {.weight = FOLDED_WEIGHT_STALLS, .pids = pids, .npids = 1,
				.insn = insn, .insn_ctx = &calls};
	struct folded_totals t;
	struct buf b = {.n = 0};

	CHECK_EQ_INT(folded_write(c, &o, to_buf, &b, &t), 0);
	CHECK_STREQ(b.p, "train;0x1001;0x1002;gemm_[G];BAR.SYNC:DEFER @1a0_[g];barrier_[g] 30\n"
			 "train;0x1001;0x1002;gemm_[G];BAR.SYNC:DEFER @1a0_[g];long_scoreboard_[g] 12\n"
			 "train;0x1001;0x1002;gemm_[G];BAR.SYNC:DEFER @40_[g];stall_9_[g] 4\n"
			 "train;0x1001;0x2002;gemm_[G];BAR.SYNC:DEFER @1a0_[g];barrier_[g] 8\n"
			 "train;relu_[G];+0x10_[g];wait_[g] 3\n");
	CHECK(calls >= 5);
	CHECK_EQ_U64(t.weight, 57);
	capture_free(c);
}

/* the other weights do not count PC samples */
static void test_other_weights(void)
{
	struct capture *c = scene();
	struct folded_opts o = {.weight = FOLDED_WEIGHT_LAUNCHES};
	struct folded_totals t;
	struct buf b = {.n = 0};

	CHECK_EQ_INT(folded_write(c, &o, to_buf, &b, &t), 0);
	CHECK_EQ_U64(t.weight, 2);
	capture_free(c);
}

int main(void)
{
	RUN(test_offsets);
	RUN(test_sass_text);
	RUN(test_other_weights);
	return test_summary();
}
