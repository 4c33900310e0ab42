/* SPDX-License-Identifier: MIT */
/*
 * Batch buffers for the command-stream parser tests, built dword by dword
 * from the documented encodings (the PRMs' command encodings), plus a host run of
 * the parser header over them (gpu_cs_parse.h with a reader over the case's
 * memory, the same windows the BPF program gets). The cases themselves:
 * cs_cases.h.
 */
#ifndef GPUPROF_TESTS_CS_BUILD_H
#define GPUPROF_TESTS_CS_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_cs_parse.h"
#include "gpu_cs_run_abi.h"

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

/* MI: type 0, opcode 28:23; GFXPIPE: type 3, key = dw0 >> 16 (the PRMs' command encodings). */
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

/* MI_BATCH_BUFFER_START, PPGTT (bit 8), second level = bit 22 (the PRMs' command encodings). */
static inline void bb_start(struct cs_buf *b, uint64_t target, int second)
{
	put(b, MI(0x31) | (second ? 1u << 22 : 0) | 1u << 8 | 1);
	put(b, (uint32_t)target & ~3u);
	put(b, (uint32_t)(target >> 32));
}

/* STATE_BASE_ADDRESS, 22 dw (the PRMs' command encodings); a base of 0 is left unmodified. */
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

/* COMPUTE_WALKER: 39 dw / IDD at dw18 (Xe-HP), 40 dw / dw19 (Xe2) (the PRMs' command encodings). */
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

#endif
