/* SPDX-License-Identifier: MIT */
/*
 * A small capture with every record type and a symbols section, for the
 * renderer tests: pid 10 "app" samples main;run;compute (and a syscall
 * path with kernel frames), pid 20 "bad<&>\xff" samples one stack, a GPU
 * launch and interval of "gemm<float>" and a mark, spread over 2.5 s.
 * User frames carry file mappings with build ids (SYNTH_BID_APP, _BAD).
 * synth_add_xe() adds an EU-stall section whose kernel was launched from
 * pid 10's main;run;compute stack.
 */
#ifndef GPUPROF_TESTS_RENDER_SYNTH_H
#define GPUPROF_TESTS_RENDER_SYNTH_H

#include "capture/capsass.h"
#include "sym/capbuild.h"
#include "section.h"
#include "symtab.h"
#include "xe.h"

#define SYNTH_T0 1000000000000ull
#define SYNTH_BID_APP "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334"
#define SYNTH_BID_BAD "ffeeddccbbaa99887766554433221100"

/* user frames all in mapping map (0: none), kernel frames in none */
static void synth_syms(struct sym_table_builder *b, uint32_t pid, uint32_t stack,
		       const char *const *names, uint16_t nu, uint16_t nk, uint32_t map)
{
	uint32_t idx[16], maps[16];
	for (size_t i = 0; i < (size_t)nu + nk; i++) {
		sym_tb_name(b, names[i], strlen(names[i]), &idx[i]);
		maps[i] = i < nu ? map : 0;
	}
	sym_tb_add_maps(b, pid, stack, idx, NULL, maps, nu, nk);
}

static uint32_t synth_map(struct sym_table_builder *b, uint32_t pid, uint64_t start, uint64_t limit,
			  const char *path, const char *bid)
{
	struct sym_mapping m = {.start = start, .limit = limit, .offset = 0x1000, .pid = pid,
				.flags = SYMTAB_MAPF_SYMBOLS};
	uint32_t idx;
	sym_tb_name(b, path, strlen(path), &m.file);
	sym_tb_name(b, bid, strlen(bid), &m.build_id);
	sym_tb_map(b, &m, &idx);
	return idx;
}

/* b's table as c's symbols section; frees b. */
static inline void synth_add_symbols(struct capture *c, struct sym_table_builder *b)
{
	void *buf;
	size_t len;

	if (sym_tb_encode(b, &buf, &len) < 0 || capture_add_extra(c, CAPSEC_SYMBOLS, buf, len) < 0)
		abort();
	free(buf);
	sym_tb_free(b);
}

static struct capture *synth_capture(void)
{
	struct capture *c;
	struct sym_table_builder *b;
	if (capture_new(&c) < 0 || sym_tb_new(false, &b) < 0)
		abort();
	c->id = 7;
	c->t0_ns = SYNTH_T0;
	c->t1_ns = SYNTH_T0 + 2500000000ull;
	uint32_t app = cb_str(c, "app"), bad = cb_str(c, "bad<&>\xff");
	uint32_t gemm = cb_str(c, "gemm<float>"), step = cb_str(c, "step#1");
	/* leaf first, as the store keeps them */
	const uint64_t s1ips[] = {0x1003, 0x1002, 0x1001};
	const uint64_t s2ips[] = {0x1004, 0x1002, 0x1001, 0xffff0002, 0xffff0001};
	const uint64_t s3ips[] = {0x2002, 0x2001};
	uint32_t s1 = cb_stack(c, s1ips, 3, 0), s2 = cb_stack(c, s2ips, 3, 2);
	uint32_t s3 = cb_stack(c, s3ips, 2, 0);
	static const char *const n1[] = {"compute", "run", "main"};
	static const char *const n2[] = {"write_log", "run", "main", "vfs_write", "do_syscall_64"};
	static const char *const n3[] = {"f\"q'<x>&y", "main"};
	uint32_t mapp = synth_map(b, 10, 0x1000, 0x2000, "/usr/bin/app", SYNTH_BID_APP);
	uint32_t mbad = synth_map(b, 20, 0x2000, 0x3000, "/opt/bad/libbad.so", SYNTH_BID_BAD);
	synth_syms(b, 10, s1, n1, 3, 0, mapp);
	synth_syms(b, 10, s2, n2, 3, 2, mapp);
	synth_syms(b, 20, s3, n3, 2, 0, mbad);
	synth_add_symbols(c, b);
	for (int i = 0; i < 100; i++) /* 60 compute, 30 write_log, 10 bad */
		cb_rec(c, SYNTH_T0 + (uint64_t)i * 25000000ull, i < 90 ? 10 : 20, i < 90 ? 10 : 20,
		       i < 90 ? app : bad,
		       i < 60	? s1
		       : i < 90 ? s2
				: s3);
	cb_put(c, (struct store_rec){.ts_ns = SYNTH_T0 + 5000,
				     .pid = 10,
				     .tid = 10,
				     .comm = app,
				     .name = gemm,
				     .type = STORE_REC_GPU_LAUNCH,
				     .aux = {1, 42}});
	cb_put(c, (struct store_rec){.ts_ns = SYNTH_T0 + 8000,
				     .dur_ns = 12345,
				     .pid = 10,
				     .tid = 10,
				     .comm = app,
				     .name = gemm,
				     .type = STORE_REC_GPU_INTERVAL,
				     .aux = {3, 0}});
	cb_put(c, (struct store_rec){.ts_ns = SYNTH_T0 + 1000,
				     .dur_ns = 2000000,
				     .pid = 10,
				     .tid = 10,
				     .comm = app,
				     .name = step,
				     .type = STORE_REC_MARK});
	return c;
}

/*
 * One thread of pid 10 "app" sampled at 49 Hz for 6 s: each second it runs
 * for 300 ms, then half the time (every other sample) until 700 ms, then
 * sleeps. A 20 ms cell holds 0 or 1 samples; a 100 ms one 5 while the
 * thread runs, 2 or 3 while it runs half the time.
 */
static inline struct capture *synth_49hz_capture(void)
{
	struct capture *c;
	struct sym_table_builder *b;
	if (capture_new(&c) < 0 || sym_tb_new(false, &b) < 0)
		abort();
	c->id = 8;
	c->t0_ns = SYNTH_T0;
	c->t1_ns = SYNTH_T0 + 6000000000ull;
	uint32_t app = cb_str(c, "app");
	const uint64_t ips[] = {0x1003, 0x1002, 0x1001};
	uint32_t s1 = cb_stack(c, ips, 3, 0);
	static const char *const names[] = {"compute", "run", "main"};
	uint32_t mapp = synth_map(b, 10, 0x1000, 0x2000, "/usr/bin/app", SYNTH_BID_APP);
	synth_syms(b, 10, s1, names, 3, 0, mapp);
	synth_add_symbols(c, b);
	for (uint64_t i = 0;; i++) {
		uint64_t dt = i * 1000000000ull / 49;
		if (dt >= 6000000000ull)
			break;
		uint64_t in = dt % 1000000000ull;
		if (in < 300000000ull || (in < 700000000ull && i % 2))
			cb_rec(c, SYNTH_T0 + dt, 10, 10, app, s1);
	}
	return c;
}

/*
 * A process as the symbolizer records it: pid 30 "srv", its hot stack
 * ending in libc (so libc's mapping is the first a frame uses), the
 * executable /usr/bin/srv flagged SYMTAB_MAPF_MAIN, and source lines on
 * the executable's frames: main (srv.c:12) -> serve (srv.c:42) -> memcpy.
 */
static inline struct capture *synth_main_capture(void)
{
	struct capture *c;
	struct sym_table_builder *b;
	if (capture_new(&c) < 0 || sym_tb_new(true, &b) < 0)
		abort();
	c->t0_ns = SYNTH_T0;
	c->t1_ns = SYNTH_T0 + 1000000000ull;
	uint32_t srv = cb_str(c, "srv");
	const uint64_t ips[] = {0x7f0000001100, 0x401234, 0x401100}; /* leaf first */
	uint32_t st = cb_stack(c, ips, 3, 0);
	struct sym_mapping libc = {.start = 0x7f0000000000, .limit = 0x7f0000100000,
				   .offset = 0x28000, .pid = 30, .flags = SYMTAB_MAPF_SYMBOLS};
	struct sym_mapping exe = {.start = 0x401000, .limit = 0x402000, .offset = 0x1000,
				  .pid = 30, .flags = SYMTAB_MAPF_SYMBOLS | SYMTAB_MAPF_MAIN};
	uint32_t mlibc, mexe, names[3], lines[3] = {0}, maps[3];
	sym_tb_name(b, "/usr/lib/x86_64-linux-gnu/libc.so.6", 35, &libc.file);
	sym_tb_name(b, "1111111111111111111111111111111111111111", 40, &libc.build_id);
	sym_tb_name(b, "/usr/bin/srv", 12, &exe.file);
	sym_tb_name(b, SYNTH_BID_APP, strlen(SYNTH_BID_APP), &exe.build_id);
	sym_tb_map(b, &libc, &mlibc);
	sym_tb_map(b, &exe, &mexe);
	sym_tb_name(b, "memcpy", 6, &names[0]);
	sym_tb_name(b, "serve", 5, &names[1]);
	sym_tb_name(b, "main", 4, &names[2]);
	sym_tb_name(b, "/src/srv.c:42", 13, &lines[1]);
	sym_tb_name(b, "/src/srv.c:12", 13, &lines[2]);
	maps[0] = mlibc;
	maps[1] = maps[2] = mexe;
	sym_tb_add_maps(b, 30, st, names, lines, maps, 3, 0);
	synth_add_symbols(c, b);
	for (int i = 0; i < 5; i++)
		cb_rec(c, SYNTH_T0 + (uint64_t)i * 1000, 30, 30, srv, st);
	return c;
}

/*
 * An EU-stall section (daemon/xe/section.h) built by hand: kernel 1
 * "gemm<float>" of pid 10 at 0xff000000, launched from stack 1 (main;run;
 * compute); rows (interval, offset: counts) 0 0x40: send 5 active 2,
 * 1 0x40: send 3, 1 0x80: sync 7, and an unattributed 0x1230: other 4.
 */
static inline void synth_add_xe(struct capture *c)
{
	static const char blob[] = "gemm<float>model.zebinapp";
	const uint64_t ips[] = {0x1003, 0x1002, 0x1001};
	struct {
		struct xe_sec_hdr h;
		struct xe_sec_kernel k;
		struct xe_row rows[4];
		uint64_t ips[3];
		char blob[sizeof(blob) - 1];
	} __attribute__((packed)) sec;
	_Static_assert(sizeof(sec) == 64 + 80 + 4 * 64 + 24 + sizeof(blob) - 1, "layout");
	memset(&sec, 0, sizeof(sec));
	sec.h = (struct xe_sec_hdr){.magic = XE_SEC_MAGIC, .version = XE_SEC_VERSION,
				    .nkernels = 1, .nrows = 4, .nips = 3,
				    .blob_len = sizeof(blob) - 1, .interval_ns = 100000000,
				    .epoch_ns = SYNTH_T0};
	sec.k = (struct xe_sec_kernel){.id = 1, .pid = 10, .start = 0xff000000, .size = 0x1000,
				       .iba = 0xfe000000, .name = {0, 11}, .file = {11, 11},
				       .comm = {22, 3}, .nips = 3, .stack = 1};
	sec.rows[0] = (struct xe_row){.iv = 0, .kid = 0, .off = 0x1230};
	sec.rows[0].cnt[XE_R_OTHER] = 4;
	sec.rows[1] = (struct xe_row){.iv = 0, .kid = 1, .off = 0x40};
	sec.rows[1].cnt[XE_R_SEND] = 5;
	sec.rows[1].cnt[XE_R_ACTIVE] = 2;
	sec.rows[2] = (struct xe_row){.iv = 1, .kid = 1, .off = 0x40};
	sec.rows[2].cnt[XE_R_SEND] = 3;
	sec.rows[3] = (struct xe_row){.iv = 1, .kid = 1, .off = 0x80};
	sec.rows[3].cnt[XE_R_SYNC] = 7;
	memcpy(sec.ips, ips, sizeof(ips));
	memcpy(sec.blob, blob, sizeof(sec.blob));
	if (capture_add_extra(c, CAPSEC_XE_EU_STALL, &sec, sizeof(sec)) < 0)
		abort();
}

/*
 * NVIDIA PC samples (STORE_REC_GPU_PC) of "gemm<float>" in pid 10, after
 * a launch of it from stack 1 (main;run;compute): +0x1a0 barrier 30 and
 * long_scoreboard 12, +0x40 barrier 5; a SASS section with the text of
 * +0x1a0 only (capture/capsass.h).
 */
static inline void synth_add_pc(struct capture *c)
{
	static const char *const why[] = {"smsp__pcsamp_warps_issue_stalled_barrier",
					  "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
					  "smsp__pcsamp_warps_issue_stalled_barrier"};
	static const uint32_t pcs[] = {0x1a0, 0x1a0, 0x40}, n[] = {30, 12, 5};
	uint32_t gemm = cb_str(c, "gemm<float>"), app = cb_str(c, "app");
	struct capsass_builder b = {0};
	void *buf;
	size_t len;

	cb_put(c, (struct store_rec){.ts_ns = SYNTH_T0 + 6000,
				     .pid = 10,
				     .tid = 10,
				     .comm = app,
				     .stack = 1,
				     .name = gemm,
				     .type = STORE_REC_GPU_LAUNCH});
	for (int i = 0; i < 3; i++) {
		cb_put(c, (struct store_rec){.ts_ns = SYNTH_T0 + 9000,
					     .pid = 10,
					     .comm = app,
					     .name = gemm,
					     .type = STORE_REC_GPU_PC,
					     .aux32 = n[i],
					     .aux = {0xc0b1,
						     (uint64_t)cb_str(c, why[i]) << 32 | pcs[i]}});
	}
	if (capsass_add(&b, 0xc0b1, gemm, 0x1a0, "BAR.SYNC.DEFER_BLOCKING 0x0") < 0 ||
	    capsass_encode(&b, &buf, &len) < 0 ||
	    capture_adopt_extra(c, CAPSEC_CUPTI_SASS, buf, len) < 0)
		abort();
	capsass_builder_finish(&b);
}

#endif
