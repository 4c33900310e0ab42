/* SPDX-License-Identifier: MIT */
/*
 * Named and random command-stream cases for the parser tests (test_gpu_cs*.c,
 * unit; test_gpu_cs_bpf.c, BPF-vs-host; the gen_gpu_cs fuzz seeds; the
 * bench), built with the encoders of cs_build.h.
 */
#ifndef GPUPROF_TESTS_CS_CASES_H
#define GPUPROF_TESTS_CS_CASES_H

#include <stdint.h>

#include "cs_build.h"

/* ---- named cases: each unit test checks one; the BPF test runs all ---- */

static inline void case_xehp(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	put(a, GFX(0x6904) | 0x0302); /* PIPELINE_SELECT: 1 dword */
	bb_sba(a, IBA1, 0);
	bb_walker(a, 0, 0x1c40);
	bb_pipe_control(a);
	bb_end(a);
}

static inline void case_xe2_sip(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_sba(a, IBA1, 0);
	bb_sip(a, 0x800);
	bb_walker(a, 1, 0x12345680ull | 0x0001ull << 32);
	bb_walker(a, 1, 0x12345680ull | 0x0001ull << 32); /* same kernel again */
	bb_noop(a);
	bb_end(a);
}

/* IBA changes mid-buffer; an SBA without IBA Modify Enable keeps it. */
static inline void case_iba_change(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_sba(a, IBA1, 0);
	bb_walker(a, 0, 0x4000);
	bb_sba(a, IBA2, 0);
	bb_walker(a, 0, 0x4000);
	bb_sba(a, 0, 0);
	bb_walker(a, 0, 0x4000);
	bb_end(a);
}

/* A chains to B, B calls C (second level), C returns, B ends. */
static inline void case_chain(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A), *b = cs_new_buf(c, VA_B), *d = cs_new_buf(c, VA_C);

	c->start = VA_A;
	bb_sba(a, IBA1, 0);
	bb_walker(a, 1, 0x1000);
	bb_start(a, VA_B, 0);
	bb_walker(a, 1, 0xdead000); /* after a chain jump: never reached */
	bb_walker(b, 1, 0x2000);
	bb_start(b, VA_C, 1);
	bb_walker(b, 1, 0x3000); /* after the call returns */
	bb_end(b);
	bb_walker(d, 1, 0x4000);
	bb_end(d);
}

/* Each buffer chains to the next 64-byte slot: more hops than the limit. */
static inline void case_depth(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	for (int i = 0; i < GPU_CS_MAX_HOPS + 4; i++) {
		while (a->n % 16)
			bb_noop(a);
		bb_walker(a, 0, 0x1000 + 0x40 * (uint64_t)i);
		bb_start(a, VA_A + 4ull * ((a->n + 3 + 15) / 16 * 16), 0);
	}
	bb_end(a);
}

/* Second-level calls nested deeper than the hardware's levels. */
static inline void case_nest(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	for (int i = 0; i < GPU_CS_MAX_NEST + 2; i++)
		bb_start(a, VA_A + 4ull * (a->n + 3), 1); /* call the next command */
	bb_end(a);
}

static inline void case_self_loop(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_walker(a, 0, 0x1000);
	bb_start(a, VA_A, 0);
}

/* A -> B -> A: the ring of direct submission, parsed once. */
static inline void case_ab_loop(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A), *b = cs_new_buf(c, VA_B);

	c->start = VA_A;
	bb_walker(a, 0, 0x1000);
	bb_start(a, VA_B, 0);
	bb_walker(b, 0, 0x2000);
	bb_start(b, VA_A, 0);
}

/* The walker is cut after 10 of its 39 dwords. */
static inline void case_truncated(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_sba(a, IBA1, 0);
	bb_walker(a, 0, 0x1000);
	a->n -= 29;
}

/* Ends at a command boundary without MI_BATCH_BUFFER_END. */
static inline void case_no_end(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_walker(a, 1, 0x1000);
	bb_pipe_control(a);
}

/* A chain to memory nobody registered (yet). */
static inline void case_missing(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_sba(a, IBA1, 0);
	bb_start(a, VA_D + 0x40, 0);
}

/* Commands, then zeros: NEO has not written the rest yet. */
static inline void case_zeros(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_walker(a, 1, 0x1000);
	bb_noop(a); /* a few NOOPs are padding */
	bb_noop(a);
	bb_walker(a, 1, 0x2000);
	for (int i = 0; i < 100; i++)
		bb_noop(a);
}

static inline void case_garbage(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	for (int i = 0; i < 200; i++)
		put(a, 0xe0000000u | (uint32_t)i * 0x9e3779b1u >> 3); /* type 7 */
}

/* Commands whose DWord Length is 0 (2 dwords), and the single-dword and
 * wide-length forms (the PRMs' command encodings), then a walker that must still be found. */
static inline void case_lengths(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	put(a, MI(0x22) | 0); /* MI_LOAD_REGISTER_IMM, length 0: 2 dwords */
	put(a, 0x2600);
	put(a, GFX(0x7a00) | 0); /* GFXPIPE, length 0: 2 dwords */
	put(a, 0);
	put(a, MI(0x26) | 3 | 0xc0); /* MI_FLUSH_DW: 6-bit length, bits 7:6 not length */
	for (int i = 0; i < 4; i++)
		put(a, 0x55);
	put(a, MI(0x20) | 0x3 | 1u << 21); /* MI_STORE_DATA_IMM qword: 10-bit length, 5 dw */
	for (int i = 0; i < 4; i++)
		put(a, 0x66);
	put(a, GFX(0x680b) | 0x1);    /* 3DSTATE_VF_STATISTICS: 1 dword */
	put(a, GFX(0x7000) | 0x0107); /* Gen12 MEDIA_VFE_STATE: 15:0 length = 0x107 */
	for (int i = 0; i < 0x108; i++)
		put(a, 0x7777);
	put(a, (2u << 29) | 0x41u << 22 | 20); /* XY_BLOCK_COPY_BLT, 22 dw */
	for (int i = 0; i < 21; i++)
		put(a, 0x8888);
	put(a, MI(0x05)); /* MI_ARB_CHECK: 1 dword */
	bb_walker(a, 0, 0x9000);
	bb_end(a);
}

/* Gen12: GPGPU_WALKER -> IDD at DSBA + MIDL start + 32 * offset. */
static inline void case_gpgpu(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A), *dsh = cs_new_buf(c, DSBA1);

	c->start = VA_A;
	bb_sba(a, IBA1, DSBA1);
	put(a, GFX(0x7002) | 2); /* MEDIA_INTERFACE_DESCRIPTOR_LOAD, 4 dw */
	put(a, 0);
	put(a, 64);
	put(a, 0x100);		  /* descriptors at DSBA + 0x100 */
	put(a, GFX(0x7105) | 13); /* GPGPU_WALKER, 15 dw, descriptor 1 */
	put(a, 1);
	for (int i = 2; i < 15; i++)
		put(a, 0);
	bb_end(a);
	for (int i = 0; i < 0x120 / 4; i++)
		put(dsh, 0);
	put(dsh, 0x00abc040); /* IDD dw0: KSP 31:6 */
	put(dsh, 0x00000002); /* IDD dw1: KSP high 15:0 */
	for (int i = 0; i < 6; i++)
		put(dsh, 0);
}

/* 3D shader states: VS dw1, HS dw3 (the PRMs' command encodings), PS KSP0 dw1 + KSP1 dw8, a
 * disabled GS (KSP 0). */
static inline void case_3d(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	bb_sba(a, IBA1, 0);
	bb_3d(a, 0x7810, 9, 1, 0x100);
	bb_3d(a, 0x7811, 10, 1, 0);
	bb_3d(a, 0x781b, 9, 3, 0x200);
	bb_3d(a, 0x7820, 12, 1, 0x300);
	a->dw[a->n - 12 + 8] = 0x340;
	bb_end(a);
}

/* More commands than the parser's budget. */
static inline void case_limit(struct cs_case *c)
{
	struct cs_buf *a = cs_new_buf(c, VA_A);

	c->start = VA_A;
	for (int i = 0; i < GPU_CS_MAX_COMMANDS + 10; i++)
		put(a, MI(0x05)); /* MI_ARB_CHECK */
	bb_end(a);
}

typedef void (*cs_case_fn)(struct cs_case *c);

static const struct {
	const char *name;
	cs_case_fn fn;
} cs_named[] = {
    {"xehp", case_xehp},
    {"xe2_sip", case_xe2_sip},
    {"iba_change", case_iba_change},
    {"chain", case_chain},
    {"depth", case_depth},
    {"nest", case_nest},
    {"self_loop", case_self_loop},
    {"ab_loop", case_ab_loop},
    {"truncated", case_truncated},
    {"no_end", case_no_end},
    {"missing", case_missing},
    {"zeros", case_zeros},
    {"garbage", case_garbage},
    {"lengths", case_lengths},
    {"gpgpu", case_gpgpu},
    {"3d", case_3d},
    {"limit", case_limit},
};
#define CS_NNAMED (sizeof(cs_named) / sizeof(cs_named[0]))

/* A random case from seed: valid commands, garbage, chains and calls among
 * up to 4 buffers, some cut short. Deterministic. */
static inline uint32_t cs_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33);
}

static inline void cs_case_random(struct cs_case *c, uint64_t seed)
{
	static const uint64_t vas[CS_MAX_BUFS] = {VA_A, VA_B, VA_C, VA_D};
	uint64_t s = seed * 2654435761u + 1;
	unsigned nb = 1 + cs_rand(&s) % CS_MAX_BUFS;

	c->name = "random";
	c->start = VA_A;
	for (unsigned i = 0; i < nb; i++) {
		struct cs_buf *b = cs_new_buf(c, vas[i]);
		unsigned ncmd = cs_rand(&s) % 40;

		for (unsigned k = 0; k < ncmd; k++) {
			uint32_t r = cs_rand(&s);
			uint64_t tgt = vas[r % CS_MAX_BUFS] + 4ull * (cs_rand(&s) % 64);

			switch (r % 13) {
			case 0:
				bb_sba(b, IBA1 + ((uint64_t)(r & 0xf0) << 12), r & 1 ? DSBA1 : 0);
				break;
			case 1:
				bb_sip(b, r & 0xfff0);
				break;
			case 2:
				bb_walker(b, r & 1, (uint64_t)cs_rand(&s) << 6);
				break;
			case 3:
				bb_start(b, tgt, r & 0x100);
				break;
			case 4:
				bb_end(b);
				break;
			case 5:
				bb_noop(b);
				break;
			case 6:
				bb_pipe_control(b);
				break;
			case 7:
				put(b, cs_rand(&s));
				break; /* garbage */
			case 8:
				bb_3d(b, 0x7820, 12, 1, (uint64_t)cs_rand(&s) << 6);
				break;
			case 9:
				put(b, GFX(0x7105) | 13);
				for (int j = 0; j < 14; j++)
					put(b, r >> j);
				break;
			case 10:
				put(b, GFX(0x7002) | 2);
				put(b, 0);
				put(b, 0);
				put(b, r & 0x3c0);
				break;
			case 11:
				for (unsigned j = 0; j < (r >> 8) % 24; j++)
					bb_noop(b);
				break;
			default:
				put(b, cs_rand(&s) & 0x1fffffff);
				break; /* an MI of any length */
			}
		}
		if (cs_rand(&s) % 3 == 0 && b->n > 2)
			b->n -= cs_rand(&s) % (b->n / 2); /* cut short */
	}
}

#endif
