// SPDX-License-Identifier: MIT
/*
 * Hostile and odd inputs, all built here: each must give a sensible import
 * with warning counts, or a clear error naming the byte offset — never a
 * crash (run under ASan/UBSan). Also: HTA time semantics on small traces,
 * rank selection, gzip edge cases, and decode of damaged encodings.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "test.h"
#include "alloc/bigalloc.h"
#include "import/import.h"
#include "timeline/timeline.h"
#include "timeline/codec.h"
#include "timeline/timeline_int.h"

static int imp(const char *s, size_t len, const struct import_opts *o, struct import_result *res,
	       struct timeline **out)
{
	struct timeline *tl;
	int err;

	timeline_new(&tl);
	err = timeline_import_buf(s, len, o, tl, res);
	if (out)
		*out = tl;
	else
		timeline_free(tl);
	return err;
}

#define IMP(str, o, res, out) imp(str, strlen(str), o, res, out)

static void wrap(char *buf, size_t cap, const char *events)
{
	snprintf(buf, cap, "{\"traceEvents\": [%s]}", events);
}

static void test_empty_and_garbage(void)
{
	struct import_result res;

	CHECK_EQ_INT(imp("", 0, NULL, &res, NULL), -EBADMSG);
	CHECK(strstr(res.error_msg, "empty input") != NULL);
	CHECK_EQ_INT(IMP("{\"traceEvents\": [", NULL, &res, NULL), -EBADMSG);
	CHECK(strstr(res.error_msg, "end of input") != NULL);
	CHECK_EQ_U64(res.error_offset, 17);
	CHECK_EQ_INT(IMP("{\"a\": tru}", NULL, &res, NULL), -EBADMSG);
	CHECK(strstr(res.error_msg, "byte") != NULL);
	CHECK_EQ_INT(IMP("{\"a\": 1} x", NULL, &res, NULL), -EBADMSG);
	CHECK_EQ_U64(res.error_offset, 9);
	CHECK_EQ_INT(IMP("{\"a\" 1}", NULL, &res, NULL), -EBADMSG);
	CHECK_EQ_INT(IMP("{\"a\": 01}", NULL, &res, NULL), -EBADMSG);
	CHECK_EQ_INT(IMP("{\"a\": \"\\q\"}", NULL, &res, NULL), -EBADMSG);
	CHECK_EQ_INT(IMP("{\"a\": [1}", NULL, &res, NULL), -EBADMSG);
	CHECK_EQ_INT(IMP("{\"a\": \"abc", NULL, &res, NULL), -EBADMSG);
	CHECK_EQ_INT(IMP("{}", NULL, &res, NULL), 0);
	CHECK_EQ_U64(res.events_kept, 0);
}

static void test_deep_nesting(void)
{
	struct import_result res;
	char *s = malloc(200001);

	memset(s, '[', 200000);
	s[200000] = '\0';
	CHECK_EQ_INT(IMP(s, NULL, &res, NULL), -ELOOP);
	CHECK_EQ_U64(res.error_offset, 64);
	CHECK(strstr(res.error_msg, "too deep at byte 64") != NULL);
	free(s);
}

static void test_numbers(void)
{
	char buf[2048];
	struct import_result res;
	struct timeline *tl;
	const struct tl_rank *r;

	wrap(buf, sizeof(buf),
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":NaN,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":1e400,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"c\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":-Infinity},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"d\",\"pid\":1,\"tid\":1,\"dur\":3},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"e\",\"pid\":99999999999999999999999,\"tid\":1,\"ts\":7,\"dur\":-2},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"f\",\"pid\":1,\"tid\":1,\"ts\":10.0005,\"dur\":0.0015}");
	CHECK_EQ_INT(IMP(buf, NULL, &res, &tl), 0);
	CHECK_EQ_U64(res.warnings[IMPORT_W_BAD_NUMBER], 4); /* NaN, 1e400, -Inf, huge pid */
	CHECK_EQ_U64(res.warnings[IMPORT_W_MISSING_TS], 3); /* a, b, d */
	CHECK_EQ_U64(res.warnings[IMPORT_W_NEG_DUR], 1);
	r = timeline_rank(tl, 0);
	CHECK_EQ_INT(r->nev, 2);
	CHECK(r->flags & TL_RANK_HTA_ROUNDING);
	CHECK_EQ_INT(r->ev[0].dur_ns, -2000);
	CHECK(r->ev[0].flags & TL_EV_DUR_NEG);
	/* 10.0005 µs = 10000.5 ns → half-even 10000; HTA: ceil 11, floor(10.002) 10 → -1 */
	CHECK_EQ_INT(r->ev[1].ts_ns, 10000);
	CHECK_EQ_INT(r->ev[1].dur_ns, 2);
	CHECK_EQ_INT(tl_hta_ts(r, &r->ev[1]), 11);
	CHECK_EQ_INT((int)tl_hta_dur(r, &r->ev[1]), -1);
	CHECK(r->ev[1].flags & TL_EV_HTA_DUR_NEG);
	CHECK(r->ev[0].flags & TL_EV_HTA_DUR_NEG); /* rounding applies: floor(5) < ceil(7) */
	timeline_free(tl);

	/* HTA's µs times are kept as small offsets from the ns ones
	 * (tl_ev_set_hta): a row whose ts + dur is past int64 ns cannot be
	 * kept (h); near the limit a double's ceil/floor stray from the exact
	 * µs and the offsets carry it (i: Python's float gives ts
	 * 9000000000000002.0, ceil ...002, floor(ts + 1) ...003, where the
	 * exact ns say 9000000000000001.5 and ...002.5). */
	wrap(buf, sizeof(buf),
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"h\",\"pid\":1,\"tid\":1,"
	     "\"ts\":9000000000000000,\"dur\":9000000000000000},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"i\",\"pid\":1,\"tid\":1,"
	     "\"ts\":9000000000000001.5,\"dur\":1}");
	CHECK_EQ_INT(IMP(buf, NULL, &res, &tl), 0);
	CHECK_EQ_U64(res.warnings[IMPORT_W_BAD_NUMBER], 1);
	r = timeline_rank(tl, 0);
	CHECK_EQ_INT(r->nev, 1);
	CHECK_EQ_INT(r->ev[0].ts_ns, 9000000000000001500);
	CHECK_EQ_INT(tl_ev_hta_ts_us(&r->ev[0]), 9000000000000002);
	CHECK_EQ_INT(tl_ev_hta_end_us(&r->ev[0]), 9000000000000003);
	CHECK_EQ_INT((int)tl_hta_dur(r, &r->ev[0]), 1);
	timeline_free(tl);

	/* rounding turned on by a later row: the earlier ones are flagged too,
	 * and without rounding nothing is */
	wrap(buf, sizeof(buf),
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"e\",\"pid\":1,\"tid\":1,\"ts\":7,\"dur\":-2},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"f\",\"pid\":1,\"tid\":1,\"ts\":8,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"g\",\"pid\":1,\"tid\":1,\"ts\":10.5,\"dur\":-1}");
	CHECK_EQ_INT(IMP(buf, NULL, &res, &tl), 0);
	r = timeline_rank(tl, 0);
	CHECK_EQ_INT(r->nev, 3);
	CHECK(r->flags & TL_RANK_HTA_ROUNDING);
	CHECK(r->ev[0].flags & TL_EV_HTA_DUR_NEG);
	CHECK(!(r->ev[1].flags & TL_EV_HTA_DUR_NEG));
	CHECK(r->ev[2].flags & TL_EV_HTA_DUR_NEG);
	timeline_free(tl);
	wrap(buf, sizeof(buf),
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"e\",\"pid\":1,\"tid\":1,\"ts\":7,\"dur\":-2}");
	CHECK_EQ_INT(IMP(buf, NULL, &res, &tl), 0);
	r = timeline_rank(tl, 0);
	CHECK(!(r->flags & TL_RANK_HTA_ROUNDING));
	CHECK(!(r->ev[0].flags & TL_EV_HTA_DUR_NEG));
	timeline_free(tl);
}

/* The tokenizer's one-pass number parse (whole chunks, 64 bytes ahead)
 * against its generic byte-at-a-time path (1-byte chunks): the same
 * timeline and warnings for every number form, the same error, offset and
 * text for every malformed one. */
static void test_number_paths(void)
{
	static const char *const good[] = {
		"0", "-0", "7", "-12", "123456789012345", "1234567890123456",
		"12345678901234567", "4458676522690.655", "0.5", "-0.0015", "1.0000000000000001",
		"1.000000000000001", "99999999.99999999", "12345678901.123456789", "1e3",
		"1.5E-2", "-1.25e+2", "18446744073709551615", "9223372036854775807", "0.000",
	};
	static const char *const bad[] = {
		"01", "1.", "-", "1.2.3", "--1", "1e", "1-2", "-.5", "1.e5", "00", "-01.5",
		"1.5.", "12345678901234567.5.1",
	};
	size_t cap = 256 * 1024, n = 0, ng = sizeof(good) / sizeof(good[0]);
	char *buf = malloc(cap);
	struct import_result ra, rb;
	struct timeline *a, *b;

	n += (size_t)snprintf(buf + n, cap - n, "{\"traceEvents\": [\n");
	for (size_t i = 0; i < ng * ng; i++) {
		const char *x = good[i % ng], *y = good[i / ng];

		n += (size_t)snprintf(buf + n, cap - n,
				      "%s  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%zu\", "
				      "\"pid\": %s, \"tid\": %s, \"ts\": %s, \"dur\": %s, \"args\": "
				      "{\"correlation\": %s, \"stream\": %s, \"External id\": %s}}\n",
				      i ? "," : "", i % 7, x, y, x, y, y, x, x);
	}
	CHECK(n + 4 < cap);
	snprintf(buf + n, cap - n, "]}\n");
	for (int pass = 0; pass < 2; pass++) {
		struct import_opts o = { .rank = -1, .chunk_size = pass ? 1 : 0 };

		CHECK_EQ_INT(imp(buf, strlen(buf), &o, pass ? &rb : &ra, pass ? &b : &a), 0);
	}
	CHECK(ra.events_kept > 0);
	CHECK_EQ_U64(ra.warnings_total, rb.warnings_total);
	for (int w = 0; w < IMPORT_W_COUNT; w++)
		CHECK_EQ_U64(ra.warnings[w], rb.warnings[w]);
	CHECK(timeline_equal(a, b));
	timeline_free(a);
	timeline_free(b);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = (size_t)snprintf(buf, cap,
				     "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": %s, "
				     "\"name\": \"padding so that 64 bytes follow the number\"}]}",
				     bad[i]);
		CHECK_EQ_INT(imp(buf, n, &(struct import_opts){ .rank = -1 }, &ra, NULL), -EBADMSG);
		CHECK_EQ_INT(imp(buf, n, &(struct import_opts){ .rank = -1, .chunk_size = 1 }, &rb,
				 NULL),
			     -EBADMSG);
		CHECK_EQ_U64(ra.error_offset, rb.error_offset);
		CHECK_STREQ(ra.error_msg, rb.error_msg);
	}
	free(buf);
}

/* Compact JSON ("key":value,"key":...): the tokenizer's fast path goes
 * from a key's colon or a value's comma straight on, in both the spaced
 * (Kineto) and the compact form. Every document, valid or not, gives what
 * the byte-at-a-time path gives (1-byte chunks: no fast path). */
static void test_compact_json(void)
{
	static const char *const docs[] = {
		"{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
		"\"tid\":7,\"ts\":1.5,\"dur\":2,\"args\":{\"correlation\":3,\"stream\":7}},"
		"{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,"
		"\"tid\":2,\"ts\":1,\"dur\":1,\"args\":{\"correlation\":3}}]}",
		/* mixed: spaced and compact members in one object */
		"{\"traceEvents\": [{\"ph\":\"X\", \"ts\": 1,\"dur\":2, \"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1}]}",
		/* a value that stops the fast path right after the colon */
		"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":2,\"name\":\"a\\u00e9b\"}]}",
		"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":NaN,\"name\":\"a\"}]}",
		/* errors where the skipped state would have caught them */
		"{\"traceEvents\":[{\"ph\":,\"ts\":1}]}",
		"{\"traceEvents\":[{\"ph\":}]}",
		"{\"traceEvents\":[{\"ph\":\"X\",}]}",
		"{\"traceEvents\":[{\"ph\":\"X\",\"ts\"}]}",
		"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,,\"dur\":1}]}",
		"{\"traceEvents\":[{\"ph\"::\"X\"}]}",
		"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1}],\"x\":[1,\"a\",2]}",
		"{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"name\":\"a\"}",
	};

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct import_opts fast = { .rank = -1 }, slow = { .rank = -1, .chunk_size = 1 };
		struct import_result ra, rb;
		struct timeline *a, *b;
		int ea = imp(docs[i], strlen(docs[i]), &fast, &ra, &a);
		int eb = imp(docs[i], strlen(docs[i]), &slow, &rb, &b);

		CHECK_EQ_INT(ea, eb);
		CHECK_EQ_U64(ra.error_offset, rb.error_offset);
		CHECK_STREQ(ra.error_msg, rb.error_msg);
		CHECK_EQ_U64(ra.events_kept, rb.events_kept);
		CHECK_EQ_U64(ra.warnings_total, rb.warnings_total);
		CHECK(timeline_equal(a, b));
		if (i < 2) /* every row kept */
			CHECK_EQ_U64(ra.events_kept, (uint64_t)(i ? 1 : 2));
		/* valid: the first four and the one with a trailing array */
		CHECK_EQ_INT(ea, i < 4 || i == 10 ? 0 : -EBADMSG);
		timeline_free(a);
		timeline_free(b);
	}
}

static void test_strings(void)
{
	char buf[4096];
	struct import_result res;
	struct timeline *tl;
	struct import_opts o = { .rank = -1, .max_string = 16 };
	const struct tl_rank *r;
	size_t len;

	wrap(buf, sizeof(buf),
	     "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"bad\xff\xfe utf\xc3\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1,"
	     "\"args\":{\"stream\":7,\"correlation\":5,\"unknown\":{\"x\":[1,2,{\"y\":null}]}}},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a very long name that is truncated\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"\\ud83d\\ude00 \\u00e9\\ud800\",\"pid\":1,\"tid\":1,\"ts\":3,\"dur\":1}");
	CHECK_EQ_INT(IMP(buf, &o, &res, &tl), 0);
	CHECK_EQ_U64(res.warnings[IMPORT_W_BAD_UTF8], 2);
	CHECK_EQ_U64(res.warnings[IMPORT_W_STR_TRUNC], 1);
	r = timeline_rank(tl, 0);
	CHECK_EQ_INT(r->nev, 3);
	CHECK_STREQ(timeline_str(tl, r->ev[0].name, NULL), "bad\xef\xbf\xbd\xef\xbf\xbd utf\xef\xbf\xbd");
	timeline_str(tl, r->ev[1].name, &len);
	CHECK_EQ_INT(len, 16);
	CHECK_STREQ(timeline_str(tl, r->ev[2].name, NULL), "\xf0\x9f\x98\x80 \xc3\xa9\xef\xbf\xbd");
	CHECK(r->ev[0].flags & TL_EV_GPU_SIDE);
	CHECK_EQ_INT(r->ev[0].kind, TL_K_KERNEL);
	timeline_free(tl);
}

static void test_odd_events(void)
{
	char buf[4096];
	struct import_result res;
	struct timeline *tl;
	const struct tl_rank *r;

	wrap(buf, sizeof(buf),
	     "1, \"x\", [1], null,"
	     "{\"ph\":\"Q\",\"cat\":\"cpu_op\",\"name\":\"unk\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"dup\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"dup\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"Trace\",\"name\":\"t\",\"pid\":\"Spans\",\"tid\":\"x\",\"ts\":2,\"dur\":1},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"strpid\",\"pid\":\"Spans\",\"tid\":\"x\",\"ts\":2,\"dur\":1},"
	     "{\"ph\":\"i\",\"name\":\"inst\",\"pid\":1,\"tid\":1,\"ts\":2},"
	     "{\"ph\":\"s\",\"cat\":\"ac2g\",\"id\":9,\"pid\":1,\"tid\":1,\"ts\":2},"
	     "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"main\"}},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"nodur\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":null},"
	     "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"strts\",\"pid\":1,\"tid\":1,\"ts\":\"5\",\"dur\":1}");
	CHECK_EQ_INT(IMP(buf, NULL, &res, &tl), 0);
	CHECK_EQ_U64(res.events_raw, 14);
	CHECK_EQ_U64(res.warnings[IMPORT_W_UNKNOWN_PH], 1);
	CHECK_EQ_U64(res.warnings[IMPORT_W_DUPLICATE], 1);
	CHECK_EQ_U64(res.warnings[IMPORT_W_BAD_FIELD], 5); /* 4 non-objects + string ts */
	CHECK_EQ_U64(res.warnings[IMPORT_W_MISSING_TS], 1);
	r = timeline_rank(tl, 0);
	CHECK_EQ_INT(r->nev, 4); /* unk, dup, dup, strpid */
	CHECK_EQ_INT(r->ev[0].index, 4);
	CHECK(r->ev[0].flags & TL_EV_NOT_X);
	CHECK(r->ev[2].flags & TL_EV_DUPLICATE);
	CHECK(r->ev[3].flags & TL_EV_PID_STR);
	CHECK_STREQ(timeline_str(tl, (uint32_t)r->ev[3].pid, NULL), "Spans");
	CHECK_EQ_U64(res.flows, 1); /* counted, not kept */
	CHECK_EQ_INT(r->nmeta, 1);
	CHECK_EQ_INT(r->nthreads, 2);
	timeline_free(tl);
}

/* A trace of n kernel rows, ts i, args.correlation corr[i] (i when corr
 * is NULL) and args.queued i. Returns the text (free it), length in *len. */
static char *kernel_rows(int n, const int64_t *corr, size_t *len)
{
	size_t cap = (size_t)n * 160 + 64; /* a row: at most 141 bytes */
	char *doc = malloc(cap);

	if (!doc)
		abort();
	*len = (size_t)snprintf(doc, cap, "{\"traceEvents\": [");
	for (int i = 0; i < n; i++)
		*len += (size_t)snprintf(doc + *len, cap - *len,
					 "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\","
					 "\"pid\":0,\"tid\":7,\"ts\":%d,\"dur\":1,"
					 "\"args\":{\"correlation\":%lld,\"queued\":%d}}",
					 i ? "," : "", i, (long long)(corr ? corr[i] : i), i);
	*len += (size_t)snprintf(doc + *len, cap - *len, "]}");
	return doc;
}

/* Enough rows for the event and args arrays to move to huge pages with
 * room to spare (bigalloc_grow_huge): every row and its args kept in order
 * across the copies, the event array 2 MiB-aligned. */
static void test_big_arrays(void)
{
	enum { N = 120000 };
	size_t len;
	char *doc = kernel_rows(N, NULL, &len);
	struct import_result res;
	struct timeline *tl;
	const struct tl_rank *r;

	CHECK_EQ_INT(imp(doc, len, NULL, &res, &tl), 0);
	r = timeline_rank(tl, 0);
	CHECK_EQ_INT(r->nev, N);
	CHECK(((uintptr_t)r->ev & ((2u << 20) - 1)) == 0);
	CHECK_EQ_U64(res.warnings[IMPORT_W_DUPLICATE], 0);
	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];

		if (e->index != i || e->correlation != i || e->args == TL_NO_ARGS ||
		    r->args[e->args].queued != i) {
			CHECK(!"rows and args kept in order");
			break;
		}
	}
	timeline_free(tl);
	free(doc);
}

/* tl_sort_kp() against qsort() by (key, pos): inputs in order, locally
 * out of order (the insertion sort), far out of order with many equal
 * keys and keys across all of int64 (the radix sort after the insertion
 * sort gave up part way), reversed. */
static int kp_cmp(const void *a, const void *b)
{
	const struct tl_kp *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

static void check_sort_kp(uint32_t n, int mode, uint64_t seed)
{
	struct tl_kp *a = malloc((n + 1) * sizeof(*a)), *want = malloc((n + 1) * sizeof(*want));

	CHECK(a && want);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t x;
		int64_t k;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = seed >> 11;
		switch (mode) {
		case 0: k = i / 3; break; /* in order, ties */
		case 1: k = (int64_t)i * 10 - (int64_t)(x % 40); break; /* local */
		case 2: k = (int64_t)(x % 97) - 48; break; /* random, many ties */
		case 3: k = (int64_t)(seed ^ (seed << 17)); break; /* all of int64 */
		case 4: k = x % 2 ? INT64_MIN + (int64_t)(x % 5) : INT64_MAX - (int64_t)(x % 5); break;
		default: k = -(int64_t)i; break; /* reversed */
		}
		a[i] = want[i] = (struct tl_kp){ .key = k, .pos = i * 2 + 1 };
	}
	qsort(want, n, sizeof(*want), kp_cmp);
	CHECK_EQ_INT(tl_sort_kp(a, n), 0);
	for (uint32_t i = 0; i < n; i++)
		if (a[i].key != want[i].key || a[i].pos != want[i].pos) {
			fprintf(stderr, "n %u mode %d: pair %u differs\n", n, mode, i);
			CHECK(!"sorted by (key, pos)");
			break;
		}
	free(a);
	free(want);
}

static void test_sort_kp(void)
{
	static const uint32_t sizes[] = { 0, 1, 2, 33, 5000, 300000 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int mode = 0; mode <= 5; mode++)
			check_sort_kp(sizes[s], mode, 42 + s * 7 + (uint64_t)mode);
}

/* tl_rank_index() on a rank large enough for its per-thread sort to run
 * on a second thread: every index against a reference built here with
 * qsort(). Rows come from a few threads and streams, times with ties and
 * far out of order (the radix path), correlations repeated. */
static const struct tl_event *ix_rows;

static int ix_ts_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (ix_rows[i].ts_ns != ix_rows[j].ts_ns)
		return ix_rows[i].ts_ns < ix_rows[j].ts_ns ? -1 : 1;
	return (i > j) - (i < j);
}

static int ix_corr_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (ix_rows[i].correlation != ix_rows[j].correlation)
		return ix_rows[i].correlation < ix_rows[j].correlation ? -1 : 1;
	return (i > j) - (i < j);
}

/* The positions of rows that match, sorted by cmp; returns the count. */
static uint32_t ix_want(const struct tl_rank *r, uint32_t *out, int kind, int64_t a, int64_t b,
			int (*cmp)(const void *, const void *))
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];
		bool in = kind == 0 ? e->pid == a && e->tid == b :
			  kind == 1 ? (e->flags & TL_EV_GPU_SIDE) && e->stream == a && e->pid == b :
				      e->correlation != -1;

		if (in)
			out[n++] = i;
	}
	qsort(out, n, sizeof(*out), cmp);
	return n;
}

/* One index group (positions got[0..count)) against the reference. */
static uint32_t check_group(const struct tl_rank *r, uint32_t *want, int kind, int64_t a,
			    int64_t b, const uint32_t *got, uint32_t count)
{
	uint32_t n = ix_want(r, want, kind, a, b, ix_ts_cmp);

	CHECK_EQ_INT(count, n);
	CHECK(!memcmp(got, want, (size_t)n * sizeof(*want)));
	return n;
}

static void test_index_parallel(void)
{
	enum { N = 300000 };
	struct tl_rank *r = tl_rank_alloc(0);
	uint32_t *want = malloc(N * sizeof(*want)), total = 0, n;
	uint64_t seed = 7;

	CHECK(r && want);
	r->ev = calloc(N, sizeof(*r->ev));
	CHECK(r->ev != NULL);
	r->nev = N;
	for (uint32_t i = 0; i < N; i++) {
		struct tl_event *e = &r->ev[i];
		uint64_t x;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = seed >> 11;
		e->index = i;
		e->pid = 1 + (int64_t)(x % 2);
		e->tid = 10 + (int64_t)((x >> 3) % 3);
		e->stream = -1;
		e->correlation = x % 3 ? -1 : (int64_t)((x >> 8) % 50000);
		/* in order with local disorder, and every 7th row far back
		 * (an enclosing op written after its children) */
		e->ts_ns = (int64_t)i * 100 - (int64_t)((x >> 20) % 300) -
			   (i % 7 == 0 ? (int64_t)((x >> 30) % 100000) * 100 : 0);
		if ((x >> 40) % 4 == 0) {
			e->flags = TL_EV_GPU_SIDE | TL_EV_GPU_KERNEL_FILTER;
			e->stream = 7 + (int64_t)((x >> 42) % 2);
		}
	}
	ix_rows = r->ev;
	CHECK_EQ_INT(tl_rank_index(r), 0);
	CHECK(r->flags & TL_RANK_FINALIZED);
	for (uint32_t t = 0; t < r->nthreads; t++) {
		const struct tl_thread *th = &r->threads[t];

		total += check_group(r, want, 0, th->pid, th->tid, r->by_thread + th->first,
				     th->count);
	}
	CHECK_EQ_INT(r->nthreads, 6);
	CHECK_EQ_INT(total, N);
	total = 0;
	for (uint32_t k = 0; k < r->nstreams; k++) {
		const struct tl_stream *st = &r->streams[k];

		total += check_group(r, want, 1, st->stream, st->pid, r->by_stream + st->first,
				     st->count);
	}
	CHECK_EQ_INT(r->nstreams, 4);
	CHECK_EQ_INT(total, r->nby_stream);
	n = ix_want(r, want, 2, 0, 0, ix_corr_cmp);
	CHECK_EQ_INT(r->nby_corr, n);
	CHECK(!memcmp(r->by_corr, want, (size_t)n * sizeof(*want)));
	free(want);
	tl_rank_free(r);
}

/*
 * A large rank through the importer's finalize: the per-thread sort then
 * runs on a second thread beside the correlation link, on the rows before
 * the step filter drops some all through the file (CPU rows past the
 * cutoff, kernels launched past it), and is mapped to the kept rows. Every
 * thread group must be what sorting the kept rows gives.
 */
static void test_finalize_parallel(void)
{
	enum { N = 300000, CUT_US = 2000000 };
	size_t cap = (size_t)N * 200 + 512, len = 0;
	char *doc = malloc(cap);
	struct import_result res;
	struct timeline *tl;
	const struct tl_rank *r;
	uint32_t *want, total = 0;
	uint64_t seed = 11;

	CHECK(doc != NULL);
	len += (size_t)snprintf(doc + len, cap - len,
				"{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"user_annotation\","
				"\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":10,\"ts\":0,"
				"\"dur\":%d},{\"ph\":\"X\",\"cat\":\"user_annotation\","
				"\"name\":\"ProfilerStep#2\",\"pid\":1,\"tid\":10,\"ts\":%d,"
				"\"dur\":10}",
				CUT_US, CUT_US);
	for (int i = 0; i < N; i++) {
		uint64_t x;
		long ts;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = seed >> 17;
		/* mostly in time order, some far back; one in 6 past the cut */
		ts = (long)i * 5 - (long)(x % 40) - (i % 9 == 0 ? (long)((x >> 8) % 5000) : 0);
		if (i % 6 == 5)
			ts += CUT_US;
		if (ts < 1)
			ts = 1;
		if (i % 4 == 3) /* a kernel and its launch (a row before it) */
			len += (size_t)snprintf(
			    doc + len, cap - len,
			    ",{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
			    "\"pid\":%d,\"tid\":%d,\"ts\":%ld,\"dur\":1,\"args\":{\"correlation\":%d}}"
			    ",{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,"
			    "\"tid\":%d,\"ts\":%ld,\"dur\":2,\"args\":{\"stream\":%d,"
			    "\"correlation\":%d}}",
			    1 + i % 2, 10 + (int)((x >> 20) % 3), ts, i, 7 + (i / 4) % 2, ts + 3,
			    7 + (i / 4) % 2, i);
		else
			len += (size_t)snprintf(doc + len, cap - len,
						",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"op\","
						"\"pid\":%d,\"tid\":%d,\"ts\":%ld,\"dur\":1}",
						1 + i % 2, 10 + (int)((x >> 20) % 3), ts);
		if (i % 1000 == 0) /* a thread whose rows are all cut */
			len += (size_t)snprintf(doc + len, cap - len,
						",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"late\","
						"\"pid\":3,\"tid\":99,\"ts\":%ld,\"dur\":1}",
						(long)CUT_US + i);
	}
	len += (size_t)snprintf(doc + len, cap - len, "]}");
	CHECK(len < cap);
	CHECK_EQ_INT(imp(doc, len, NULL, &res, &tl), 0);
	r = timeline_rank(tl, 0);
	CHECK(r->flags & TL_RANK_STEP_FILTERED);
	CHECK(r->nev >= 1u << 18 && r->nev < r->raw_events - N / 8); /* big, and cut */
	want = malloc((size_t)r->nev * sizeof(*want));
	CHECK(want != NULL);
	ix_rows = r->ev;
	for (uint32_t t = 0; t < r->nthreads; t++) {
		const struct tl_thread *th = &r->threads[t];

		total += check_group(r, want, 0, th->pid, th->tid, r->by_thread + th->first,
				     th->count);
	}
	CHECK_EQ_INT(r->nthreads, 8); /* 2 pids x 3 tids, 2 streams (not pid 3's) */
	CHECK_EQ_INT(total, r->nev);
	free(want);
	free(doc);
	timeline_free(tl);
}

/* tl_rank_mark_duplicates() against a reference by sorting, on rows with
 * exact copies, copies differing in one compared field, and values drawn
 * from small ranges (so unrelated rows collide often): large enough for
 * many hash partitions, and small. */
static const struct tl_event *dup_rows;

/* the fields tl_rank_mark_duplicates() compares */
static int dup_key_cmp(const struct tl_event *x, const struct tl_event *y)
{
	const uint32_t fm = TL_EV_PID_STR | TL_EV_TID_STR;
	int64_t kx[] = {x->ts_ns, x->dur_ns, x->name, x->cat, x->pid, x->tid, x->stream,
			x->correlation, x->external_id, x->flags & fm};
	int64_t ky[] = {y->ts_ns, y->dur_ns, y->name, y->cat, y->pid, y->tid, y->stream,
			y->correlation, y->external_id, y->flags & fm};

	for (size_t i = 0; i < sizeof(kx) / sizeof(kx[0]); i++)
		if (kx[i] != ky[i])
			return kx[i] < ky[i] ? -1 : 1;
	return 0;
}

static int dup_cmp(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	int c = dup_key_cmp(&dup_rows[i], &dup_rows[j]);

	return c ? c : (i > j) - (i < j);
}

static void check_dups(uint32_t n, uint64_t seed)
{
	struct tl_rank *r = tl_rank_alloc(0);
	uint32_t *ord = malloc((n + 1) * sizeof(*ord));
	unsigned char *want = calloc(n + 1, 1);
	int64_t nwant = 0, got;

	CHECK(r && ord && want);
	r->ev = calloc(n + 1, sizeof(*r->ev));
	CHECK(r->ev != NULL);
	r->nev = n;
	for (uint32_t i = 0; i < n; i++) {
		struct tl_event *e = &r->ev[i];
		uint64_t x;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		x = seed >> 33;
		if (i > 10 && x % 4 == 0) { /* a copy of an earlier row, maybe altered */
			*e = r->ev[(x >> 3) % i];
			e->index = i;
			e->flags &= ~TL_EV_DUPLICATE;
			switch ((x >> 20) % 14) {
			case 0: e->ts_ns++; break;
			case 1: e->dur_ns--; break;
			case 2: e->name ^= 1; break;
			case 3: e->cat ^= 1; break;
			case 4: e->pid++; break;
			case 5: e->tid++; break;
			case 6: e->stream++; break;
			case 7: e->correlation++; break;
			case 8: e->external_id++; break;
			case 9: e->flags ^= TL_EV_PID_STR; break;
			case 10: e->flags ^= TL_EV_TID_STR; break;
			case 11: e->flags ^= TL_EV_NOT_X; break; /* not compared */
			default: break; /* exact */
			}
			continue;
		}
		e->ts_ns = (int64_t)(x % 50000) * 1000;
		e->dur_ns = (int64_t)((x >> 16) % 3);
		e->name = (uint32_t)((x >> 18) % 4);
		e->cat = (uint32_t)((x >> 20) % 2);
		e->pid = (int64_t)((x >> 21) % 2);
		e->tid = (int64_t)((x >> 22) % 2);
		e->stream = (x >> 23) % 2 ? -1 : 7;
		e->correlation = (x >> 24) % 2 ? -1 : (int64_t)(x % 5);
		e->external_id = -1;
		e->flags = (x >> 25) % 3 == 0 ? TL_EV_PID_STR : 0;
		e->index = i;
	}
	for (uint32_t i = 0; i < n; i++)
		ord[i] = i;
	dup_rows = r->ev;
	qsort(ord, n, sizeof(*ord), dup_cmp);
	/* sorted by (compared fields, position): a row equal to the one
	 * before it in that order has an earlier identical row */
	for (uint32_t k = 1; k < n; k++)
		if (!dup_key_cmp(&r->ev[ord[k - 1]], &r->ev[ord[k]])) {
			want[ord[k]] = 1;
			nwant++;
		}
	/* one thread, two threads (rows and partitions split), and the
	 * choice the importer makes */
	for (int nt = 0; nt <= 2; nt++) {
		for (uint32_t i = 0; i < n; i++)
			r->ev[i].flags &= ~TL_EV_DUPLICATE;
		got = nt ? tl_rank_mark_duplicates_n(r, nt) : tl_rank_mark_duplicates(r);
		CHECK_EQ_INT(got, nwant);
		for (uint32_t i = 0; i < n; i++)
			if (!!(r->ev[i].flags & TL_EV_DUPLICATE) != want[i]) {
				CHECK(!"duplicate flag as the reference says");
				break;
			}
	}
	free(ord);
	free(want);
	tl_rank_free(r);
}

static void test_duplicates_many(void)
{
	check_dups(0, 1);
	check_dups(1, 2);
	check_dups(2, 3);
	check_dups(3, 6);
	check_dups(1000, 4);
	check_dups(300000, 5); /* 64 partitions */
}

/* tl_rank_corr() against a count over all events, for dense ids (the
 * direct table), sparse ones (buckets of several ids, searched), ids in
 * clusters (several keys and repeats per bucket), negative and extreme
 * ids, repeats, and ids that are absent or just outside the range. */
static void check_corr(const int64_t *ids, int n, bool dense)
{
	size_t len;
	char *doc = kernel_rows(n, ids, &len);
	struct timeline *tl;
	struct import_result res;
	const struct tl_rank *r;

	CHECK_EQ_INT(imp(doc, len, NULL, &res, &tl), 0);
	r = timeline_rank(tl, 0);
	CHECK(r->corr_start != NULL);
	CHECK_EQ_INT(r->corr_shift == 0, dense);
	CHECK(r->corr_span <= 4u * r->nby_corr + 65);
	for (int i = -1; i <= n; i++) {
		int64_t probe[3];

		if (i < 0 || i == n) {
			probe[0] = INT64_MIN;
			probe[1] = INT64_MAX;
			probe[2] = 0;
		} else {
			probe[0] = ids[i];
			probe[1] = ids[i] == INT64_MAX ? 0 : ids[i] + 1;
			probe[2] = ids[i] == INT64_MIN ? 0 : ids[i] - 1;
		}
		for (int p = 0; p < 3; p++) {
			uint32_t want = 0, first = 0, got = tl_rank_corr(r, probe[p], &first);

			for (uint32_t e = 0; e < r->nev; e++)
				want += r->ev[e].correlation == probe[p];
			CHECK_EQ_INT(got, want);
			for (uint32_t k = 0; k < got; k++)
				CHECK(r->ev[r->by_corr[first + k]].correlation == probe[p]);
		}
	}
	timeline_free(tl);
	free(doc);
}

static void test_corr_lookup(void)
{
	int64_t dense[300], sparse[300], clustered[300];
	static const int64_t extreme[] = { INT64_MIN, INT64_MAX, -5, 0, 7, INT64_MIN + 1,
					   INT64_MAX - 1, 7, -2 };
	static const int64_t neg[] = { -10, -9, -9, -7, -3, -2 };

	for (int i = 0; i < 300; i++) {
		dense[i] = 21800 + (i * 7) % 290; /* repeats, gaps */
		sparse[i] = (int64_t)i * 1000003;
		clustered[i] = (int64_t)(i / 20) * 1000000 + (i % 20) * 3 + (i % 7 == 0);
	}
	check_corr(dense, 300, true);
	check_corr(sparse, 300, false);
	check_corr(clustered, 300, false);
	check_corr(extreme, (int)(sizeof(extreme) / sizeof(extreme[0])), false);
	check_corr(neg, (int)(sizeof(neg) / sizeof(neg[0])), true);
}

static void test_rank_and_caps(void)
{
	struct import_result res;
	struct timeline *tl;
	struct import_opts o = { .rank = 5 };
	const char *a = "{\"distributedInfo\": {\"rank\": 3}, \"traceEvents\": []}";
	const char *b = "{\"traceEvents\": []}";
	char big[600];

	timeline_new(&tl);
	CHECK_EQ_INT(timeline_import_buf(a, strlen(a), &o, tl, &res), 0);
	CHECK_EQ_INT(res.rank, 3);
	CHECK_EQ_INT(timeline_import_buf(b, strlen(b), &o, tl, &res), 0);
	CHECK_EQ_INT(res.rank, 5);
	CHECK_EQ_INT(timeline_import_buf(a, strlen(a), &o, tl, &res), -EEXIST);
	CHECK_EQ_INT(timeline_nranks(tl), 2);
	timeline_free(tl);

	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"a\":1}", 7);
	big[sizeof(big) - 1] = '\0';
	o.max_bytes = 100;
	CHECK_EQ_INT(IMP(big, &o, &res, NULL), -EFBIG);
	CHECK(strstr(res.error_msg, "import cap") != NULL);
}

struct reserve_log {
	uint64_t last, calls, refuse_over;
};

static int reserve_cb(void *arg, uint64_t bytes, char *msg, size_t msg_len)
{
	struct reserve_log *l = arg;

	l->calls++;
	if (l->refuse_over && bytes > l->refuse_over) {
		snprintf(msg, msg_len, "budget gone");
		return -ENOSPC;
	}
	CHECK(bytes > l->last);
	l->last = bytes;
	return 0;
}

/* n events, each with its own name when distinct (strings, not rows). */
static char *many_events(uint32_t n, bool distinct, bool keep, size_t *len)
{
	size_t cap = (size_t)n * 128 + 64, off = 0;
	char *b = malloc(cap);

	off += (size_t)snprintf(b + off, cap - off, "{\"traceEvents\": [");
	for (uint32_t i = 0; i < n; i++)
		off += (size_t)snprintf(b + off, cap - off,
					"%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%u\",\"pid\":1,"
					"\"tid\":1%s}",
					i ? "," : "", distinct ? i : 0u, keep ? ",\"ts\":1,\"dur\":1" : "");
	off += (size_t)snprintf(b + off, cap - off, "]}");
	*len = off;
	return b;
}

static void test_memory_limit(void)
{
	struct import_result res;
	struct reserve_log log = { 0 };
	struct import_opts o = { .max_mem = 1u << 20, .max_mem_name = "test.max_mem",
				 .mem_reserve = reserve_cb, .mem_arg = &log };
	size_t len;
	char *b;

	/* rows: 100 000 kept events need ~10 MB, over 1 MiB: refused while
	 * read, well before the end of the input */
	b = many_events(100000, false, true, &len);
	CHECK_EQ_INT(imp(b, len, &o, &res, NULL), -EFBIG);
	CHECK(strstr(res.error_msg, "test.max_mem") != NULL);
	CHECK(res.error_offset < len / 4);
	CHECK(log.calls > 0 && log.last <= o.max_mem);
	free(b);
	/* strings of events that are never kept (no ts) count too */
	b = many_events(100000, true, false, &len);
	memset(&log, 0, sizeof(log));
	CHECK_EQ_INT(imp(b, len, &o, &res, NULL), -EFBIG);
	CHECK(strstr(res.error_msg, "test.max_mem") != NULL);
	free(b);
	/* the same trace within the limit imports */
	b = many_events(2000, false, true, &len);
	memset(&log, 0, sizeof(log));
	CHECK_EQ_INT(imp(b, len, &o, &res, NULL), 0);
	CHECK_EQ_INT(res.events_kept, 2000);
	/* a reservation refused fails the import with its message */
	memset(&log, 0, sizeof(log));
	log.refuse_over = 1;
	CHECK_EQ_INT(imp(b, len, &o, &res, NULL), -EFBIG);
	CHECK(strstr(res.error_msg, "budget gone") != NULL);
	free(b);
}

static void test_gzip(void)
{
	const char *doc = "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\","
			  "\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1}]}";
	unsigned char gz[512];
	z_stream zs = { 0 };
	struct import_result res;
	size_t n;

	deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = (unsigned char *)doc;
	zs.avail_in = (uInt)strlen(doc);
	zs.next_out = gz;
	zs.avail_out = sizeof(gz);
	deflate(&zs, Z_FINISH);
	n = sizeof(gz) - zs.avail_out;
	deflateEnd(&zs);
	CHECK_EQ_INT(imp((char *)gz, n, NULL, &res, NULL), 0);
	CHECK(res.gzip);
	CHECK_EQ_U64(res.events_kept, 1);
	for (size_t cut = 2; cut < n; cut += 7) {
		CHECK_EQ_INT(imp((char *)gz, cut, NULL, &res, NULL), -EBADMSG);
		CHECK(res.error_msg[0] != '\0');
	}
	CHECK_EQ_INT(imp((char *)gz, n - 1, NULL, &res, NULL), -EBADMSG);
	CHECK(strstr(res.error_msg, "truncated gzip") != NULL);
	gz[n / 2] ^= 0x55; /* corrupt the deflate data or the CRC */
	CHECK(imp((char *)gz, n, NULL, &res, NULL) < 0);
	CHECK(res.error_msg[0] != '\0');
}

static void test_decode_hostile(void)
{
	const char *doc = "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\","
			  "\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1,\"args\":{\"stream\":7,"
			  "\"correlation\":3,\"grid\":[1,2,3]}},{\"ph\":\"X\",\"cat\":\"cuda_runtime\","
			  "\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1,"
			  "\"args\":{\"correlation\":3}},{\"ph\":\"f\",\"cat\":\"ac2g\",\"id\":3,"
			  "\"pid\":0,\"tid\":7,\"ts\":1,\"bp\":\"e\"}], \"deviceProperties\":[{\"id\":0,"
			  "\"name\":\"gpu\"}]}";
	struct timeline *tl, *d;
	void *enc;
	size_t len;
	char why[128];
	uint8_t *copy;
	unsigned seed = 1;
	const struct tl_rank *r;

	CHECK_EQ_INT(IMP(doc, NULL, NULL, &tl), 0);
	r = timeline_rank(tl, 0);
	CHECK_EQ_INT(r->ev[0].link, 1);
	CHECK_EQ_INT(r->ev[1].link, 0);
	CHECK_EQ_INT(tl_ev_index_corr(&r->ev[1]), 0); /* partner is event 0: HTA's quirk */
	CHECK(r->ev[1].flags & TL_EV_LAUNCH_STATS);
	CHECK_EQ_INT(tl_event_args(r, &r->ev[0])->grid[2], 3);
	CHECK_EQ_INT(r->ndevices, 1);
	CHECK_EQ_INT(timeline_encode(tl, &enc, &len), 0);
	copy = malloc(len);
	for (size_t cut = 0; cut < len; cut++) {
		CHECK(timeline_decode(enc, cut, &d, why, sizeof(why)) < 0);
	}
	for (int i = 0; i < 20000; i++) {
		memcpy(copy, enc, len);
		for (int k = 0; k < 1 + i % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[(seed >> 8) % len] ^= (uint8_t)(seed >> 20) | 1;
		}
		d = NULL;
		if (timeline_decode(copy, len, &d, why, sizeof(why)) == 0)
			timeline_free(d);
	}
	CHECK_EQ_INT(timeline_decode(enc, len, &d, why, sizeof(why)), 0);
	CHECK(timeline_equal(tl, d));
	timeline_free(d);

	/* The kernel's index_correlation (stream 7, correlation 3, External
	 * id -1, then 1) is kept in 32 bits: -1, or an index below
	 * UINT32_MAX. Anything else is refused, not truncated. */
	{
		static const int64_t key[4] = { 7, 3, -1, 1 };
		uint8_t pat[32];
		size_t at = len;

		for (int i = 0; i < 4; i++)
			for (int b = 0; b < 8; b++)
				pat[8 * i + b] = (uint8_t)((uint64_t)key[i] >> (8 * b));
		for (size_t i = 0; i + sizeof(pat) <= len && at == len; i++)
			if (!memcmp((uint8_t *)enc + i, pat, sizeof(pat)))
				at = i + 24;
		CHECK(at < len);
		for (int k = 0; k < 5; k++) {
			static const int64_t v[5] = { -2, (int64_t)UINT32_MAX, 1ll << 32, -1, 5 };

			memcpy(copy, enc, len);
			for (int b = 0; b < 8; b++)
				copy[at + (size_t)b] = (uint8_t)((uint64_t)v[k] >> (8 * b));
			d = NULL;
			CHECK_EQ_INT(timeline_decode(copy, len, &d, why, sizeof(why)) == 0, k >= 3);
			if (d)
				CHECK_EQ_INT(tl_ev_index_corr(&timeline_rank(d, 0)->ev[0]), v[k]);
			timeline_free(d);
		}
	}
	free(copy);
	free(enc);
	timeline_free(tl);
}

/* Little-endian u32 at p (the timeline encoding's byte order). */
static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Captures written before flows were dropped hold a flow section: decode
 * checks and skips it. The encoding of a small trace (flow count 0) gets
 * two flow records spliced in where the old encoder put them (after the
 * args), as that encoder wrote them; it decodes to the same timeline. A
 * record with a string id out of range, or one cut short, is refused.
 */
static void test_decode_old_flows(void)
{
	const char *doc = "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\","
			  "\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":1,\"args\":{\"stream\":7,"
			  "\"correlation\":3,\"queued\":0}},{\"ph\":\"s\",\"cat\":\"ac2g\",\"id\":3,"
			  "\"pid\":1,\"tid\":1,\"ts\":0}]}";
	struct timeline *tl, *d = NULL;
	uint8_t *enc, *old, *p;
	size_t len, at, hdr;
	uint32_t nstrs, nev, nargs;
	char why[128];
	struct import_result res;

	CHECK_EQ_INT(IMP(doc, NULL, &res, &tl), 0);
	CHECK_EQ_U64(res.flows, 1);
	CHECK_EQ_INT(timeline_encode(tl, (void **)&enc, &len), 0);
	/* magic, version, nstrs, nranks; the strings; the rank header */
	nstrs = le32(enc + 8);
	at = 16;
	for (uint32_t i = 1; i < nstrs; i++)
		at += 4 + le32(enc + at);
	hdr = at;
	CHECK_EQ_INT(le32(enc + hdr + 68), 0); /* flow count */
	nev = le32(enc + hdr + 60);
	nargs = le32(enc + hdr + 64);
	CHECK_EQ_INT(nev, 1);
	CHECK_EQ_INT(nargs, 1);
	at = hdr + 80 + (size_t)nev * TL_ENC_EVENT + (size_t)nargs * TL_ENC_ARGS;
	old = calloc(1, len + 2 * TL_ENC_FLOW);
	memcpy(old, enc, at);
	memcpy(old + at + 2 * TL_ENC_FLOW, enc + at, len - at);
	old[hdr + 68] = 2;
	for (int i = 0; i < 2; i++) {
		p = old + at + (size_t)i * TL_ENC_FLOW;
		p[0] = 3; /* id; ts, pid, tid, index 0 */
		p[36] = 0; /* cat: string id 0 */
		p[40] = i ? 'f' : 's';
		p[41] = (uint8_t)i; /* bp "e" */
	}
	CHECK_EQ_INT(timeline_decode(old, len + 2 * TL_ENC_FLOW, &d, why, sizeof(why)), 0);
	CHECK(d && timeline_equal(tl, d));
	timeline_free(d);
	d = NULL;
	CHECK(timeline_decode(old, at + TL_ENC_FLOW + 10, &d, why, sizeof(why)) < 0);
	old[at + 36] = 0xff; /* cat out of range */
	CHECK(timeline_decode(old, len + 2 * TL_ENC_FLOW, &d, why, sizeof(why)) < 0);
	CHECK(!strncmp(why, "bad flow", 8));
	free(old);
	free(enc);
	timeline_free(tl);
}

/*
 * The step filter's tail (version 2): the rows of the last step that the
 * communication metrics read survive encode/decode; a tail whose event
 * points past the tail's args, a tail on a rank the filter did not run on,
 * truncations and flipped bytes are refused or decode to something valid.
 */
static void test_decode_tail(void)
{
	const char *doc = "{\"traceEvents\": ["
			  "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\","
			  "\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":100},"
			  "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\","
			  "\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":100},"
			  "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
			  "\"pid\":1,\"tid\":1,\"ts\":110,\"dur\":5,\"args\":{\"correlation\":3}},"
			  "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,"
			  "\"ts\":120,\"dur\":10,\"args\":{\"stream\":7,\"correlation\":3,"
			  "\"grid\":[1,2,3]}}]}";
	struct timeline *tl, *d = NULL;
	const struct tl_rank *r;
	uint8_t *enc, *copy;
	size_t len, tail_at;
	unsigned seed = 7;
	char why[128];

	CHECK_EQ_INT(IMP(doc, NULL, NULL, &tl), 0);
	r = timeline_rank(tl, 0);
	CHECK(r->flags & TL_RANK_STEP_FILTERED && r->flags & TL_RANK_TAIL_KEPT);
	/* step 2's annotation and kernel, not its launch */
	CHECK_EQ_INT(r->ntail, 2);
	CHECK_EQ_INT(r->ntail_args, 1);
	CHECK_EQ_INT(r->tail[1].kind, TL_K_KERNEL);
	CHECK_EQ_INT(r->tail_args[r->tail[1].args].grid[2], 3);
	CHECK_EQ_INT(timeline_encode(tl, (void **)&enc, &len), 0);
	CHECK_EQ_INT(timeline_decode(enc, len, &d, why, sizeof(why)), 0);
	CHECK(d && timeline_equal(tl, d));
	timeline_free(d);
	/* one rank: the tail is the end; its second event's args index */
	tail_at = len - (8 + 2 * (size_t)TL_ENC_EVENT + TL_ENC_ARGS);
	copy = malloc(len);
	memcpy(copy, enc, len);
	copy[tail_at + 8 + TL_ENC_EVENT + 92] = 1; /* args 1 of 1 */
	d = NULL;
	CHECK(timeline_decode(copy, len, &d, why, sizeof(why)) < 0);
	CHECK(!strncmp(why, "bad tail event", 14));
	{ /* the rank header's flags without TL_RANK_STEP_FILTERED */
		size_t at = 16;

		for (uint32_t i = 1; i < le32(enc + 8); i++)
			at += 4 + le32(enc + at);
		memcpy(copy, enc, len);
		CHECK(copy[at + 4] & TL_RANK_STEP_FILTERED);
		copy[at + 4] &= (uint8_t)~TL_RANK_STEP_FILTERED;
		CHECK(timeline_decode(copy, len, &d, why, sizeof(why)) < 0);
	}
	for (size_t cut = 0; cut < len; cut++)
		CHECK(timeline_decode(enc, cut, &d, why, sizeof(why)) < 0);
	for (int i = 0; i < 5000; i++) {
		memcpy(copy, enc, len);
		for (int k = 0; k < 1 + i % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[tail_at + (seed >> 8) % (len - tail_at)] ^= (uint8_t)(seed >> 20) | 1;
		}
		d = NULL;
		if (timeline_decode(copy, len, &d, why, sizeof(why)) == 0)
			timeline_free(d);
	}
	free(copy);
	free(enc);
	timeline_free(tl);
}

int main(void)
{
	RUN(test_decode_tail);
	RUN(test_empty_and_garbage);
	RUN(test_decode_old_flows);
	RUN(test_deep_nesting);
	RUN(test_numbers);
	RUN(test_number_paths);
	RUN(test_strings);
	RUN(test_compact_json);
	RUN(test_odd_events);
	RUN(test_corr_lookup);
	RUN(test_duplicates_many);
	RUN(test_sort_kp);
	RUN(test_index_parallel);
	RUN(test_finalize_parallel);
	RUN(test_big_arrays);
	RUN(test_rank_and_caps);
	RUN(test_memory_limit);
	RUN(test_gzip);
	RUN(test_decode_hostile);
	return test_summary();
}
