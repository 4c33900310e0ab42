/* SPDX-License-Identifier: MIT */
/*
 * GPU command-stream (batch buffer) parser for Intel Gen12 / Xe-HP / Xe2
 * (docs/gpu-cs.md, the PRMs' command encodings): finds the kernel start pointers (KSPs) of
 * COMPUTE_WALKER, GPGPU_WALKER and the 3D shader states, the system routine
 * (STATE_SIP) and the base addresses STATE_BASE_ADDRESS sets, following
 * MI_BATCH_BUFFER_START chains and second-level calls.
 *
 * Written once for two compilers: clang -target bpf (gpu_cs.bpf.c) and the
 * host compiler (daemon/xe/cs.c, tests). Hence: no libc, fixed-width types
 * only, every loop bounded by a constant, no recursion, no function
 * pointers, array indexes masked to a power of two.
 *
 * The includer defines, before or after including this header:
 *
 *   static __always_inline int gpu_cs_read(void *rctx, __u64 gpu_addr,
 *                                          __u32 *dst, __u32 max_dw);
 *
 * which copies up to max_dw dwords of GPU memory at gpu_addr into dst and
 * returns how many it copied (fewer at the end of a buffer, 0 right at its
 * end), or a negative errno when nothing is mapped there (yet). BPF reads
 * the submitting process's mapping with bpf_probe_read_user(); the host
 * reads copies it was given.
 *
 * Driving it: gpu_cs_begin(), then gpu_cs_step() until it returns non-zero
 * or GPU_CS_MAX_COMMANDS steps have run (BPF: bpf_loop()), then
 * gpu_cs_finish(). The result is cs->r; only r.ksp[0 .. r.nksp) is valid.
 */
#ifndef GPUPROF_BPF_GPU_CS_PARSE_H
#define GPUPROF_BPF_GPU_CS_PARSE_H

#include "gpu_cs_abi.h"

/* Byte offset of the counters-and-bases part that gpu_cs_begin() clears. */
#define GPU_CS_RESULT_HEAD __builtin_offsetof(struct gpu_cs_result, ksp)

#ifndef __gpu_cs_inline
#define __gpu_cs_inline inline __attribute__((always_inline))
#endif

static __gpu_cs_inline int gpu_cs_read(void *rctx, __u64 gpu_addr, __u32 *dst, __u32 max_dw);

/*
 * Total dwords of the command whose first dword is dw0 (the PRMs' command encodings),
 * or 0 when dw0 is no known command type. Never more than 65537.
 */
static __gpu_cs_inline __u32 gpu_cs_cmd_len(__u32 dw0)
{
	__u32 op;

	switch (dw0 >> 29) {
	case 0: /* MI */
		op = (dw0 >> 23) & 0x3f;
		if (op < 0x10)
			return 1; /* NOOP, BATCH_BUFFER_END, ...: no length field */
		if (op == 0x26 || op == 0x28 || op == 0x12 || op == 0x13)
			return (dw0 & 0x3f) + 2; /* FLUSH_DW, REPORT_PERF_COUNT, LOAD_SCAN_LINES */
		if (op == 0x20 || op == 0x27)
			return (dw0 & 0x3ff) + 2; /* STORE_DATA_IMM, CLFLUSH */
		return (dw0 & 0xff) + 2;
	case 2: /* XY blitter */
	case 5: /* Xe2 EXEC (RESOURCE_BARRIER) */
		return (dw0 & 0xff) + 2;
	case 3: /* GFXPIPE */
		if (((dw0 >> 27) & 3) == 1)
			return 1; /* PIPELINE_SELECT, 3DSTATE_VF_STATISTICS */
		if ((dw0 >> 24) == 0x70)
			return (dw0 & 0xffff) + 2; /* Gen12 MEDIA_* state: 15:0 */
		return (dw0 & 0xff) + 2;
	default:
		return 0;
	}
}

static __gpu_cs_inline void gpu_cs_begin(struct gpu_cs *cs, __u64 start)
{
	__builtin_memset(&cs->r, 0, GPU_CS_RESULT_HEAD);
	cs->addr = start & GPU_CS_VA_MASK & ~3ull;
	cs->win_addr = 0;
	cs->win_len = 0;
	cs->at_start = 1;
	cs->zero_addr = 0;
	cs->zero_run = 0;
	cs->nest = 0;
	cs->visited[0] = cs->addr;
	cs->nvisited = 1;
	cs->has_midl = 0;
	cs->midl = 0;
}

static __gpu_cs_inline int gpu_cs_stop(struct gpu_cs *cs, __u32 status, __u64 at)
{
	cs->r.status = status;
	cs->r.stop_addr = at;
	return 1;
}

/* A parse that used up its steps without ending is LIMIT. */
static __gpu_cs_inline void gpu_cs_finish(struct gpu_cs *cs)
{
	if (cs->r.status == GPU_CS_RUNNING)
		gpu_cs_stop(cs, GPU_CS_LIMIT, cs->addr);
}

/* Make need dwords at cs->addr visible in the window. Returns how many of
 * them are (0 .. need), or negative when nothing is mapped at cs->addr. */
static __gpu_cs_inline int gpu_cs_window(struct gpu_cs *cs, void *rctx, __u32 need)
{
	__u64 off = cs->addr - cs->win_addr;
	int n;

	if (cs->addr >= cs->win_addr && off / 4 + need <= cs->win_len)
		return (int)need;
	n = gpu_cs_read(rctx, cs->addr, cs->win, GPU_CS_WIN_DW);
	if (n < 0) {
		cs->win_len = 0;
		return n;
	}
	if (n > GPU_CS_WIN_DW)
		n = GPU_CS_WIN_DW;
	cs->win_addr = cs->addr;
	cs->win_len = (__u32)n;
	return n < (int)need ? n : (int)need;
}

/* Dword k of the current command (k < the count gpu_cs_window() gave). */
static __gpu_cs_inline __u32 gpu_cs_dw(const struct gpu_cs *cs, __u32 k)
{
	__u32 i = (__u32)((cs->addr - cs->win_addr) / 4) + k;

	return cs->win[i & (GPU_CS_WIN_DW - 1)];
}

/* A start pointer from dwords lo, lo+1: bits 31:6 of lo, 15:0 of hi. */
static __gpu_cs_inline __u64 gpu_cs_ptr(__u32 lo, __u32 hi)
{
	return ((__u64)(hi & 0xffff) << 32) | (lo & 0xffffffc0u);
}

static __gpu_cs_inline void gpu_cs_add_ksp(struct gpu_cs *cs, __u64 off, __u32 kind)
{
	__u64 iba = cs->r.iba, abs = (iba + off) & GPU_CS_VA_MASK;
	__u32 n = cs->r.nksp;

	if (!off)
		return; /* a disabled shader stage */
	for (__u32 i = 0; i < GPU_CS_MAX_KSP; i++) {
		if (i >= n)
			break;
		if (cs->r.ksp[i].addr == abs && cs->r.ksp[i].iba == iba)
			return;
	}
	if (n >= GPU_CS_MAX_KSP) {
		cs->r.ksp_dropped++;
		return;
	}
	n &= GPU_CS_MAX_KSP - 1;
	cs->r.ksp[n].addr = abs;
	cs->r.ksp[n].iba = iba;
	cs->r.ksp[n].kind = kind;
	cs->r.ksp[n].pad = 0;
	cs->r.nksp = n + 1;
}

/* 48-bit base address from a STATE_BASE_ADDRESS pair (bits 63:12). */
static __gpu_cs_inline __u64 gpu_cs_base(__u32 lo, __u32 hi)
{
	return (((__u64)hi << 32) | (lo & 0xfffff000u)) & GPU_CS_VA_MASK;
}

/* MI_BATCH_BUFFER_START (the PRMs' command encodings). Returns non-zero when the parse ends. */
static __gpu_cs_inline int gpu_cs_bbs(struct gpu_cs *cs, __u32 dw0)
{
	__u64 target = ((__u64)(gpu_cs_dw(cs, 2) & 0xffff) << 32) | (gpu_cs_dw(cs, 1) & ~3u);
	__u32 nv = cs->nvisited;

	if (cs->r.hops >= GPU_CS_MAX_HOPS)
		return gpu_cs_stop(cs, GPU_CS_DEPTH, cs->addr);
	if (dw0 & (1u << 22)) { /* second level: a call, MI_BATCH_BUFFER_END returns */
		if (cs->nest >= GPU_CS_MAX_NEST)
			return gpu_cs_stop(cs, GPU_CS_DEPTH, cs->addr);
		cs->ret[cs->nest & (GPU_CS_RETS - 1)] = cs->addr + 12;
		cs->nest++;
		if (cs->nest > cs->r.max_nest)
			cs->r.max_nest = cs->nest;
		cs->r.calls++;
	} else { /* first level: a jump that never comes back */
		for (__u32 i = 0; i < GPU_CS_VISITED; i++) {
			if (i >= nv)
				break;
			if (cs->visited[i] == target)
				return gpu_cs_stop(cs, GPU_CS_LOOP, cs->addr);
		}
		cs->r.chains++;
	}
	cs->visited[nv & (GPU_CS_VISITED - 1)] = target;
	cs->nvisited = nv + 1;
	cs->r.hops++;
	cs->r.commands++;
	cs->r.dwords += 3;
	cs->addr = target;
	cs->at_start = 1;
	cs->zero_run = 0;
	return 0;
}

/* GPGPU_WALKER (Gen12): the descriptor is in the dynamic state heap at
 * DSBA + MEDIA_INTERFACE_DESCRIPTOR_LOAD start + 32 * dw1[5:0] (the PRMs' command encodings). */
static __gpu_cs_inline void gpu_cs_gpgpu(struct gpu_cs *cs, void *rctx)
{
	__u64 a;

	if (!cs->has_midl) {
		cs->r.idd_unreadable++;
		return;
	}
	a = (cs->r.dsba + cs->midl + 32 * (gpu_cs_dw(cs, 1) & 0x3f)) & GPU_CS_VA_MASK;
	if (gpu_cs_read(rctx, a, cs->aux, 2) != 2) {
		cs->r.idd_unreadable++;
		return;
	}
	gpu_cs_add_ksp(cs, gpu_cs_ptr(cs->aux[0], cs->aux[1]), GPU_CS_K_GPGPU);
}

/* 3D shader states: the dword of the (first) KSP, 0 = not one (the PRMs' command encodings). */
static __gpu_cs_inline __u32 gpu_cs_3d_ksp(__u32 key, __u32 *kind)
{
	switch (key) {
	case 0x7810:
		*kind = GPU_CS_K_VS;
		return 1;
	case 0x7811:
		*kind = GPU_CS_K_GS;
		return 1;
	case 0x781b:
		*kind = GPU_CS_K_HS;
		return 3;
	case 0x781d:
		*kind = GPU_CS_K_DS;
		return 1;
	case 0x7820:
		*kind = GPU_CS_K_PS;
		return 1;
	case 0x787a:
		*kind = GPU_CS_K_MESH;
		return 1;
	case 0x787d:
		*kind = GPU_CS_K_TASK;
		return 1;
	default:
		return 0;
	}
}

/* GFXPIPE commands with fields we use; len = total dwords, have = visible. */
static __gpu_cs_inline void gpu_cs_gfxpipe(struct gpu_cs *cs, void *rctx, __u32 dw0, __u32 len)
{
	__u32 key = dw0 >> 16, k, kind = 0, idd;

	switch (key) {
	case 0x6101: /* STATE_BASE_ADDRESS: each base has a Modify Enable bit 0 */
		if (len < 22)
			return;
		cs->r.sba++;
		if (gpu_cs_dw(cs, 1) & 1)
			cs->r.gsba = gpu_cs_base(gpu_cs_dw(cs, 1), gpu_cs_dw(cs, 2));
		if (gpu_cs_dw(cs, 4) & 1)
			cs->r.ssba = gpu_cs_base(gpu_cs_dw(cs, 4), gpu_cs_dw(cs, 5));
		if (gpu_cs_dw(cs, 6) & 1)
			cs->r.dsba = gpu_cs_base(gpu_cs_dw(cs, 6), gpu_cs_dw(cs, 7));
		if (gpu_cs_dw(cs, 10) & 1)
			cs->r.iba = gpu_cs_base(gpu_cs_dw(cs, 10), gpu_cs_dw(cs, 11));
		return;
	case 0x6102: /* STATE_SIP: bits 63:4 in dw1-2 */
		if (len < 3)
			return;
		cs->r.sip = (cs->r.iba +
			     (((__u64)gpu_cs_dw(cs, 2) << 32) | (gpu_cs_dw(cs, 1) & 0xfffffff0u))) &
			    GPU_CS_VA_MASK;
		cs->r.sip_iba = cs->r.iba;
		cs->r.has_sip = 1;
		return;
	case 0x7208: /* COMPUTE_WALKER: IDD at dw18 (Xe-HP, 39 dw) / dw19 (Xe2, 40 dw) */
		cs->r.walkers++;
		if (len == 39)
			idd = 18;
		else if (len == 40)
			idd = 19;
		else
			return;
		gpu_cs_add_ksp(cs, gpu_cs_ptr(gpu_cs_dw(cs, idd), gpu_cs_dw(cs, idd + 1)),
			       GPU_CS_K_COMPUTE);
		return;
	case 0x7002: /* MEDIA_INTERFACE_DESCRIPTOR_LOAD (Gen12) */
		if (len < 4)
			return;
		cs->midl = gpu_cs_dw(cs, 3);
		cs->has_midl = 1;
		return;
	case 0x7105: /* GPGPU_WALKER (Gen12) */
		cs->r.walkers++;
		if (len >= 2)
			gpu_cs_gpgpu(cs, rctx);
		return;
	default:
		k = gpu_cs_3d_ksp(key, &kind);
		if (!k || k + 1 >= len)
			return;
		gpu_cs_add_ksp(cs, gpu_cs_ptr(gpu_cs_dw(cs, k), gpu_cs_dw(cs, k + 1)), kind);
		/* 3DSTATE_PS KSP1 at dw8-9 (KSP2 at dw10 is gone on Xe2: skipped) */
		if (key == 0x7820 && len > 9)
			gpu_cs_add_ksp(cs, gpu_cs_ptr(gpu_cs_dw(cs, 8), gpu_cs_dw(cs, 9)), kind);
		return;
	}
}

/*
 * Parse one command at cs->addr. Returns 0 to go on, non-zero when the
 * parse has ended (cs->r.status says how).
 */
static __gpu_cs_inline int gpu_cs_step(struct gpu_cs *cs, void *rctx)
{
	__u32 dw0, len, need;
	int have;

	if (cs->r.status != GPU_CS_RUNNING)
		return 1;
	if (cs->r.dwords >= GPU_CS_MAX_DWORDS)
		return gpu_cs_stop(cs, GPU_CS_LIMIT, cs->addr);
	have = gpu_cs_window(cs, rctx, 1);
	if (have <= 0) {
		/* Nothing at a buffer just entered, or zeros up to the end of
		 * what is mapped: not written (or not bound) yet. */
		if (cs->at_start)
			return gpu_cs_stop(cs, GPU_CS_RETRY, cs->addr);
		if (cs->zero_run)
			return gpu_cs_stop(cs, GPU_CS_RETRY, cs->zero_addr);
		return gpu_cs_stop(cs, GPU_CS_TRUNCATED, cs->addr);
	}
	dw0 = gpu_cs_dw(cs, 0);
	if (dw0 == 0) {
		/* MI_NOOP, but a long run of them is memory the runtime has
		 * not written yet (NEO fills command buffers as it goes). */
		if (!cs->zero_run++)
			cs->zero_addr = cs->addr;
		if (cs->zero_run >= GPU_CS_ZERO_RUN)
			return gpu_cs_stop(cs, GPU_CS_RETRY, cs->zero_addr);
	} else {
		cs->zero_run = 0;
	}
	len = gpu_cs_cmd_len(dw0);
	if (!len) {
		if (++cs->r.invalid >= GPU_CS_MAX_INVALID)
			return gpu_cs_stop(cs, GPU_CS_INVALID, cs->addr);
		len = 1;
	}
	need = len < GPU_CS_FIELD_DW ? len : GPU_CS_FIELD_DW;
	if (need > 1) {
		have = gpu_cs_window(cs, rctx, need);
		if (have < (int)need)
			return gpu_cs_stop(cs, GPU_CS_TRUNCATED, cs->addr);
	}
	cs->at_start = 0;

	switch (dw0 >> 29) {
	case 0:
		switch ((dw0 >> 23) & 0x3f) {
		case 0x00:
			cs->r.noops++;
			break;
		case 0x0a: /* MI_BATCH_BUFFER_END */
			cs->r.commands++;
			cs->r.dwords++;
			if (!cs->nest)
				return gpu_cs_stop(cs, GPU_CS_DONE, cs->addr);
			cs->nest--;
			cs->addr = cs->ret[cs->nest & (GPU_CS_RETS - 1)];
			return 0;
		case 0x31: /* MI_BATCH_BUFFER_START */
			if (len != 3)
				break;
			return gpu_cs_bbs(cs, dw0);
		}
		break;
	case 3:
		gpu_cs_gfxpipe(cs, rctx, dw0, len);
		break;
	}
	cs->r.commands++;
	cs->r.dwords += len;
	cs->addr += 4ull * len;
	return 0;
}

#endif
