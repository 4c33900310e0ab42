// SPDX-License-Identifier: MIT
/*
 * Writes the nsys seed corpus: small Nsight Systems SQLite exports with
 * the real table and column names (nsys 3.25 schema subset, as
 * tests/comm/test_nsys.c builds them), NCCL kernel names and NVTX
 * payloads. Pages are 512 bytes to keep each file a few KB.
 *   gen_nsys DIR
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GPID(p) ((1ll << 48) | ((long long)(p) << 24))
#define GTID(p) (GPID(p) | (p))

static const char *schema =
	"PRAGMA page_size=512;"
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

static void range(int pid, int64_t s, int64_t e, int name, int64_t schema_id, uint64_t hash,
		  uint64_t v8, int32_t v12)
{
	uint8_t blob[32 + 24] = {0};
	uint64_t h[4] = {1, (uint64_t)schema_id, 24, 32};

	memcpy(blob, h, 32);
	memcpy(blob + 32, &hash, 8);
	memcpy(blob + 40, &v8, 8);
	if (v12 >= 0)
		memcpy(blob + 44, &v12, 4);
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

/* nproc processes; what: bit 0 NCCL ranges, bit 1 the grouped send/recv,
 * bit 2 a plain NVTX text range, bit 3 drop the session table */
static void build(const char *dir, const char *name, int nproc, int what)
{
	char path[1024];
	sqlite3 *db;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, schema, 0, 0, 0) != SQLITE_OK)
		exit(1);
	sqlite3_prepare_v2(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(?1,?2,?3,1,?4,?5,?6,?7,?7,"
			       "32,1,1,640,1,1)", -1, &ins_k, 0);
	sqlite3_prepare_v2(db, "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(?1,?2,?3,?4,?5,?6,0)",
			   -1, &ins_r, 0);
	sqlite3_prepare_v2(db, "INSERT INTO NVTX_EVENTS(start,end,eventType,globalTid,textId,domainId,"
			       "binaryData) VALUES(?1,?2,59,?3,?4,1,?5)", -1, &ins_n, 0);
	sqlite3_exec(db, "BEGIN", 0, 0, 0);
	for (int p = 0; p < nproc; p++) {
		int pid = 100 + p, d = 20 * p, c = 10 * p;

		if (what & 1) {
			range(pid, 100, 200, 13, 16777216, 0xAAAA, (uint64_t)nproc, p);
			range(pid, 9900 + d, 9990 + d, 7, 16777221, 0xAAAA, 1000, -1);
			range(pid, 19900 + d, 19990 + d, 8, 16777220, 0xAAAA, 512, -1);
		}
		kernel(pid, p, 0, 15000, 7, c + 1, 4);
		kernel(pid, p, 10000 + d, 11000 + d, 13, c + 2, 1);
		kernel(pid, p, 20000 + d, 22000, 13, c + 3, 2);
		if (what & 2) {
			range(pid, 29800, 29850, 9, 0, 0, 0, -1);
			range(pid, 29860, 29870, 10, 16777225, 0xAAAA, 256, -1);
			range(pid, 29880, 29890, 11, 16777226, 0xAAAA, 256, -1);
			range(pid, 29900, 29990, 12, 0, 0, 0, -1);
			kernel(pid, p, 30000, 31000, 13, c + 4, 3);
		}
	}
	if (what & 4)
		sqlite3_exec(db, "INSERT INTO NVTX_EVENTS(start,end,eventType,text,globalTid) "
				 "VALUES(5,20000,59,'train_step',281474993487972)", 0, 0, 0);
	sqlite3_exec(db, "COMMIT", 0, 0, 0);
	if (what & 8)
		sqlite3_exec(db, "DROP TABLE TARGET_INFO_SESSION_START_TIME", 0, 0, 0);
	sqlite3_finalize(ins_k);
	sqlite3_finalize(ins_r);
	sqlite3_finalize(ins_n);
	sqlite3_exec(db, "VACUUM", 0, 0, 0);
	if (sqlite3_close(db) != SQLITE_OK)
		exit(1);
	printf("%s\n", path);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	build(argv[1], "two-ranks-nccl.sqlite", 2, 7);
	build(argv[1], "one-rank-kernels.sqlite", 1, 0);
	build(argv[1], "one-rank-sendrecv-no-session.sqlite", 1, 2 | 8);
	return 0;
}
