// SPDX-License-Identifier: MIT
/*
 * nsys importer + comm metrics on exports built here with the real table
 * and column names (tests/common/nsys_builder.c), real NCCL kernel names,
 * two processes on two devices and two communicators whose NVTX payloads
 * (blob header + NCCL 2.25+ layout) carry the sizes; four processes whose
 * communicators are matched across them and whose devices come from
 * TARGET_INFO_GPU; numbers worked out in the comments. Also: import through a pipe (format peek with tee), a
 * non-SQLite file, and the real reference exports' totals.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/comm/comm.h"
#include "common/nsys_builder.h"
#include "jsonpath.h"
#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"

#define TP_HASH 0xAAAAull
#define DP_HASH 0xBBBBull

/*
 * Two processes (pid 100 on device 0, pid 101 on device 1), times relative
 * to the session (epoch 1 s). Per process p (offset d = 0 or 20 ns):
 *   TP allreduce (comm 0xAAAA, 2 ranks) 1000 B:     kernel 10000+d .. 11000+d
 *   DP all-gather (comm 0xBBBB, 2 ranks) 512 B/rank: kernel 20000+d .. 22000
 *   grouped send 256 + recv 256 on 0xAAAA:           kernel 30000 .. 31000
 *   gemm 0 .. 15000 (overlaps the allreduce fully)
 */
static int build(const char *path)
{
	struct nsysb b;

	if (nsysb_open(&b, path, false))
		return -1;
	for (int p = 0; p < 2; p++) {
		int pid = 100 + p, d = 20 * p, c = 10 * p;

		nsysb_range(&b, pid, 100, 200, 13, NSYSB_SCH_INIT, TP_HASH, 2, p, p);
		nsysb_range(&b, pid, 300, 400, 13, NSYSB_SCH_INIT, DP_HASH, 2, p, p);
		nsysb_kernel(&b, pid, p, 0, 15000, 7, c + 1, 4);
		nsysb_range(&b, pid, 9900 + d, 9990 + d, 7, NSYSB_SCH_ALLREDUCE, TP_HASH, 1000, -1, -1);
		nsysb_kernel(&b, pid, p, 10000 + d, 11000 + d, 13, c + 2, 1);
		nsysb_range(&b, pid, 19900 + d, 19990 + d, 8, NSYSB_SCH_ALLGATHER, DP_HASH, 512, -1, -1);
		nsysb_kernel(&b, pid, p, 20000 + d, 22000, 13, c + 3, 2);
		nsysb_range(&b, pid, 29800, 29850, 9, 0, 0, 0, -1, -1);
		nsysb_range(&b, pid, 29860, 29870, 10, NSYSB_SCH_SEND, TP_HASH, 256, -1, -1);
		nsysb_range(&b, pid, 29880, 29890, 11, NSYSB_SCH_RECV, TP_HASH, 256, -1, -1);
		nsysb_range(&b, pid, 29900, 29990, 12, 0, 0, 0, -1, -1);
		nsysb_kernel(&b, pid, p, 30000, 31000, 13, c + 4, 3);
	}
	return nsysb_close(&b, false);
}

static char dbpath[64];

/* The entry of array `arr` of r whose "key"/"group" string is key. */
static const cJSON *find(const cJSON *r, const char *arr, const char *field, const char *key)
{
	const cJSON *x;

	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(r, arr))
	{
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(x, field);

		if (cJSON_IsString(k) && !strcmp(k->valuestring, key))
			return x;
	}
	return NULL;
}

static void check_metrics(struct timeline *tl)
{
	const char *params = "{\"link_bandwidth\":1e9,\"tags\":["
			     "{\"match\":\"aaaa$\",\"tag\":\"TP\"},{\"match\":\"bbbb$\",\"tag\":\"DP\"}]}";
	cJSON *p = cJSON_Parse(params), *r = NULL;
	char err[200];
	const struct tl_rank *r1 = timeline_rank(tl, 1);

	CHECK_EQ_INT(timeline_nranks(tl), 2);
	/* epoch 1 s + session time: the first row is the gemm's launch at -50 ns */
	CHECK(r1 && r1->ev[0].ts_ns == 1000000000 - 50 && r1->ev[0].kind == TL_K_RUNTIME);
	CHECK_EQ_INT(comm_analyze(tl, p, NULL, &r, err, sizeof(err)), 0);
	if (!r) {
		fprintf(stderr, "%s\n", err);
		cJSON_Delete(p);
		return;
	}
	/* TP: allreduce 1000 B in 1 us (= 1e9 B/s) + sendrecv max(256, 256) in 1 us,
	 * on each of the two ranks */
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 4, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.total_bytes"), 2 * (1000 + 256), 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.avg_bw_Bps"), (1e9 + 2.56e8) / 2, 1e-3);
	/* utils sorted 0.256 0.256 1 1: p95 at h = 3 × 0.95 lies between the 1s */
	CHECK_NEAR(json_num(r, "bandwidth.TP.p95_util"), 1, 1e-9);
	CHECK_NEAR(json_num(r, "bandwidth.TP.avg_util"), (1 + 0.256) / 2, 1e-9);
	/* DP all-gather: S = 512 × n(2, from CommInitRank) = 1024 B, 2 us / 1.98 us */
	CHECK_NEAR(json_num(r, "bandwidth.DP.total_bytes"), 2048, 0);
	CHECK_NEAR(json_num(r, "bandwidth.DP.events_bytes_unknown"), 0, 0);
	CHECK_NEAR(json_num(r, "bandwidth.DP.busbw_Bps"), 2048 * 0.5 / 3.98e-6, 1e-3);
	CHECK_NEAR(json_num(r, "volume.OTHER.events"), 0, 0);
	/* union per rank 0: comm 1000+2000+1000 ns, compute 15000 - 1000 under comm,
	 * span 0..31000 (no marks: one iteration) */
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.iteration_time_us"), 31, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.compute_us"), 14, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.breakdown.union.idle_us"), 31 - 4 - 14, 1e-9);
	CHECK_NEAR(json_num(r, "ranks.0.overlap_ratio"), 0.25, 1e-12);
	/* phases (listed DP→TP first): DP → TP 30000 - 22000 = 8 us, TP → DP
	 * 20000 - 11000 = 9 us; rank 1: 30000 - 22000 and 20020 - 11020 */
	CHECK_NEAR(json_num(r, "phase_windows.0.mean_us"), 8, 1e-9);
	CHECK_NEAR(json_num(r, "phase_windows.1.mean_us"), 9, 1e-9);
	/* both processes' CommInitRank ranges are in the export: members in
	 * communicator-rank order, as timeline ranks */
	CHECK(!strcmp(json_str(find(r, "groups", "key", "0x000000000000aaaa"), "ranks"), "[0, 1]"));
	CHECK_NEAR(json_num(find(r, "groups", "key", "0x000000000000bbbb"), "size"), 2, 0);
	/* stragglers: TP allreduce seq 0 spread 20 ns, rank 1 last */
	CHECK_NEAR(json_num(r, "straggler.top_instances.0.spread_us"), 0.02, 1e-9);
	CHECK_NEAR(json_num(r, "straggler.top_instances.0.last_rank"), 1, 0);
	cJSON_Delete(r);
	cJSON_Delete(p);
}

static void test_file_and_pipe(void)
{
	struct timeline *tl = NULL;
	struct import_result res;
	struct import_opts o = { .rank = -1 };
	int fd, pfd[2];
	pid_t child;

	CHECK(build(dbpath) == 0);
	fd = open(dbpath, O_RDONLY);
	CHECK(fd >= 0 && !timeline_new(&tl));
	CHECK_EQ_INT(timeline_import_any_fd(fd, &o, tl, &res), 0);
	CHECK_EQ_INT(res.format, IMPORT_FMT_NSYS);
	CHECK_EQ_INT(res.nranks, 2);
	/* every NCCL kernel's size and communicator came from a payload */
	CHECK_EQ_INT(res.nccl_kernels, 6);
	CHECK_EQ_INT(res.nccl_no_bytes, 0);
	CHECK_EQ_INT(res.nccl_no_comm, 0);
	close(fd);
	check_metrics(tl);
	timeline_free(tl);

	/* the same bytes through a pipe: the format is peeked with tee(2) */
	CHECK(pipe(pfd) == 0);
	child = fork();
	if (child == 0) {
		char buf[4096];
		ssize_t n;
		int in = open(dbpath, O_RDONLY);

		close(pfd[0]);
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(pfd[1], buf, (size_t)n) != n)
				_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	CHECK(!timeline_new(&tl));
	CHECK_EQ_INT(timeline_import_any_fd(pfd[0], &o, tl, &res), 0);
	close(pfd[0]);
	waitpid(child, NULL, 0);
	check_metrics(tl);
	/* a second export goes to the next free ranks */
	fd = open(dbpath, O_RDONLY);
	CHECK_EQ_INT(timeline_import_nsys_fd(fd, &o, tl, &res), 0);
	CHECK_EQ_INT(res.rank, 2);
	close(fd);
	CHECK_EQ_INT(timeline_nranks(tl), 4);
	timeline_free(tl);
}

static void test_bad_input(void)
{
	struct timeline *tl = NULL;
	struct import_result res;
	char junk[64] = "SQLite format 3";

	CHECK(!timeline_new(&tl));
	CHECK_EQ_INT(timeline_import_nsys_buf("{}", 2, NULL, tl, &res), -EBADMSG);
	CHECK_EQ_INT(timeline_import_nsys_buf(junk, sizeof(junk), NULL, tl, &res), -EBADMSG);
	CHECK(res.error_msg[0]);
	CHECK_EQ_INT(timeline_nranks(tl), 0);
	timeline_free(tl);
}

/* The real exports: comm kernel time equals Σ NCCL kernel durations. */
static void test_reference(void)
{
	const char *shared = getenv("GPUPROF_SHARED");
	char path[512];
	struct timeline *tl = NULL;
	struct import_result res;
	cJSON *r = NULL;
	char err[200];
	int fd;

	if (!shared)
		return;
	snprintf(path, sizeof(path), "%s/reference/nsys/mfu_2gpu_before.sqlite", shared);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	CHECK(!timeline_new(&tl));
	CHECK_EQ_INT(timeline_import_any_fd(fd, NULL, tl, &res), 0);
	close(fd);
	/* exported without --include-blobs: no payload, so no size or
	 * communicator for any of its 66 NCCL kernels, and no TARGET_INFO_GPU */
	CHECK_EQ_INT(res.nccl_kernels, 66);
	CHECK_EQ_INT(res.nccl_no_bytes, 66);
	CHECK_EQ_INT(res.nccl_no_comm, 66);
	CHECK_EQ_INT(timeline_rank(tl, 0)->ndevices, 0);
	CHECK_EQ_INT(comm_analyze(tl, NULL, NULL, &r, err, sizeof(err)), 0);
	/* sqlite: SELECT sum(end-start) over nccl% kernels = 25401752 ns, 66 kernels */
	CHECK_NEAR(json_num(r, "reconciliation.comm_kernel_time_us"), 25401.752, 1e-6);
	CHECK_NEAR(json_num(r, "bandwidth.OTHER.events"), 66, 0);
	CHECK_NEAR(json_num(r, "breakdown.union.ratios.total"), 1, 1e-12);
	cJSON_Delete(r);
	timeline_free(tl);
}

/*
 * Four processes (pids 200..203, one GPU each, CUDA ordinal 0 in every
 * process; TARGET_INFO_CUDA_DEVICE maps (pid, 0) to GPUs 0..3: two H100s,
 * two A100s), so four ranks 0..3 in pid order, and four 2-rank
 * communicators across them, each member's CommInitRank in the export:
 *   TP 0x1111 = [0, 1], TP 0x2222 = [2, 3] (crank in pid order),
 *   DP 0x3333 = [0, 2], DP 0x4444 = [3, 1] (pid 203 is crank 0).
 * Process p (q = p·p): allreduce 4096 B on its TP comm at 10000 + 100q for
 * 1000 ns; all-gather 1000 B/rank on its DP comm at 20000 + 50q for 2000 ns;
 * pid 203 also runs an allreduce kernel with no NCCL range around its
 * launch (30000 .. 30500): size and communicator unknown.
 */
static int build_multi(const char *path)
{
	static const uint64_t tp[4] = { 0x1111, 0x1111, 0x2222, 0x2222 };
	static const uint64_t dp[4] = { 0x3333, 0x4444, 0x3333, 0x4444 };
	static const int dp_rank[4] = { 0, 1, 1, 0 };
	struct nsysb b;

	if (nsysb_open(&b, path, false) ||
	    nsysb_exec(&b, "INSERT INTO TARGET_INFO_GPU(vmId, id, name, totalMemory, smCount,"
			   " computeMajor, computeMinor) VALUES"
			   " (1, 0, 'NVIDIA H100 80GB HBM3', 85899345920, 132, 9, 0),"
			   " (1, 1, 'NVIDIA H100 80GB HBM3', 85899345920, 132, 9, 0),"
			   " (1, 2, 'NVIDIA A100-SXM4-80GB', 85899345920, 108, 8, 0),"
			   " (1, 3, 'NVIDIA A100-SXM4-80GB', 85899345920, 108, 8, 0);"
			   "INSERT INTO TARGET_INFO_CUDA_DEVICE(gpuId, cudaId, pid) VALUES"
			   " (0, 0, 200), (1, 0, 201), (2, 0, 202), (3, 0, 203);"))
		return -1;
	for (int p = 0; p < 4; p++) {
		int pid = 200 + p, q = p * p, c = 10 * p;

		nsysb_range(&b, pid, 100, 200, NSYSB_S_COMM_INIT, NSYSB_SCH_INIT, tp[p], 2, p % 2, 0);
		nsysb_range(&b, pid, 300, 400, NSYSB_S_COMM_INIT, NSYSB_SCH_INIT, dp[p], 2, dp_rank[p],
			    0);
		nsysb_range(&b, pid, 9900 + 100 * q, 9990 + 100 * q, NSYSB_S_ALLREDUCE,
			    NSYSB_SCH_ALLREDUCE, tp[p], 4096, -1, -1);
		nsysb_kernel(&b, pid, 0, 10000 + 100 * q, 11000 + 100 * q, 13, c + 1,
			     NSYSB_S_ALLREDUCE_K);
		nsysb_range(&b, pid, 19900 + 50 * q, 19990 + 50 * q, NSYSB_S_ALLGATHER,
			    NSYSB_SCH_ALLGATHER, dp[p], 1000, -1, -1);
		nsysb_kernel(&b, pid, 0, 20000 + 50 * q, 22000 + 50 * q, 13, c + 2,
			     NSYSB_S_ALLGATHER_K);
	}
	nsysb_kernel(&b, 203, 0, 30000, 30500, 13, 99, NSYSB_S_ALLREDUCE_K);
	return nsysb_close(&b, false);
}

static void test_multi(void)
{
	const char *params = "{\"tags\":[{\"match\":\"(1111|2222)$\",\"tag\":\"TP\"},"
			     "{\"match\":\"(3333|4444)$\",\"tag\":\"DP\"}]}";
	struct import_opts o = { .rank = -1 };
	struct import_result res;
	struct timeline *tl = NULL;
	cJSON *p = cJSON_Parse(params), *r = NULL;
	char err[200];
	int fd;

	CHECK(build_multi(dbpath) == 0);
	fd = open(dbpath, O_RDONLY);
	CHECK(fd >= 0 && !timeline_new(&tl));
	CHECK_EQ_INT(timeline_import_any_fd(fd, &o, tl, &res), 0);
	close(fd);
	CHECK_EQ_INT(res.nranks, 4);
	CHECK_EQ_INT(res.nccl_kernels, 9);
	CHECK_EQ_INT(res.nccl_no_bytes, 1);
	CHECK_EQ_INT(res.nccl_no_comm, 1);
	/* the device of rank 3 is GPU 3 (pid 203's ordinal 0), an A100 */
	CHECK(timeline_rank(tl, 3)->ndevices == 1 &&
	      !strcmp(timeline_str(tl, timeline_rank(tl, 3)->devices[0].name, NULL),
		      "NVIDIA A100-SXM4-80GB") &&
	      timeline_rank(tl, 3)->devices[0].num_sms == 108);
	CHECK_EQ_INT(comm_analyze(tl, p, NULL, &r, err, sizeof(err)), 0);
	if (!r) {
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	/* B_hw from the device names (docs/analyses.md table): H100 450 GB/s,
	 * A100 300 GB/s */
	CHECK(!strcmp(json_str(r, "link_bandwidth_source"), "device name"));
	CHECK_NEAR(json_num(r, "ranks.1.link_bandwidth_Bps"), 450e9, 0);
	CHECK_NEAR(json_num(r, "ranks.2.link_bandwidth_Bps"), 300e9, 0);
	/* communicators matched across the processes, members in crank order */
	CHECK(!strcmp(json_str(find(r, "groups", "key", "0x0000000000002222"), "ranks"), "[2, 3]"));
	CHECK(!strcmp(json_str(find(r, "groups", "key", "0x0000000000003333"), "ranks"), "[0, 2]"));
	CHECK(!strcmp(json_str(find(r, "groups", "key", "0x0000000000004444"), "ranks"), "[3, 1]"));
	CHECK_NEAR(json_num(find(r, "groups", "key", "0x0000000000004444"), "size"), 2, 0);
	/* TP: 4 allreduces of 4096 B in 1 us, busbw factor 2(2-1)/2 = 1 */
	CHECK_NEAR(json_num(r, "bandwidth.TP.events"), 4, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.total_bytes"), 4 * 4096, 0);
	CHECK_NEAR(json_num(r, "bandwidth.TP.busbw_Bps"), 4.096e9, 1e-3);
	/* utilisation per rank against its own B_hw: rank 0 H100, rank 2 A100 */
	CHECK_NEAR(json_num(r, "ranks.0.bandwidth.TP.avg_util"), 4.096e9 / 450e9, 1e-12);
	CHECK_NEAR(json_num(r, "ranks.2.bandwidth.TP.avg_util"), 4.096e9 / 300e9, 1e-12);
	/* DP all-gather: S = 1000 B × 2 ranks in 2 us; busbw factor 1/2 */
	CHECK_NEAR(json_num(r, "bandwidth.DP.total_bytes"), 4 * 2000, 0);
	CHECK_NEAR(json_num(r, "bandwidth.DP.busbw_Bps"), 0.5e9, 1e-3);
	/* the kernel without a range: counted, its bytes unknown, not guessed */
	CHECK_NEAR(json_num(r, "bandwidth.OTHER.events"), 1, 0);
	CHECK_NEAR(json_num(r, "bandwidth.OTHER.events_bytes_unknown"), 1, 0);
	/* stragglers, per communicator across processes: spreads 100 (0x1111:
	 * 10000 / 10100), 500 (0x2222: 10400 / 10900), 200 (0x3333: 20000 /
	 * 20200), 400 ns (0x4444: 20050 / 20450) */
	CHECK_NEAR(json_num(r, "straggler.top_instances.0.spread_us"), 0.5, 1e-12);
	CHECK_NEAR(json_num(r, "straggler.top_instances.0.last_rank"), 3, 0);
	CHECK(!strcmp(json_str(cJSON_GetArrayItem(
				       cJSON_GetObjectItemCaseSensitive(
					       cJSON_GetObjectItemCaseSensitive(r, "straggler"),
					       "top_instances"),
				       1),
			       "group"),
		      "0x0000000000004444"));
	CHECK_NEAR(json_num(r, "straggler.top_instances.2.spread_us"), 0.2, 1e-12);
	CHECK_NEAR(json_num(r, "straggler.top_instances.2.last_rank"), 2, 0);
	CHECK_NEAR(json_num(r, "straggler.top_instances.3.spread_us"), 0.1, 1e-12);
	CHECK_NEAR(json_num(find(cJSON_GetObjectItemCaseSensitive(r, "straggler"), "groups",
				 "group", "0x0000000000001111"),
			    "instances"),
		   1, 0);
out:
	cJSON_Delete(r);
	cJSON_Delete(p);
	timeline_free(tl);
}

int main(void)
{
	snprintf(dbpath, sizeof(dbpath), "/tmp/gpuprof-nsys-test-%d.sqlite", (int)getpid());
	RUN(test_file_and_pipe);
	RUN(test_bad_input);
	RUN(test_multi);
	RUN(test_reference);
	unlink(dbpath);
	return test_summary();
}
