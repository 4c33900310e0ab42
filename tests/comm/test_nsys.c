// SPDX-License-Identifier: MIT
/*
 * nsys importer + comm metrics on exports built here with the real table
 * and column names (nsys 3.25 schema subset), real NCCL kernel names, two
 * processes on two devices and two communicators whose NVTX payloads
 * (blob header + NCCL 2.25+ layout) carry the sizes; numbers worked out in
 * the comments. Also: import through a pipe (format peek with tee), a
 * non-SQLite file, and the real reference exports' totals.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/comm.h"
#include "test.h"
#include "timeline/timeline.h"

#define GPID(p) ((1ll << 48) | ((long long)(p) << 24))
#define GTID(p) (GPID(p) | (p))
#define TP_HASH 0xAAAAull
#define DP_HASH 0xBBBBull

static const char *schema =
	"CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,"
	" correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,"
	" shortName INTEGER NOT NULL, gridX INTEGER, gridY INTEGER, gridZ INTEGER,"
	" blockX INTEGER, blockY INTEGER, blockZ INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,"
	" eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,"
	" nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL);"
	"CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,"
	" rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,"
	" endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, jsonText TEXT, binaryData TEXT);"
	"CREATE TABLE NVTX_PAYLOAD_SCHEMA_ENTRIES(domainId INTEGER NOT NULL, schemaId INTEGER NOT NULL,"
	" idx INTEGER NOT NULL, flags INTEGER, type INTEGER, name TEXT, description TEXT,"
	" arrayOrUnionDetail INTEGER, offset INTEGER);"
	"INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES(1000000000, '', '');"
	"INSERT INTO StringIds VALUES(1, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'),"
	" (2, 'ncclDevKernel_AllGather_RING_LL'), (3, 'ncclDevKernel_SendRecv'), (4, 'gemm'),"
	" (5, 'cuLaunchKernelEx'), (6, 'cudaLaunchKernel_v7000'), (7, 'ncclAllReduce'),"
	" (8, 'ncclAllGather'), (9, 'ncclGroupStart'), (10, 'ncclSend'), (11, 'ncclRecv'),"
	" (12, 'ncclGroupEnd'), (13, 'ncclCommInitRank');"
	/* NCCL 2.25+ entries: comm id first, size at 8; CommInitRank nranks at 8 */
	"INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES VALUES"
	" (1, 16777221, 0, 0, 18, 'NCCL communicator ID', '', NULL, NULL),"
	" (1, 16777221, 1, 0, 22, 'Message size [bytes]', '', NULL, 8),"
	" (1, 16777220, 0, 0, 18, 'NCCL communicator ID', '', NULL, NULL),"
	" (1, 16777220, 1, 0, 22, 'Message size [bytes]', '', NULL, 8),"
	" (1, 16777225, 0, 0, 18, 'NCCL communicator ID', '', NULL, NULL),"
	" (1, 16777225, 1, 0, 22, 'Message size [bytes]', '', NULL, 8),"
	" (1, 16777226, 0, 0, 18, 'NCCL communicator ID', '', NULL, NULL),"
	" (1, 16777226, 1, 0, 22, 'Message size [bytes]', '', NULL, 8),"
	" (1, 16777216, 0, 0, 18, 'NCCL communicator ID', '', NULL, NULL),"
	" (1, 16777216, 1, 0, 5, 'No. of ranks', '', NULL, 8),"
	" (1, 16777216, 2, 0, 5, 'Rank', '', NULL, 12);";

static sqlite3_stmt *ins_k, *ins_r, *ins_n;

static void kernel(int pid, int dev, int64_t s, int64_t e, int stream, int corr, int name)
{
	sqlite3_bind_int64(ins_k, 1, s);
	sqlite3_bind_int64(ins_k, 2, e);
	sqlite3_bind_int(ins_k, 3, dev);
	sqlite3_bind_int(ins_k, 4, stream);
	sqlite3_bind_int(ins_k, 5, corr);
	sqlite3_bind_int64(ins_k, 6, GPID(pid));
	sqlite3_bind_int(ins_k, 7, name);
	sqlite3_step(ins_k);
	sqlite3_reset(ins_k);
	sqlite3_bind_int64(ins_r, 1, s - 50);
	sqlite3_bind_int64(ins_r, 2, s - 40);
	sqlite3_bind_int(ins_r, 3, name == 4 ? 0 : 1);
	sqlite3_bind_int64(ins_r, 4, GTID(pid));
	sqlite3_bind_int(ins_r, 5, corr);
	sqlite3_bind_int(ins_r, 6, name == 4 ? 6 : 5);
	sqlite3_step(ins_r);
	sqlite3_reset(ins_r);
}

/* An NCCL-domain range; payload: blob header + (hash, u64/ints). */
static void range(int pid, int64_t s, int64_t e, int name, int64_t schema_id, uint64_t hash,
		  uint64_t v8, int32_t v12)
{
	uint8_t blob[32 + 24] = { 0 };
	uint64_t h[4] = { 1, (uint64_t)schema_id, 24, 32 };

	memcpy(blob, h, 32);
	memcpy(blob + 32, &hash, 8);
	memcpy(blob + 40, &v8, 8);
	if (v12 >= 0)
		memcpy(blob + 44, &v12, 4); /* CommInitRank: nranks at 8, rank at 12 */
	sqlite3_bind_int64(ins_n, 1, s);
	sqlite3_bind_int64(ins_n, 2, e);
	sqlite3_bind_int64(ins_n, 3, GTID(pid));
	sqlite3_bind_int(ins_n, 4, name);
	if (schema_id)
		sqlite3_bind_blob(ins_n, 5, blob, sizeof(blob), SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(ins_n, 5);
	sqlite3_step(ins_n);
	sqlite3_reset(ins_n);
}

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
	sqlite3 *db;

	if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, schema, 0, 0, 0) != SQLITE_OK)
		return -1;
	sqlite3_prepare_v2(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(?1,?2,?3,1,?4,?5,?6,?7,?7,"
			       "32,1,1,640,1,1)", -1, &ins_k, 0);
	sqlite3_prepare_v2(db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(?1,?2,?3,?4,?5,?6,0)", -1,
			   &ins_r, 0);
	sqlite3_prepare_v2(db, "INSERT INTO NVTX_EVENTS(start,end,eventType,globalTid,textId,domainId,"
			       "binaryData) VALUES(?1,?2,59,?3,?4,1,?5)", -1, &ins_n, 0);
	sqlite3_exec(db, "BEGIN", 0, 0, 0);
	for (int p = 0; p < 2; p++) {
		int pid = 100 + p, d = 20 * p, c = 10 * p;

		range(pid, 100, 200, 13, 16777216, TP_HASH, 2, p);
		range(pid, 300, 400, 13, 16777216, DP_HASH, 2, p);
		kernel(pid, p, 0, 15000, 7, c + 1, 4);
		range(pid, 9900 + d, 9990 + d, 7, 16777221, TP_HASH, 1000, -1);
		kernel(pid, p, 10000 + d, 11000 + d, 13, c + 2, 1);
		range(pid, 19900 + d, 19990 + d, 8, 16777220, DP_HASH, 512, -1);
		kernel(pid, p, 20000 + d, 22000, 13, c + 3, 2);
		range(pid, 29800, 29850, 9, 0, 0, 0, -1);
		range(pid, 29860, 29870, 10, 16777225, TP_HASH, 256, -1);
		range(pid, 29880, 29890, 11, 16777226, TP_HASH, 256, -1);
		range(pid, 29900, 29990, 12, 0, 0, 0, -1);
		kernel(pid, p, 30000, 31000, 13, c + 4, 3);
	}
	sqlite3_exec(db, "COMMIT", 0, 0, 0);
	sqlite3_finalize(ins_k);
	sqlite3_finalize(ins_r);
	sqlite3_finalize(ins_n);
	return sqlite3_close(db) == SQLITE_OK ? 0 : -1;
}

static double num(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while ((dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		o = key[0] >= '0' && key[0] <= '9' ? cJSON_GetArrayItem(o, atoi(key))
						   : cJSON_GetObjectItemCaseSensitive(o, key);
		path = dot + 1;
	}
	o = cJSON_GetObjectItemCaseSensitive(o, path);
	return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

static char dbpath[64];

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
	CHECK_NEAR(num(r, "bandwidth.TP.events"), 4, 0);
	CHECK_NEAR(num(r, "bandwidth.TP.total_bytes"), 2 * (1000 + 256), 0);
	CHECK_NEAR(num(r, "bandwidth.TP.avg_bw_Bps"), (1e9 + 2.56e8) / 2, 1e-3);
	/* utils sorted 0.256 0.256 1 1: p95 at h = 3 × 0.95 lies between the 1s */
	CHECK_NEAR(num(r, "bandwidth.TP.p95_util"), 1, 1e-9);
	CHECK_NEAR(num(r, "bandwidth.TP.avg_util"), (1 + 0.256) / 2, 1e-9);
	/* DP all-gather: S = 512 × n(2, from CommInitRank) = 1024 B, 2 us / 1.98 us */
	CHECK_NEAR(num(r, "bandwidth.DP.total_bytes"), 2048, 0);
	CHECK_NEAR(num(r, "bandwidth.DP.events_bytes_unknown"), 0, 0);
	CHECK_NEAR(num(r, "bandwidth.DP.busbw_Bps"), 2048 * 0.5 / 3.98e-6, 1e-3);
	CHECK_NEAR(num(r, "volume.OTHER.events"), 0, 0);
	/* union per rank 0: comm 1000+2000+1000 ns, compute 15000 - 1000 under comm,
	 * span 0..31000 (no marks: one iteration) */
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.iteration_time_us"), 31, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.compute_us"), 14, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.breakdown.union.idle_us"), 31 - 4 - 14, 1e-9);
	CHECK_NEAR(num(r, "ranks.0.overlap_ratio"), 0.25, 1e-12);
	/* phases (listed DP→TP first): DP → TP 30000 - 22000 = 8 us, TP → DP
	 * 20000 - 11000 = 9 us; rank 1: 30000 - 22000 and 20020 - 11020 */
	CHECK_NEAR(num(r, "phase_windows.0.mean_us"), 8, 1e-9);
	CHECK_NEAR(num(r, "phase_windows.1.mean_us"), 9, 1e-9);
	/* stragglers: TP allreduce seq 0 spread 20 ns, rank 1 last */
	CHECK_NEAR(num(r, "straggler.top_instances.0.spread_us"), 0.02, 1e-9);
	CHECK_NEAR(num(r, "straggler.top_instances.0.last_rank"), 1, 0);
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
	CHECK_EQ_INT(comm_analyze(tl, NULL, NULL, &r, err, sizeof(err)), 0);
	/* sqlite: SELECT sum(end-start) over nccl% kernels = 25401752 ns, 66 kernels */
	CHECK_NEAR(num(r, "reconciliation.comm_kernel_time_us"), 25401.752, 1e-6);
	CHECK_NEAR(num(r, "bandwidth.OTHER.events"), 66, 0);
	CHECK_NEAR(num(r, "breakdown.union.ratios.total"), 1, 1e-12);
	cJSON_Delete(r);
	timeline_free(tl);
}

int main(void)
{
	snprintf(dbpath, sizeof(dbpath), "/tmp/gpuprof-nsys-test-%d.sqlite", (int)getpid());
	RUN(test_file_and_pipe);
	RUN(test_bad_input);
	RUN(test_reference);
	unlink(dbpath);
	return test_summary();
}
