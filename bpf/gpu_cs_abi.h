/* SPDX-License-Identifier: MIT */
/*
 * GPU command-stream (batch buffer) parser for Intel Gen12 / Xe-HP / Xe2
 * (docs/gpu-cs.md, the PRMs' command encodings): its limits, statuses and state, shared by
 * the BPF program and the host. The parser itself is gpu_cs_parse.h.
 */
#ifndef GPUPROF_BPF_GPU_CS_ABI_H
#define GPUPROF_BPF_GPU_CS_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Limits: every parse ends within these, whatever the buffer holds. */
#define GPU_CS_WIN_DW 256		 /* dwords read at once (power of two) */
#define GPU_CS_FIELD_DW 24		 /* a command's leading dwords the parser looks at */
#define GPU_CS_MAX_COMMANDS 8192	 /* steps (commands) per parse */
#define GPU_CS_MAX_DWORDS (1u << 20)	 /* command-stream dwords per parse (4 MiB) */
#define GPU_CS_MAX_HOPS 16		 /* buffers entered through MI_BATCH_BUFFER_START */
#define GPU_CS_MAX_NEST 3		 /* second-level calls outstanding */
#define GPU_CS_MAX_KSP 64		 /* distinct (KSP, IBA) pairs kept per parse */
#define GPU_CS_ZERO_RUN 16		 /* zero dwords in a row = memory not written yet */
#define GPU_CS_MAX_INVALID 64		 /* undecodable dwords before giving up */
#define GPU_CS_VA_MASK 0xFFFFFFFFFFFFull /* addresses compare in 48 bits */

#define GPU_CS_VISITED 32 /* > GPU_CS_MAX_HOPS, power of two */
#define GPU_CS_RETS 4	  /* > GPU_CS_MAX_NEST, power of two */

/* The parser indexes its arrays with these masks (the verifier's bounds). */
#define GPU_CS_POW2(n) ((n) && !((n) & ((n)-1)))
_Static_assert(GPU_CS_POW2(GPU_CS_WIN_DW) && GPU_CS_POW2(GPU_CS_MAX_KSP) &&
		       GPU_CS_POW2(GPU_CS_VISITED) && GPU_CS_POW2(GPU_CS_RETS),
	       "masked indexes need powers of two");
_Static_assert(GPU_CS_VISITED > GPU_CS_MAX_HOPS && GPU_CS_RETS > GPU_CS_MAX_NEST &&
		       GPU_CS_FIELD_DW <= GPU_CS_WIN_DW && GPU_CS_FIELD_DW >= 21,
	       "room for every hop, call and field the parser reads");

enum gpu_cs_status {
	GPU_CS_RUNNING = 0,
	GPU_CS_DONE = 1,      /* MI_BATCH_BUFFER_END of the first level */
	GPU_CS_TRUNCATED = 2, /* ran off the end of readable memory mid-stream */
	GPU_CS_LOOP = 3,      /* a chain jumped back to a buffer already parsed */
	GPU_CS_LIMIT = 4,     /* command or dword budget spent */
	GPU_CS_DEPTH = 5,     /* more hops or nested calls than the limits */
	GPU_CS_RETRY = 6,     /* stop_addr not readable / not written yet: try later */
	GPU_CS_INVALID = 7,   /* too many undecodable dwords (not a command stream) */
	GPU_CS_NSTATUS
};

/* What a KSP came from. */
enum gpu_cs_kind {
	GPU_CS_K_COMPUTE = 1, /* COMPUTE_WALKER's INTERFACE_DESCRIPTOR_DATA (Xe-HP+) */
	GPU_CS_K_GPGPU = 2,   /* GPGPU_WALKER -> IDD in the dynamic state heap (Gen12) */
	GPU_CS_K_VS = 3,
	GPU_CS_K_GS = 4,
	GPU_CS_K_HS = 5,
	GPU_CS_K_DS = 6,
	GPU_CS_K_PS = 7,
	GPU_CS_K_MESH = 8,
	GPU_CS_K_TASK = 9,
	GPU_CS_NKIND
};

struct gpu_cs_ksp {
	__u64 addr; /* absolute: (iba + start pointer) & GPU_CS_VA_MASK */
	__u64 iba;  /* instruction base address in force (0: none was set) */
	__u32 kind; /* enum gpu_cs_kind */
	__u32 pad;
};

struct gpu_cs_result {
	__u32 status; /* enum gpu_cs_status */
	__u32 nksp;
	__u64 stop_addr;	     /* where the parse ended (RETRY: what to wait for) */
	__u64 iba, ssba, dsba, gsba; /* bases in force at the end (0 = never set) */
	__u64 sip;		     /* absolute system routine address (has_sip) */
	__u64 sip_iba;		     /* IBA in force at STATE_SIP */
	__u32 has_sip;
	__u32 max_nest;
	/* counters */
	__u32 commands, dwords;
	__u32 hops, chains, calls; /* buffers entered; of them jumps / calls */
	__u32 sba, walkers, noops;
	__u32 invalid;	      /* dwords of no known command type */
	__u32 ksp_dropped;    /* distinct KSPs over GPU_CS_MAX_KSP */
	__u32 idd_unreadable; /* GPGPU_WALKER whose descriptor could not be read */
	__u32 pad;
	struct gpu_cs_ksp ksp[GPU_CS_MAX_KSP]; /* [0, nksp) valid */
};

/* The whole parse state: about 3.5 KiB, so BPF keeps it in a map value. */
struct gpu_cs {
	__u32 win[GPU_CS_WIN_DW]; /* dwords of [win_addr, win_addr + 4 * win_len) */
	__u64 win_addr;
	__u32 win_len;
	__u32 at_start;	 /* addr is the first command of a buffer just entered */
	__u64 addr;	 /* next command */
	__u64 zero_addr; /* first of the current run of zero dwords */
	__u32 zero_run;
	__u32 nest;
	__u64 ret[GPU_CS_RETS];
	__u64 visited[GPU_CS_VISITED]; /* chain targets, [0] = the start */
	__u32 nvisited;
	__u32 has_midl;
	__u64 midl; /* MEDIA_INTERFACE_DESCRIPTOR_LOAD start (offset from DSBA) */
	__u32 aux[2];
	struct gpu_cs_result r;
};

#endif
