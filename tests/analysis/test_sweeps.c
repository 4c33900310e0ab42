// SPDX-License-Identifier: MIT
/*
 * The interval analyses (temporal breakdown with its priority split,
 * communication/computation overlap, the kernel-type breakdown's exclusive
 * times) against a brute-force oracle written from HTA's definitions
 * (interval union, temporal breakdown, overlap, kernel breakdown), on random
 * traces: several streams, overlapping and touching kernels, zero and
 * negative durations, fractional timestamps (HTA's µs rounding), and
 * timestamps with digits past the ns, which put rows of one ns out of
 * ev_ts order (the analyses then take their sort-based path).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"

enum { COMP, COMM, MEM, OTHER, NTYPES };
static const char *const type_name[NTYPES] = { "gemm", "ncclKernel_x", "Memcpy HtoD", "xSync" };

static unsigned seed = 12345;

static unsigned rnd(unsigned n)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 8) % n;
}

/* A random trace of n kernels on up to 4 streams into buf; negative
 * durations when neg. */
static void make_trace(char *buf, size_t cap, int n, int style, bool neg)
{
	size_t off = 0;

	off += (size_t)snprintf(buf + off, cap - off, "{\"traceEvents\":[");
	for (int i = 0; i < n; i++) {
		int stream = 7 + (int)rnd(4), t = (int)rnd(NTYPES);
		char ts[48], dur[32];

		/* coarse times so that starts and ends often coincide */
		snprintf(ts, sizeof(ts), "%u", rnd(60) * 10);
		if (style >= 1 && rnd(3) == 0)
			snprintf(ts, sizeof(ts), "%u.%03u", rnd(60) * 10, rnd(4) * 250);
		if (style == 2 && rnd(8) == 0) /* one ns, either side of a µs */
			snprintf(ts, sizeof(ts), rnd(2) ? "%u.9999999996" : "%u.0000000004",
				 rnd(60) * 10 + (unsigned)(rnd(2) ? -1 : 0) + 1);
		switch (rnd(6)) {
		case 0:
			snprintf(dur, sizeof(dur), "0");
			break;
		case 1:
			snprintf(dur, sizeof(dur), "%s%u", neg ? "-" : "", rnd(20) + 1);
			break;
		case 2:
			snprintf(dur, sizeof(dur), "%u.5", rnd(40));
			break;
		default:
			snprintf(dur, sizeof(dur), "%u", rnd(120) + 1);
		}
		off += (size_t)snprintf(buf + off, cap - off,
					"%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,"
					"\"tid\":%d,\"ts\":%s,\"dur\":%s,\"args\":{\"stream\":%d,"
					"\"correlation\":%d}}",
					i ? "," : "", type_name[t], stream, ts, dur, stream, i + 1);
	}
	snprintf(buf + off, cap - off, "]}");
}

struct row {
	int64_t s, e;
	int type;
	uint32_t pos; /* in by_stream: the tie order */
};

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->s != y->s)
		return x->s < y->s ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static int type_of(const struct timeline *tl, uint32_t name)
{
	const char *s = timeline_str(tl, name, NULL);

	for (int t = 0; t < NTYPES; t++)
		if (!strcmp(s, type_name[t]))
			return t;
	return -1;
}

/* HTA's interval union as HTA writes it: a row starts a new group when its ts is past the
 * largest end of all earlier rows; groups are [min ts, max end]. */
static void union_of(const struct row *v, size_t n, int only, int64_t *first, int64_t *last,
		     int64_t *total)
{
	int64_t maxend = INT64_MIN, gs = 0, ge = 0;
	bool open = false;

	*total = 0;
	for (size_t i = 0; i < n; i++) {
		if (only >= 0 && v[i].type != only)
			continue;
		if (!open || v[i].s > maxend) {
			if (open)
				*total += ge - gs;
			else
				*first = v[i].s;
			gs = v[i].s;
			ge = v[i].e;
			open = true;
		} else if (v[i].e > ge) {
			ge = v[i].e;
		}
		maxend = v[i].e > maxend ? v[i].e : maxend;
	}
	if (open)
		*total += ge - gs;
	*last = ge;
}

static double jget(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItem(o, a);

	if (b)
		x = cJSON_GetObjectItem(x, b);
	return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* Row ends of positive length, sorted: the elementary segments. */
static size_t points(const struct row *v, size_t n, int64_t *pt)
{
	size_t np = 0;

	for (size_t i = 0; i < n; i++) {
		if (v[i].e > v[i].s) {
			pt[np++] = v[i].s;
			pt[np++] = v[i].e;
		}
	}
	for (size_t i = 0; i < np; i++) /* insertion sort: small */
		for (size_t j = i; j > 0 && pt[j - 1] > pt[j]; j--) {
			int64_t x = pt[j];

			pt[j] = pt[j - 1];
			pt[j - 1] = x;
		}
	return np;
}

/* Bit t set when some row of type t covers [a, b). */
static unsigned covering(const struct row *v, size_t n, int64_t a, int64_t b)
{
	unsigned m = 0;

	for (size_t j = 0; j < n; j++)
		if (v[j].e > v[j].s && v[j].s <= a && v[j].e >= b)
			m |= 1u << v[j].type;
	return m;
}

/* Overlap and kernel-type breakdown: measures of sets (no negative
 * durations among the rows they use, where HTA's groups are true sets). */
static void check_sets(const struct timeline *tl, const struct row *v, size_t n)
{
	int64_t *pt = calloc(2 * n + 1, sizeof(*pt)), comm = 0, both = 0, excl[2][8] = { { 0 } };
	size_t np = points(v, n, pt);
	bool any_comm = false;
	cJSON *res = NULL, *o;
	char err[200];

	for (size_t i = 0; i < n; i++)
		any_comm |= v[i].type == COMM;
	for (size_t i = 0; i + 1 < np; i++) {
		unsigned m;

		if (pt[i + 1] == pt[i])
			continue;
		m = covering(v, n, pt[i], pt[i + 1]);
		if (m & 1u << COMM)
			comm += pt[i + 1] - pt[i];
		if ((m & 1u << COMM) && (m & 1u << COMP))
			both += pt[i + 1] - pt[i];
		for (int mem = 0; mem < 2; mem++) /* COMP, COMM[, MEM]: bits 0-2 */
			if (m & (mem ? 7u : 3u))
				excl[mem][m & (mem ? 7u : 3u)] += pt[i + 1] - pt[i];
	}

	CHECK_EQ_INT(analysis_run("overlap", tl, NULL, &res, err, sizeof(err)), 0);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "ranks"), 0);
	CHECK_NEAR(jget(o, "communication_time_us", NULL), (double)comm / 1000.0, 0);
	CHECK_NEAR(jget(o, "overlap_time_us", NULL), (double)both / 1000.0, 0);
	if (!any_comm)
		CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "comp_comm_overlap_pctg")));
	cJSON_Delete(res);

	for (int mem = 0; mem < 2; mem++) {
		cJSON *p = cJSON_Parse(mem ? "{\"include_memory\": true}" :
					     "{\"include_memory\": false}"),
		      *types, *x;
		int listed = 0;

		CHECK_EQ_INT(analysis_run("kernels", tl, p, &res, err, sizeof(err)), 0);
		cJSON_Delete(p);
		types = cJSON_GetObjectItem(res, "kernel_types");
		for (unsigned m = 1; m < 8; m++) {
			char label[96] = "";
			bool found = false;

			for (int t = 0; t < 3; t++) {
				static const char *const nm[3] = { "COMPUTATION", "COMMUNICATION",
								   "MEMORY" };

				if (m >> t & 1) {
					if (label[0])
						strcat(label, " overlapping ");
					strcat(label, nm[t]);
				}
			}
			cJSON_ArrayForEach(x, types)
			{
				if (strcmp(cJSON_GetObjectItem(x, "kernel_type")->valuestring, label))
					continue;
				found = true;
				CHECK_NEAR(jget(x, "sum_us", NULL), (double)excl[mem][m] / 1000.0, 0);
			}
			CHECK_EQ_INT(found, excl[mem][m] > 0);
			listed += excl[mem][m] > 0;
		}
		CHECK_EQ_INT(cJSON_GetArraySize(types), listed);
		cJSON_Delete(res);
	}
	free(pt);
}

static void check_temporal(const struct timeline *tl)
{
	const struct tl_rank *r = timeline_rank_at(tl, 0);
	bool hta = r->flags & TL_RANK_HTA_ROUNDING;
	size_t n = r->nby_stream, np = 0;
	struct row *v = calloc(n + 1, sizeof(*v));
	int64_t *pt = calloc(2 * n + 1, sizeof(*pt));
	int64_t first = 0, last = 0, busy, f2, l2, compute, split[NTYPES] = { 0 };
	cJSON *res = NULL, *o;
	char err[200];

	for (uint32_t i = 0; i < n; i++) {
		const struct tl_event *e = &r->ev[r->by_stream[i]];
		int64_t s = hta ? tl_ev_hta_ts_ns(e) : e->ts_ns;
		int64_t d = hta ? tl_ev_hta_dur_ns(e) : e->dur_ns;

		v[i] = (struct row){ s, s + d, type_of(tl, e->name), i };
		CHECK(v[i].type >= 0);
	}
	qsort(v, n, sizeof(*v), row_cmp);
	union_of(v, n, -1, &first, &last, &busy);
	union_of(v, n, COMP, &f2, &l2, &compute);
	/* the split by elementary segments between all ends of rows of
	 * positive length: each goes to the highest-priority type over it */
	np = points(v, n, pt);
	for (size_t i = 0; i + 1 < np; i++) {
		unsigned m = pt[i + 1] > pt[i] ? covering(v, n, pt[i], pt[i + 1]) : 0;

		if (m) /* the lowest bit: the highest priority */
			split[__builtin_ctz(m)] += pt[i + 1] - pt[i];
	}

	CHECK_EQ_INT(analysis_run("temporal", tl, NULL, &res, err, sizeof(err)), 0);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "ranks"), 0);
	CHECK_NEAR(jget(o, "kernel_time_us", NULL), (double)(last - first) / 1000.0, 0);
	CHECK_NEAR(jget(o, "idle_time_us", NULL), (double)(last - first - busy) / 1000.0, 0);
	CHECK_NEAR(jget(o, "compute_time_us", NULL), (double)compute / 1000.0, 0);
	CHECK_NEAR(jget(o, "non_compute_split", "communication_time_us"),
		   (double)split[COMM] / 1000.0, 0);
	CHECK_NEAR(jget(o, "non_compute_split", "memory_time_us"), (double)split[MEM] / 1000.0, 0);
	CHECK_NEAR(jget(o, "non_compute_split", "other_time_us"), (double)split[OTHER] / 1000.0,
		   0);
	cJSON_Delete(res);
	{
		bool neg = false;

		for (size_t i = 0; i < n; i++)
			neg |= v[i].e < v[i].s && v[i].type != OTHER;
		if (!neg)
			check_sets(tl, v, n);
	}
	free(v);
	free(pt);
}

static struct timeline *load(const char *json)
{
	struct timeline *tl = NULL;
	struct import_result res;

	CHECK_EQ_INT(timeline_new(&tl), 0);
	CHECK_EQ_INT(timeline_import_buf(json, strlen(json), NULL, tl, &res), 0);
	return tl;
}

static void random_traces(int style)
{
	static char buf[1 << 17];

	for (int k = 0; k < 300; k++) {
		struct timeline *tl;

		make_trace(buf, sizeof(buf), 1 + (int)rnd(k < 200 ? 12 : 400), style, k % 2);
		tl = load(buf);
		check_temporal(tl);
		timeline_free(tl);
	}
}

/* whole µs: ev_ts is ts_ns */
static void test_integer_times(void)
{
	random_traces(0);
}

/* some fractional ts: HTA's rounding applies, negative rounded durations */
static void test_rounded_times(void)
{
	random_traces(1);
}

/* digits past the ns: rows of one ns out of ev_ts order */
static void test_sub_ns_times(void)
{
	random_traces(2);
}

/* A negative communication row inside a compute row: the unions are no
 * longer sets, and the analyses keep their sort-based answers: the
 * negative group has length -5 and overlaps nothing; the kernel sweep
 * gives the compute row's 20 µs less the 5 during which the group's end
 * precedes its start. */
static void test_negative_rows(void)
{
	static const char doc[] =
		"{\"traceEvents\":["
		"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,"
		"\"ts\":0,\"dur\":20,\"args\":{\"stream\":7,\"correlation\":1}},"
		"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_x\",\"pid\":0,"
		"\"tid\":8,\"ts\":10,\"dur\":-5,\"args\":{\"stream\":8,\"correlation\":2}}]}";
	struct timeline *tl = load(doc);
	cJSON *res = NULL, *o;
	char err[200];

	CHECK_EQ_INT(analysis_run("overlap", tl, NULL, &res, err, sizeof(err)), 0);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "ranks"), 0);
	CHECK_NEAR(jget(o, "communication_time_us", NULL), -5, 0);
	CHECK_NEAR(jget(o, "overlap_time_us", NULL), 0, 0);
	cJSON_Delete(res);
	CHECK_EQ_INT(analysis_run("kernels", tl, NULL, &res, err, sizeof(err)), 0);
	o = cJSON_GetObjectItem(res, "kernel_types");
	CHECK_EQ_INT(cJSON_GetArraySize(o), 1);
	CHECK_STREQ(cJSON_GetObjectItem(cJSON_GetArrayItem(o, 0), "kernel_type")->valuestring,
		    "COMPUTATION");
	CHECK_NEAR(jget(cJSON_GetArrayItem(o, 0), "sum_us", NULL), 15, 0);
	cJSON_Delete(res);
	timeline_free(tl);
}

int main(void)
{
	RUN(test_integer_times);
	RUN(test_rounded_times);
	RUN(test_sub_ns_times);
	RUN(test_negative_rows);
	return test_summary();
}
