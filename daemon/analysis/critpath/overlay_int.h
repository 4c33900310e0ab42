/* SPDX-License-Identifier: MIT */
/* Shared by the overlay writer: overlay.c (the stream) and overlay_edit.c
 * (what happens to each element, and the flow events). */
#ifndef GPUPROF_CRITPATH_OVERLAY_INT_H
#define GPUPROF_CRITPATH_OVERLAY_INT_H

#include "critpath_int.h"

struct flow {
	uint32_t src, dst; /* traceEvents indices */
	bool src_start, dst_start;
	int64_t w;
	uint8_t type;
};

struct endpoint { /* what a flow needs from a raw event */
	uint32_t index;
	char pid[64], tid[64];
	double ts, dur;
	bool device, seen;
};

struct ov {
	const struct cp_graph *g;
	const struct cp_path *p;
	const struct cp_io *io;
	bool all;
	/* scanner */
	int depth, edepth;
	bool in_str, esc, in_array, in_elem, key_is_te, after_key;
	char key[16];
	size_t keylen;
	char *ev;
	size_t evlen, evcap;
	uint32_t nelem, nout;
	struct flow *fl;
	uint32_t nfl;
	struct endpoint *ep;
	uint32_t nep;
	char *err;
	size_t errlen;
};

static inline int put(struct ov *o, const void *p, size_t n)
{
	return n ? o->io->write(o->io->arg, p, n) : 0;
}

/* One complete traceEvents element in o->ev: kept as is, marked critical,
 * or dropped; records what flows need of it. 0 or the writer's error. */
int overlay_element(struct ov *o);
/* The flow events (two per critical dependency / launch / sync edge). */
int overlay_flows(struct ov *o);
/* Before streaming: the flows to write and the endpoints to look for. */
int overlay_plan_flows(struct ov *o);

#endif /* GPUPROF_CRITPATH_OVERLAY_INT_H */
