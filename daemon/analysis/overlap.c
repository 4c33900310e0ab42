// SPDX-License-Identifier: MIT
/*
 * Communication / computation overlap per rank (as HTA's): the share of the
 * union of communication rows that the union of computation rows covers.
 * HTA gets it from a +1/+2 sweep; the measure of C ∩ P is the same number
 * and does not depend on tie order: |C| + |P| - |C ∪ P| from one merged
 * pass (gpu_unions); with a negative duration among those rows, the
 * intersection of the two sorted unions.
 */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

/* |C| and |C ∩ P| from sorted copies of the two types' rows (a negative
 * duration among them: the unions are not sets); *ncomm: C's groups. */
static int overlap_sorted(struct actx *c, const struct tl_rank *r, int64_t *total, int64_t *both,
			  size_t *ncomm)
{
	struct ival *comm = bigalloc_malloc((r->nby_stream + 1) * sizeof(*comm));
	struct ival *comp = bigalloc_malloc((r->nby_stream + 1) * sizeof(*comp));
	size_t nc = 0, np = 0;

	if (!comm || !comp) {
		bigalloc_free(comm);
		bigalloc_free(comp);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < r->nby_stream; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		struct ival v = {ev_ts(r, e), ev_end(r, e)};
		enum ktype t = ktype_of(c, e->name);

		if (t == KT_COMMUNICATION)
			comm[nc++] = v;
		else if (t == KT_COMPUTATION)
			comp[np++] = v;
	}
	nc = ival_merge(comm, nc);
	np = ival_merge(comp, np);
	*total = ival_total(comm, nc);
	*both = ival_overlap(comm, nc, comp, np);
	*ncomm = nc;
	bigalloc_free(comm);
	bigalloc_free(comp);
	return 0;
}

static int one_rank(struct actx *c, const struct tl_rank *r, cJSON *out, const void *opts)
{
	enum { CM = 1u << KT_COMMUNICATION, CP = 1u << KT_COMPUTATION };
	size_t ncomm = 0;
	int64_t total = 0, both = 0, u[1u << KT_COUNT];
	uint32_t rows[KT_COUNT] = {0};
	cJSON *o;
	int err;

	(void)opts; /* none but rank */
	err = gpu_unions(c, r, 1u << CM | 1u << CP | 1u << (CM | CP), u, rows);
	if (!err) {
		total = u[CM];
		both = u[CM] + u[CP] - u[CM | CP];
		ncomm = rows[KT_COMMUNICATION];
	} else if (err == 1) {
		err = overlap_sorted(c, r, &total, &both, &ncomm);
	}
	if (err < 0)
		return err;

	o = cJSON_CreateObject();
	jpush(c, out, o);
	jint(c, o, "rank", r->rank);
	jnum(c, o, "communication_time_us", us(total));
	jnum(c, o, "overlap_time_us", us(both));
	/* null without communication (HTA: NaN) */
	jnum(c, o, "comp_comm_overlap_pctg",
	     ncomm && total ? 100.0 * (double)both / (double)total : NAN);
	return 0;
}

int analysis_overlap(struct actx *c, cJSON **out)
{
	return an_rank_only(c, "overlap", one_rank, out);
}
