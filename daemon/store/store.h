/* SPDX-License-Identifier: MIT */
/*
 * The store: a ring of fixed-size, arrival-ordered records under a fixed
 * memory budget, with interned strings and deduplicated stacks that are
 * reference-counted by the records holding them and reclaimed as those
 * records fall out of the ring. Single-threaded: owned by the event loop.
 *
 * Budget split (documented in docs/store.md): half of budget_bytes
 * is the record ring (budget/2 / sizeof(struct store_rec) slots, fixed at
 * creation); the other half bounds the string and stack tables (their
 * entries, hash buckets and payload bytes). When a table would exceed its
 * half, the oldest records are evicted until enough entries are released;
 * if the tables still cannot fit the new entry, the intern call fails and
 * the store counts a drop.
 */
#ifndef GPUPROF_STORE_H
#define GPUPROF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "gpu_engine.h"

enum store_rec_type {
	STORE_REC_CPU_SAMPLE = 1,   /* stack = user+kernel stack, aux32 = weight (1) */
	STORE_REC_GPU_LAUNCH = 2,   /* name = kernel, aux[0] = queue, aux[1] = correlation,
				   * cgroup = launcher's cgroup path (no dur_ns) */
	STORE_REC_GPU_INTERVAL = 3, /* dur_ns valid, name = kernel/engine, aux[0] = context */
	STORE_REC_MARK = 4,	    /* name = annotation, dur_ns valid */
	STORE_REC_GPU_METRIC = 5,   /* name = metric ("frequency-MHz", "busy-percent"),
				   * aux[0] = value, cpu = GT id (xe OA, docs/xe.md) */
	STORE_REC_GPU_API = 6,	    /* a runtime / driver call seen by the CUPTI library:
				   * ts = entry, dur_ns valid, name = function, cpu =
				   * domain (1 driver, 2 runtime), aux32 = callback id |
				   * failed << 16, aux[1] = CUPTI correlation id */
	STORE_REC_GPU_PC = 7,	    /* PC samples of one (function, pc, stall reason):
				   * see "Records from the CUPTI library" */
	STORE_REC_GPU_EVENT = 8,    /* a CUDA event recorded on a stream (CUPTI): see
				   * "Records from the CUPTI library" */
	STORE_REC_GPU_WINDOW = 9,   /* a CUPTI library's collection window: see
				   * "Records from the CUPTI library" */
	STORE_REC_TYPE_MAX,
};

/*
 * Records from the CUPTI library (docs/collectors.md, "NVIDIA"), besides
 * STORE_REC_GPU_API:
 *  - GPU activity is STORE_REC_GPU_INTERVAL with cpu = GPU_ENGINE_CUPTI << 8
 *    | enum gpu_cupti_kind (store/gpu_engine.h); tid 0, stack 0; name = the
 *    kernel's name, or for the others the name Kineto gives them ("Memcpy
 *    HtoD (Pageable -> Device)", "Memset (Device)", "Stream Sync", ...);
 *    aux[0] = STORE_CUPTI_WHERE(device, context, stream); aux[1] = the
 *    CUPTI correlation id (low 32 bits; not the launch probe's correlation)
 *    | the detail string id << 32 (store_rec_detail()); aux32 = kernel:
 *    registers per thread, memcpy / memset: STORE_BYTES32() of the bytes,
 *    sync: the CUDA event id.
 *  - NVTX ranges and marks are STORE_REC_MARK with cpu = 1, on their
 *    thread, aux[1] = the domain's string id << 32 (0 = default domain).
 *  - PC samples are STORE_REC_GPU_PC, one per (function, pc, stall reason)
 *    and drain of the library: ts = when the library drained them (the
 *    samples are older: within its sampling window), dur_ns 0, tid 0,
 *    stack 0 (the launch stack is joined by kernel name at render), name =
 *    the (mangled) function name, cpu = CUDA device, aux32 = samples,
 *    aux[0] = the cubin's CRC (cuptiGetCubinCrc), aux[1] = the pc offset
 *    into the function (low 32 bits) | the stall reason's string id << 32
 *    (store_rec_detail(): CUPTI's full name, e.g.
 *    "smsp__pcsamp_warps_issue_stalled_barrier").
 *  - CUDA event records (one per cudaEventRecord) are STORE_REC_GPU_EVENT:
 *    ts = the cudaEventRecord call's entry (when the library saw the call,
 *    else when it read the record), dur_ns 0, tid 0, stack 0, name 0,
 *    aux32 = the CUDA event id, aux[0] = STORE_CUPTI_WHERE(device, context,
 *    stream) of the stream it was recorded on, aux[1] = the cudaEventRecord
 *    call's CUPTI correlation id. Never shown themselves: they tell which
 *    record a sync interval that waits on an event (its aux32) waits on, a
 *    join made where a capture is read (capture/gpumatch.h), since the two
 *    come in CUPTI buffers of different threads, in any order.
 *  - A duty-cycled library's collection windows are STORE_REC_GPU_WINDOW:
 *    ts..ts + dur_ns the library collected (its activity kinds and API
 *    callbacks on), tid 0, stack 0, name 0, aux32 = its duty in percent,
 *    aux[0] = its period in ms. Outside its windows a pid that has any has
 *    no GPU records for want of collection, not of GPU work
 *    (capture/capture.h, capture_gpu_coverage()). Never shown themselves.
 */
#define STORE_CUPTI_WHERE(dev, ctx, stream) \
	((uint64_t)((dev)&0xff) << 48 | (uint64_t)((ctx)&0xffff) << 32 | (uint32_t)(stream))
#define STORE_CUPTI_DEVICE(aux0) ((uint32_t)((aux0) >> 48) & 0xff)
#define STORE_CUPTI_CONTEXT(aux0) ((uint32_t)((aux0) >> 32) & 0xffff)
#define STORE_CUPTI_STREAM(aux0) ((uint32_t)(aux0))
/* bytes in 32 bits: exact below 2 GiB, else KiB with bit 31 set */
#define STORE_BYTES32(b)                                                                   \
	((uint64_t)(b) < (1ull << 31)	      ? (uint32_t)(b)                              \
	 : (uint64_t)(b) >> 10 < (1ull << 31) ? (uint32_t)((uint64_t)(b) >> 10) | 1u << 31 \
					      : UINT32_MAX)
#define STORE_BYTES64(v) ((v)&1u << 31 ? (uint64_t)((v) & ~(1u << 31)) << 10 : (uint64_t)(v))

/* 64 bytes, fixed. Ids are 0 for "none". */
struct store_rec {
	uint64_t ts_ns; /* CLOCK_MONOTONIC, as bpf_ktime_get_ns() */
	union {
		uint64_t dur_ns; /* intervals and marks; launches have none */
		/* STORE_REC_GPU_LAUNCH only (store_rec_cgroup()): string id of
		 * the launcher's cgroup v2 path, 0 = unknown; a reference held
		 * by the record like comm and name. cgroup_rsv is 0. */
		struct {
			uint32_t cgroup, cgroup_rsv;
		};
	};
	uint32_t pid, tid; /* tgid and thread id, init namespace */
	/* authorization filter: the task's uid when a peer of that uid could
	 * ptrace-read it, else GPUPROF_OWNER_ROOT_ONLY (bpf/owner.bpf.h) */
	uint32_t uid;
	uint32_t comm;	/* string id */
	uint32_t stack; /* stack id */
	uint32_t name;	/* string id */
	uint16_t type;	/* enum store_rec_type */
	uint16_t cpu;
	uint32_t aux32;	 /* type-specific */
	uint64_t aux[2]; /* type-specific */
};

_Static_assert(sizeof(struct store_rec) == 64, "store_rec must stay 64 bytes");

/* The cgroup string id of r: launches only (other types' dur_ns shares
 * the bytes). */
static inline uint32_t store_rec_cgroup(const struct store_rec *r)
{
	return r->type == STORE_REC_GPU_LAUNCH ? r->cgroup : 0;
}

/*
 * The second string a record may hold, in aux[1]'s high half: a CUPTI
 * interval's detail ("grid [128,1,1] block [256,1,1] ..."), an NVTX mark's
 * domain, a PC sample's stall reason. A reference held by the record like comm and name; 0 = none.
 */
static inline uint32_t store_rec_detail(const struct store_rec *r)
{
	bool cupti = r->type == STORE_REC_GPU_INTERVAL && r->cpu >> 8 == GPU_ENGINE_CUPTI;
	return cupti || r->type == STORE_REC_MARK || r->type == STORE_REC_GPU_PC
		       ? (uint32_t)(r->aux[1] >> 32)
		       : 0;
}

/* Per user or kernel stack: BPF's 127 native frames, and room for the
 * Python frames spliced into user stacks (pyframes/pyreg.h) */
#define STORE_MAX_FRAMES 255

struct store_config {
	size_t budget_bytes; /* total; minimum 64 KiB */
};

struct store_stats {
	uint64_t appended;	/* records ever appended */
	uint64_t dropped;	/* records refused (tables full even when empty) */
	uint64_t evicted;	/* records pushed out of the ring */
	size_t records;		/* records held now */
	size_t capacity;	/* ring slots */
	size_t strings, stacks; /* live table entries */
	size_t table_bytes, table_budget;
	size_t budget_bytes;
	uint64_t oldest_ts_ns, newest_ts_ns; /* 0 when empty */
};

struct store;

int store_new(const struct store_config *cfg, struct store **ret);
void store_free(struct store *s);

/*
 * Intern a string (need not be NUL-terminated; at most 4095 bytes are
 * kept). Returns a non-zero id carrying one reference owned by the caller,
 * or 0 when the tables cannot hold it. Hand the reference to a record via
 * store_append(), or give it back with store_str_unref().
 */
uint32_t store_str_intern(struct store *s, const char *str, size_t len);
void store_str_unref(struct store *s, uint32_t id);

/*
 * Intern a stack: ips[0..nuser) are user frames, then ips[nuser..nuser+nkernel)
 * kernel frames, each leaf first. Same reference contract as strings.
 */
uint32_t store_stack_intern(struct store *s, const uint64_t *ips, uint16_t nuser, uint16_t nkernel);
void store_stack_unref(struct store *s, uint32_t id);

/*
 * Take one more reference on a live id (O(1), no hashing): for callers
 * that cache ids, e.g. a comm per pid, and hand one reference to each
 * record. Returns id, or 0 for an unknown id or a saturated count.
 */
uint32_t store_str_ref(struct store *s, uint32_t id);
uint32_t store_stack_ref(struct store *s, uint32_t id);

/*
 * Append a record. The references held by rec->comm, rec->stack,
 * rec->name, a launch's rec->cgroup and store_rec_detail(rec) move into
 * the store (the caller must not unref them). May evict
 * the oldest record. Returns 0.
 */
int store_append(struct store *s, const struct store_rec *rec);

/* Look-ups; pointers stay valid until the entry is reclaimed, i.e. until
 * the next store_append/intern call. NULL / 0 for an unknown id. */
const char *store_str(const struct store *s, uint32_t id, size_t *len);
const uint64_t *store_stack(const struct store *s, uint32_t id, uint16_t *nuser, uint16_t *nkernel);

/* Records oldest first: i in [0, stats.records). */
size_t store_count(const struct store *s);
const struct store_rec *store_at(const struct store *s, size_t i);

void store_get_stats(const struct store *s, struct store_stats *st);

/*
 * Every string or stack id now live is < store_id_limit(s): size a
 * per-id map with it (capture_take renumbers through one). Strings and
 * stacks share the id space, so one map covers both.
 */
uint32_t store_id_limit(const struct store *s);

/*
 * Estimate of how many records with ts_ns >= ts the ring has evicted: 0
 * exactly when no evicted record was that new, otherwise an upper bound
 * within about capacity/32 records (see docs/store.md).
 */
uint64_t store_evicted_since(const struct store *s, uint64_t ts_ns);

#endif
