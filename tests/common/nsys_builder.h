/* SPDX-License-Identifier: MIT */
/*
 * Small Nsight Systems SQLite exports for tests and fuzz seeds, with the
 * real table and column names (a subset of the nsys 3.25 SQLite schema):
 * kernels with their launches, NCCL NVTX ranges whose binaryData carries
 * the blob header and an NCCL 2.25+ payload, and the payload schema
 * entries that locate its fields.
 *
 * StringIds of the base schema: 1 ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 * 2 ncclDevKernel_AllGather_RING_LL, 3 ncclDevKernel_SendRecv, 4 gemm,
 * 5 cuLaunchKernelEx, 6 cudaLaunchKernel_v7000, 7 ncclAllReduce,
 * 8 ncclAllGather, 9 ncclGroupStart, 10 ncclSend, 11 ncclRecv,
 * 12 ncclGroupEnd, 13 ncclCommInitRank. Schema ids: 16777216 CommInitRank
 * (comm id, "No. of ranks" at 8, "Rank" at 12, "CUDA device" at 16),
 * 16777220 AllGather, 16777221 AllReduce, 16777225 Send, 16777226 Recv
 * (comm id, size at 8). TARGET_INFO_GPU and TARGET_INFO_CUDA_DEVICE exist
 * empty; add rows with nsysb_exec().
 */
#ifndef GPUPROF_TESTS_NSYS_BUILDER_H
#define GPUPROF_TESTS_NSYS_BUILDER_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#define NSYSB_GPID(p) ((1ll << 48) | ((long long)(p) << 24))
#define NSYSB_GTID(p) (NSYSB_GPID(p) | (p))

enum {
	NSYSB_S_ALLREDUCE_K = 1, NSYSB_S_ALLGATHER_K, NSYSB_S_SENDRECV_K, NSYSB_S_GEMM,
	NSYSB_S_LAUNCH_EX, NSYSB_S_LAUNCH, NSYSB_S_ALLREDUCE, NSYSB_S_ALLGATHER,
	NSYSB_S_GROUP_START, NSYSB_S_SEND, NSYSB_S_RECV, NSYSB_S_GROUP_END, NSYSB_S_COMM_INIT
};

#define NSYSB_SCH_INIT 16777216
#define NSYSB_SCH_ALLGATHER 16777220
#define NSYSB_SCH_ALLREDUCE 16777221
#define NSYSB_SCH_SEND 16777225
#define NSYSB_SCH_RECV 16777226

struct nsysb {
	sqlite3 *db;
	sqlite3_stmt *k, *r, *n;
};

/* Create path (replaced) with the base schema and open a transaction;
 * small_pages: 512-byte pages (fuzz seeds). 0 or -1. */
int nsysb_open(struct nsysb *b, const char *path, bool small_pages);
/* A kernel (name: a StringIds id; 4 = gemm, launched by cudaLaunchKernel,
 * else by cuLaunchKernelEx) on process pid's device dev, and its launch
 * 50 ns before on thread pid. */
void nsysb_kernel(struct nsysb *b, int pid, int dev, int64_t s, int64_t e, int stream, int corr,
		  int name);
/* An NVTX push/pop range in domain 1 (NCCL) on thread pid. schema_id 0: no
 * payload; else blob = header + u64 hash at 0, u64 v8 at 8, then i32 v12 at
 * 12 and i32 v16 at 16 when >= 0 (CommInitRank: nranks, rank, device). */
void nsysb_range(struct nsysb *b, int pid, int64_t s, int64_t e, int name, int64_t schema_id,
		 uint64_t hash, uint64_t v8, int32_t v12, int32_t v16);
int nsysb_exec(struct nsysb *b, const char *sql);
/* Commit, VACUUM when small_pages, close. 0 or -1. */
int nsysb_close(struct nsysb *b, bool vacuum);

#endif
