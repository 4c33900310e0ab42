// SPDX-License-Identifier: MIT
/* Nsight Systems SQLite exports for tests and fuzz seeds (nsys_builder.h). */
#include <string.h>
#include <unistd.h>

#include "nsys_builder.h"

static const char *schema =
	"CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);"
	"CREATE TABLE TARGET_INFO_GPU(vmId INTEGER, id INTEGER, name TEXT, busLocation TEXT,"
	" isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER,"
	" clockRate INTEGER, smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER);"
	"CREATE TABLE TARGET_INFO_CUDA_DEVICE(gpuId INTEGER, cudaId INTEGER NOT NULL,"
	" pid INTEGER NOT NULL, uuid TEXT, numMultiprocessors INTEGER);"
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
	" (1, 16777216, 2, 0, 5, 'Rank', '', NULL, 12),"
	" (1, 16777216, 3, 0, 5, 'CUDA device', '', NULL, 16);";

int nsysb_open(struct nsysb *b, const char *path, bool small_pages)
{
	memset(b, 0, sizeof(*b));
	unlink(path);
	if (sqlite3_open(path, &b->db) != SQLITE_OK ||
	    (small_pages && sqlite3_exec(b->db, "PRAGMA page_size=512", 0, 0, 0) != SQLITE_OK) ||
	    sqlite3_exec(b->db, schema, 0, 0, 0) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db,
			       "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(?1,?2,?3,1,?4,?5,?6,?7,?7,"
			       "32,1,1,640,1,1)", -1, &b->k, 0) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db,
			       "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(?1,?2,?3,?4,?5,?6,0)", -1,
			       &b->r, 0) != SQLITE_OK ||
	    sqlite3_prepare_v2(b->db,
			       "INSERT INTO NVTX_EVENTS(start,end,eventType,globalTid,textId,domainId,"
			       "binaryData) VALUES(?1,?2,59,?3,?4,1,?5)", -1, &b->n, 0) != SQLITE_OK)
		return -1;
	return sqlite3_exec(b->db, "BEGIN", 0, 0, 0) == SQLITE_OK ? 0 : -1;
}

void nsysb_kernel(struct nsysb *b, int pid, int dev, int64_t s, int64_t e, int stream, int corr,
		  int name)
{
	sqlite3_bind_int64(b->k, 1, s);
	sqlite3_bind_int64(b->k, 2, e);
	sqlite3_bind_int(b->k, 3, dev);
	sqlite3_bind_int(b->k, 4, stream);
	sqlite3_bind_int(b->k, 5, corr);
	sqlite3_bind_int64(b->k, 6, NSYSB_GPID(pid));
	sqlite3_bind_int(b->k, 7, name);
	sqlite3_step(b->k);
	sqlite3_reset(b->k);
	sqlite3_bind_int64(b->r, 1, s - 50);
	sqlite3_bind_int64(b->r, 2, s - 40);
	sqlite3_bind_int(b->r, 3, name == NSYSB_S_GEMM ? 0 : 1);
	sqlite3_bind_int64(b->r, 4, NSYSB_GTID(pid));
	sqlite3_bind_int(b->r, 5, corr);
	sqlite3_bind_int(b->r, 6, name == NSYSB_S_GEMM ? NSYSB_S_LAUNCH : NSYSB_S_LAUNCH_EX);
	sqlite3_step(b->r);
	sqlite3_reset(b->r);
}

void nsysb_range(struct nsysb *b, int pid, int64_t s, int64_t e, int name, int64_t schema_id,
		 uint64_t hash, uint64_t v8, int32_t v12, int32_t v16)
{
	uint8_t blob[32 + 24] = { 0 };
	uint64_t h[4] = { 1, (uint64_t)schema_id, 24, 32 };

	memcpy(blob, h, 32);
	memcpy(blob + 32, &hash, 8);
	memcpy(blob + 40, &v8, 8);
	if (v12 >= 0)
		memcpy(blob + 44, &v12, 4);
	if (v16 >= 0)
		memcpy(blob + 48, &v16, 4);
	sqlite3_bind_int64(b->n, 1, s);
	sqlite3_bind_int64(b->n, 2, e);
	sqlite3_bind_int64(b->n, 3, NSYSB_GTID(pid));
	sqlite3_bind_int(b->n, 4, name);
	if (schema_id)
		sqlite3_bind_blob(b->n, 5, blob, sizeof(blob), SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(b->n, 5);
	sqlite3_step(b->n);
	sqlite3_reset(b->n);
}

int nsysb_exec(struct nsysb *b, const char *sql)
{
	return sqlite3_exec(b->db, sql, 0, 0, 0) == SQLITE_OK ? 0 : -1;
}

int nsysb_close(struct nsysb *b, bool vacuum)
{
	int bad = sqlite3_exec(b->db, "COMMIT", 0, 0, 0) != SQLITE_OK;

	sqlite3_finalize(b->k);
	sqlite3_finalize(b->r);
	sqlite3_finalize(b->n);
	if (vacuum)
		bad |= sqlite3_exec(b->db, "VACUUM", 0, 0, 0) != SQLITE_OK;
	bad |= sqlite3_close(b->db) != SQLITE_OK;
	return bad ? -1 : 0;
}
