// SPDX-License-Identifier: MIT
/* Launches matched to job intervals (gpumatch.h). */
#include "gpumatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "radix.h"

#define KEY_OF(x) ((x).key)
#define PID_OF(x) ((uint64_t)(x).pid)
DEFINE_RADIX(radix_by_key, struct gpu_key, KEY_OF)
DEFINE_RADIX(radix_by_pid, struct gpu_key, PID_OF)

static inline bool pk_lt(const struct gpu_key *x, const struct gpu_key *y)
{
	return x->pid < y->pid || (x->pid == y->pid && x->key < y->key);
}

/* Stable insertion sort of v[0..n) by key within a budget of moves: the
 * local disorder of a ring cut (intervals are recorded when they end)
 * costs little. False when the budget ran out (v then partly sorted, the
 * order of equal keys kept). */
static bool insertion_by_key(struct gpu_key *v, size_t n)
{
	size_t budget = 16 * n + 64;

	for (size_t k = 1; k < n; k++) {
		struct gpu_key x = v[k];
		size_t j = k;

		for (; j > 0 && x.key < v[j - 1].key; j--)
			v[j] = v[j - 1];
		v[j] = x;
		if (k - j > budget)
			return false;
		budget -= k - j;
	}
	return true;
}

/* Records come roughly in time order (a capture is cut from a ring filled
 * as events happen), so most runs need no sort beyond the check. */
int gpu_sort_pid_key(struct gpu_key *v, size_t n)
{
	size_t i = 1;

	while (i < n && !pk_lt(&v[i], &v[i - 1]))
		i++;
	if (i >= n)
		return 0;
	if (!radix_by_pid(v, n))
		return -ENOMEM;
	for (size_t a = 0, b; a < n; a = b) {
		bool sorted = true;

		for (b = a + 1; b < n && v[b].pid == v[a].pid; b++)
			sorted &= v[b].key >= v[b - 1].key;
		if (!sorted && !insertion_by_key(v + a, b - a) && !radix_by_key(v + a, b - a))
			return -ENOMEM;
	}
	return 0;
}

/* state[] per record index: a launch or interval already matched */
enum { ST_USED = 1 };

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

/* Intervals that name their launch by correlation (aux[1], same pid) take
 * exactly it, in record order. iv: the intervals in record order; lc: the
 * launches by (pid, corr, idx). Returns how many launches went out. */
static size_t match_by_corr(const struct capture *c, struct gpu_match *m, const struct gpu_key *iv,
			    size_t ni, const struct gpu_key *lc, size_t nl, uint8_t *state)
{
	size_t out = 0;

	for (size_t k = 0; k < ni; k++) {
		uint64_t corr = c->recs[iv[k].idx].aux[1];
		uint32_t pid = iv[k].pid;
		size_t lo = 0, hi = nl;

		if (!corr)
			continue;
		while (lo < hi) { /* first launch with (pid, corr) >= the key */
			size_t mid = (lo + hi) / 2;
			if (lc[mid].pid < pid || (lc[mid].pid == pid && lc[mid].key < corr))
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < nl && lc[lo].pid == pid && lc[lo].key == corr &&
		    !(state[lc[lo].idx] & ST_USED)) {
			state[lc[lo].idx] |= ST_USED;
			state[iv[k].idx] |= ST_USED; /* matched: skip in the order pass */
			m->first[iv[k].idx] = (uint32_t)out;
			m->count[iv[k].idx] = 1;
			m->launch[out++] = lc[lo].idx;
			m->nmatched++;
		}
	}
	return out;
}

int gpu_match_build(const struct capture *c, struct gpu_match *m)
{
	struct gpu_key *it = NULL, *lc = NULL;
	size_t n = 0, nl = 0, out = 0;
	uint8_t *state = NULL;
	bool any_corr = false;
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
	state = calloc(c->nrecs + 1, 1);
	if (!m->first || !m->count || !m->launch || !it || !state)
		goto out;
	/* launches, then intervals, each in record order */
	nl = m->nlaunches;
	n = nl + m->nintervals;
	for (size_t i = 0, a = 0, b = nl; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_LAUNCH) {
			it[a++] = (struct gpu_key){r->ts_ns, r->pid, (uint32_t)i};
		} else if (r->type == STORE_REC_GPU_INTERVAL) {
			it[b++] = (struct gpu_key){submit_time(r), r->pid, (uint32_t)i};
			any_corr |= r->aux[1] != 0;
		}
	}
	/* none from the gpu_jobs collector: no correlation sort then */
	if (any_corr) {
		if (!(lc = malloc((nl + 1) * sizeof(*lc))))
			goto out;
		for (size_t k = 0; k < nl; k++)
			lc[k] = (struct gpu_key){c->recs[it[k].idx].aux[1], it[k].pid, it[k].idx};
		if (gpu_sort_pid_key(lc, nl) < 0)
			goto out;
		out = match_by_corr(c, m, it + nl, n - nl, lc, nl, state);
	}
	/* The rest by order within each pid: an interval takes the launches
	 * of its pid after the previous interval's submission and not after
	 * its own (a launch at the very submission time included), walking
	 * both lists in (pid, time) order: la[next..) the launches not passed
	 * yet. */
	if (gpu_sort_pid_key(it, nl) < 0 || gpu_sort_pid_key(it + nl, n - nl) < 0)
		goto out;
	const struct gpu_key *la = it, *ivs = it + nl;
	for (size_t j = 0, next = 0; j < n - nl; j++) {
		uint32_t pid = ivs[j].pid, iv = ivs[j].idx;
		size_t end = next;

		while (end < nl &&
		       (la[end].pid < pid || (la[end].pid == pid && la[end].key <= ivs[j].key)))
			end++;
		while (next < end && la[next].pid < pid) /* pids that only launched */
			next++;
		if (!(state[iv] & ST_USED)) {
			m->first[iv] = (uint32_t)out;
			for (; next < end; next++)
				if (!state[la[next].idx]) { /* not taken by correlation */
					state[la[next].idx] = ST_USED;
					m->launch[out++] = la[next].idx;
				}
			m->count[iv] = (uint32_t)(out - m->first[iv]);
			m->nmatched += m->count[iv] > 0;
		}
		next = end;
	}
	err = 0;
out:
	free(it);
	free(lc);
	free(state);
	if (err)
		gpu_match_finish(m);
	return err;
}
