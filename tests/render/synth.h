/* SPDX-License-Identifier: MIT */
/*
 * A small capture with every record type and a symbols section, for the
 * renderer tests: pid 10 "app" samples main;run;compute (and a syscall
 * path with kernel frames), pid 20 "bad<&>\xff" samples one stack, a GPU
 * launch and interval of "gemm<float>" and a mark, spread over 2.5 s.
 */
#ifndef GPUPROF_TESTS_RENDER_SYNTH_H
#define GPUPROF_TESTS_RENDER_SYNTH_H

#include "../sym/capbuild.h"
#include "symtab.h"

#define SYNTH_T0 1000000000000ull

static void synth_syms(struct sym_table_builder *b, uint32_t pid, uint32_t stack,
		       const char *const *names, uint16_t nu, uint16_t nk)
{
	uint32_t idx[16];
	for (size_t i = 0; i < (size_t)nu + nk; i++)
		sym_tb_name(b, names[i], strlen(names[i]), &idx[i]);
	sym_tb_add(b, pid, stack, idx, NULL, nu, nk);
}

static struct capture *synth_capture(void)
{
	struct capture *c;
	struct sym_table_builder *b;
	void *buf;
	size_t len;
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
	synth_syms(b, 10, s1, n1, 3, 0);
	synth_syms(b, 10, s2, n2, 3, 2);
	synth_syms(b, 20, s3, n3, 2, 0);
	if (sym_tb_encode(b, &buf, &len) < 0 || capture_add_extra(c, CAPSEC_SYMBOLS, buf, len) < 0)
		abort();
	free(buf);
	sym_tb_free(b);
	for (int i = 0; i < 100; i++) /* 60 compute, 30 write_log, 10 bad */
		cb_rec(c, SYNTH_T0 + (uint64_t)i * 25000000ull, i < 90 ? 10 : 20, i < 90 ? 10 : 20,
		       i < 90 ? app : bad,
		       i < 60	? s1
		       : i < 90 ? s2
				: s3);
	cb_rec(c, SYNTH_T0 + 5000, 10, 10, app, 0);
	c->recs[c->nrecs - 1] = (struct store_rec){.ts_ns = SYNTH_T0 + 5000,
						   .pid = 10,
						   .tid = 10,
						   .comm = app,
						   .name = gemm,
						   .type = STORE_REC_GPU_LAUNCH,
						   .aux = {1, 42}};
	cb_rec(c, 0, 0, 0, 0, 0);
	c->recs[c->nrecs - 1] = (struct store_rec){.ts_ns = SYNTH_T0 + 8000,
						   .dur_ns = 12345,
						   .pid = 10,
						   .tid = 10,
						   .comm = app,
						   .name = gemm,
						   .type = STORE_REC_GPU_INTERVAL,
						   .aux = {3, 0}};
	cb_rec(c, 0, 0, 0, 0, 0);
	c->recs[c->nrecs - 1] = (struct store_rec){.ts_ns = SYNTH_T0 + 1000,
						   .dur_ns = 2000000,
						   .pid = 10,
						   .tid = 10,
						   .comm = app,
						   .name = step,
						   .type = STORE_REC_MARK};
	return c;
}

#endif
