/* SPDX-License-Identifier: MIT */
/* Build a capture by hand, for tests: append strings, stacks and records to
 * its tables (realloc()ed; capture_free() releases them). Aborts on ENOMEM. */
#ifndef GPUPROF_TESTS_CAPBUILD_H
#define GPUPROF_TESTS_CAPBUILD_H

#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"

static void *cb_grow(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

/* An empty live capture of [t0, t1], as the collectors' records fill one. */
static inline struct capture *cb_live(uint64_t t0, uint64_t t1)
{
	struct capture *c;

	if (capture_new(&c) < 0)
		abort();
	c->kind = CAPTURE_LIVE;
	c->t0_ns = t0;
	c->t1_ns = t1;
	return c;
}

/* A string of len bytes, which may hold a NUL: a launch's name keeps its
 * geometry after one (gpu_launch_abi.h). */
static inline uint32_t cb_strn(struct capture *c, const char *s, size_t len)
{
	c->str_blob = cb_grow(c->str_blob, c->str_blob_len + len);
	memcpy(c->str_blob + c->str_blob_len, s, len);
	c->strs = cb_grow(c->strs, (c->nstrs + 1) * sizeof(*c->strs));
	c->strs[c->nstrs] = (struct capture_str){(uint32_t)c->str_blob_len, (uint32_t)len};
	c->str_blob_len += len;
	return ++c->nstrs;
}

static inline uint32_t cb_str(struct capture *c, const char *s)
{
	return cb_strn(c, s, strlen(s));
}

static inline uint32_t cb_stack(struct capture *c, const uint64_t *ips, uint16_t nuser,
				uint16_t nkernel)
{
	size_t n = (size_t)nuser + nkernel;
	c->ips = cb_grow(c->ips, (c->nips + n) * sizeof(*c->ips));
	memcpy(c->ips + c->nips, ips, n * sizeof(*ips));
	c->stacks = cb_grow(c->stacks, (c->nstacks + 1) * sizeof(*c->stacks));
	c->stacks[c->nstacks] = (struct capture_stack){(uint32_t)c->nips, nuser, nkernel};
	c->nips += n;
	return ++c->nstacks;
}

/* Appends r as it is (any record type); returns its index in c->recs. */
static inline size_t cb_put(struct capture *c, struct store_rec r)
{
	c->recs = cb_grow(c->recs, (c->nrecs + 1) * sizeof(*c->recs));
	c->recs[c->nrecs] = r;
	return c->nrecs++;
}

/* A CPU sample. */
static inline void cb_rec(struct capture *c, uint64_t ts, uint32_t pid, uint32_t tid, uint32_t comm,
			  uint32_t stack)
{
	cb_put(c, (struct store_rec){.ts_ns = ts,
				     .pid = pid,
				     .tid = tid,
				     .comm = comm,
				     .stack = stack,
				     .type = STORE_REC_CPU_SAMPLE,
				     .aux32 = 1});
}

#endif
