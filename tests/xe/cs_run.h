/* SPDX-License-Identifier: MIT */
/* The command-stream parser's host path (daemon/xe/cs.c) run over one
 * cs_cases.h case, for test_gpu_cs.c and test_gpu_cs_feed.c. */
#ifndef GPUPROF_TESTS_CS_RUN_H
#define GPUPROF_TESTS_CS_RUN_H

#include <string.h>

#include "test.h"

#include "xe/cs_cases.h"

#include "cs.h"
#include "xe.h"

#define ASID 7

struct run {
	struct xe_cs *cs;
	struct xe *x;
	struct gpu_cs_result r;
	int status;
};

static inline void run_case(struct run *t, cs_case_fn fn)
{
	struct cs_case c = {0};

	memset(t, 0, sizeof(*t));
	CHECK_EQ_INT(xe_cs_new(NULL, &t->cs), 0);
	CHECK_EQ_INT(xe_new(NULL, 0, &t->x), 0);
	fn(&c);
	for (unsigned i = 0; i < c.nbufs; i++)
		CHECK_EQ_INT(xe_cs_add_buffer(t->cs, t->x, ASID, c.b[i].gpu, c.b[i].dw,
					      (size_t)c.b[i].n * 4),
			     0);
	t->status =
	    xe_cs_submit(t->cs, t->x,
			 &(struct xe_cs_submit){
			     .asid = ASID, .pid = 42, .uid = 1000, .batch = c.start, .comm = "app"},
			 &t->r);
	cs_case_free(&c);
}

static inline void done(struct run *t)
{
	xe_cs_free(t->cs);
	xe_free(t->x);
}

static inline uint64_t kernels(struct xe *x)
{
	struct xe_stats st;

	xe_get_stats(x, &st);
	return st.kernels;
}

#endif
