// SPDX-License-Identifier: MIT
/*
 * The batch-buffer parser (bpf/gpu_cs_parse.h) through its host path
 * (daemon/xe/cs.c) on buffers built from the documented encodings
 * (cs_cases.h): what it finds and how every kind of parse ends. The retry
 * list, limits, the kernel-table feed and the dump loader:
 * test_gpu_cs_feed.c. No GPU, no privileges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "cs_run.h"
#include "decode.h"
#include "xe.h"

static void test_cmd_len(void)
{
	CHECK_EQ_INT(gpu_cs_cmd_len(0), 1);			    /* MI_NOOP */
	CHECK_EQ_INT(gpu_cs_cmd_len(MI(0x0a)), 1);		    /* MI_BATCH_BUFFER_END */
	CHECK_EQ_INT(gpu_cs_cmd_len(MI(0x31) | 1), 3);		    /* MI_BATCH_BUFFER_START */
	CHECK_EQ_INT(gpu_cs_cmd_len(MI(0x1c) | 2), 4);		    /* MI_SEMAPHORE_WAIT gen12 */
	CHECK_EQ_INT(gpu_cs_cmd_len(MI(0x22) | 5), 7);		    /* LRI, 3 pairs */
	CHECK_EQ_INT(gpu_cs_cmd_len(MI(0x20) | 0x3ff), 0x401);	    /* SDI: 10 bits */
	CHECK_EQ_INT(gpu_cs_cmd_len(MI(0x26) | 0xff), 0x41);	    /* FLUSH_DW: 6 bits */
	CHECK_EQ_INT(gpu_cs_cmd_len(GFX(0x6101) | 20), 22);	    /* STATE_BASE_ADDRESS */
	CHECK_EQ_INT(gpu_cs_cmd_len(GFX(0x6904) | 0x302), 1);	    /* PIPELINE_SELECT */
	CHECK_EQ_INT(gpu_cs_cmd_len(GFX(0x7208) | 38), 40);	    /* COMPUTE_WALKER Xe2 */
	CHECK_EQ_INT(gpu_cs_cmd_len(GFX(0x7001) | 0x1234), 0x1236); /* MEDIA_CURBE_LOAD */
	CHECK_EQ_INT(gpu_cs_cmd_len(5u << 29 | 3u << 26 | 3), 5);   /* RESOURCE_BARRIER */
	CHECK_EQ_INT(gpu_cs_cmd_len(1u << 29), 0);
	CHECK_EQ_INT(gpu_cs_cmd_len(7u << 29), 0);
}

static void test_xehp_walker(void)
{
	struct run t;

	run_case(&t, case_xehp);
	CHECK_EQ_INT(t.status, GPU_CS_DONE);
	CHECK_EQ_INT(t.r.nksp, 1);
	CHECK_EQ_U64(t.r.ksp[0].addr, IBA1 + 0x1c40);
	CHECK_EQ_U64(t.r.ksp[0].iba, IBA1);
	CHECK_EQ_INT(t.r.ksp[0].kind, GPU_CS_K_COMPUTE);
	CHECK_EQ_U64(t.r.iba, IBA1);
	CHECK_EQ_U64(t.r.gsba, 0x1000);
	CHECK_EQ_INT(t.r.commands, 5); /* PIPELINE_SELECT, SBA, walker, PIPE_CONTROL, END */
	CHECK_EQ_INT(t.r.dwords, 1 + 22 + 39 + 6 + 1);
	CHECK_EQ_U64(t.r.stop_addr, VA_A + 4ull * (1 + 22 + 39 + 6));
	CHECK_EQ_INT(t.r.has_sip, 0);
	CHECK_EQ_U64(kernels(t.x), 1);
	done(&t);
}

static void test_xe2_sip_dedup(void)
{
	struct run t;
	struct xe_cs_stats st;

	run_case(&t, case_xe2_sip);
	CHECK_EQ_INT(t.status, GPU_CS_DONE);
	CHECK_EQ_INT(t.r.nksp, 1);
	CHECK_EQ_U64(t.r.ksp[0].addr, IBA1 + 0x112345680ull);
	CHECK_EQ_INT(t.r.walkers, 2);
	CHECK_EQ_INT(t.r.has_sip, 1);
	CHECK_EQ_U64(t.r.sip, IBA1 + 0x800);
	CHECK_EQ_U64(t.r.sip_iba, IBA1);
	CHECK_EQ_INT(t.r.noops, 1);
	xe_cs_get_stats(t.cs, &st);
	CHECK_EQ_U64(st.ksps, 1);
	CHECK_EQ_U64(st.sips, 1);
	CHECK_EQ_U64(st.ktab_added, 2); /* the kernel and the system routine */
	CHECK_EQ_U64(kernels(t.x), 2);
	done(&t);
}

static void test_iba_change(void)
{
	struct run t;

	run_case(&t, case_iba_change);
	CHECK_EQ_INT(t.status, GPU_CS_DONE);
	CHECK_EQ_INT(t.r.sba, 3);
	CHECK_EQ_INT(t.r.nksp, 2); /* the third SBA leaves IBA2 in force */
	CHECK_EQ_U64(t.r.ksp[0].addr, IBA1 + 0x4000);
	CHECK_EQ_U64(t.r.ksp[1].addr, IBA2 + 0x4000);
	CHECK_EQ_U64(t.r.ksp[1].iba, IBA2);
	CHECK_EQ_U64(t.r.iba, IBA2);
	done(&t);
}

static void test_chain_and_call(void)
{
	struct run t;

	run_case(&t, case_chain);
	CHECK_EQ_INT(t.status, GPU_CS_DONE);
	CHECK_EQ_INT(t.r.nksp, 4);
	CHECK_EQ_U64(t.r.ksp[0].addr, IBA1 + 0x1000);
	CHECK_EQ_U64(t.r.ksp[1].addr, IBA1 + 0x2000);
	CHECK_EQ_U64(t.r.ksp[2].addr, IBA1 + 0x4000); /* in the called buffer */
	CHECK_EQ_U64(t.r.ksp[3].addr, IBA1 + 0x3000); /* after the return */
	CHECK_EQ_INT(t.r.hops, 2);
	CHECK_EQ_INT(t.r.chains, 1);
	CHECK_EQ_INT(t.r.calls, 1);
	CHECK_EQ_INT(t.r.max_nest, 1);
	/* ended in B, after its walker */
	CHECK_EQ_U64(t.r.stop_addr, VA_B + 4ull * (40 + 3 + 40));
	done(&t);
}

static void test_depth_limit(void)
{
	struct run t;

	run_case(&t, case_depth);
	CHECK_EQ_INT(t.status, GPU_CS_DEPTH);
	CHECK_EQ_INT(t.r.hops, GPU_CS_MAX_HOPS);
	CHECK_EQ_INT(t.r.nksp, GPU_CS_MAX_HOPS + 1); /* what it saw is kept */
	done(&t);

	run_case(&t, case_nest);
	CHECK_EQ_INT(t.status, GPU_CS_DEPTH);
	CHECK_EQ_INT(t.r.calls, GPU_CS_MAX_NEST);
	CHECK_EQ_INT(t.r.max_nest, GPU_CS_MAX_NEST);
	CHECK_EQ_U64(t.r.stop_addr, VA_A + 4ull * 3 * GPU_CS_MAX_NEST);
	done(&t);
}

static void test_loops(void)
{
	struct run t;

	run_case(&t, case_self_loop);
	CHECK_EQ_INT(t.status, GPU_CS_LOOP);
	CHECK_EQ_INT(t.r.nksp, 1);
	CHECK_EQ_INT(t.r.hops, 0);
	CHECK_EQ_U64(t.r.stop_addr, VA_A + 4ull * 39);
	done(&t);

	run_case(&t, case_ab_loop);
	CHECK_EQ_INT(t.status, GPU_CS_LOOP);
	CHECK_EQ_INT(t.r.nksp, 2);
	CHECK_EQ_INT(t.r.hops, 1);
	CHECK_EQ_U64(t.r.stop_addr, VA_B + 4ull * 39);
	done(&t);
}

static void test_truncated(void)
{
	struct run t;

	run_case(&t, case_truncated);
	CHECK_EQ_INT(t.status, GPU_CS_TRUNCATED);
	CHECK_EQ_INT(t.r.nksp, 0);
	CHECK_EQ_U64(t.r.stop_addr, VA_A + 4ull * 22);
	done(&t);

	run_case(&t, case_no_end);
	CHECK_EQ_INT(t.status, GPU_CS_TRUNCATED);
	CHECK_EQ_INT(t.r.nksp, 1);
	CHECK_EQ_U64(t.r.stop_addr, VA_A + 4ull * (40 + 6));
	done(&t);
}

static void test_garbage_and_lengths(void)
{
	struct run t;

	run_case(&t, case_garbage);
	CHECK_EQ_INT(t.status, GPU_CS_INVALID);
	CHECK_EQ_INT(t.r.invalid, GPU_CS_MAX_INVALID);
	CHECK_EQ_U64(t.r.stop_addr, VA_A + 4ull * (GPU_CS_MAX_INVALID - 1));
	done(&t);

	run_case(&t, case_lengths);
	CHECK_EQ_INT(t.status, GPU_CS_DONE);
	CHECK_EQ_INT(t.r.commands, 10);
	CHECK_EQ_INT(t.r.nksp, 1);
	CHECK_EQ_U64(t.r.ksp[0].addr, 0x9000); /* no IBA set: the KSP as is */
	CHECK_EQ_INT(t.r.invalid, 0);
	done(&t);

	run_case(&t, case_limit);
	CHECK_EQ_INT(t.status, GPU_CS_LIMIT);
	CHECK_EQ_INT(t.r.commands, GPU_CS_MAX_COMMANDS);
	done(&t);
}

static void test_gpgpu_and_3d(void)
{
	struct run t;

	run_case(&t, case_gpgpu);
	CHECK_EQ_INT(t.status, GPU_CS_DONE);
	CHECK_EQ_U64(t.r.dsba, DSBA1);
	CHECK_EQ_INT(t.r.nksp, 1);
	CHECK_EQ_U64(t.r.ksp[0].addr, IBA1 + 0x200abc040ull);
	CHECK_EQ_INT(t.r.ksp[0].kind, GPU_CS_K_GPGPU);
	CHECK_EQ_INT(t.r.idd_unreadable, 0);
	done(&t);

	run_case(&t, case_3d);
	CHECK_EQ_INT(t.status, GPU_CS_DONE);
	CHECK_EQ_INT(t.r.nksp, 4); /* the disabled GS adds nothing */
	CHECK_EQ_U64(t.r.ksp[0].addr, IBA1 + 0x100);
	CHECK_EQ_INT(t.r.ksp[0].kind, GPU_CS_K_VS);
	CHECK_EQ_U64(t.r.ksp[1].addr, IBA1 + 0x200);
	CHECK_EQ_INT(t.r.ksp[1].kind, GPU_CS_K_HS);
	CHECK_EQ_U64(t.r.ksp[2].addr, IBA1 + 0x300);
	CHECK_EQ_U64(t.r.ksp[3].addr, IBA1 + 0x340);
	CHECK_EQ_INT(t.r.ksp[3].kind, GPU_CS_K_PS);
	done(&t);
}

int main(void)
{
	RUN(test_cmd_len);
	RUN(test_xehp_walker);
	RUN(test_xe2_sip_dedup);
	RUN(test_iba_change);
	RUN(test_chain_and_call);
	RUN(test_depth_limit);
	RUN(test_loops);
	RUN(test_truncated);
	RUN(test_garbage_and_lengths);
	RUN(test_gpgpu_and_3d);
	return test_summary();
}
