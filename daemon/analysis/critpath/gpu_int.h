/* SPDX-License-Identifier: MIT */
/* Shared by gpu.c (D3 edges) and gpu_tables.c (the tables they read). */
#ifndef GPUPROF_CRITPATH_GPU_INT_H
#define GPUPROF_CRITPATH_GPU_INT_H

#include "critpath_int.h"

#define QNONE INT64_MIN

struct launch {
	uint32_t pos, kpos; /* launch call, its GPU row */
	int64_t ts, stream, gpu, pid, tid;
	uint32_t id; /* launch_id */
};

/* A sync row naming the record it waits on (_get_cuda_event_to_stream_df). */
struct wrec {
	int64_t corr, gpu, stream;
	uint32_t pos;
};

struct gstate {
	struct cp_build *b;
	int64_t *qv; /* queue length at each position, QNONE */
	struct launch *l;
	uint32_t nl;
	int32_t *prev_launch; /* record position -> launch position, CP_NONE */
	int32_t *next_launch; /* cudaStreamWaitEvent position -> launch position */
	struct wrec *w;	      /* rows with wait_on_stream > -1, by record correlation */
	size_t nw;
};

/* gpu_tables.c: each fills its part of s; 0 or -ENOMEM. */
int cpb_gpu_queue_values(struct gstate *s); /* s->qv */
int cpb_gpu_launches(struct gstate *s);	    /* s->l, s->nl */
/* records: s->prev_launch; otherwise waits: s->next_launch. */
int cpb_gpu_pair_calls(struct gstate *s, bool records);

#endif /* GPUPROF_CRITPATH_GPU_INT_H */
