// SPDX-License-Identifier: MIT
/*
 * Large randomized live captures against straightforward reference
 * implementations kept here (qsort, one string intern per event, per-record
 * text): the launch <-> interval match (capture/gpumatch.c), the timeline
 * and its section (timeline/live.c) and `folded --weight gpu-time` must come
 * out exactly as these say. The scenes mix pids spanning several bytes
 * (radix passes), times out of order within a pid (the sort fallbacks),
 * equal times (tie order), correlation-named intervals, duplicate and zero
 * correlations, copy engines, empty and missing names, kernel names with
 * geometry after a NUL, unknown launch APIs, a pid that only launches and
 * CPU samples that none of it reads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/gpumatch.h"
#include "folded.h"
#include "membuf.h"
#include "test.h"
#include "timeline.h"
#include "timeline/live.h"
#include "timeline_int.h"

#include "live_scene.h"

/* ---- reference match: qsort by (pid, time, launch first, index) -------- */

struct ref_item {
	uint32_t pid;
	int is_interval;
	uint64_t t, corr;
	uint32_t idx;
};

static int ref_by_time(const void *a, const void *b)
{
	const struct ref_item *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->is_interval != y->is_interval)
		return x->is_interval - y->is_interval;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct ref_match {
	uint32_t *first, *count, *launch;
	size_t nmatched, nintervals, nlaunches;
};

static void ref_match(const struct capture *c, struct ref_match *m)
{
	size_t nr = c->nrecs, n = 0, out = 0;
	struct ref_item *it = calloc(nr + 1, sizeof(*it));
	uint8_t *used = calloc(nr + 1, 1);

	*m = (struct ref_match){
	    .first = calloc(nr + 1, 4), .count = calloc(nr + 1, 4), .launch = calloc(nr + 1, 4)};
	if (!it || !used || !m->first || !m->count || !m->launch)
		abort();
	for (size_t i = 0; i < nr; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_LAUNCH) {
			it[n++] = (struct ref_item){r->pid, 0, r->ts_ns, r->aux[1], (uint32_t)i};
			m->nlaunches++;
		} else if (r->type == STORE_REC_GPU_INTERVAL) {
			uint64_t sub = r->ts_ns >= r->aux32 ? r->ts_ns - r->aux32 : 0;
			it[n++] = (struct ref_item){r->pid, 1, sub, r->aux[1], (uint32_t)i};
			m->nintervals++;
		}
	}
	/* by correlation, intervals in record order: the first launch in
	 * record order with that (pid, correlation), if not taken */
	for (size_t k = 0; k < n; k++) {
		if (!it[k].is_interval || !it[k].corr)
			continue;
		for (size_t q = 0; q < n; q++) {
			if (it[q].is_interval || it[q].pid != it[k].pid || it[q].corr != it[k].corr)
				continue;
			if (!used[it[q].idx]) {
				used[it[q].idx] = used[it[k].idx] = 1;
				m->first[it[k].idx] = (uint32_t)out;
				m->count[it[k].idx] = 1;
				m->launch[out++] = it[q].idx;
				m->nmatched++;
			}
			break;
		}
	}
	qsort(it, n, sizeof(*it), ref_by_time);
	for (size_t k = 0, start = 0; k < n; k++) {
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
	free(it);
	free(used);
}

static void ref_match_free(struct ref_match *m)
{
	free(m->first);
	free(m->count);
	free(m->launch);
}

static void check_match(const struct capture *c, const struct ref_match *ref)
{
	struct gpu_match m;
	size_t bad = 0;

	CHECK_EQ_INT(gpu_match_build(c, &m), 0);
	CHECK_EQ_U64(m.nintervals, ref->nintervals);
	CHECK_EQ_U64(m.nlaunches, ref->nlaunches);
	CHECK_EQ_U64(m.nmatched, ref->nmatched);
	for (size_t i = 0; i < c->nrecs && m.first; i++) {
		bad += m.first[i] != ref->first[i] || m.count[i] != ref->count[i];
		for (uint32_t k = 0; k < ref->count[i] && m.count[i] == ref->count[i]; k++)
			bad += m.launch[m.first[i] + k] != ref->launch[ref->first[i] + k];
	}
	CHECK_EQ_U64(bad, 0);
	gpu_match_finish(&m);
}

/* ---- reference timeline: one intern per event, qsort ------------------ */

struct ref_ev {
	uint32_t pid;
	uint64_t ts;
	uint32_t rec;
};

static int ref_ev_cmp(const void *a, const void *b)
{
	const struct ref_ev *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static uint32_t ref_intern(struct timeline *tl, const char *s, size_t len)
{
	int64_t id = strtab_intern(&tl->st, s, len);
	if (id < 0)
		abort();
	return (uint32_t)id;
}

static void ref_push(struct timeline *tl, const struct capture *c, const struct ref_match *m,
		     struct tl_rank *r, struct tl_build *cap, uint32_t i, uint32_t cat_kernel)
{
	const struct store_rec *x = &c->recs[i];
	struct tl_event e = {.index = r->nev, .external_id = -1};
	char buf[200];
	size_t len;

	if (x->type == STORE_REC_GPU_LAUNCH) {
		const char *nm = "launch", *cat = "cuda_runtime";
		for (size_t a = 0; a < NAPIS; a++)
			if (apis[a].aux32 == x->aux32)
				nm = apis[a].name, cat = apis[a].cat;
		e.ts_ns = (int64_t)x->ts_ns;
		e.pid = x->pid;
		e.tid = x->tid;
		e.stream = -1;
		e.correlation = x->aux[1] ? (int64_t)x->aux[1] : -1;
		e.name = ref_intern(tl, nm, strlen(nm));
		e.cat = ref_intern(tl, cat, strlen(cat));
		e.kind = tl_kind_from_cat(cat, strlen(cat));
		e.device = -1;
		e.flags = tl_flags_from_name(nm, strlen(nm)) | TL_EV_LAUNCH_ANY;
	} else {
		const struct store_rec *last =
		    m->count[i] ? &c->recs[m->launch[m->first[i] + m->count[i] - 1]] : NULL;
		const char *s = capture_str(c, last ? last->name : x->name, &len);
		if (last) {
			len = s ? strnlen(s, len) : 0; /* up to the geometry */
		} else {
			if (!s || !len)
				s = "gpu job", len = 7;
			if (gpu_engine_is_copy(x->cpu >> 8, x->cpu & 0xff)) {
				len =
				    (size_t)snprintf(buf, sizeof(buf), "Memcpy %.*s", (int)len, s);
				s = buf;
			}
		}
		e.ts_ns = (int64_t)x->ts_ns;
		e.dur_ns = (int64_t)x->dur_ns;
		e.tid = e.stream = (int64_t)x->aux[0];
		e.correlation = last && last->aux[1] ? (int64_t)last->aux[1] : -1;
		e.name = ref_intern(tl, s ? s : "", len);
		e.cat = cat_kernel;
		e.kind = TL_K_KERNEL;
		e.flags = tl_flags_from_name(s ? s : "", len) | TL_EV_GPU_SIDE |
			  (e.correlation >= 0 ? TL_EV_GPU_KERNEL_FILTER : 0);
	}
	if (tl_rank_push(r, cap, &e, NULL) < 0)
		abort();
}

static struct timeline *ref_timeline(const struct capture *c, const struct ref_match *m)
{
	struct timeline *tl;
	struct ref_ev *ev = calloc(c->nrecs + 1, sizeof(*ev));
	size_t n = 0;

	if (!ev || timeline_new(&tl) < 0)
		abort();
	uint32_t cat_kernel = ref_intern(tl, "kernel", 6);
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].type == STORE_REC_GPU_LAUNCH ||
		    c->recs[i].type == STORE_REC_GPU_INTERVAL)
			ev[n++] = (struct ref_ev){c->recs[i].pid, c->recs[i].ts_ns, (uint32_t)i};
	qsort(ev, n, sizeof(*ev), ref_ev_cmp);
	for (size_t a = 0, b; a < n; a = b) {
		bool any = false;
		for (b = a; b < n && ev[b].pid == ev[a].pid; b++)
			any |= c->recs[ev[b].rec].type == STORE_REC_GPU_INTERVAL;
		if (!any)
			continue;
		struct tl_rank *r = tl_rank_alloc((int32_t)ev[a].pid);
		struct tl_build cap = {0};
		for (size_t k = a; k < b; k++)
			ref_push(tl, c, m, r, &cap, ev[k].rec, cat_kernel);
		r->raw_events = r->parsed_events = r->nev;
		if (tl_insert_rank(tl, r) < 0)
			abort();
	}
	free(ev);
	if (timeline_finalize(tl, TL_FIN_NO_STEP_FILTER) < 0)
		abort();
	return tl;
}

static void check_timeline(struct capture *c, const struct ref_match *m, bool big)
{
	struct timeline *ref = ref_timeline(c, m), *got = NULL;
	void *buf = NULL;
	size_t len = 0;

	CHECK_EQ_INT(timeline_from_capture(c, &got), 0);
	CHECK(got && timeline_equal(ref, got));
	if (big) /* every pid but the launch-only one has a rank */
		CHECK_EQ_INT(timeline_nranks(ref), NPIDS);
	/* the section is the reference's encoding, byte for byte */
	CHECK_EQ_INT(timeline_encode(ref, &buf, &len), 0);
	CHECK_EQ_INT(timeline_live_attach(c), 0);
	const struct capture_extra *x = capture_find_extra(c, CAPSEC_TIMELINE);
	CHECK(x && x->len == len && !memcmp(x->data, buf, len));
	free(buf);
	timeline_free(ref);
	timeline_free(got);
}

/* ---- reference folded gpu-time: per-record text, summed per line ------ */

struct ref_line {
	char *text;
	uint64_t ns;
};

struct ref_folded {
	struct ref_line *l;
	size_t n;
	uint64_t total;
};

static void ref_add(struct ref_folded *f, const struct capture *c, const struct store_rec *r,
		    uint64_t ns)
{
	char line[512];
	size_t len, o;
	const char *comm = capture_str(c, r->comm, &len);
	uint16_t nu = 0, nk = 0;
	const uint64_t *ips = r->stack ? capture_stack(c, r->stack, &nu, &nk) : NULL;

	if (!ns)
		return;
	o = (size_t)snprintf(line, sizeof(line), "%.*s", (int)len, comm ? comm : "");
	for (size_t i = nu; ips && i-- > 0;)
		o += (size_t)snprintf(line + o, sizeof(line) - o, ";0x%llx",
				      (unsigned long long)ips[i]);
	const char *kn = capture_str(c, r->name, &len);
	len = kn ? strnlen(kn, len) : 0; /* up to the geometry */
	if (r->name)			 /* an empty name reads "[unknown]" */
		snprintf(line + o, sizeof(line) - o, ";%.*s_[G]", len ? (int)len : 9,
			 len ? kn : "[unknown]");
	f->total += ns;
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->l[i].text, line)) {
			f->l[i].ns += ns;
			return;
		}
	f->l = realloc(f->l, (f->n + 1) * sizeof(*f->l));
	if (!f->l || !(f->l[f->n].text = strdup(line)))
		abort();
	f->l[f->n++].ns = ns;
}

static int ref_line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ref_line *)a)->text, ((const struct ref_line *)b)->text);
}

static void check_folded(const struct capture *c, const struct ref_match *m, bool big)
{
	struct ref_folded f = {0};
	struct membuf want = {0}, got = {0};
	struct folded_opts o = {.weight = FOLDED_WEIGHT_GPU_TIME};
	struct folded_totals t;

	/* each interval's ns split evenly over its launches, the remainder
	 * to the first ones; an interval without launches keeps its own */
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type != STORE_REC_GPU_INTERVAL)
			continue;
		uint32_t k = m->count[i];
		if (!k)
			ref_add(&f, c, r, r->dur_ns);
		for (uint32_t j = 0; j < k; j++)
			ref_add(&f, c, &c->recs[m->launch[m->first[i] + j]],
				r->dur_ns / k + (j < r->dur_ns % k));
	}
	qsort(f.l, f.n, sizeof(*f.l), ref_line_cmp);
	for (size_t i = 0; i < f.n; i++) {
		char b[600];
		int len =
		    snprintf(b, sizeof(b), "%s %llu\n", f.l[i].text, (unsigned long long)f.l[i].ns);
		membuf_write(&want, b, (size_t)len);
		free(f.l[i].text);
	}
	free(f.l);
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &got, &t), 0);
	CHECK(!big || f.n > 10);
	CHECK(want.p && got.p && !strcmp(want.p, got.p));
	CHECK_EQ_U64(t.weight, f.total);
	free(want.p);
	free(got.p);
}

static void run_scene(uint64_t seed, size_t n, bool corr_named)
{
	struct capture *c = scene(seed, n, corr_named);
	struct ref_match m;

	bool big = n >= 10000;

	ref_match(c, &m);
	if (big) /* the scene does match, by order and by correlation */
		CHECK(m.nmatched > m.nintervals / 4);
	check_match(c, &m);
	check_timeline(c, &m, big);
	check_folded(c, &m, big);
	ref_match_free(&m);
	capture_free(c);
}

static void test_order_only(void)
{
	run_scene(0x9e3779b97f4a7c15ull, 60000, false);
	run_scene(12345, 20000, false);
}

static void test_with_correlations(void)
{
	run_scene(0xdeadbeefcafef00dull, 40000, true);
}

/* Small scenes: the insertion-sort path for short runs, and ties. */
static void test_small(void)
{
	for (uint64_t s = 1; s <= 40; s++)
		run_scene(s * 7919, 40 + s * 3, s % 2);
}

int main(void)
{
	RUN(test_order_only);
	RUN(test_with_correlations);
	RUN(test_small);
	return test_summary();
}
