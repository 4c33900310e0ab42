/* SPDX-License-Identifier: MIT */
/*
 * Batch buffers for the command-stream parser tests (test_gpu_cs.c, unit;
 * test_gpu_cs_bpf.c, BPF-vs-host), built dword by dword from the
 * documented encodings (intel-gpu-facts.md §4), plus a host run of the
 * parser header over them (gpu_cs_parse.h with a reader over the case's
 * memory, the same windows the BPF program gets).
 */
#ifndef GPUPROF_TESTS_CS_CASES_H
#define GPUPROF_TESTS_CS_CASES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cs_parse.h"
#include "gpu_cs_run.h"

#define CS_MAX_BUFS 4
#define CS_MAX_DW 65536

/* GPU VAs above 4 GiB, so high dwords matter. */
#define VA_A 0x00000001000a0000ull
#define VA_B 0x00000001000b0000ull
#define VA_C 0x00000001000c0000ull
#define VA_D 0x00000001000d0000ull
#define IBA1 0x00007ff100000000ull
#define IBA2 0x00007ff200000000ull
#define DSBA1 0x0000000200000000ull

struct cs_buf {
	uint64_t gpu;
	uint32_t *dw;
	uint32_t n;
};

struct cs_case {
	const char *name;
	uint64_t start;
	unsigned nbufs;
	struct cs_buf b[CS_MAX_BUFS];
};

static inline struct cs_buf *cs_new_buf(struct cs_case *c, uint64_t gpu)
{
	struct cs_buf *b = &c->b[c->nbufs++];

	b->gpu = gpu;
	b->dw = calloc(CS_MAX_DW, 4);
	b->n = 0;
	if (!b->dw)
		abort();
	return b;
}

static inline void cs_case_free(struct cs_case *c)
{
	for (unsigned i = 0; i < c->nbufs; i++)
		free(c->b[i].dw);
	memset(c, 0, sizeof(*c));
}

static inline void put(struct cs_buf *b, uint32_t v)
{
	if (b->n == CS_MAX_DW)
		abort();
	b->dw[b->n++] = v;
}

/* MI: type 0, opcode 28:23; GFXPIPE: type 3, key = dw0 >> 16 (§4.1). */
#define MI(op) ((uint32_t)(op) << 23)
#define GFX(key) ((uint32_t)(key) << 16)

static inline void bb_end(struct cs_buf *b)
{
	put(b, MI(0x0a));
}

static inline void bb_noop(struct cs_buf *b)
{
	put(b, MI(0x00));
}

/* MI_BATCH_BUFFER_START, PPGTT (bit 8), second level = bit 22 (§4.2). */
static inline void bb_start(struct cs_buf *b, uint64_t target, int second)
{
	put(b, MI(0x31) | (second ? 1u << 22 : 0) | 1u << 8 | 1);
	put(b, (uint32_t)target & ~3u);
	put(b, (uint32_t)(target >> 32));
}

/* STATE_BASE_ADDRESS, 22 dw (§4.6); a base of 0 is left unmodified. */
static inline void bb_sba(struct cs_buf *b, uint64_t iba, uint64_t dsba)
{
	uint32_t d[22] = {GFX(0x6101) | 20};

	d[1] = 0x1000 | 1; /* general state: modified */
	if (dsba) {
		d[6] = ((uint32_t)dsba & 0xfffff000u) | 1;
		d[7] = (uint32_t)(dsba >> 32);
	}
	if (iba) {
		d[10] = ((uint32_t)iba & 0xfffff000u) | 1 | 2u << 4; /* + MOCS bits */
		d[11] = (uint32_t)(iba >> 32);
	} else {
		d[10] = 0x5000; /* an address without Modify Enable: ignored */
		d[11] = 0x77;
	}
	for (int i = 0; i < 22; i++)
		put(b, d[i]);
}

static inline void bb_sip(struct cs_buf *b, uint64_t sip)
{
	put(b, GFX(0x6102) | 1);
	put(b, ((uint32_t)sip & 0xfffffff0u) | 0x5); /* low bits are not address */
	put(b, (uint32_t)(sip >> 32));
}

/* COMPUTE_WALKER: 39 dw / IDD at dw18 (Xe-HP), 40 dw / dw19 (Xe2) (§4.5). */
static inline void bb_walker(struct cs_buf *b, int xe2, uint64_t ksp)
{
	uint32_t len = xe2 ? 40 : 39, idd = xe2 ? 19 : 18;

	put(b, GFX(0x7208) | (len - 2));
	for (uint32_t i = 1; i < len; i++) {
		uint32_t v = 0x11110000u | i; /* noise in the other fields */

		if (i == idd)
			v = ((uint32_t)ksp & 0xffffffc0u) | 0x3f;
		else if (i == idd + 1)
			v = 0xabcd0000u | (uint32_t)(ksp >> 32);
		put(b, v);
	}
}

static inline void bb_pipe_control(struct cs_buf *b)
{
	put(b, GFX(0x7a00) | 4);
	for (int i = 0; i < 5; i++)
		put(b, 0x00100000u);
}

/* A GFXPIPE command of len dwords with a KSP at dword k (3D states). */
static inline void bb_3d(struct cs_buf *b, uint32_t key, uint32_t len, uint32_t k, uint64_t ksp)
{
	put(b, GFX(key) | (len - 2));
	for (uint32_t i = 1; i < len; i++)
		put(b, i == k ? (uint32_t)ksp : i == k + 1 ? (uint32_t)(ksp >> 32) : 0);
}

/* The parser's memory: the case's buffers, as the BPF program gets them. */
static inline void cs_case_args(const struct cs_case *c, struct gpu_cs_run_args *a)
{
	memset(a, 0, sizeof(*a));
	a->start = c->start;
	a->nmaps = c->nbufs;
	for (unsigned i = 0; i < c->nbufs; i++) {
		a->maps[i].gpu = c->b[i].gpu;
		a->maps[i].user = (uint64_t)(uintptr_t)c->b[i].dw;
		a->maps[i].len = (uint64_t)c->b[i].n * 4;
	}
}

static __gpu_cs_inline int gpu_cs_read(void *rctx, __u64 addr, __u32 *dst, __u32 max_dw)
{
	const struct gpu_cs_run_args *a = rctx;

	for (uint32_t i = 0; i < a->nmaps && i < GPU_CS_RUN_MAPS; i++) {
		uint64_t g = a->maps[i].gpu, len = a->maps[i].len, n;

		if (addr < g || addr - g >= len)
			continue;
		n = (len - (addr - g)) / 4;
		if (n > max_dw)
			n = max_dw;
		if (n > GPU_CS_WIN_DW)
			n = GPU_CS_WIN_DW;
		memcpy(dst, (const uint8_t *)(uintptr_t)a->maps[i].user + (addr - g), n * 4);
		return (int)n;
	}
	return -14;
}

/* The host build of the parser over a case. */
static inline void cs_host_run(struct gpu_cs_run_args *a, struct gpu_cs *cs)
{
	gpu_cs_begin(cs, a->start);
	for (uint32_t i = 0; i < GPU_CS_MAX_COMMANDS; i++)
		if (gpu_cs_step(cs, a))
			break;
	gpu_cs_finish(cs);
}

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
 * wide-length forms (§4.1-4.3), then a walker that must still be found. */
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

/* 3D shader states: VS dw1, HS dw3 (§4.4), PS KSP0 dw1 + KSP1 dw8, a
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
