// SPDX-License-Identifier: MIT
/*
 * Xe EU-stall attribution, hardware-free: Xe2 records against a kernel
 * table (deferral, drops, per-pid/uid/cgroup outputs) and a live capture's
 * EU-stall section joined to its stack table and symbols.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "decode.h"
#include "output.h"
#include "section.h"
#include "xe.h"
#include "xe_collector.h"
#include "xe_int.h"
#include "xe_test_util.h"

#include "capture/capture.h"
#include "symtab.h"

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

int main(void)
{
	RUN(test_attribution);
	RUN(test_symbolized_frames);
	return test_summary();
}
