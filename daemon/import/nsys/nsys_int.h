/* SPDX-License-Identifier: MIT */
/*
 * Nsight Systems SQLite importer internals (docs/import.md, "Nsight Systems
 * exports"). The export is read from memory through sqlite3_deserialize()
 * (read-only, no file, no temp files) and turned into ranks of the common
 * timeline model: one rank per (process, CUDA device) that ran GPU work.
 */
#ifndef GPUPROF_IMPORT_NSYS_INT_H
#define GPUPROF_IMPORT_NSYS_INT_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "import.h"
#include "memcap.h"
#include "timeline_int.h"

/* globalTid = <HW:8><VM:8><PID:24><TID:24> (the nsys SQLite schema). */
#define NSYS_PID(g) (((uint64_t)(g) >> 24) & 0xFFFFFFu)
#define NSYS_TID(g) ((uint64_t)(g)&0xFFFFFFu)

struct nsys_rank {
	int64_t gpid; /* globalPid (TID bits 0) */
	int64_t dev;  /* deviceId as the process saw it */
	struct tl_rank *r;
	struct tl_build cap;
};

/* An NVTX range the NCCL enrichment needs, per launching thread. */
enum nsys_op {
	NOP_NONE = 0,
	NOP_GROUP_START,
	NOP_GROUP_END,
	NOP_ALLREDUCE,
	NOP_ALLGATHER,
	NOP_REDUCESCATTER,
	NOP_BROADCAST,
	NOP_REDUCE,
	NOP_SEND,
	NOP_RECV,
	NOP_ALLTOALL,
	NOP_GATHER,
	NOP_SCATTER,
	NOP_COMM_INIT,
	NOP_TORCH /* PyTorch "nccl:<coll>" range */
};

struct nsys_range {
	int64_t gtid, start, end;
	uint64_t hash;			/* NCCL communicator id, when has_hash */
	int64_t bytes;			/* payload message size, -1 unknown */
	int32_t nranks, crank, cudadev; /* CommInit payload, -1 unknown */
	uint32_t name;			/* NOP_TORCH: interned collective name */
	uint8_t op;			/* enum nsys_op */
	bool has_hash;
};

/* A communication kernel waiting for its launch to be found. */
struct nsys_comm {
	int64_t pid, corr;
	uint32_t rank, ev;    /* nsys_imp.ranks index, position in its ev[] */
	int64_t gtid, launch; /* launching thread and time, gtid -1 = not found */
};

/* Payload schema entries that matter, per (domainId, schemaId). */
struct nsys_schema {
	int64_t domain, schema;
	int32_t off_hash, off_size, off_nranks, off_rank, off_dev; /* -1 absent */
};

/* A communicator's members text (string id, 0 = incomplete), per comm id. */
struct nsys_members {
	uint64_t hash;
	int64_t id;
};

struct nsys_imp {
	sqlite3 *db;
	struct strtab *st;
	const struct import_opts *o;
	struct import_result *res;
	int64_t epoch;	      /* TARGET_INFO_SESSION_START_TIME.utcEpochNs, 0 if absent */
	uint64_t deadline_ns; /* CLOCK_MONOTONIC bound on SQL work */
	uint32_t max_events;

	/* StringIds: sorted sqlite id → text copy and interned ids. */
	int64_t *sid;
	char **stext;
	uint32_t *sraw, *sclean; /* interned raw / cleaned name, 0 = not yet */
	uint32_t nstr;

	struct nsys_rank *ranks;
	uint32_t nranks;
	struct nsys_range *rng;
	uint32_t nrng, rng_cap;
	struct nsys_comm *comm;
	uint32_t ncomm, comm_cap;
	uint32_t *init; /* positions in rng[] of CommInit ranges with a payload */
	uint32_t ninit, init_cap;
	struct nsys_schema *sch;
	uint32_t nsch, sch_cap;
	uint32_t ids_byte; /* interned "Byte" */
	int32_t base;	   /* timeline rank of ranks[0] (ranks[i] is base + i) */
	struct nsys_members *mem;
	uint32_t nmem, mem_cap;
	/* the import's memory limit (NULL: none): the export in memory
	 * (file_bytes) and the rows kept, checked every NSYS_MEM_EVERY rows */
	struct tl_memcap *memcap;
	uint64_t file_bytes;
	uint32_t mem_tick;
	char err[256];
};

#define NSYS_MEM_EVERY 1024

/* Integer column i of the current row, def when it is NULL. */
static inline int64_t nsys_col_i64(sqlite3_stmt *s, int i, int64_t def)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? def : sqlite3_column_int64(s, i);
}

/* nsys.c: import orchestration. buf is writable and owned by the caller. */
int nsys_import_db(void *buf, size_t len, const struct import_opts *o, struct timeline *tl,
		   struct import_result *res, struct tl_memcap *mem);

/* nsys_db.c: SQLite access and StringIds */
/* Attach buf (len bytes, must outlive m->db) read-only; starts the SQL budget. */
int nsys_open_db(struct nsys_imp *m, void *buf, size_t len);
int nsys_load_strings(struct nsys_imp *m);
int nsys_fail(struct nsys_imp *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool nsys_has_table(struct nsys_imp *m, const char *table);
/*
 * "SELECT c0, c1, ... FROM table [tail]" where absent columns read as NULL
 * (columns vary across nsys versions, so every read goes through here).
 * 0, or -ENOENT when the table is absent, or an error.
 */
int nsys_select(struct nsys_imp *m, const char *table, const char *const *cols, const char *tail,
		sqlite3_stmt **out);
int nsys_step(struct nsys_imp *m, sqlite3_stmt *s); /* 1 row, 0 done, <0 error */
/* Text of a StringIds id (NULL if unknown); interned raw or cleaned copy. */
const char *nsys_text(struct nsys_imp *m, int64_t id);
int64_t nsys_intern_id(struct nsys_imp *m, int64_t id, bool clean);
int64_t nsys_intern(struct nsys_imp *m, const char *s, size_t n);
/* Strip "_v7000" API suffixes and PyTorch ", op_id = N"/", seq = N" tails. */
size_t nsys_clean_len(const char *s, size_t n);
/* nsys.c: ranks and events */
int nsys_push(struct nsys_imp *m, struct nsys_rank *nr, const struct tl_event *e,
	      const struct tl_args *a);
/* Rank of (globalPid, device), or of the process's first device (dev < 0). */
struct nsys_rank *nsys_rank_of(struct nsys_imp *m, int64_t gpid, int64_t dev);

/* nsys_rows.c */
int nsys_read_ranks(struct nsys_imp *m);
int nsys_read_gpu(struct nsys_imp *m);
int nsys_read_runtime(struct nsys_imp *m);
/* nsys_nvtx.c */
int nsys_read_nvtx(struct nsys_imp *m);

/* nsys_devices.c: each rank's device (name, SMs, memory) from TARGET_INFO_GPU */
int nsys_read_devices(struct nsys_imp *m);

/* nsys_nccl.c */
int nsys_read_schemas(struct nsys_imp *m);
/* Payload of an NVTX range: fills hash/bytes/nranks/crank from a blob. */
void nsys_decode_payload(struct nsys_imp *m, struct nsys_range *g, const void *blob, int len);
enum nsys_op nsys_op_from_name(const char *s, size_t n);
bool nsys_is_comm_kernel(const char *s, size_t n);
int nsys_enrich(struct nsys_imp *m);

#endif
