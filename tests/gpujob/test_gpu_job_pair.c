// SPDX-License-Identifier: MIT
/*
 * The GPU job pairer (daemon/collect/gpu_job_pair.c) on synthetic event
 * sequences: the three drivers' flows, events out of order, a missing
 * start, a duplicate signal, a seqno reused after wrap-around, a full
 * pending table; and that every submitter's ids are handed on exactly once
 * (to an interval or back through release()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collect/gpu_job_pair.h"
#include "test.h"

#define MAXIV 64
#define MAXID 256

struct sink {
	struct gj_interval iv[MAXIV];
	int n;
	int owner[MAXID]; /* per comm id: 0 held, 1 emitted, 2 released */
	int twice;	  /* an id handed on more than once */
};

static void on_emit(void *arg, const struct gj_interval *iv)
{
	struct sink *s = arg;
	if (s->n < MAXIV)
		s->iv[s->n++] = *iv;
	if (iv->comm) {
		s->twice += s->owner[iv->comm] != 0;
		s->owner[iv->comm] = 1;
	}
}

static void on_release(void *arg, uint32_t comm, uint32_t stack)
{
	struct sink *s = arg;
	(void)stack;
	if (comm) {
		s->twice += s->owner[comm] != 0;
		s->owner[comm] = 2;
	}
}

static struct gj_pair *mk(struct sink *s, size_t cap)
{
	struct gj_pair *p = NULL;
	memset(s, 0, sizeof(*s));
	CHECK_EQ_INT(gj_pair_new(cap, &(struct gj_pair_ops){on_emit, on_release, s}, &p), 0);
	return p;
}

/* A fence-keyed event (i915, dma_fence); submitter fields for SUBMIT. */
static void ev(struct gj_pair *p, uint8_t kind, uint64_t ts, uint64_t ctx, uint64_t seq,
	       uint32_t pid, uint32_t comm)
{
	struct gj_event e = {.ev = kind,
			     .group = 1,
			     .engine = 0,
			     .ts_ns = ts,
			     .ctx = ctx,
			     .seqno = seq,
			     .pid = pid,
			     .tid = pid + 1,
			     .uid = 1000,
			     .comm = comm,
			     .stack = comm ? comm + 1000 : 0};
	gj_pair_feed(p, &e);
}

static struct gj_stats stats(struct gj_pair *p)
{
	struct gj_stats st;
	gj_pair_stats(p, &st);
	return st;
}

static void test_submit_start_end(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 16);
	ev(p, GJ_SUBMIT, 100, 7, 1, 42, 5);
	ev(p, GJ_START, 150, 7, 1, 0, 0);
	CHECK_EQ_U64(stats(p).pending, 1);
	ev(p, GJ_END, 400, 7, 1, 0, 0);
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_U64(s.iv[0].submit_ns, 100);
	CHECK_EQ_U64(s.iv[0].start_ns, 150);
	CHECK_EQ_U64(s.iv[0].end_ns, 400);
	CHECK_EQ_U64(s.iv[0].ctx, 7);
	CHECK_EQ_U64(s.iv[0].seqno, 1);
	CHECK_EQ_INT(s.iv[0].pid, 42);
	CHECK_EQ_INT(s.iv[0].tid, 43);
	CHECK_EQ_INT(s.iv[0].comm, 5);
	CHECK_EQ_INT(s.iv[0].stack, 1005);
	CHECK_EQ_INT(s.iv[0].flags, 0);
	CHECK_EQ_U64(stats(p).pending, 0);
	gj_pair_free(p);
	CHECK_EQ_INT(s.twice, 0);
}

/* xe: the job is created before its fence exists; _run carries both. */
static void test_xe_rekey(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 16);
	struct gj_event sub = {.ev = GJ_SUBMIT,
			       .group = 0,
			       .engine = 5,
			       .obj_key = true,
			       .ts_ns = 1000,
			       .obj = 0xffff8880aa00,
			       .pid = 9,
			       .comm = 3};
	struct gj_event run = {.ev = GJ_START,
			       .group = 0,
			       .engine = 5,
			       .ts_ns = 1200,
			       .obj = 0xffff8880aa00,
			       .ctx = 77,
			       .seqno = 12};
	struct gj_event sig = {
	    .ev = GJ_END, .group = 0, .engine = 0xff, .ts_ns = 5000, .ctx = 77, .seqno = 12};
	struct gj_event fr = {.ev = GJ_FREE, .obj_key = true, .ts_ns = 6000, .obj = 0xffff8880aa00};
	gj_pair_feed(p, &sub);
	gj_pair_feed(p, &run);
	gj_pair_feed(p, &sig);
	gj_pair_feed(p, &fr); /* after completion: nothing left to forget */
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_U64(s.iv[0].start_ns, 1200);
	CHECK_EQ_U64(s.iv[0].submit_ns, 1000);
	CHECK_EQ_U64(s.iv[0].end_ns, 5000);
	CHECK_EQ_U64(s.iv[0].ctx, 77);
	CHECK_EQ_INT(s.iv[0].engine, 5);
	CHECK_EQ_INT(s.iv[0].pid, 9);
	CHECK_EQ_U64(stats(p).abandoned, 0);
	/* a job killed before it ran is forgotten at _free */
	sub.obj = 0xbeef;
	sub.comm = 4;
	fr.obj = 0xbeef;
	gj_pair_feed(p, &sub);
	gj_pair_feed(p, &fr);
	CHECK_EQ_U64(stats(p).abandoned, 1);
	CHECK_EQ_U64(stats(p).pending, 0);
	CHECK_EQ_INT(s.owner[4], 2);
	gj_pair_free(p);
	CHECK_EQ_INT(s.twice, 0);
}

/* Ring-buffer order is not time order across CPUs; completions of two
 * contexts interleave out of submission order. */
static void test_out_of_order(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 16);
	ev(p, GJ_START, 150, 1, 10, 0, 0); /* start seen before its submit */
	ev(p, GJ_SUBMIT, 100, 1, 10, 11, 1);
	ev(p, GJ_SUBMIT, 110, 2, 20, 22, 2);
	ev(p, GJ_START, 160, 2, 20, 0, 0);
	ev(p, GJ_END, 300, 2, 20, 0, 0); /* the later submission ends first */
	ev(p, GJ_END, 500, 1, 10, 0, 0);
	CHECK_EQ_INT(s.n, 2);
	CHECK_EQ_U64(s.iv[0].ctx, 2);
	CHECK_EQ_INT(s.iv[0].pid, 22);
	CHECK_EQ_U64(s.iv[1].ctx, 1);
	CHECK_EQ_INT(s.iv[1].pid, 11);
	CHECK_EQ_U64(s.iv[1].submit_ns, 100);
	CHECK_EQ_U64(s.iv[1].start_ns, 150);
	CHECK_EQ_U64(s.iv[1].end_ns, 500);
	CHECK_EQ_INT(s.iv[1].flags, 0);
	/* END before START: the interval begins at submission; the late start
	 * finds nothing and waits until its job is freed */
	ev(p, GJ_SUBMIT, 600, 3, 30, 33, 3);
	ev(p, GJ_END, 900, 3, 30, 0, 0);
	ev(p, GJ_START, 650, 3, 30, 0, 0);
	CHECK_EQ_INT(s.n, 3);
	CHECK_EQ_U64(s.iv[2].start_ns, 600);
	CHECK_EQ_INT(s.iv[2].flags, GJ_IV_NO_START);
	CHECK_EQ_U64(stats(p).pending, 1);
	ev(p, GJ_FREE, 950, 3, 30, 0, 0);
	CHECK_EQ_U64(stats(p).pending, 0);
	CHECK_EQ_U64(stats(p).abandoned, 1);
	gj_pair_free(p);
	CHECK_EQ_INT(s.twice, 0);
}

/* i915 without the low-level tracepoints: add -> retire only. A job
 * started before we attached: start -> end, no submitter. */
static void test_missing_start_or_submit(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 16);
	ev(p, GJ_SUBMIT, 1000, 4, 1, 44, 9);
	ev(p, GJ_END, 1700, 4, 1, 0, 0);
	ev(p, GJ_START, 2000, 4, 2, 0, 0);
	ev(p, GJ_END, 2500, 4, 2, 0, 0);
	CHECK_EQ_INT(s.n, 2);
	CHECK_EQ_U64(s.iv[0].start_ns, 1000);
	CHECK_EQ_U64(s.iv[0].end_ns, 1700);
	CHECK_EQ_INT(s.iv[0].flags, GJ_IV_NO_START);
	CHECK_EQ_INT(s.iv[1].flags, GJ_IV_NO_SUBMIT);
	CHECK_EQ_INT(s.iv[1].pid, 0);
	CHECK_EQ_U64(s.iv[1].submit_ns, 2000);
	gj_pair_free(p);
}

static void test_duplicate_signal_and_start(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 16);
	ev(p, GJ_SUBMIT, 10, 5, 1, 1, 1);
	ev(p, GJ_START, 20, 5, 1, 0, 0);
	ev(p, GJ_START, 25, 5, 1, 0, 0); /* ignored: the first start stands */
	ev(p, GJ_END, 90, 5, 1, 0, 0);
	ev(p, GJ_END, 95, 5, 1, 0, 0); /* signalled twice (two tracepoints) */
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_U64(s.iv[0].start_ns, 20);
	CHECK_EQ_U64(s.iv[0].end_ns, 90);
	CHECK_EQ_U64(stats(p).dup_start, 1);
	CHECK_EQ_U64(stats(p).unmatched_end, 1);
	CHECK_EQ_U64(stats(p).pending, 0);
	gj_pair_free(p);
}

/* i915 seqnos are 32-bit: after a wrap the same (ctx, seqno) comes back.
 * A job whose end was lost must not swallow the new one. */
static void test_seqno_wrap(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 16);
	ev(p, GJ_SUBMIT, 100, 6, 0xffffffffu, 1, 1);
	ev(p, GJ_SUBMIT, 110, 6, 0, 1, 2); /* the wrap: distinct key */
	ev(p, GJ_END, 200, 6, 0, 0, 0);
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_U64(s.iv[0].seqno, 0);
	CHECK_EQ_INT(s.iv[0].comm, 2);
	/* 0xffffffff never completed (lost end); 2^32 jobs later it is reused */
	ev(p, GJ_SUBMIT, 900, 6, 0xffffffffu, 7, 3);
	CHECK_EQ_U64(stats(p).stale, 1);
	CHECK_EQ_INT(s.owner[1], 2); /* the stale job's ids went back */
	ev(p, GJ_START, 950, 6, 0xffffffffu, 0, 0);
	ev(p, GJ_END, 990, 6, 0xffffffffu, 0, 0);
	CHECK_EQ_INT(s.n, 2);
	CHECK_EQ_INT(s.iv[1].pid, 7);
	CHECK_EQ_U64(s.iv[1].submit_ns, 900);
	CHECK_EQ_U64(s.iv[1].start_ns, 950);
	CHECK_EQ_U64(stats(p).pending, 0);
	gj_pair_free(p);
	CHECK_EQ_INT(s.twice, 0);
}

static void test_pending_overflow(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 4);
	for (uint32_t i = 1; i <= 6; i++)
		ev(p, GJ_SUBMIT, 100 * i, 8, i, 50 + i, i);
	struct gj_stats st = stats(p);
	CHECK_EQ_U64(st.evicted, 2);
	CHECK_EQ_U64(st.pending, 4);
	CHECK_EQ_INT(s.owner[1], 2); /* the oldest two went */
	CHECK_EQ_INT(s.owner[2], 2);
	CHECK_EQ_INT(s.owner[3], 0);
	ev(p, GJ_END, 1000, 8, 1, 0, 0); /* evicted: no interval */
	ev(p, GJ_END, 1100, 8, 6, 0, 0);
	ev(p, GJ_END, 1200, 8, 3, 0, 0);
	CHECK_EQ_INT(s.n, 2);
	CHECK_EQ_INT(s.iv[0].pid, 56);
	CHECK_EQ_INT(s.iv[1].pid, 53);
	CHECK_EQ_U64(stats(p).unmatched_end, 1);
	/* the slots the completed jobs freed are reused without eviction */
	ev(p, GJ_SUBMIT, 1300, 8, 7, 57, 7);
	ev(p, GJ_SUBMIT, 1400, 8, 8, 58, 8);
	CHECK_EQ_U64(stats(p).evicted, 2);
	CHECK_EQ_U64(stats(p).pending, 4);
	gj_pair_free(p); /* releases 4, 5, 7, 8 */
	for (uint32_t i = 1; i <= 8; i++)
		CHECK_EQ_INT(s.owner[i], i == 3 || i == 6 ? 1 : 2);
	CHECK_EQ_INT(s.twice, 0);
}

static void test_negative_and_bad_args(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 2);
	ev(p, GJ_SUBMIT, 500, 9, 1, 1, 1);
	ev(p, GJ_START, 700, 9, 1, 0, 0);
	ev(p, GJ_END, 650, 9, 1, 0, 0); /* before its start */
	CHECK_EQ_INT(s.n, 1);
	CHECK_EQ_U64(s.iv[0].end_ns, 700);
	CHECK_EQ_U64(stats(p).negative, 1);
	gj_pair_free(p);
	gj_pair_free(NULL);
	struct gj_pair *q = NULL;
	CHECK_EQ_INT(gj_pair_new(0, &(struct gj_pair_ops){on_emit, NULL, NULL}, &q), -EINVAL);
	CHECK_EQ_INT(gj_pair_new(4, &(struct gj_pair_ops){NULL, NULL, NULL}, &q), -EINVAL);
	CHECK(q == NULL);
}

/* Many jobs across contexts through a small table: the counts add up. */
static void test_churn(void)
{
	struct sink s;
	struct gj_pair *p = mk(&s, 8);
	uint64_t ends = 0;
	for (uint32_t i = 0; i < 2000; i++) {
		uint64_t ctx = 100 + i % 5, seq = i / 5;
		ev(p, GJ_SUBMIT, 10 * i, ctx, seq, 1, 0);
		ev(p, GJ_START, 10 * i + 3, ctx, seq, 0, 0);
		if (i >= 3) { /* complete the job three back */
			uint32_t j = i - 3;
			ev(p, GJ_END, 10 * i + 5, 100 + j % 5, j / 5, 0, 0);
			ends++;
		}
	}
	struct gj_stats st = stats(p);
	CHECK_EQ_U64(st.intervals, ends);
	CHECK_EQ_U64(st.pending, 3);
	CHECK_EQ_U64(st.evicted, 0);
	CHECK_EQ_U64(st.submitted, 2000);
	gj_pair_free(p);
}

int main(void)
{
	RUN(test_submit_start_end);
	RUN(test_xe_rekey);
	RUN(test_out_of_order);
	RUN(test_missing_start_or_submit);
	RUN(test_duplicate_signal_and_start);
	RUN(test_seqno_wrap);
	RUN(test_pending_overflow);
	RUN(test_negative_and_bad_args);
	RUN(test_churn);
	return test_summary();
}
