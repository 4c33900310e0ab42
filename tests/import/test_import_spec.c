// SPDX-License-Identifier: MIT
/*
 * Speculative piece parses (daemon/import/kineto/kineto_spec.c): the inflate
 * thread parses whole events of the pieces it inflates, the importer's
 * thread adopts them. Whatever the document holds, an import where the
 * thread tries every piece (import_opts.spec = 2) must give exactly what
 * the serial import gives: the same timeline (string ids included), the
 * same counts and warnings of each kind, the same error at the same
 * offset. The documents below are built to trip it up: "}, {" inside
 * strings and nested args objects (false element boundaries), escapes and
 * invalid UTF-8, string flow ids and pids, metadata, bad numbers, strings
 * over max_string, elements that are not objects, a bare top-level array,
 * arrays of event-like objects after traceEvents, the max_events cap,
 * nesting past max_depth, JSON errors and truncated gzip; gzip and plain
 * JSON (which the second thread copies into the pipe's chunks).
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "test.h"
#include "import_test.h"
#include "import/import.h"
#include "timeline/timeline.h"

struct buf {
	char *s;
	size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if ((size_t)k < b->cap - b->n)
			break;
		b->cap = b->cap * 2 + (size_t)k + 1;
		b->s = realloc(b->s, b->cap);
	}
	b->n += (size_t)k;
}

/* One event of kind i % 12, varied by seed. */
static void event(struct buf *b, int i, unsigned seed)
{
	int ts = 1000 + i * 3, dur = (int)(seed >> 16) % 50 + 1, corr = i / 2 + 1;

	switch (i % 12) {
	case 0: /* kernel, Kineto's layout */
		put(b, "{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%u\", \"pid\": 0, "
		       "\"tid\": 7,\n    \"ts\": %d.%03u, \"dur\": %d,\n    \"args\": {\n      "
		       "\"External id\": %d, \"queued\": 0, \"device\": 0, \"stream\": 7, "
		       "\"correlation\": %d, \"grid\": [%u, 1, 1], \"block\": [256, 1, 1], "
		       "\"est. achieved occupancy %%\": 100\n    }\n  }",
		  seed % 13, ts, seed % 1000, dur, i, corr, seed % 64 + 1);
		break;
	case 1: /* false boundaries and escapes inside strings */
		put(b, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op}, {%u},\\n  {\\\"q\\\" "
		       "\\u00e9\", \"pid\": 1, \"tid\": 11, \"ts\": %d, \"dur\": %d, "
		       "\"args\": {\"External id\": %d, \"s\": \"}, {\"}}",
		  seed % 7, ts, dur, i);
		break;
	case 2: /* flows, now and then with a string id */
		if (seed % 29 == 0)
			put(b, "{\"ph\": \"s\", \"id\": \"0x%x\", \"pid\": 1, \"tid\": 11, \"ts\": %d, "
			       "\"cat\": \"ac2g\", \"name\": \"ac2g\"}",
			  seed % 4096, ts);
		else
			put(b, "{\"ph\": \"%s\", \"id\": %d, \"pid\": 1, \"tid\": 11, \"ts\": %d, "
			       "\"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}",
			  seed % 2 ? "s" : "f", corr, ts);
		break;
	case 3: /* metadata */
		put(b, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %u, "
		       "\"args\": {\"name\": \"thread %u\"}}",
		  seed % 5, seed % 5);
		break;
	case 4: /* nested args: "}, {" between objects inside an event */
		put(b, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"nested\", \"pid\": 1, "
		       "\"tid\": 11, \"ts\": %d, \"dur\": %d, \"args\": {\"a\": {\"x\": 1}, "
		       "\"b\": [{\"y\": 2}, {\"z\": [3, {\"w\": 4}]}], \"Collective name\": "
		       "\"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": %u}}",
		  ts, dur, seed % 100000);
		break;
	case 5: /* fields of the wrong type, string pid */
		put(b, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"bad\", "
		       "\"pid\": \"proc %u\", \"tid\": 11, \"ts\": %s, \"dur\": %s}",
		  seed % 3, seed % 5 ? "\"abc\"" : "12", seed % 7 ? "null" : "1e999");
		break;
	case 6: /* negative duration, float everything */
		put(b, "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", "
		       "\"pid\": 0, \"tid\": 7, \"ts\": %d.5, \"dur\": -%d.25, \"args\": "
		       "{\"stream\": 7, \"correlation\": %d, \"bytes\": %u}}",
		  ts, dur, corr, seed);
		break;
	case 7: /* invalid UTF-8 */
		put(b, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bad \xff\xfe utf8 %u\", "
		       "\"pid\": 1, \"tid\": 11, \"ts\": %d, \"dur\": %d}",
		  seed % 3, ts, dur);
		break;
	case 8: /* a name over max_string (200) */
		put(b, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%0300u\", \"pid\": 1, "
		       "\"tid\": 11, \"ts\": %d, \"dur\": %d}",
		  seed % 11, ts, dur);
		break;
	case 9: /* elements that are not objects */
		put(b, seed % 2 ? "42" : "[1, {\"ph\": \"X\"}]");
		break;
	case 10: /* unknown phase, duplicate keys, a sync */
		put(b, "{\"ph\": \"Q\", \"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": "
		       "\"Event Sync\", \"pid\": 0, \"tid\": 7, \"ts\": %d, \"dur\": %d, "
		       "\"args\": {\"stream\": 7, \"correlation\": %d, "
		       "\"wait_on_cuda_event_record_corr_id\": %d}}",
		  ts, dur, corr, corr - 1);
		break;
	default: /* runtime call */
		put(b, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
		       "\"pid\": 1, \"tid\": 11, \"ts\": %d, \"dur\": %d, \"args\": "
		       "{\"External id\": %d, \"cbid\": 211, \"correlation\": %d}}",
		  ts, dur, i, corr);
		break;
	}
}

enum layout { L_OBJECT, L_BARE, L_AFTER, L_PLAIN };

/* A document of n elements; L_PLAIN: only kernels and runtime calls. */
static struct buf make(int n, enum layout lay)
{
	struct buf b = { 0 };
	unsigned seed = 11;

	put(&b, lay == L_BARE ? "[\n" : "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n  ");
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		if (i)
			put(&b, ",\n  ");
		event(&b, lay == L_PLAIN ? (i % 2 ? 0 : 11) : i, seed >> 4);
	}
	if (lay == L_BARE) {
		put(&b, "\n]\n");
		return b;
	}
	put(&b, "\n  ]");
	if (lay == L_AFTER) { /* event-like objects outside traceEvents */
		put(&b, ",\n  \"other\": [\n  ");
		for (int i = 0; i < n / 4; i++) {
			seed = seed * 1103515245u + 12345u;
			put(&b, i ? ",\n  " : "");
			event(&b, i, seed >> 4);
		}
		put(&b, "\n  ]");
	}
	put(&b, ",\n  \"traceName\": \"spec\", \"deviceProperties\": [{\"id\": 0, "
		"\"name\": \"gpu\"}]\n}\n");
	return b;
}

struct run {
	int err;
	struct import_result res;
	struct timeline *tl;
};

static void run(const unsigned char *g, size_t n, struct import_opts o, bool serial,
		uint8_t spec, struct run *r)
{
	o.rank = -1;
	o.no_inflate_thread = serial;
	o.spec = spec;
	timeline_new(&r->tl);
	r->err = timeline_import_buf(g, n, &o, r->tl, &r->res);
}

/* Serial, pipelined without speculation and speculating on every piece:
 * one outcome. Returns the bytes the speculative run adopted. */
static uint64_t same(const unsigned char *g, size_t n, struct import_opts o)
{
	struct run r[3];
	uint64_t spec;

	run(g, n, o, true, 1, &r[0]);
	run(g, n, o, false, 1, &r[1]);
	run(g, n, o, false, 2, &r[2]);
	for (int i = 1; i < 3; i++) {
		CHECK_EQ_INT(r[i].err, r[0].err);
		CHECK_EQ_U64(r[i].res.error_offset, r[0].res.error_offset);
		CHECK_STREQ(r[i].res.error_msg, r[0].res.error_msg);
		CHECK_EQ_U64(r[i].res.bytes_json, r[0].res.bytes_json);
		CHECK_EQ_U64(r[i].res.events_raw, r[0].res.events_raw);
		CHECK_EQ_U64(r[i].res.events_kept, r[0].res.events_kept);
		CHECK_EQ_U64(r[i].res.flows, r[0].res.flows);
		for (int w = 0; w < IMPORT_W_COUNT; w++)
			CHECK_EQ_U64(r[i].res.warnings[w], r[0].res.warnings[w]);
		CHECK_EQ_U64(r[i].res.warnings_total, r[0].res.warnings_total);
		CHECK(timeline_equal(r[i].tl, r[0].tl));
	}
	CHECK_EQ_U64(r[0].res.bytes_spec, 0);
	CHECK_EQ_U64(r[1].res.bytes_spec, 0);
	spec = r[2].res.bytes_spec;
	CHECK(spec <= r[2].res.bytes_json);
	for (int i = 0; i < 3; i++)
		timeline_free(r[i].tl);
	return spec;
}

/* Every layout, whole: the thread's segments are taken (most pieces) and
 * the result is the serial one. */
static void test_layouts(void)
{
	static const enum layout lays[] = { L_PLAIN, L_OBJECT, L_BARE, L_AFTER };

	for (size_t l = 0; l < sizeof(lays) / sizeof(lays[0]); l++) {
		struct buf d = make(30000, lays[l]);
		unsigned char *g;
		size_t n = gzip_members(d.s, d.n, 1, &g);
		struct import_opts o = { .max_string = 200 };
		uint64_t spec;

		CHECK(n > 128 * 1024); /* the pipe runs */
		spec = same(g, n, o);
		printf("  layout %zu: %zu bytes, %llu parsed by the inflate thread\n", l, d.n,
		       (unsigned long long)spec);
		if (two_cpus())
			CHECK(spec > d.n / 4); /* it really took part */
		/* plain JSON: the thread copies the pieces and parses */
		spec = same((const unsigned char *)d.s, d.n, o);
		printf("  layout %zu plain: %llu parsed by the second thread\n", l,
		       (unsigned long long)spec);
		if (two_cpus())
			CHECK(spec > d.n / 4);
		free(g);
		free(d.s);
	}
}

/* HTA rounding switched on by a row in the second half (a float ts), with
 * rows of negative rounded duration before it: the flag they get at the
 * end must be the serial one whichever thread parsed the switching row. */
static void test_late_rounding(void)
{
	struct buf b = { 0 };
	unsigned char *g;
	size_t n;

	put(&b, "{\"traceEvents\": [\n");
	for (int i = 0; i < 40000; i++)
		put(&b, "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op%d\", \"pid\": 1, "
			"\"tid\": 1, \"ts\": %d%s, \"dur\": %d}",
		    i ? ",\n" : "", i % 50, 1000 + i, i == 30000 ? ".5" : "", i % 7 ? 3 : -2);
	put(&b, "]}\n");
	n = gzip_members(b.s, b.n, 1, &g);
	/* (most bytes, so most likely the switching row, in segments) */
	CHECK(same(g, n, (struct import_opts){ 0 }) > b.n / 2 || !two_cpus());
	CHECK(same((const unsigned char *)b.s, b.n, (struct import_opts){ 0 }) > b.n / 2 ||
	      !two_cpus());
	free(g);
	free(b.s);
}

/* Caps inside segments: max_events (events, flows, metadata), max_depth. */
static void test_caps(void)
{
	struct buf d = make(30000, L_OBJECT);
	unsigned char *g;
	size_t n = gzip_members(d.s, d.n, 1, &g);
	static const uint32_t caps[] = { 1, 777, 5000, 12000 };

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
		same(g, n, (struct import_opts){ .max_string = 200, .max_events = caps[c] });
	same(g, n, (struct import_opts){ .max_string = 200, .max_depth = 5 }); /* too deep */
	same(g, n, (struct import_opts){ .max_string = 200, .max_depth = 6 });
	same(g, n, (struct import_opts){ .max_bytes = d.n / 3 });
	same((const unsigned char *)d.s, d.n, (struct import_opts){ .max_events = 5000 });
	same((const unsigned char *)d.s, d.n, (struct import_opts){ .max_bytes = d.n / 3 });
	free(g);
	free(d.s);
}

/* JSON errors at many places, and truncated gzip. */
static void test_errors(void)
{
	struct buf d = make(30000, L_OBJECT);

	for (int k = 1; k < 8; k++) {
		size_t at = d.n * (size_t)k / 8;
		char was = d.s[at];
		unsigned char *g;
		size_t n;

		d.s[at] = k % 2 ? '#' : '}';
		n = gzip_members(d.s, d.n, 1, &g);
		same(g, n, (struct import_opts){ .max_string = 200 });
		same((const unsigned char *)d.s, d.n, (struct import_opts){ .max_string = 200 });
		d.s[at] = was;
		free(g);
	}
	{
		unsigned char *g;
		size_t n = gzip_members(d.s, d.n, 1, &g);

		for (int k = 1; k < 4; k++)
			same(g, n * (size_t)k / 4, (struct import_opts){ .max_string = 200 });
		free(g);
	}
	free(d.s);
}

/* Random damage anywhere (bytes overwritten with structural characters,
 * quotes, backslashes, digits, high bytes; runs deleted): serial and
 * speculative imports still agree on everything, errors included. */
static void test_random_damage(void)
{
	static const char pick[] = "{}[],:\"\\0123456789-.eE \n\xff\x80tnf";
	struct buf d = make(12000, L_OBJECT);
	char *m = malloc(d.n);
	unsigned x = 2463534242u;

	for (int round = 0; round < 40; round++) {
		size_t n = d.n;

		memcpy(m, d.s, d.n);
		for (int k = 0; k < 1 + round % 5; k++) {
			size_t at;

			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			at = x % n;
			if (x & 0x10000 && n > at + 64) { /* delete a run */
				size_t len = 1 + (x >> 20) % 48;

				memmove(m + at, m + at + len, n - at - len);
				n -= len;
			} else {
				m[at] = pick[(x >> 8) % (sizeof(pick) - 1)];
			}
		}
		same((const unsigned char *)m, n, (struct import_opts){ .max_string = 200 });
	}
	free(m);
	free(d.s);
}

int main(void)
{
	RUN(test_layouts);
	RUN(test_late_rounding);
	RUN(test_caps);
	RUN(test_errors);
	RUN(test_random_damage);
	return test_summary();
}
