// SPDX-License-Identifier: MIT
/*
 * Xe EU-stall unit tests, all hardware-free: records built bit by bit from
 * the documented layouts (facts §1.7), the kernel interval table and
 * deferral, and the stream state machine driven through a pipe with a
 * script of errno results in place of the device (the same code the
 * device fd runs).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "test.h"

#include "decode.h"
#include "device.h"
#include "oa.h"
#include "output.h"
#include "section.h"
#include "stream.h"
#include "xe.h"
#include "xe_collector.h"
#include "xe_int.h"

#include "capture/capture.h"
#include "symtab.h"

/* Set bits [lo, lo + width) of a 64-byte record to v, one bit at a time. */
static void put_bits(uint8_t *rec, unsigned lo, unsigned width, uint64_t v)
{
	for (unsigned i = 0; i < width; i++) {
		unsigned b = lo + i;

		if ((v >> i) & 1)
			rec[b / 8] |= (uint8_t)(1u << (b % 8));
		else
			rec[b / 8] &= (uint8_t) ~(1u << (b % 8));
	}
}

struct layout {
	const char *dec;
	unsigned ip_bits, pos[XE_NREASONS], ex_id, end; /* pos ~0u: absent */
};

#define NA (~0u)
/* Bit positions from facts §1.7, reason order as enum xe_reason:
 * active, control, pipestall, send, dist_acc, sbid, sync, inst_fetch, other, tdr */
static const struct layout layouts[] = {
    {"pvc", 29, {29, 45, 53, 61, 69, 77, 85, 93, 37, NA}, NA, NA},
    {"xe2", 29, {101, 45, 53, 61, 69, 77, 85, 93, 37, 29}, 109, 112},
    {"xe3p", 61, {133, 77, 85, 93, 101, 109, 117, 125, 69, 61}, 141, 144},
};

static void test_decoders(void)
{
	for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
		const struct layout *L = &layouts[l];
		const struct xe_decoder *d = xe_decoder_by_name(L->dec);
		uint8_t rec[64];
		struct xe_sample s;

		CHECK(d != NULL);
		if (!d)
			continue;
		CHECK_EQ_INT(d->ip_bits, L->ip_bits);
		/* distinct value per field, every counter bit exercised */
		for (int pass = 0; pass < 3; pass++) {
			uint64_t ip = pass == 0 ? 0x1234567 : (pass == 1 ? (1ull << L->ip_bits) - 1 : 8);

			memset(rec, pass == 2 ? 0xFF : 0, sizeof(rec));
			put_bits(rec, 0, L->ip_bits, ip);
			for (int r = 0; r < XE_NREASONS; r++)
				if (L->pos[r] != NA)
					put_bits(rec, L->pos[r], 8,
						 pass == 1 ? 0xFF : (uint64_t)(r * 17 + 3 + pass));
			if (L->ex_id != NA) {
				put_bits(rec, L->ex_id, 3, 5);
				put_bits(rec, L->end, 1, 1);
			}
			d->decode(rec, &s);
			CHECK_EQ_U64(s.ip, ip);
			for (int r = 0; r < XE_NREASONS; r++) {
				unsigned want = L->pos[r] == NA ? 0
					       : (pass == 1 ? 0xFF : (unsigned)(r * 17 + 3 + pass));
				if (s.cnt[r] != want)
					TEST_FAIL_AT("%s pass %d reason %s: %u != %u", L->dec, pass,
						     xe_reason_names[r], s.cnt[r], want);
			}
			if (L->ex_id != NA) {
				CHECK_EQ_INT(s.ex_id, 5);
				CHECK_EQ_INT(s.end_flag, 1);
			}
		}
	}
	/* version table */
	CHECK(xe_decoder_find(12, 60) == xe_decoder_by_name("pvc"));
	CHECK(xe_decoder_find(20, 4) == xe_decoder_by_name("xe2"));
	CHECK(xe_decoder_find(30, 0) == xe_decoder_by_name("xe2"));
	CHECK(xe_decoder_find(35, 0) == xe_decoder_by_name("xe3p"));
	CHECK(xe_decoder_find(12, 55) == NULL);
	CHECK(xe_decoder_find(12, 70) == NULL);
	CHECK_STREQ(xe_reason_names[XE_R_INST_FETCH], "inst_fetch");
	CHECK_STREQ(xe_reason_names[XE_R_TDR], "tdr");
}

/* An Xe2 record with ip and one reason count. */
static void xe2_rec(uint8_t *rec, uint64_t ip, int reason, unsigned cnt)
{
	memset(rec, 0, 64);
	put_bits(rec, 0, 29, ip);
	put_bits(rec, layouts[1].pos[reason], 8, cnt);
}

#define IBA 0x800000000000ull
#define NS_IV 100000000ull

static int sink_buf(void *ctx, const void *buf, size_t len)
{
	char **s = ctx;
	size_t have = *s ? strlen(*s) : 0;
	char *n = realloc(*s, have + len + 1);

	if (!n)
		return -ENOMEM;
	memcpy(n + have, buf, len);
	n[have + len] = '\0';
	*s = n;
	return 0;
}

static void test_attribution(void)
{
	const struct xe_decoder *d = xe_decoder_by_name("xe2");
	struct xe_config cfg = {.max_deferred = 4, .defer_intervals = 2};
	uint64_t stack[2] = {0x401000, 0x402000};
	struct xe_kernel_info k1 = {.gpu_addr = IBA + 0x10000, .size = 0x1000, .iba = IBA,
				    .pid = 42, .uid = 1000, .name = "gemm_kernel",
				    .file = "model.zebin", .comm = "python3",
				    .cgroup = "/system.slice/a.service", .ustack = stack, .nustack = 2};
	struct xe_kernel_info k2 = {.gpu_addr = IBA + 0x20000, .size = 0x800, .iba = IBA,
				    .pid = 43, .uid = 1001, .name = "softmax", .comm = "bench"};
	struct xe_stats st;
	uint8_t recs[64 * 8];
	struct xe *x;

	CHECK_EQ_INT(xe_new(&cfg, 0, &x), 0);
	/* before any kernel: deferred */
	xe2_rec(recs, 0x10040 >> 3, XE_R_SEND, 7); /* k1 + 0x40 */
	CHECK_EQ_INT(xe_ingest(x, d, recs, 64, 64, 0), 1);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.deferred_now, 1);
	CHECK_EQ_INT(xe_ktab_add(x, &k1), 0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.deferred_now, 0);
	CHECK_EQ_U64(st.late_attributed, 1);
	CHECK_EQ_INT(xe_ktab_add(x, &k1), 0); /* repeat launch: no new entry */
	CHECK_EQ_INT(xe_ktab_add(x, &k2), 0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 2);

	/* interval 0: k1+0x40 sync, k2+0x10 active, an empty record, an unknown IP */
	xe2_rec(recs, 0x10040 >> 3, XE_R_SYNC, 3);
	xe2_rec(recs + 64, 0x20010 >> 3, XE_R_ACTIVE, 9);
	memset(recs + 128, 0, 64);
	xe2_rec(recs + 192, 0x90000 >> 3, XE_R_OTHER, 1);
	CHECK_EQ_INT(xe_ingest(x, d, recs, 256, 64, 1), 4);
	/* interval 1: k1+0x40 send again */
	xe2_rec(recs, 0x10040 >> 3, XE_R_SEND, 1);
	xe_ingest(x, d, recs, 64, 64, NS_IV + 5);
	/* deferral overflow: 5 unknown samples into a 4-slot list */
	for (int i = 0; i < 5; i++)
		xe2_rec(recs + 64 * i, (0x90000 + 8 * (unsigned)i) >> 3, XE_R_OTHER, 1);
	xe_ingest(x, d, recs, 5 * 64, 64, NS_IV + 6);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.records, 1 + 4 + 1 + 5);
	CHECK_EQ_U64(st.empty, 1);
	CHECK_EQ_U64(st.unattributed, 2); /* the two oldest unknowns gave up */
	CHECK_EQ_U64(st.deferred_now, 4);
	/* aged out after defer_intervals */
	xe_retry_deferred(x, 10 * NS_IV, false);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.unattributed, 6);
	CHECK_EQ_U64(st.deferred_now, 0);

	/* export everything, decode, render */
	void *buf;
	size_t len;
	struct xe_capdata cd;
	char why[128], *out = NULL;
	struct xe_out_totals t;

	CHECK_EQ_INT(xe_export(x, 0, 2 * NS_IV, NULL, &buf, &len), 0);
	CHECK(len > 0);
	CHECK_EQ_INT(xe_sec_decode(buf, len, &cd, why, sizeof(why)), 0);
	CHECK_EQ_INT(cd.h->nkernels, 2);
	CHECK_EQ_INT(xe_write_folded(&cd, NULL, NULL, NULL, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "python3;42;0x402000;0x401000;-;model.zebin_[G];gemm_kernel_[G];"
				 "0x40_[g];send_[g];0x40_[g] 8\n"));
	CHECK(out && strstr(out, "gemm_kernel_[G];0x40_[g];sync_[g];0x40_[g] 3\n"));
	CHECK(out && strstr(out, "bench;43;-;[unknown file]_[G];softmax_[G];0x10_[g];active_[g];"
				 "0x10_[g] 9\n"));
	CHECK(out && strstr(out, "[unattributed];0;-;[unknown file]_[G];[unattributed]_[G];"));
	CHECK_EQ_U64(t.samples, 8 + 3 + 9 + 6);
	CHECK_EQ_U64(t.unattributed, 6);
	free(out);
	out = NULL;
	struct xe_out_opts cg = {.cgroup = true, .pid = 42};

	CHECK_EQ_INT(xe_write_folded(&cd, &cg, NULL, NULL, sink_buf, &out, &t), 0);
	CHECK(out && !strncmp(out, "/system.slice/a.service;python3;42;", 35));
	CHECK_EQ_U64(t.samples, 11);
	free(out);
	out = NULL;
	CHECK_EQ_INT(xe_write_iaprof(&cd, NULL, NULL, NULL, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "interval\t0\t0.000000\n"));
	CHECK(out && strstr(out, "interval\t1\t0.100000\n"));
	/* the unattributed pseudo-kernel (id 0) sorts first and takes ids 1-4 */
	CHECK(out && strstr(out, "kernel\t0\t1\t0\t2\t3\t4\n"));
	CHECK(out && strstr(out, "string\t6\tpython3\n"));
	CHECK(out && strstr(out, "string\t7\t0x402000;0x401000\n")); /* outermost first */
	CHECK(out && strstr(out, "kernel\t0x800000010000\t6\t42\t7\t8\t9\n"));
	/* columns: active control pipestall send dist_acc sbid sync inst_fetch other tdr */
	CHECK(out && strstr(out, "eustall\t0x40\t10\t0\t0\t0\t7\t0\t0\t3\t0\t0\t0\n"));
	free(out);
	out = NULL;
	struct xe_out_opts fs = {.bucket_ns = NS_IV};

	CHECK_EQ_INT(xe_write_flamescope(&cd, &fs, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "0\t20\t9\t0\t0\t7\t0\t0\t3\t0\t1\t0\tgemm_kernel\n"));
	CHECK(out && strstr(out, "100\t6\t0\t0\t0\t1\t0\t0\t0\t0\t5\t0\t[unattributed]\n"));
	CHECK_EQ_U64(t.lines, 2);
	free(out);
	xe_sec_finish(&cd);

	/* uid filter: only uid 1001's kernel, no unattributed rows */
	free(buf);
	struct xe_export_filter f = {.uid_filter = true, .uid = 1001};

	CHECK_EQ_INT(xe_export(x, 0, 2 * NS_IV, &f, &buf, &len), 0);
	CHECK_EQ_INT(xe_sec_decode(buf, len, &cd, why, sizeof(why)), 0);
	CHECK_EQ_INT(cd.h->nkernels, 1);
	CHECK_EQ_INT(cd.h->nrows, 1);
	xe_sec_finish(&cd);
	/* a corrupted section is refused */
	((struct xe_sec_hdr *)buf)->nrows = 7;
	CHECK_EQ_INT(xe_sec_decode(buf, len, &cd, why, sizeof(why)), -EBADMSG);
	free(buf);
	xe_free(x);
}

/* A live capture's EU-stall section: the launch stacks join the capture's
 * stack table (xe_sec_link_stacks), the symbols section names them for the
 * kernel's pid, and folded / iaprof print those names. */
static void test_symbolized_frames(void)
{
	const struct xe_decoder *d = xe_decoder_by_name("xe2");
	uint64_t stack[3] = {0x401010, 0x402020, 0x403030}; /* leaf first */
	struct xe_kernel_info k1 = {.gpu_addr = IBA + 0x10000, .size = 0x1000, .iba = IBA,
				    .pid = 42, .uid = 1000, .name = "gemm_kernel",
				    .file = "model.zebin", .comm = "python3",
				    .ustack = stack, .nustack = 3};
	struct xe_kernel_info k2 = {.gpu_addr = IBA + 0x20000, .size = 0x800, .iba = IBA,
				    .pid = 43, .name = "softmax", .comm = "bench",
				    .ustack = stack, .nustack = 2};
	struct xe *x;
	uint8_t rec[64];
	void *buf, *sbuf;
	size_t len, slen;
	struct capture *c;
	struct xe_capdata cd;
	char *out = NULL;
	struct xe_out_totals t;

	CHECK_EQ_INT(xe_new(&(struct xe_config){0}, 0, &x), 0);
	CHECK_EQ_INT(xe_ktab_add(x, &k1), 0);
	CHECK_EQ_INT(xe_ktab_add(x, &k2), 0);
	xe2_rec(rec, 0x10040 >> 3, XE_R_SEND, 5);
	xe_ingest(x, d, rec, 64, 64, 1);
	xe2_rec(rec, 0x20010 >> 3, XE_R_ACTIVE, 2);
	xe_ingest(x, d, rec, 64, 64, 2);
	CHECK_EQ_INT(xe_export(x, 0, NS_IV, NULL, &buf, &len), 0);
	xe_free(x);

	/* the capture already holds k1's stack (a launch record's): reused */
	CHECK_EQ_INT(capture_new(&c), 0);
	CHECK_EQ_INT(capture_add_stacks(c, &(struct capture_newstack){42, 1000, stack, 3, 0}, 1,
					&(uint32_t){0}),
		     0);
	c->nstackrefs = 0;
	CHECK_EQ_INT(xe_sec_link_stacks(c, buf, len), 0);
	CHECK_EQ_INT(c->nstacks, 2);
	CHECK_EQ_INT(c->nstackrefs, 2);
	CHECK_EQ_INT(xe_sec_decode(buf, len, &cd, NULL, 0), 0);
	CHECK_EQ_INT(cd.h->nkernels, 2);
	CHECK_EQ_INT(cd.k[0].stack, 1);
	CHECK_EQ_INT(cd.k[1].stack, 2);
	CHECK(c->stackrefs[0].pid == 42 && c->stackrefs[0].uid == 1000 &&
	      c->stackrefs[0].stack == 1);

	/* what the symbolizer would write: pid 42's stack only (pid 43's
	 * stack is left out, so its frames stay addresses) */
	struct sym_table_builder *b;
	struct sym_table *syms;
	uint32_t idx[3];
	CHECK_EQ_INT(sym_tb_new(false, &b), 0);
	sym_tb_name(b, "launch;site", 11, &idx[0]); /* ';' must not split a frame */
	sym_tb_name(b, "forward", 7, &idx[1]);
	sym_tb_name(b, "main", 4, &idx[2]);
	CHECK_EQ_INT(sym_tb_add(b, 42, 1, idx, NULL, 3, 0), 0);
	CHECK_EQ_INT(sym_tb_encode(b, &sbuf, &slen), 0);
	sym_tb_free(b);
	CHECK_EQ_INT(sym_table_decode(sbuf, slen, &syms, NULL, 0), 0);

	struct xe_out_opts o = {.syms = syms};
	CHECK_EQ_INT(xe_write_folded(&cd, &o, NULL, NULL, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "python3;42;main;forward;launch:site;-;model.zebin_[G];"
				 "gemm_kernel_[G];0x40_[g];send_[g];0x40_[g] 5\n"));
	CHECK(out && strstr(out, "bench;43;0x402020;0x401010;-;[unknown file]_[G];softmax_[G];"));
	free(out);
	out = NULL;
	CHECK_EQ_INT(xe_write_iaprof(&cd, &o, NULL, NULL, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "\tmain;forward;launch:site\n"));
	CHECK(out && strstr(out, "\t0x402020;0x401010\n"));
	free(out);
	out = NULL;
	/* without symbols: addresses, as before */
	CHECK_EQ_INT(xe_write_folded(&cd, NULL, NULL, NULL, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "python3;42;0x403030;0x402020;0x401010;-;"));
	free(out);
	sym_table_free(syms);
	free(sbuf);
	xe_sec_finish(&cd);
	/* a damaged section is refused and left alone */
	((struct xe_sec_hdr *)buf)->nrows = 9;
	CHECK_EQ_INT(xe_sec_link_stacks(c, buf, len), -EBADMSG);
	CHECK_EQ_INT(c->nstacks, 2);
	capture_free(c);
	free(buf);
}

static void test_interval_table(void)
{
	struct xe *x;
	struct xe_config cfg = {.max_kernels = 4};
	const struct xe_decoder *d = xe_decoder_by_name("pvc");
	uint8_t rec[64];
	struct xe_stats st;

	CHECK_EQ_INT(xe_new(&cfg, 0, &x), 0);
	/* ranges in random order; look-ups at edges */
	uint64_t starts[] = {0x5000, 0x1000, 0x3000};

	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = starts[i],
								     .size = 0x1000, .pid = 1}),
			     0);
	/* 0x1000..0x1fff, 0x3000.., 0x5000..; 0x2000 is a hole */
	uint64_t probes[] = {0x1000, 0x1ff8, 0x2000, 0x3008, 0x5ff8, 0x6000};
	uint64_t want_attr[] = {1, 2, 2, 3, 4, 4};

	for (int i = 0; i < 6; i++) {
		memset(rec, 0, sizeof(rec));
		put_bits(rec, 0, 29, probes[i] >> 3);
		put_bits(rec, 29, 8, 1); /* PVC active */
		xe_ingest(x, d, rec, 64, 64, 0);
		xe_get_stats(x, &st);
		CHECK_EQ_U64(st.attributed, want_attr[i]);
	}
	/* overlap: a new kernel at 0x1800 replaces 0x1000's range */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x1800, .size = 0x100}), 0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 4);
	memset(rec, 0, sizeof(rec));
	put_bits(rec, 0, 29, 0x1000 >> 3);
	put_bits(rec, 29, 8, 1);
	xe_ingest(x, d, rec, 64, 64, 0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.deferred_now, 3); /* holes 0x2000, 0x6000, and now 0x1000 */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000}), -ENOSPC);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 1ull << 40}),
		     -EINVAL);
	xe_free(x);
}

/* The name of the kernel covering addr (iba 0), or NULL. */
static const char *kname_at(struct xe *x, uint64_t addr)
{
	uint64_t a;
	struct xe_kent *e = xe_kfind(x, addr >> 3, &a);

	return e ? (e->name ? e->name : "?") : NULL;
}

/* Batch-buffer KSPs (weak) never override a kernel a launch probe named. */
static void test_weak_add(void)
{
	struct xe *x;
	struct xe_stats st;

	CHECK_EQ_INT(xe_new(&(struct xe_config){0}, 0, &x), 0);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x10000, .size = 0x1000,
							     .pid = 7, .name = "named"}),
		     0);
	/* a KSP inside the named kernel: no-op, the name survives */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x10400, .size = 0x100,
							     .pid = 7, .name = "ksp_in",
							     .weak = true}),
		     0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 1);
	CHECK_STREQ(kname_at(x, 0x10400), "named");
	CHECK_STREQ(kname_at(x, 0x10000), "named");
	/* a KSP before it with the default 64 KiB size: clipped to the gap */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x8000, .pid = 7,
							     .name = "ksp_gap", .weak = true}),
		     0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 2);
	CHECK_STREQ(kname_at(x, 0x8000), "ksp_gap");
	CHECK_STREQ(kname_at(x, 0xfff8), "ksp_gap");
	CHECK_STREQ(kname_at(x, 0x10000), "named");
	CHECK(kname_at(x, 0x11000) == NULL); /* not extended past the named one */
	/* its repeat is a look-up, not a new entry */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x8000, .pid = 7,
							     .name = "ksp_gap", .weak = true}),
		     0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 2);
	/* weak over weak: the VA-reuse rule (the newer one takes the range) */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 0x800,
							     .pid = 7, .name = "ksp_new",
							     .weak = true}),
		     0);
	CHECK_STREQ(kname_at(x, 0x9000), "ksp_new");
	CHECK(kname_at(x, 0x8000) == NULL); /* the old guess left the index */
	/* named over weak: replaces it */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 0x100,
							     .pid = 7, .name = "named2"}),
		     0);
	CHECK_STREQ(kname_at(x, 0x9000), "named2");
	/* a weak one at a named kernel's very start is refused too */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 0x100,
							     .pid = 7, .name = "ksp_same",
							     .weak = true}),
		     0);
	CHECK_STREQ(kname_at(x, 0x9000), "named2");
	xe_free(x);
}

/* ---- stream on a pipe with an errno script ---- */

struct script {
	int rfd, wfd;
	int open_err[4];
	unsigned nopen;
	int read_err[8]; /* returned before reading the pipe, in order */
	unsigned nread, iread;
	unsigned opens, enables, closes;
};

static int s_open(void *ctx, const struct xe_stream_cfg *cfg)
{
	struct script *s = ctx;
	int p[2];

	(void)cfg;
	if (s->opens < s->nopen && s->open_err[s->opens])
		return s->open_err[s->opens++];
	s->opens++;
	if (s->rfd < 0) {
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
			return -errno;
		s->rfd = p[0];
		s->wfd = p[1];
	}
	return dup(s->rfd);
}

static int s_enable(void *ctx, int fd)
{
	(void)fd;
	((struct script *)ctx)->enables++;
	return 0;
}

static int s_disable(void *ctx, int fd)
{
	(void)ctx;
	(void)fd;
	return 0;
}

static ssize_t s_read(void *ctx, int fd, void *buf, size_t len)
{
	struct script *s = ctx;
	ssize_t n;

	if (s->iread < s->nread)
		return s->read_err[s->iread++];
	n = read(fd, buf, len);
	return n < 0 ? -errno : n;
}

static void s_close(void *ctx, int fd)
{
	((struct script *)ctx)->closes++;
	close(fd);
}

static const struct xe_obs_ops script_ops = {s_open, s_enable, s_disable, s_read, s_close};

static struct xe *g_x;

static void sink(void *arg, struct xe_stream *st, const uint8_t *buf, size_t len, uint64_t now)
{
	(void)arg;
	xe_ingest(g_x, xe_stream_cfg(st)->dec, buf, len, 64, now);
}

static void run_for(uv_loop_t *loop, int ms)
{
	uint64_t end = uv_now(loop) + (uint64_t)ms;

	while (uv_now(loop) < end) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(1000);
		uv_update_time(loop);
	}
}

static void test_stream(void)
{
	uv_loop_t loop;
	struct script sc = {.rfd = -1, .wfd = -1, .open_err = {-EBUSY}, .nopen = 1,
			    .read_err = {-EIO, -EAGAIN}, .nread = 2};
	struct xe_stream_cfg cfg = {.name = "test/gt0", .record_size = 64,
				    .dec = xe_decoder_by_name("xe2"), .busy_retry_ms = 20,
				    .backoff_min_ms = 10, .backoff_max_ms = 40};
	struct xe_stream *s;
	struct xe_stream_stats st;
	struct xe_stats xs;
	uint8_t rec[64 * 3];

	uv_loop_init(&loop);
	CHECK_EQ_INT(xe_new(NULL, 0, &g_x), 0);
	CHECK_EQ_INT(xe_stream_new(&loop, &cfg, &script_ops, &sc, sink, NULL, NULL, &s), 0);
	xe_stream_start(s);
	CHECK_EQ_INT(xe_stream_state(s), XS_BUSY); /* another tool holds the GT */
	run_for(&loop, 60);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);
	CHECK_EQ_INT(sc.enables, 1);

	/* data with a record split across two writes, then -EIO handled */
	for (int i = 0; i < 3; i++)
		xe2_rec(rec + 64 * i, 0x100 + (unsigned)i, XE_R_SBID, 2);
	CHECK_EQ_INT(write(sc.wfd, rec, 100), 100);
	run_for(&loop, 20);
	CHECK_EQ_INT(write(sc.wfd, rec + 100, sizeof(rec) - 100), (int)sizeof(rec) - 100);
	run_for(&loop, 20);
	xe_stream_get_stats(s, &st);
	CHECK_EQ_U64(st.records, 3);
	CHECK_EQ_U64(st.drops, 1);
	CHECK_EQ_U64(st.busy, 1);
	xe_get_stats(g_x, &xs);
	CHECK_EQ_U64(xs.records, 3);
	CHECK_EQ_U64(xs.deferred_now, 3); /* no kernel known: waiting, not dropped */

	/* reset: -ENODEV closes and reopens with backoff */
	sc.read_err[0] = -ENODEV;
	sc.iread = 0;
	sc.nread = 1;
	CHECK_EQ_INT(write(sc.wfd, rec, 64), 64);
	run_for(&loop, 5);
	xe_stream_get_stats(s, &st);
	CHECK_EQ_U64(st.resets, 1);
	run_for(&loop, 60);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);
	xe_stream_get_stats(s, &st);
	CHECK_EQ_U64(st.opens, 2);
	CHECK_EQ_U64(st.records, 4); /* the pending record read after reopen */

	/* pause for 0.05 s... expressed in ms here; resume explicitly too */
	xe_stream_pause(s, 50);
	CHECK_EQ_INT(xe_stream_state(s), XS_PAUSED);
	unsigned closes = sc.closes;
	CHECK_EQ_INT(closes, 2);
	run_for(&loop, 80);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);
	xe_stream_pause(s, 0);
	run_for(&loop, 30);
	CHECK_EQ_INT(xe_stream_state(s), XS_PAUSED);
	xe_stream_resume(s);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);

	/* another errno: failed with a reason */
	sc.read_err[0] = -EINVAL;
	sc.iread = 0;
	sc.nread = 1;
	CHECK_EQ_INT(write(sc.wfd, rec, 64), 64);
	run_for(&loop, 10);
	CHECK_EQ_INT(xe_stream_state(s), XS_FAILED);
	CHECK(strstr(xe_stream_reason(s), "Invalid argument") != NULL);

	xe_stream_free(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	close(sc.rfd);
	close(sc.wfd);
	xe_free(g_x);
}

static void test_oa(void)
{
	uint8_t rep[XE_OA_PEC_REPORT_BYTES] = {0};
	struct xe_oa_state st = {.ts_freq_hz = 19200000};
	struct xe_oa_sample s;
	uint64_t mhz = 0, busy = 0, v;

	/* report 1: time near the 56-bit wrap, ticks near the 32-bit wrap */
	v = (1ull << 56) - 960000; /* 50 ms before the wrap at 19.2 MHz */
	memcpy(rep + 8, &v, 8);
	v = 0xFFFFFFFFull - 1000;
	memcpy(rep + 24, &v, 8);
	v = 5000;
	memcpy(rep + 36 * 8, &v, 8);
	v = (3ull << 32) | (5u << 19);
	memcpy(rep, &v, 8);
	CHECK(xe_oa_parse(rep, sizeof(rep), &s));
	CHECK_EQ_INT(s.tile, 3);
	CHECK_EQ_INT(s.reason, 5);
	CHECK(!xe_oa_step(&st, &s, &mhz, &busy));
	/* 100 ms later (1.92 M timestamps), 120 M ticks => 1200 MHz, busy 25 % */
	v = 960000;
	memcpy(rep + 8, &v, 8);
	v = 120000000ull - 1001;
	memcpy(rep + 24, &v, 8);
	v = 5000 + 30000000;
	memcpy(rep + 36 * 8, &v, 8);
	CHECK(xe_oa_parse(rep, sizeof(rep), &s));
	CHECK(xe_oa_step(&st, &s, &mhz, &busy));
	CHECK_EQ_U64(mhz, 1200);
	CHECK_EQ_U64(busy, 25);
	CHECK(!xe_oa_parse(rep, 100, &s));
}

/* Probing on this host: with no xe device the reason says why (and the
 * collector reports exactly that as "unavailable"). */
static void test_probe(void)
{
	struct xe_device devs[2];
	char why[200] = "";
	uint64_t rates[] = {251, 502, 753, 1004, 1255, 1506, 1757};
	int n = xe_devices_probe(devs, 2, 0, why, sizeof(why));

	CHECK(n >= 0);
	if (n == 0) {
		CHECK(why[0] != '\0');
		fprintf(stderr, "probe: %s\n", why);
	}
	for (int i = 0; i < n; i++)
		xe_device_close(&devs[i]);
	CHECK(xe_kernel_release_ok("6.15.0-rc1"));
	CHECK(xe_kernel_release_ok("7.0.1"));
	CHECK(!xe_kernel_release_ok("6.14.9-arch1"));
	CHECK_EQ_U64(xe_pick_rate(rates, 7, 0), 1757); /* default: the slowest */
	CHECK_EQ_U64(xe_pick_rate(rates, 7, 500), 502);
	CHECK_EQ_U64(xe_pick_rate(rates, 7, UINT64_MAX), 251); /* xe.sample_rate = fastest */
}

int main(void)
{
	RUN(test_probe);
	RUN(test_decoders);
	RUN(test_attribution);
	RUN(test_symbolized_frames);
	RUN(test_interval_table);
	RUN(test_weak_add);
	RUN(test_stream);
	RUN(test_oa);
	return test_summary();
}
