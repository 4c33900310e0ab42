// SPDX-License-Identifier: MIT
/* Launches matched to job intervals and CUPTI activity (gpumatch.h). */
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
	free(m->call);
	free(m->wait);
	free(m->ctxdev);
	free(m->first);
	free(m->count);
	free(m->launch);
	free(m->name);
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

/* ---- CUPTI intervals: joined through their API call (gpumatch.h) ---- */

#define NO_LAUNCH UINT32_MAX

/* One API call: the records of one (pid, correlation), outer = the one
 * entered first, enter_in = the latest entry among them. */
struct call {
	uint32_t pid, corr, outer, launch;
	uint64_t enter_in;
};

/* A launch or a call on its thread, for the per-thread walk. */
struct step {
	uint64_t ts;
	uint32_t pid, tid, ref; /* launch: record index; call: index into calls */
	uint32_t is_call;	/* at equal times the launch comes first */
};

static int step_cmp(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->is_call != y->is_call)
		return x->is_call < y->is_call ? -1 : 1;
	return x->ref < y->ref ? -1 : x->ref > y->ref;
}

/* Whether record a was entered before b (the runtime call before the
 * driver call it makes when both have one time). */
static bool entered_before(const struct store_rec *a, uint32_t ia, const struct store_rec *b,
			   uint32_t ib)
{
	if (a->ts_ns != b->ts_ns)
		return a->ts_ns < b->ts_ns;
	if (a->cpu != b->cpu)
		return a->cpu > b->cpu; /* 2 runtime before 1 driver */
	return ia < ib;
}

/* The calls of c by (pid, corr), their nested records marked in m->call.
 * *ret: malloc'ed, *n entries. 0 or -ENOMEM. */
static int group_calls(const struct capture *c, struct gpu_match *m, struct call **ret, size_t *n)
{
	struct gpu_key *k = malloc((m->napi + 1) * sizeof(*k));
	struct call *cl = malloc((m->napi + 1) * sizeof(*cl));
	size_t nk = 0, nc = 0;

	if (!k || !cl)
		goto fail;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_API && (uint32_t)r->aux[1])
			k[nk++] = (struct gpu_key){(uint32_t)r->aux[1], r->pid, (uint32_t)i};
	}
	if (gpu_sort_pid_key(k, nk) < 0)
		goto fail;
	for (size_t a = 0, b; a < nk; a = b) {
		uint32_t outer = k[a].idx;
		uint64_t in = c->recs[outer].ts_ns;

		for (b = a + 1; b < nk && k[b].pid == k[a].pid && k[b].key == k[a].key; b++) {
			const struct store_rec *r = &c->recs[k[b].idx];
			if (entered_before(r, k[b].idx, &c->recs[outer], outer))
				outer = k[b].idx;
			if (r->ts_ns > in)
				in = r->ts_ns;
		}
		for (size_t j = a; j < b; j++)
			if (k[j].idx != outer)
				m->call[k[j].idx] = outer + 1;
		cl[nc++] = (struct call){k[a].pid, (uint32_t)k[a].key, outer, NO_LAUNCH, in};
	}
	free(k);
	*ret = cl;
	*n = nc;
	return 0;
fail:
	free(k);
	free(cl);
	return -ENOMEM;
}

/* Each call's launch probe: per thread in time order, a call takes the
 * latest launch since the previous call (gpumatch.h). */
static int call_launches(const struct capture *c, const struct gpu_match *m, struct call *cl,
			 size_t nc)
{
	struct step *s = malloc((m->nlaunches + nc + 1) * sizeof(*s));
	size_t n = 0;

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_LAUNCH)
			s[n++] = (struct step){r->ts_ns, r->pid, r->tid, (uint32_t)i, 0};
	}
	for (size_t j = 0; j < nc; j++)
		s[n++] = (struct step){cl[j].enter_in, cl[j].pid, c->recs[cl[j].outer].tid,
				       (uint32_t)j, 1};
	qsort(s, n, sizeof(*s), step_cmp);
	uint32_t pending = NO_LAUNCH;
	for (size_t i = 0; i < n; i++) {
		if (i && (s[i].pid != s[i - 1].pid || s[i].tid != s[i - 1].tid))
			pending = NO_LAUNCH; /* another thread */
		if (!s[i].is_call) {
			pending = s[i].ref;
		} else {
			cl[s[i].ref].launch = pending;
			pending = NO_LAUNCH;
		}
	}
	free(s);
	return 0;
}

static const struct call *find_call(const struct call *cl, size_t nc, uint32_t pid, uint32_t corr)
{
	size_t lo = 0, hi = nc;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cl[mid].pid < pid || (cl[mid].pid == pid && cl[mid].corr < corr))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nc && cl[lo].pid == pid && cl[lo].corr == corr ? &cl[lo] : NULL;
}

/* Join every CUPTI interval to its call and launch; marks the launches
 * taken in state[]. Returns how many launches went out (from out), or
 * -ENOMEM. */
static int64_t match_cupti(const struct capture *c, struct gpu_match *m, uint8_t *state, size_t out)
{
	struct call *cl = NULL;
	size_t nc = 0;

	if (group_calls(c, m, &cl, &nc) < 0 || call_launches(c, m, cl, nc) < 0) {
		free(cl);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (!gpu_is_cupti(r))
			continue;
		const struct call *k = find_call(cl, nc, r->pid, (uint32_t)r->aux[1]);
		if (!k || !(uint32_t)r->aux[1])
			continue;
		m->call[i] = k->outer + 1;
		m->ncupti_call++;
		if (k->launch == NO_LAUNCH)
			continue;
		state[k->launch] |= ST_USED;
		state[i] |= ST_USED;
		m->first[i] = (uint32_t)out;
		m->count[i] = 1;
		m->launch[out++] = k->launch;
		m->ncupti_launch++;
		m->nmatched++;
	}
	free(cl);
	return (int64_t)out;
}

/* An event record by what a wait names it with: (pid, context, event),
 * then its correlation id. */
struct evkey {
	uint32_t pid, ctx, event, corr, idx;
};

static int evkey_cmp(const void *a, const void *b)
{
	const struct evkey *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static bool is_event_wait(const struct store_rec *r)
{
	return gpu_is_cupti(r) && (r->cpu & 0xff) == GPU_CUPTI_SYNC && r->aux32;
}

/* m->wait (gpumatch.h): each wait looks up the first record at or past
 * its own key and correlation; the one before it, if of the same key, is
 * the latest recorded before the wait. 0 or -ENOMEM. */
static int match_waits(const struct capture *c, struct gpu_match *m)
{
	struct evkey *ev = malloc((m->nevents + 1) * sizeof(*ev));
	size_t n = 0;

	m->wait = calloc(c->nrecs + 1, sizeof(*m->wait));
	if (!ev || !m->wait) {
		free(ev);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];

		if (r->type == STORE_REC_GPU_EVENT)
			ev[n++] = (struct evkey){r->pid, STORE_CUPTI_CONTEXT(r->aux[0]), r->aux32,
						 (uint32_t)r->aux[1], (uint32_t)i};
	}
	qsort(ev, n, sizeof(*ev), evkey_cmp);
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		struct evkey k;
		size_t lo = 0, hi = n;

		if (!is_event_wait(r))
			continue;
		k = (struct evkey){r->pid, STORE_CUPTI_CONTEXT(r->aux[0]), r->aux32,
				   (uint32_t)r->aux[1], 0};
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (evkey_cmp(&ev[mid], &k) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && ev[lo - 1].pid == k.pid && ev[lo - 1].ctx == k.ctx &&
		    ev[lo - 1].event == k.event && ev[lo - 1].corr < k.corr) {
			m->wait[i] = ev[lo - 1].idx + 1;
			m->nwaits_linked++;
		}
	}
	free(ev);
	return 0;
}

static int ctxdev_cmp(const void *a, const void *b)
{
	const struct gpu_ctxdev *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* m->ctxdev: each (pid, context) with the device of its first record that
 * names one. 0 or -ENOMEM. */
static int map_contexts(const struct capture *c, struct gpu_match *m)
{
	size_t n = 0, k = 0;

	m->ctxdev = malloc((m->ncupti + m->nevents + 1) * sizeof(*m->ctxdev));
	if (!m->ctxdev)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];

		if (r->type != STORE_REC_GPU_EVENT &&
		    (!gpu_is_cupti(r) || (r->cpu & 0xff) == GPU_CUPTI_SYNC))
			continue;
		m->ctxdev[n++] = (struct gpu_ctxdev){r->pid, STORE_CUPTI_CONTEXT(r->aux[0]),
						     STORE_CUPTI_DEVICE(r->aux[0]), (uint32_t)i};
	}
	qsort(m->ctxdev, n, sizeof(*m->ctxdev), ctxdev_cmp);
	for (size_t i = 0; i < n; i++)
		if (!k || m->ctxdev[k - 1].pid != m->ctxdev[i].pid ||
		    m->ctxdev[k - 1].ctx != m->ctxdev[i].ctx)
			m->ctxdev[k++] = m->ctxdev[i];
	m->nctxdev = k;
	return 0;
}

uint32_t gpu_match_sync_device(const struct gpu_match *m, const struct store_rec *r)
{
	struct gpu_ctxdev key = {r->pid, STORE_CUPTI_CONTEXT(r->aux[0]), 0, 0};
	size_t lo = 0, hi = m->nctxdev;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->ctxdev[mid].pid < key.pid ||
		    (m->ctxdev[mid].pid == key.pid && m->ctxdev[mid].ctx < key.ctx))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nctxdev && m->ctxdev[lo].pid == key.pid && m->ctxdev[lo].ctx == key.ctx)
		return m->ctxdev[lo].dev;
	return STORE_CUPTI_DEVICE(r->aux[0]);
}

int gpu_match_build(const struct capture *c, struct gpu_match *m)
{
	struct gpu_key *it = NULL, *lc = NULL;
	size_t n = 0, nl = 0, out = 0, nxe;
	uint8_t *state = NULL;
	bool any_corr = false;
	int err = -ENOMEM;

	memset(m, 0, sizeof(*m));
	if (c->nrecs >= UINT32_MAX)
		return -E2BIG;
	for (size_t i = 0; i < c->nrecs; i++) {
		m->nlaunches += c->recs[i].type == STORE_REC_GPU_LAUNCH;
		m->nintervals += c->recs[i].type == STORE_REC_GPU_INTERVAL;
		m->ncupti += gpu_is_cupti(&c->recs[i]);
		m->napi += c->recs[i].type == STORE_REC_GPU_API;
		m->nevents += c->recs[i].type == STORE_REC_GPU_EVENT;
	}
	nxe = m->nintervals - m->ncupti;
	m->first = calloc(c->nrecs + 1, sizeof(*m->first));
	m->count = calloc(c->nrecs + 1, sizeof(*m->count));
	/* a launch goes out once by the two rules below, and once more per
	 * CUPTI interval at most */
	m->launch = malloc((m->nlaunches + m->ncupti + 1) * sizeof(*m->launch));
	it = malloc((m->nlaunches + nxe + 1) * sizeof(*it));
	state = calloc(c->nrecs + 1, 1);
	if (!m->first || !m->count || !m->launch || !it || !state)
		goto out;
	/* CUPTI first: the launches it takes are not offered to the rest */
	if (m->ncupti || m->napi) {
		int64_t o;
		if (!(m->call = calloc(c->nrecs + 1, sizeof(*m->call))) ||
		    (o = match_cupti(c, m, state, out)) < 0)
			goto out;
		out = (size_t)o;
	}
	if (m->nevents && match_waits(c, m) < 0)
		goto out;
	if ((m->ncupti || m->nevents) && map_contexts(c, m) < 0)
		goto out;
	/* launches, then intervals, each in record order */
	nl = m->nlaunches;
	n = nl + nxe;
	for (size_t i = 0, a = 0, b = nl; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_LAUNCH) {
			it[a++] = (struct gpu_key){r->ts_ns, r->pid, (uint32_t)i};
		} else if (r->type == STORE_REC_GPU_INTERVAL && !gpu_is_cupti(r)) {
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
	err = m->ncupti_launch ? gpu_match_names(c, m) : 0;
out:
	free(it);
	free(lc);
	free(state);
	if (err)
		gpu_match_finish(m);
	return err;
}
