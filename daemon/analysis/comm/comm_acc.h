/* SPDX-License-Identifier: MIT */
/* Accumulators shared by comm_metrics.c (fills) and comm_report.c (prints). */
#ifndef GPUPROF_COMM_ACC_H
#define GPUPROF_COMM_ACC_H

#include "comm_int.h"

struct dvec {
	double *v;
	size_t n, cap;
};

int dvec_push(struct dvec *d, double x);
void dvec_free(struct dvec *d);

/* Time breakdown totals in ns, over some set of (iteration, rank) pairs. */
struct brk {
	double T;					     /* Σ iteration_time */
	double sum_comm[TAG_N], sum_comp, sum_mem, sum_idle; /* specification's simple sums */
	double u_comm[TAG_N], u_comp, u_mem, u_idle;	     /* exact partition of T */
	double comm_union;				     /* Σ |∪ comm| */
};

/* Bandwidth/volume per tag. */
struct bwacc {
	uint64_t events, unknown;      /* events, events without size */
	double time_ns;		       /* Σ duration, every event */
	double known_time_ns, bytes;   /* over events with a size */
	double bus_bytes, bus_time_ns; /* Σ bytes·factor, Σ duration where the factor is known */
	double bw_sum, busbw_sum, util_sum; /* Σ per-event values, summed in event order */
	uint64_t bw_n, busbw_n;
	/* per-event utilisations, for the percentile; a rank's is a view into
	 * the global one's storage */
	struct dvec util;
};

/* Per collective type (events inside iterations, like the per-tag values). */
struct tyacc {
	uint64_t events, unknown;
	double time_ns, bytes;
};

struct cacc {
	struct brk all;
	struct tyacc type[CT_N];
	struct bwacc bw[TAG_N];
	struct dvec iter_time;	       /* every (i, r) */
	struct dvec win[TAG_N][TAG_N]; /* phase windows (ns), from → to */
	double ov_sum, ov_n;	       /* overlap ratio average over (i, r) with comm */
	double ov_tag_sum[TAG_N], ov_tag_n[TAG_N];
	uint64_t rank_iters; /* Σ_r iterations(r) */
	uint32_t max_iters;
	double outside_ns; /* comm kernel time not in any iteration */
	uint64_t outside_events;
	double comm_total_ns;
};

/* Per rank, kept for the per-rank table. */
struct rankacc {
	struct brk b;
	struct tyacc type[CT_N];
	struct bwacc bw[TAG_N];
	double ov_sum, ov_n;
	cJSON *iters; /* per-iteration rows (moved into the result) */
};

void bwacc_free(struct bwacc *b);
void report_breakdown(struct cctx *c, cJSON *o, const struct brk *b);
void report_types(struct cctx *c, cJSON *o, const struct tyacc *ty);
void report_bandwidth(struct cctx *c, cJSON *o, struct bwacc *bw, double link_bw);
int comm_report(struct cctx *c, cJSON *root, struct cacc *a);

#endif
