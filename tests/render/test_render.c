// SPDX-License-Identifier: MIT
/* Renderers: the folded reader's bounds, flame/diff layout facts, the heat
 * map's grid, and the Chrome export read back by our own trace importer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "render_int.h" /* capframes */
#include "synth.h"
#include "gunzip.h"
#include "membuf.h"
#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"

static size_t count_str(const char *h, const char *n)
{
	size_t k = 0;
	for (const char *p = h; (p = strstr(p, n)); p += strlen(n))
		k++;
	return k;
}

static struct fold_set *feed(const char *text, size_t chunk)
{
	struct fold_set *s;
	CHECK_EQ_INT(fold_set_new(0, &s), 0);
	size_t len = strlen(text);
	for (size_t i = 0; i < len; i += chunk)
		CHECK_EQ_INT(fold_set_feed(s, 0, text + i, len - i < chunk ? len - i : chunk), 0);
	CHECK_EQ_INT(fold_set_end(s, 0), 0);
	return s;
}

static void test_reader_bounds(void)
{
	static const char text[] = "a;b 3\r\n"
				   "\n"
				   "no_count_here\n"
				   " 5\n"
				   "a;c 1.6\n"
				   "x;y 99999999999999999999999\n"
				   "name with spaces;f 2\n"
				   "tail 4";
	for (size_t chunk = 1; chunk <= sizeof(text); chunk += chunk < 8 ? 1 : 13) {
		struct fold_set *s = feed(text, chunk);
		const struct fold_stats *st = fold_set_stats(s);
		CHECK_EQ_U64(st->lines[0], 5);
		CHECK_EQ_U64(st->malformed, 2);
		CHECK_EQ_U64(st->saturated, 1);
		CHECK_EQ_U64(st->total[0], 3 + 2 + FOLD_COUNT_MAX + 2 + 4);
		fold_set_free(s);
	}
	/* an over-long line is skipped whole, the next one still read */
	size_t n = FOLD_MAX_LINE + 100;
	char *big = malloc(n + 32);
	memset(big, 'z', n);
	strcpy(big + n, " 1\nok 2\n");
	struct fold_set *s = feed(big, 4096);
	CHECK_EQ_U64(fold_set_stats(s)->too_long, 1);
	CHECK_EQ_U64(fold_set_stats(s)->lines[0], 1);
	CHECK_EQ_U64(fold_set_stats(s)->total[0], 2);
	fold_set_free(s);
	free(big);
	/* too deep */
	char *deep = malloc(FOLD_MAX_DEPTH * 2 + 16);
	size_t k = 0;
	for (unsigned i = 0; i <= FOLD_MAX_DEPTH; i++)
		deep[k++] = 'a', deep[k++] = ';';
	strcpy(deep + k - 1, " 1\n");
	s = feed(deep, 100);
	CHECK_EQ_U64(fold_set_stats(s)->malformed, 1);
	fold_set_free(s);
	free(deep);
	/* the byte budget */
	CHECK_EQ_INT(fold_set_new(16, &s), 0);
	CHECK_EQ_INT(fold_set_feed(s, 0, "aaaaaaaaaaaa 1\nbbbbbbbbbbbb 1\n", 30), -EFBIG);
	fold_set_free(s);
}

static void test_flame_layout(void)
{
	/* unsorted input, a frame that is a prefix of another name, and a
	 * stack whose parent also has self samples */
	struct fold_set *s = feed("d 2\na;c 1\na b;q 5\na;b 3\na 1\na;b 1\n", 7);
	struct membuf m = {0};
	struct flame_totals t;
	CHECK_EQ_INT(flame_render(s, NULL, membuf_write, &m, &t), 0);
	/* all, a, a;b, a;c, "a b", "a b;q", d */
	CHECK_EQ_U64(t.frames, 7);
	CHECK_EQ_U64(t.total, 13);
	CHECK_EQ_INT(t.depth, 2);
	CHECK(strstr(m.p, "<title>a (6 samples, 46.15%)</title>"));
	CHECK(strstr(m.p, "<title>b (4 samples, 30.77%)</title>"));
	CHECK(strstr(m.p, "<title>all (13 samples, 100.00%)</title>"));
	CHECK_EQ_INT(count_str(m.p, "<g><title>"), 7);
	fold_set_free(s);
	free(m.p);

	/* pruning: one wide frame and 1000 that are 1/2000 of the width each */
	s = feed("wide 2000000\n", 64);
	for (int i = 0; i < 1000; i++) {
		char line[32];
		int n = snprintf(line, sizeof(line), "n%d 1\n", i);
		fold_set_feed(s, 0, line, (size_t)n);
	}
	m = (struct membuf){0};
	CHECK_EQ_INT(flame_render(s, NULL, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.frames, 2);
	CHECK_EQ_U64(t.pruned, 1000);
	free(m.p);
	/* the writer's error comes back */
	m = (struct membuf){.fail_after = 1};
	CHECK_EQ_INT(flame_render(s, NULL, membuf_write, &m, &t), -EPIPE);
	free(m.p);
	fold_set_free(s);

	CHECK_EQ_INT(fold_set_new(0, &s), 0);
	CHECK_EQ_INT(flame_render(s, NULL, membuf_write, &m, &t), -ENODATA);
	fold_set_free(s);
}

static void test_diff(void)
{
	struct fold_set *s;
	CHECK_EQ_INT(fold_set_new(0, &s), 0);
	const char *a = "m;grow 4\nm;shrink 4\nm;gone 2\n", *b = "m;grow 6\nm;shrink 2\n";
	fold_set_feed(s, 0, a, strlen(a));
	fold_set_feed(s, 1, b, strlen(b));
	struct flame_opts o = {.diff = true};
	struct membuf m = {0};
	struct flame_totals t;
	CHECK_EQ_INT(flame_render(s, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.total, 8);
	CHECK_EQ_U64(t.frames, 4); /* all, m, grow, shrink: "gone" has no width in B */
	char *g = strstr(m.p, "<title>grow "), *sh = strstr(m.p, "<title>shrink ");
	CHECK(g && strstr(g, "fill=\"rgb(255,") &&
	      strstr(g, "fill=\"rgb(255,") < strstr(g, "</g>"));
	CHECK(sh && strstr(sh, ",255)\"") && strstr(sh, ",255)\"") < strstr(sh, "</g>"));
	CHECK(strstr(m.p, "<title>grow (6 samples, 75.00%; A 4, +2 (+50.00%))"));
	free(m.p);
	/* normalized: A (10) scaled to B (8): grow 3.2 -> 6 */
	o.normalize = true;
	m = (struct membuf){0};
	CHECK_EQ_INT(flame_render(s, &o, membuf_write, &m, &t), 0);
	CHECK(strstr(m.p, "<title>grow (6 samples, 75.00%; A 3.20, +2.80"));
	free(m.p);
	fold_set_free(s);

	/* normalized where the scaled A does not sum exactly: 97/9 per A
	 * sample, and 1 + 1 + 7 of them add up to 97.00000000000001 in
	 * doubles. The root's B equals its scaled A: neutral, no "-0.00". */
	CHECK_EQ_INT(fold_set_new(0, &s), 0);
	a = "m;p 1\nm;q 1\nm;r 7\n";
	b = "m;p 50\nm;q 47\n";
	fold_set_feed(s, 0, a, strlen(a));
	fold_set_feed(s, 1, b, strlen(b));
	m = (struct membuf){0};
	CHECK_EQ_INT(flame_render(s, &o, membuf_write, &m, &t), 0);
	char *root = strstr(m.p, "<title>all ");
	CHECK(root && strstr(root, "</g>"));
	*strstr(root, "</g>") = 0;
	CHECK(strstr(root, "<title>all (97 samples, 100.00%; A 97, 0 (+0.00%))"));
	CHECK(strstr(root, "fill=\"rgb(250,250,250)\""));
	free(m.p);
	fold_set_free(s);
}

/* The embedded data's "cells" array: each cell's (node, count) pairs sum to
 * the cell; returns the total, -1 when malformed. */
static long long cells_total(const char *page, uint64_t ncells, uint64_t nodes)
{
	const char *p = strstr(page, "\"cells\":[");
	long long total = 0;
	if (!p)
		return -1;
	p += 9;
	while (*p != ']') {
		char *e;
		unsigned long long cell = strtoull(p, &e, 10), k = strtoull(e + 1, &e, 10);
		if (cell >= ncells || *e != ',')
			return -1;
		for (unsigned long long i = 0; i < k; i++) {
			unsigned long long node = strtoull(e + 1, &e, 10), n = strtoull(e + 1, &e, 10);
			if (node >= nodes || !n)
				return -1;
			total += (long long)n;
		}
		p = e + (*e == ',');
		while (*p == '\n')
			p++;
	}
	return total;
}

static void test_heatmap(void)
{
	struct capture *c = synth_capture();
	/* 20 ms asked: the default would coarsen this sparse capture
	 * (test_heatmap_49hz) */
	struct heatmap_opts o = {.capture_id = 7, .bucket_ns = 20000000};
	struct heatmap_totals t;
	struct membuf m = {0};
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.samples, 100);
	CHECK_EQ_U64(t.columns, 3);
	CHECK_EQ_U64(t.rows, 50);
	CHECK_EQ_U64(t.bucket_ns, 20000000);
	CHECK_EQ_INT(count_str(m.p, "hm:s=\""), 150);
	/* the first cell covers [t0, t0 + 20 ms) */
	CHECK(strstr(m.p, "hm:s=\"1000000000000\" hm:e=\"1000019999999\""));
	/* the stack table: all, app, main, run, compute, write_log, -, two
	 * kernel frames, bad, its main, its leaf; names once each */
	CHECK_EQ_U64(t.nodes, 12);
	CHECK_EQ_U64(t.names, 11);
	CHECK_EQ_U64(t.min_count, 0);
	CHECK_EQ_INT(cells_total(m.p, 150, t.nodes), 100);
	/* XML-hostile names: JSON-escaped, markup as \u00XX, invalid UTF-8 as
	 * U+FFFD, so the script's CDATA holds no markup and no "]]>" */
	CHECK(strstr(m.p, "\"bad\\u003c\\u0026\\u003e\\ufffd\""));
	CHECK(strstr(m.p, "\"f\\\"q'\\u003cx\\u003e\\u0026y\""));
	CHECK(!strstr(m.p, "<x>"));
	CHECK_EQ_INT(count_str(m.p, "]]>"), 2); /* the two scripts' ends */
	/* the separator grey, the page's data size as counted */
	CHECK(strstr(m.p, "\"rgb(200,200,200)\""));
	const char *d0 = strstr(m.p, "<script type=\"text/ecmascript\"><![CDATA[\nvar HMD=");
	const char *d1 = d0 ? strstr(d0, "</script>\n") : NULL;
	CHECK(d0 && d1 && (uint64_t)(d1 + 10 - d0) == t.data_bytes);
	free(m.p);
	m = (struct membuf){0};

	/* bounded: coarsened to 200 ms; and more: narrow frames merged */
	o.max_bytes = 1000;
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.bucket_ns, 200000000);
	CHECK_EQ_U64(t.rows, 5);
	CHECK_EQ_U64(t.min_count, 0);
	CHECK(t.data_bytes <= 1000);
	CHECK_EQ_INT(count_str(m.p, "hm:s=\""), 15);
	CHECK_EQ_INT(cells_total(m.p, 15, t.nodes), 100);
	CHECK(strstr(m.p, "buckets coarsened from 20 to 200 ms"));
	free(m.p);
	m = (struct membuf){0};
	o.max_bytes = 700;
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	/* bad's 10 samples are under 32: its 3 frames, and the 4 of the
	 * syscall path (30) go; app, main, run, compute (60) stay */
	CHECK_EQ_U64(t.min_count, 32);
	CHECK_EQ_U64(t.pruned, 7);
	CHECK_EQ_U64(t.nodes, 5);
	CHECK(t.data_bytes <= 700);
	CHECK_EQ_INT(cells_total(m.p, 15, t.nodes), 100); /* merging keeps the sums */
	CHECK(strstr(m.p, "7 frames with less than 32 in all merged into their callers"));
	free(m.p);
	m = (struct membuf){0};
	o.max_bytes = 1; /* cannot fit: everything merged into the root */
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.nodes, 1);
	CHECK_EQ_INT(cells_total(m.p, 15, t.nodes), 100);
	free(m.p);
	m = (struct membuf){0};

	/* GPU launches: the kernel as a NAME_[G] frame in the GPU palette */
	o = (struct heatmap_opts){.capture_id = 7, .weight = FOLDED_WEIGHT_LAUNCHES};
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.samples, 1);
	CHECK(strstr(m.p, "\"gemm\\u003cfloat\\u003e_[G]\""));
	CHECK(strstr(m.p, "--weight launches"));
	free(m.p);
	m = (struct membuf){0};
	/* EU stalls: the section's rows, 21 stall samples in two cells, as
	 * comm;launch stack;kernel_[G];reason_[g];0xoffset_[g] */
	o = (struct heatmap_opts){.capture_id = 7, .eu_stall = true};
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), -ENODATA); /* no section */
	synth_add_xe(c);
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.samples, 5);
	CHECK_EQ_U64(t.max_cell, 11);
	CHECK_EQ_U64(t.nodes, 16);
	CHECK_EQ_INT(cells_total(m.p, 150, t.nodes), 21);
	CHECK(strstr(m.p, "\"compute\",\"gemm\\u003cfloat\\u003e_[G]\",\"active_[g]\",\"0x40_[g]\""));
	CHECK(strstr(m.p, "\"[unattributed]_[G]\""));
	CHECK(strstr(m.p, "hm:cmd=\"\""));
	free(m.p);
	m = (struct membuf){0};
	/* no kernel frames: no separator, fewer nodes */
	o = (struct heatmap_opts){.capture_id = 7, .no_kernel = true};
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.nodes, 9);
	CHECK(!strstr(m.p, "\"-\""));
	free(m.p);
	m = (struct membuf){0};

	o.bucket_ns = 7000000; /* does not divide a second */
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), -EINVAL);
	o = (struct heatmap_opts){.weight = FOLDED_WEIGHT_GPU_TIME, .bucket_ns = 1000000};
	c->nrecs = 0;
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), -ENODATA);
	free(m.p);
	capture_free(c);
}

/* Distinct fills of the cells that hold something. */
static int busy_fills(const char *page)
{
	char fills[16][24];
	int n = 0;
	for (const char *p = strstr(page, "<g id=\"cells\">"); p && (p = strstr(p, "fill=\""));
	     p++) {
		char f[24];
		unsigned long long cnt;
		const char *h = strstr(p, "hm:n=\"");
		if (!h || sscanf(p, "fill=\"%23[^\"]\"", f) != 1 ||
		    sscanf(h, "hm:n=\"%llu\"", &cnt) != 1 || !cnt)
			continue;
		int k = 0;
		while (k < n && strcmp(fills[k], f))
			k++;
		if (k == n && n < 16)
			snprintf(fills[n++], sizeof(fills[0]), "%s", f);
	}
	return n;
}

/*
 * One thread at 49 Hz for 6 s: in 20 ms rows every busy cell held 1 and
 * was the same red, and a column label every 10 s named only the first
 * column. By default the rows become 100 ms (the first bucket whose
 * busiest cell holds 5), busy cells come in more than one shade, the
 * columns widen to fill the page and each second is labelled.
 */
static void test_heatmap_49hz(void)
{
	struct capture *c = synth_49hz_capture();
	struct heatmap_opts o = {.capture_id = 8};
	struct heatmap_totals t;
	struct membuf m = {0};
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.samples, 150); /* 25 a second: 15 at full speed, 10 at half */
	CHECK_EQ_U64(t.columns, 6);
	CHECK_EQ_U64(t.bucket_ns, 100000000);
	CHECK_EQ_U64(t.rows, 10);
	CHECK_EQ_U64(t.max_cell, 5);
	CHECK(busy_fills(m.p) >= 2);
	CHECK_EQ_INT(count_str(m.p, "hm:s=\""), 60);
	CHECK_EQ_INT(cells_total(m.p, 60, t.nodes), 150);
	/* chosen, not forced by the data bound: the page does not say so */
	CHECK(!strstr(m.p, "coarsened"));
	CHECK_EQ_INT(count_str(m.p, "<text class=\"col\""), 6);
	CHECK(strstr(m.p, ">5s</text>"));
	free(m.p);

	/* asked for 20 ms: kept, and then one shade is all there is */
	m = (struct membuf){0};
	o.bucket_ns = 20000000;
	CHECK_EQ_INT(heatmap_render(c, &o, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.rows, 50);
	CHECK_EQ_U64(t.max_cell, 1);
	CHECK_EQ_INT(busy_fills(m.p), 1);
	free(m.p);
	capture_free(c);
}

static void test_chrome_roundtrip(void)
{
	struct capture *c = synth_capture();
	struct membuf m = {0};
	struct export_totals t;
	CHECK_EQ_INT(chrome_export(c, NULL, membuf_write, &m, &t), 0);
	CHECK_EQ_U64(t.events, 103);
	CHECK(strstr(m.p, "\"stackFrames\""));
	CHECK(strstr(m.p, "\"name\":\"bad<&>\\ufffd\""));
	struct timeline *tl;
	struct import_result res;
	CHECK_EQ_INT(timeline_new(&tl), 0);
	int r = timeline_import_buf(m.p, m.len, NULL, tl, &res);
	CHECK_EQ_INT(r, 0);
	if (r == 0) {
		const struct tl_rank *rk = timeline_rank_at(tl, 0);
		/* kept = events with a dur: launch, GPU interval, mark */
		CHECK_EQ_INT(rk->nev, 3);
		CHECK_EQ_U64(res.events_raw, 103 + 5); /* + 3 thread, 2 process names */
		bool kern = false, launch = false;
		for (uint32_t i = 0; i < rk->nev; i++) {
			size_t len;
			const char *n = timeline_str(tl, rk->ev[i].name, &len);
			if (rk->ev[i].kind == TL_K_KERNEL && rk->ev[i].dur_ns == 12345 &&
			    len == 11 && !memcmp(n, "gemm<float>", 11) && rk->ev[i].stream == 3)
				kern = true;
			if (rk->ev[i].correlation == 42 &&
			    rk->ev[i].ts_ns == (int64_t)SYNTH_T0 + 5000)
				launch = true;
		}
		CHECK(kern);
		CHECK(launch);
	} else {
		fprintf(stderr, "import: %s\n", res.error_msg);
	}
	timeline_free(tl);
	free(m.p);
	capture_free(c);
}

/* A peer kept from kernel addresses: the kernel run of each stack is one
 * "[kernel]" frame in folded text and in the exports, with no address or
 * kernel mapping; the user frames stay as they were. */
static void test_kernel_hidden(void)
{
	struct capture *c = synth_capture();
	struct render_view hide = {.kernel_hidden = true};
	struct folded_opts o = {.view = hide};
	struct membuf m = {0};
	struct export_totals t;

	CHECK_EQ_INT(folded_write(c, &(struct folded_opts){0}, membuf_write, &m, NULL), 0);
	CHECK(strstr(m.p, "app;main;run;write_log;-;do_syscall_64;vfs_write 30\n"));
	free(m.p);
	m = (struct membuf){0};
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &m, NULL), 0);
	CHECK(strstr(m.p, "app;main;run;write_log;-;[kernel] 30\n"));
	CHECK(strstr(m.p, "app;main;run;compute 60\n"));
	CHECK(!strstr(m.p, "vfs_write") && !strstr(m.p, "do_syscall_64"));
	free(m.p);
	m = (struct membuf){0};
	CHECK_EQ_INT(chrome_export(c, &hide, membuf_write, &m, &t), 0);
	CHECK(strstr(m.p, "\"name\":\"[kernel]\""));
	CHECK(!strstr(m.p, "vfs_write") && !strstr(m.p, "do_syscall_64"));
	free(m.p);
	m = (struct membuf){0};
	struct capframes f;
	capframes_init(&f, c, &hide);
	size_t n = capframes_get(&f, 10, 2); /* main;run;write_log + kernel */
	CHECK_EQ_U64(n, 4);
	CHECK(f.kernel[3] && f.ip[3] == 0 && f.map[3] == 0 && f.len[3] == 8 &&
	      !memcmp(f.name[3], "[kernel]", 8));
	capframes_finish(&f);
	capframes_init(&f, c, NULL);
	CHECK_EQ_U64(capframes_get(&f, 10, 2), 5);
	CHECK(f.ip[4] == 0xffff0002);
	capframes_finish(&f);
	capture_free(c);
}

static bool has_bytes(const char *h, size_t hl, const char *n)
{
	return memmem(h, hl, n, strlen(n)) != NULL;
}

/* A stack whose unwinding stopped early ends with the user frame 0x1
 * (SYMTAB_IP_TRUNCATED): every output names it "[truncated]", with or
 * without a symbols section, and none shows it as an address. */
static void test_truncated_frame(void)
{
	struct capture *c;
	struct membuf m = {0};
	struct export_totals t;
	size_t n;
	CHECK_EQ_INT(capture_new(&c), 0);
	uint32_t app = cb_str(c, "app");
	const uint64_t ips[] = {0x1003, 0x1002, SYMTAB_IP_TRUNCATED}; /* leaf first */
	uint32_t st = cb_stack(c, ips, 3, 0);
	cb_rec(c, SYNTH_T0, 10, 10, app, st);
	c->t0_ns = SYNTH_T0;
	c->t1_ns = SYNTH_T0 + 1000;

	CHECK_EQ_INT(folded_write(c, NULL, membuf_write, &m, NULL), 0);
	CHECK_STREQ(m.p, "app;[truncated];0x1002;0x1003 1\n");
	free(m.p);
	m = (struct membuf){0};
	CHECK_EQ_INT(chrome_export(c, NULL, membuf_write, &m, &t), 0);
	CHECK(strstr(m.p, "\"name\":\"[truncated]\""));
	CHECK(!strstr(m.p, "\"0x1\""));
	free(m.p);
	m = (struct membuf){0};
	CHECK_EQ_INT(pprof_export(c, NULL, 1000000, membuf_write, &m, &t), 0);
	char *pb = membuf_gunzip(&m, &n);
	CHECK(pb != NULL);
	CHECK(has_bytes(pb, n, "[truncated]"));
	CHECK(!has_bytes(pb, n,
			 "\x32\x03"
			 "0x1")); /* no string table entry "0x1" */
	free(pb);
	free(m.p);
	m = (struct membuf){0};
	struct capframes f;
	capframes_init(&f, c, NULL);
	CHECK_EQ_U64(capframes_get(&f, 10, st), 3);
	CHECK(f.len[0] == 11 && !memcmp(f.name[0], "[truncated]", 11) && f.map[0] == 0);
	capframes_finish(&f);

	/* with a symbols section that names it (what the symbolizer writes) */
	struct sym_table_builder *b;
	void *buf;
	size_t len;
	static const char *const names[] = {"compute", "main", "[truncated]"};
	CHECK_EQ_INT(sym_tb_new(false, &b), 0);
	synth_syms(b, 10, st, names, 3, 0, 0);
	CHECK_EQ_INT(sym_tb_encode(b, &buf, &len), 0);
	CHECK_EQ_INT(capture_add_extra(c, CAPSEC_SYMBOLS, buf, len), 0);
	free(buf);
	sym_tb_free(b);
	CHECK_EQ_INT(folded_write(c, NULL, membuf_write, &m, NULL), 0);
	CHECK_STREQ(m.p, "app;[truncated];main;compute 1\n");
	free(m.p);
	capture_free(c);
}

int main(void)
{
	RUN(test_reader_bounds);
	RUN(test_flame_layout);
	RUN(test_diff);
	RUN(test_heatmap);
	RUN(test_heatmap_49hz);
	RUN(test_chrome_roundtrip);
	RUN(test_kernel_hidden);
	RUN(test_truncated_frame);
	return test_summary();
}
