// SPDX-License-Identifier: MIT
/* Launches matched to job intervals (gpumatch.h). */
#include "gpumatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"

struct item {
	uint32_t pid;
	uint8_t is_interval; /* launches sort before an interval at equal time */
	uint64_t t;	     /* launch ts, interval submission time */
	uint64_t corr;	     /* launch: aux[1]; interval: aux[1] */
	uint32_t idx;
};

static int by_time(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->is_interval != y->is_interval)
		return x->is_interval - y->is_interval;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_corr(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint64_t submit_time(const struct store_rec *r)
{
	return r->ts_ns >= r->aux32 ? r->ts_ns - r->aux32 : 0;
}

void gpu_match_finish(struct gpu_match *m)
{
	free(m->first);
	free(m->count);
	free(m->launch);
	memset(m, 0, sizeof(*m));
}

int gpu_match_build(const struct capture *c, struct gpu_match *m)
{
	struct item *it = NULL, *lc = NULL;
	size_t n = 0, nl = 0, out = 0, start = 0;
	uint8_t *used = NULL;
	int err = -ENOMEM;

	memset(m, 0, sizeof(*m));
	if (c->nrecs >= UINT32_MAX)
		return -E2BIG;
	for (size_t i = 0; i < c->nrecs; i++) {
		m->nlaunches += c->recs[i].type == STORE_REC_GPU_LAUNCH;
		m->nintervals += c->recs[i].type == STORE_REC_GPU_INTERVAL;
	}
	m->first = calloc(c->nrecs + 1, sizeof(*m->first));
	m->count = calloc(c->nrecs + 1, sizeof(*m->count));
	m->launch = malloc((m->nlaunches + 1) * sizeof(*m->launch));
	it = malloc((m->nlaunches + m->nintervals + 1) * sizeof(*it));
	lc = malloc((m->nlaunches + 1) * sizeof(*lc));
	used = calloc(c->nrecs + 1, 1);
	if (!m->first || !m->count || !m->launch || !it || !lc || !used)
		goto out;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_LAUNCH) {
			it[n++] = (struct item){r->pid, 0, r->ts_ns, r->aux[1], (uint32_t)i};
			lc[nl++] = it[n - 1];
		} else if (r->type == STORE_REC_GPU_INTERVAL) {
			it[n++] = (struct item){r->pid, 1, submit_time(r), r->aux[1], (uint32_t)i};
		}
	}
	/* Intervals that name their launch by correlation take exactly it
	 * (none from the gpu_jobs collector: skip the sort then). */
	bool any_corr = false;
	for (size_t k = 0; k < n && !any_corr; k++)
		any_corr = it[k].is_interval && it[k].corr;
	if (any_corr)
		qsort(lc, nl, sizeof(*lc), by_corr);
	for (size_t k = 0; any_corr && k < n; k++) {
		if (!it[k].is_interval || !it[k].corr)
			continue;
		struct item key = {.pid = it[k].pid, .corr = it[k].corr};
		size_t lo = 0, hi = nl;
		while (lo < hi) { /* first launch with (pid, corr) >= key */
			size_t mid = (lo + hi) / 2;
			if (lc[mid].pid < key.pid ||
			    (lc[mid].pid == key.pid && lc[mid].corr < key.corr))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nl && lc[lo].pid == key.pid && lc[lo].corr == key.corr &&
		    !used[lc[lo].idx]) {
			used[lc[lo].idx] = 1;
			used[it[k].idx] = 1; /* matched: skip in the order pass */
			m->first[it[k].idx] = (uint32_t)out;
			m->count[it[k].idx] = 1;
			m->launch[out++] = lc[lo].idx;
			m->nmatched++;
		}
	}
	/* The rest by order within each pid. start: first launch since the
	 * previous interval's submission (positions into it[]). */
	qsort(it, n, sizeof(*it), by_time);
	for (size_t k = 0; k < n; k++) {
		if (k && it[k].pid != it[k - 1].pid)
			start = k;
		if (!it[k].is_interval)
			continue;
		uint32_t iv = it[k].idx;
		if (!used[iv]) {
			m->first[iv] = (uint32_t)out;
			for (size_t q = start; q < k; q++)
				if (!it[q].is_interval && !used[it[q].idx]) {
					used[it[q].idx] = 1;
					m->launch[out++] = it[q].idx;
				}
			m->count[iv] = (uint32_t)(out - m->first[iv]);
			m->nmatched += m->count[iv] > 0;
		}
		start = k + 1;
	}
	err = 0;
out:
	free(it);
	free(lc);
	free(used);
	if (err)
		gpu_match_finish(m);
	return err;
}
