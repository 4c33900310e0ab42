// SPDX-License-Identifier: MIT
/*
 * JSON of the accumulated metrics (schema: docs/analyses.md, "Communication
 * metrics"). Times in µs, bytes in bytes, bandwidths in bytes/s (_Bps),
 * utilisations as fractions of link_bandwidth_Bps.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_acc.h"

static double ratio(double x, double T)
{
	return T > 0 ? x / T : NAN;
}

/* spec_comp: the specification's main compute value, T - |∪ comm| (NaN:
 * not written, on the union side). */
static void one_side(struct cctx *c, cJSON *o, double T, double comp, const double *comm,
		     double mem, double idle, double spec_comp)
{
	cJSON *cm = cj_obj(c, o, "comm_us"), *r = cj_obj(c, o, "ratios"), *rc;
	double all = 0;

	cj_us(c, o, "iteration_time_us", T);
	cj_us(c, o, "compute_us", comp);
	for (int t = 0; t < TAG_N; t++) {
		cj_us(c, cm, tag_name[t], comm[t]);
		all += comm[t];
	}
	cj_us(c, o, "all_comm_us", all);
	cj_us(c, o, "memory_us", mem);
	cj_us(c, o, "idle_us", idle);
	cj_num(c, r, "compute", ratio(comp, T));
	rc = cj_obj(c, r, "comm");
	for (int t = 0; t < TAG_N; t++)
		cj_num(c, rc, tag_name[t], ratio(comm[t], T));
	cj_num(c, r, "memory", ratio(mem, T));
	cj_num(c, r, "idle", ratio(idle, T));
	cj_num(c, r, "total", ratio(comp + all + mem + idle, T));
	if (isnan(spec_comp))
		return;
	/* the specification's: compute = T - |∪ comm| (1.4), idle = T -
	 * compute kernels - Σ comm (1.5 with the finer compute: memcpy/memset
	 * time counts as idle) */
	cj_us(c, o, "compute_spec_us", spec_comp);
	cj_us(c, o, "idle_spec_us", idle + mem);
	cj_num(c, r, "compute_spec", ratio(spec_comp, T));
	cj_num(c, r, "idle_spec", ratio(idle + mem, T));
}

void report_breakdown(struct cctx *c, cJSON *o, const struct brk *b)
{
	one_side(c, cj_obj(c, o, "union"), b->T, b->u_comp, b->u_comm, b->u_mem, b->u_idle, NAN);
	one_side(c, cj_obj(c, o, "sum"), b->T, b->sum_comp, b->sum_comm, b->sum_mem, b->sum_idle,
		 b->T - b->comm_union);
	cj_us(c, o, "comm_union_us", b->comm_union);
}

void report_types(struct cctx *c, cJSON *o, const struct tyacc *ty)
{
	for (int k = 0; k < CT_N; k++) {
		cJSON *x;

		if (!ty[k].events)
			continue;
		x = cj_obj(c, o, ctype_name[k]);
		cj_num(c, x, "events", (double)ty[k].events);
		cj_num(c, x, "events_bytes_unknown", (double)ty[k].unknown);
		cj_us(c, x, "time_us", ty[k].time_ns);
		cj_bytes(c, x, "bytes", ty[k].bytes, ty[k].events, ty[k].unknown);
	}
}

static double mean(const struct dvec *d)
{
	double s = 0;

	for (size_t i = 0; i < d->n; i++)
		s += d->v[i];
	return d->n ? s / (double)d->n : NAN;
}

void report_bandwidth(struct cctx *c, cJSON *o, struct bwacc *bw, double link_bw)
{
	for (int t = 0; t < TAG_N; t++) {
		struct bwacc *b = &bw[t];
		cJSON *x = cj_obj(c, o, tag_name[t]);
		double alg = b->known_time_ns > 0 ? b->bytes / (b->known_time_ns * 1e-9) : NAN;

		cj_num(c, x, "events", (double)b->events);
		cj_num(c, x, "events_bytes_unknown", (double)b->unknown);
		cj_us(c, x, "time_us", b->time_ns);
		cj_bytes(c, x, "total_bytes", b->bytes, b->events, b->unknown);
		cj_num(c, x, "avg_bw_Bps", b->bw_n ? b->bw_sum / (double)b->bw_n : NAN);
		cj_num(c, x, "avg_busbw_Bps", b->busbw_n ? b->busbw_sum / (double)b->busbw_n : NAN);
		cj_num(c, x, "algbw_Bps", alg);
		cj_num(c, x, "busbw_Bps",
		       b->bus_time_ns > 0 ? b->bus_bytes / (b->bus_time_ns * 1e-9) : NAN);
		cj_num(c, x, "avg_util",
		       link_bw > 0 && b->util.n ? b->util_sum / (double)b->util.n : NAN);
		cj_num(c, x, "p95_util",
		       link_bw > 0 ? pctl_unsorted(b->util.v, b->util.n, 95) : NAN);
		cj_num(c, x, "global_avg_util", link_bw > 0 ? alg / link_bw : NAN);
	}
}

static void windows(struct cctx *c, cJSON *root, struct cacc *a)
{
	cJSON *arr = cj_arr(c, root, "phase_windows");

	for (int f = 0; f < TAG_N; f++) {
		for (int t = 0; t < TAG_N; t++) {
			struct dvec *d = &a->win[f][t];
			cJSON *o;

			if (!d->n)
				continue;
			qsort(d->v, d->n, sizeof(double), cmp_double);
			o = cj_obj(c, arr, NULL);
			cj_str(c, o, "from", tag_name[f]);
			cj_str(c, o, "to", tag_name[t]);
			cj_num(c, o, "count", (double)d->n);
			cj_us(c, o, "mean_us", mean(d));
			cj_us(c, o, "p50_us", pctl(d->v, d->n, 50));
			cj_us(c, o, "p95_us", pctl(d->v, d->n, 95));
			cj_us(c, o, "min_us", d->v[0]);
			cj_us(c, o, "max_us", d->v[d->n - 1]);
			if (c->windows) {
				cJSON *w = cj_arr(c, o, "windows_us");

				for (size_t i = 0; w && i < d->n; i++)
					cj_push(c, w, cj_us_item(d->v[i]));
			}
		}
	}
}

static void volume(struct cctx *c, cJSON *root, const struct cacc *a)
{
	cJSON *o = cj_obj(c, root, "volume");

	for (int t = 0; t < TAG_N; t++) {
		cJSON *x = cj_obj(c, o, tag_name[t]);
		const struct bwacc *b = &a->bw[t];
		bool sized = !b->events || b->unknown < b->events;

		cj_bytes(c, x, "bytes", b->bytes, b->events, b->unknown);
		cj_num(c, x, "events", (double)b->events);
		cj_num(c, x, "events_bytes_unknown", (double)b->unknown);
		cj_num(c, x, "bytes_per_iteration",
		       a->max_iters && sized ? b->bytes / a->max_iters : NAN);
		cj_num(c, x, "bytes_per_step_per_gpu",
		       a->rank_iters && sized ? b->bytes / (double)a->rank_iters : NAN);
	}
}

/* The types a "collective" rule moved: {type: {tag, events}}. */
static void type_tags(struct cctx *c, cJSON *o, const struct cgroup *g)
{
	cJSON *tt = NULL;

	for (int k = 0; k < CT_N; k++) {
		cJSON *x;

		if (!g->tag_rule[k] || !g->tevents[k])
			continue;
		if (!tt && !(tt = cj_obj(c, o, "type_tags")))
			return;
		x = cj_obj(c, tt, ctype_name[k]);
		cj_str(c, x, "tag", tag_name[g->ttag[k]]);
		cj_num(c, x, "events", (double)g->tevents[k]);
	}
}

/* Events of an OTHER group that no "collective" rule moved. */
static bool unmapped_events(const struct cgroup *g)
{
	for (int k = 0; k < CT_N; k++)
		if (g->tevents[k] && !g->tag_rule[k])
			return true;
	return false;
}

static void groups(struct cctx *c, cJSON *root)
{
	cJSON *arr = cj_arr(c, root, "groups"), *un = cj_arr(c, root, "unmapped_groups");

	for (uint32_t i = 0; i < c->ngroups; i++) {
		const struct cgroup *g = &c->groups[i];
		cJSON *o = cj_obj(c, arr, NULL);
		const char *key = g->key ? timeline_str(c->tl, g->key, NULL) : "(unknown)";

		cj_str(c, o, "key", key);
		cj_str(c, o, "name", timeline_str(c->tl, g->name, NULL));
		cj_str(c, o, "desc", timeline_str(c->tl, g->desc, NULL));
		cj_str(c, o, "ranks", timeline_str(c->tl, g->ranks_text, NULL));
		cj_num(c, o, "size", g->size > 0 ? g->size : NAN);
		cj_str(c, o, "tag", tag_name[g->tag]);
		cj_str(c, o, "tag_source", g->source);
		cj_num(c, o, "events", (double)g->events);
		type_tags(c, o, g);
		if (g->tag == TAG_OTHER && un && unmapped_events(g))
			cj_push(c, un, cJSON_CreateString(key));
	}
}

/* Comm kernel time of the steps iterations=hta leaves out (not read);
 * NaN when a rank's capture has no tail to tell. */
static double left_out_ns(const struct cctx *c)
{
	double ns = 0;

	for (uint32_t i = 0; i < c->nranks; i++) {
		const struct crank *cr = &c->ranks[i];

		if (cr->left_out == LO_OLD_CAPTURE ||
		    (cr->left_out == LO_HTA && !(cr->r->flags & TL_RANK_TAIL_KEPT)))
			return NAN;
		ns += (double)cr->left_comm_ns;
	}
	return ns;
}

static void reconcile(struct cctx *c, cJSON *root, const struct cacc *a)
{
	cJSON *o = cj_obj(c, root, "reconciliation");
	const struct brk *b = &a->all;
	double sum = 0, u = 0, rs, ru;

	for (int t = 0; t < TAG_N; t++)
		sum += b->sum_comm[t], u += b->u_comm[t];
	rs = (b->sum_comp + sum + b->sum_mem + b->sum_idle) / b->T;
	ru = (b->u_comp + u + b->u_mem + b->u_idle) / b->T;
	cj_us(c, o, "comm_kernel_time_us", a->comm_total_ns);
	cj_us(c, o, "comm_time_in_iterations_us", sum);
	cj_us(c, o, "comm_time_outside_iterations_us", a->outside_ns);
	cj_num(c, o, "events_outside_iterations", (double)a->outside_events);
	cj_us(c, o, "comm_time_left_out_us", left_out_ns(c));
	/* Σ per-tag sums + what fell outside every iteration = all comm time */
	cj_bool(c, o, "tags_sum_to_total", fabs(sum + a->outside_ns - a->comm_total_ns) < 0.5);
	cj_us(c, o, "comm_union_us", b->comm_union);
	cj_bool(c, o, "union_le_sum", b->comm_union <= sum + 0.5);
	cj_num(c, o, "union_ratio_sum", b->T > 0 ? ru : NAN);
	cj_num(c, o, "sum_ratio_sum", b->T > 0 ? rs : NAN);
}

/* The steps not counted, per rank, and why. */
static void left_out(struct cctx *c, cJSON *arr)
{
	for (uint32_t i = 0; arr && i < c->nranks; i++) {
		const struct crank *cr = &c->ranks[i];
		char why[256];
		cJSON *o;

		switch (cr->left_out) {
		case LO_INCOMPLETE:
			snprintf(why, sizeof(why),
				 "incomplete: %u kernels, against at least %u "
				 "in every earlier step",
				 cr->left_kernels, cr->left_min);
			break;
		case LO_HTA:
			snprintf(why, sizeof(why),
				 "iterations=hta: HTA's step filter drops the "
				 "last ProfilerStep");
			break;
		case LO_OLD_CAPTURE:
			snprintf(why, sizeof(why),
				 "unavailable: captures encoded before "
				 "timeline version 2 lack the rows HTA's step filter drops; "
				 "import the trace again");
			break;
		default:
			continue;
		}
		o = cj_obj(c, arr, NULL);
		cj_num(c, o, "rank", cr->r->rank);
		cj_us(c, o, "start_us", (double)cr->left_start);
		cj_str(c, o, "reason", why);
	}
}

int comm_report(struct cctx *c, cJSON *root, struct cacc *a)
{
	cJSON *it = cj_obj(c, root, "iterations"), *ov;
	const char *src;

	if (a->iter_time.n)
		qsort(a->iter_time.v, a->iter_time.n, sizeof(double), cmp_double);
	src = !c->iter_marks ? "none: each rank's GPU span is one iteration"
	      : c->iter_name ? "annotation"
			     : "ProfilerStep#N";
	cj_str(c, it, "source", src);
	if (c->iter_marks && c->iter_name)
		cj_str(c, it, "annotation", c->iter_name);
	cj_str(c, it, "policy", c->hta_iters ? "hta" : "all");
	cj_num(c, it, "count", a->max_iters);
	left_out(c, cj_arr(c, it, "left_out"));
	cj_num(c, it, "rank_iterations", (double)a->rank_iters);
	cj_us(c, it, "time_mean_us", mean(&a->iter_time));
	cj_us(c, it, "time_p99_us", pctl(a->iter_time.v, a->iter_time.n, 99));

	report_breakdown(c, cj_obj(c, root, "breakdown"), &a->all);
	windows(c, root, a);
	report_bandwidth(c, cj_obj(c, root, "bandwidth"), a->bw,
			 c->nranks ? c->ranks[0].link_bw : 0);
	volume(c, root, a);
	report_types(c, cj_obj(c, root, "types"), a->type);
	ov = cj_obj(c, root, "overlap");
	cj_num(c, ov, "average_overlap_ratio", a->ov_n ? a->ov_sum / a->ov_n : NAN);
	{
		cJSON *pt = cj_obj(c, ov, "per_tag");

		for (int t = 0; t < TAG_N; t++)
			cj_num(c, pt, tag_name[t],
			       a->ov_tag_n[t] ? a->ov_tag_sum[t] / a->ov_tag_n[t] : NAN);
	}
	groups(c, root);
	reconcile(c, root, a);
	return c->oom ? -ENOMEM : 0;
}
