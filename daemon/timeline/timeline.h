/* SPDX-License-Identifier: MIT */
/*
 * The one in-memory timeline model every analysis reads, whatever produced
 * it: an imported Kineto / Chrome-trace file or Nsight Systems export
 * (daemon/import/), or a live capture's GPU job intervals (live.c).
 *
 * A timeline holds one string table and many ranks. Each rank holds its
 * kept events as compact structs in ascending traceEvents order (so the
 * position of an event and its `index` grow together), the rare typed args
 * in a side table (flow events, ph s/t/f, are counted, not kept), and indexes built
 * once by timeline_finalize(): per GPU stream (sorted by time), per thread,
 * per correlation id. Analyses are then linear or n·log n passes.
 *
 * Semantics follow the trace loader of Holistic Trace Analysis (HTA), the
 * reference the analyses are checked against; docs/import.md lists every
 * deliberate difference. Summary for analysis writers:
 *  - Kept events = traceEvents elements with a `dur` and a `cat`, cat !=
 *    "Trace", minus the ProfilerStep filter when it applies.
 *  - Times: ts_ns/dur_ns are exact integer nanoseconds from the decimal text.
 *    HTA works in µs and rounds ns traces; its exact values are kept in
 *    offsets read by tl_ev_hta_ts_ns()/tl_ev_hta_end_ns(), see tl_hta_ts()/tl_hta_dur().
 *  - "GPU side" in HTA = stream != -1 (TL_EV_GPU_SIDE); HTA's GPUKernelFilter
 *    is TL_EV_GPU_KERNEL_FILTER.
 *
 * Lifetime and threads: a timeline is built by one thread (import, then
 * timeline_finalize()); once finalized it is immutable and may be read by any
 * number of threads. Every pointer returned by an accessor lives as long as
 * the timeline. Separate timelines are independent; the big arrays come
 * from alloc/bigalloc.h.
 */
#ifndef GPUPROF_TIMELINE_H
#define GPUPROF_TIMELINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TL_NO_ARGS UINT32_MAX /* tl_event.args when the event has no tl_args */
#define TL_NONE (-1)	      /* "absent" for the int64 fields below (HTA's default) */

/* Kind, from the event's `cat` (table-driven, see kinds.c). */
enum tl_kind {
	TL_K_OTHER = 0,		  /* any other category; cat string still available */
	TL_K_CPU_OP,		  /* cpu_op */
	TL_K_USER_ANNOTATION,	  /* user_annotation (ProfilerStep#N lives here) */
	TL_K_GPU_USER_ANNOTATION, /* gpu_user_annotation (no stream in HTA) */
	TL_K_PYTHON_FUNCTION,	  /* python_function */
	TL_K_RUNTIME,		  /* cuda_runtime (also HIP calls on ROCm), xpu_runtime */
	TL_K_DRIVER,		  /* cuda_driver (cuLaunchKernel ...), xpu_driver */
	TL_K_KERNEL,		  /* kernel, Kernel */
	TL_K_MEMCPY,		  /* gpu_memcpy, Memcpy */
	TL_K_MEMSET,		  /* gpu_memset, Memset */
	TL_K_SYNC,		  /* cuda_sync; see enum tl_sync */
	TL_K_PROFILER_RANGE,	  /* cuda_profiler_range */
	TL_K_COUNT
};

/* For TL_K_SYNC events, from the name (or args.cuda_sync_kind). */
enum tl_sync {
	TL_SYNC_NONE = 0,
	TL_SYNC_STREAM,	     /* "Stream Sync" (carries a stream) */
	TL_SYNC_EVENT,	     /* "Event Sync" (stream -1, wait_on_* args) */
	TL_SYNC_CONTEXT,     /* "Context Sync" (old traces: stream 4294967295) */
	TL_SYNC_STREAM_WAIT, /* "Stream Wait Event" (carries a stream) */
};

/* tl_event.flags. Name-derived flags come from exact-name tables in kinds.c
 * that copy HTA's name sets (launch statistics, queue length, critical path). */
enum tl_event_flags {
	TL_EV_GPU_SIDE = 1u << 0,	   /* stream != -1 (HTA "GPU row") */
	TL_EV_GPU_KERNEL_FILTER = 1u << 1, /* (stream>=0 && corr>=0) || Event/Context Sync */
	TL_EV_PROFILER_STEP = 1u << 2,	   /* name matches ^ProfilerStep#\d+ */
	TL_EV_LAUNCH_STATS =
		1u << 3, /* launch stats set: cudaLaunchKernel, ...ExC, runFunction - job_prep... */
	TL_EV_MEM_ASYNC =
		1u << 4, /* cudaMemcpyAsync / cudaMemsetAsync (launch stats, memory events) */
	TL_EV_LAUNCH_QUEUE = 1u << 5, /* queue length's launches (incl. cuLaunchKernel, hip*) */
	TL_EV_BLOCKING = 1u << 6,     /* critical path's is_blocking set */
	TL_EV_RUNTIME_LOCK = 1u << 7, /* cudaHostAlloc, cudaLaunchKernel, cudaMemcpyAsync */
	TL_EV_EVENT_RECORD = 1u << 8, /* cudaEventRecord */
	TL_EV_STREAM_WAIT_EVENT = 1u << 9, /* cudaStreamWaitEvent (the runtime call) */
	TL_EV_EVENT_SYNC_CALL = 1u << 10,  /* cudaEventSynchronize */
	TL_EV_STREAM_SYNC_CALL = 1u << 11, /* cudaStreamSynchronize */
	TL_EV_DEVICE_SYNC_CALL = 1u << 12, /* cudaDeviceSynchronize */
	TL_EV_PID_STR = 1u << 13,	   /* pid was a string: tl_event.pid is its string id */
	TL_EV_TID_STR = 1u << 14,	   /* tid was a string: tl_event.tid is its string id */
	TL_EV_DUR_NEG = 1u << 15,	   /* dur_ns < 0 in the file */
	TL_EV_HTA_DUR_NEG = 1u << 16,	   /* HTA's rounded dur < 0 (the "dur = -1" quirk) */
	TL_EV_DUPLICATE = 1u << 17,	   /* same as an earlier event in every kept field */
	TL_EV_NOT_X = 1u << 18,	     /* ph was not "X" (kept because it had dur + cat, as HTA) */
	TL_EV_LAUNCH_ANY = 1u << 19, /* any vendor's launch/async copy/fill call,
				      * CUDA, HIP and Intel XPU (ur*, ze*, pi*) */
};

/*
 * One kept event, 96 bytes (fresh memory dominates a large import: keep
 * it so); arrays of these are in traceEvents order.
 * int64 fields use TL_NONE (-1) for "absent", as HTA's defaults do.
 */
struct tl_event {
	int64_t ts_ns;	     /* absolute (file clock), exact from the decimal µs text */
	int64_t dur_ns;	     /* may be negative when the file says so; ts + dur fits */
	int64_t pid;	     /* or string id with TL_EV_PID_STR (GPU rows: device) */
	int64_t tid;	     /* or string id with TL_EV_TID_STR (GPU rows: stream) */
	int64_t stream;	     /* args.stream, numeric only; else -1, as HTA */
	int64_t correlation; /* args.correlation, -1 */
	int64_t external_id; /* args["External id"], -1 */
	uint32_t index;	     /* position in the file's traceEvents array */
	/* HTA's index_correlation: read and set it with
	 * tl_ev_index_corr() / tl_ev_set_index_corr() (an index, or
	 * TL_NO_INDEX for -1: 32 bits, like index, keep the row at 96 bytes) */
	uint32_t index_corr;
	uint32_t name;	/* string id (0 = "") */
	uint32_t cat;	/* string id of `cat` */
	uint32_t args;	/* index into tl_rank.args, or TL_NO_ARGS */
	uint32_t flags; /* enum tl_event_flags */
	int32_t link;	/* position (in this rank's ev[]) of the correlated partner, -1 */
	int32_t device; /* args.device, -1 */
	uint8_t kind;	/* enum tl_kind */
	uint8_t sync;	/* enum tl_sync */
	/* HTA's µs times in ns, as offsets from ts_ns and ts_ns + dur_ns:
	 * read them with tl_ev_hta_ts_ns() / tl_ev_hta_end_ns() */
	int16_t hta_ts_off, hta_end_off;
};
_Static_assert(sizeof(struct tl_event) == 96, "tl_event grew: every large import pays per byte");

#define TL_NO_INDEX UINT32_MAX /* index_corr: none (-1); no traceEvents index is this */

/* HTA's index_correlation: -1 none, 0 no partner (!), else the partner's index. */
static inline int64_t tl_ev_index_corr(const struct tl_event *e)
{
	return e->index_corr == TL_NO_INDEX ? -1 : (int64_t)e->index_corr;
}
/* v: -1, or an index (< TL_NO_INDEX); false (nothing set) otherwise. */
static inline bool tl_ev_set_index_corr(struct tl_event *e, int64_t v)
{
	if (v < -1 || v >= (int64_t)TL_NO_INDEX)
		return false;
	e->index_corr = v < 0 ? TL_NO_INDEX : (uint32_t)v;
	return true;
}

/* HTA's ts before alignment, ceil(double ts) µs, in ns (a multiple of
 * 1000; ts_ns itself when the file's ts are whole µs). */
static inline int64_t tl_ev_hta_ts_ns(const struct tl_event *e)
{
	return e->ts_ns + e->hta_ts_off;
}
/* HTA's end, floor(double ts + double dur) µs, in ns (used when rounding). */
static inline int64_t tl_ev_hta_end_ns(const struct tl_event *e)
{
	return e->ts_ns + e->dur_ns + e->hta_end_off;
}
/* HTA's rounded duration in ns (negative: the "dur = -1" rows of HTA's rounding). */
static inline int64_t tl_ev_hta_dur_ns(const struct tl_event *e)
{
	return e->dur_ns + e->hta_end_off - e->hta_ts_off;
}
static inline int64_t tl_ev_hta_ts_us(const struct tl_event *e)
{
	return tl_ev_hta_ts_ns(e) / 1000;
}
static inline int64_t tl_ev_hta_end_us(const struct tl_event *e)
{
	return tl_ev_hta_end_ns(e) / 1000;
}
/* Store HTA's ts and end (µs) in e, whose ts_ns and dur_ns are set. False,
 * e unchanged, when ts_ns + dur_ns or a time in ns is past int64, or a time
 * is 32 µs or more from the ns one: numbers no real trace has (a double is
 * within 2 µs of the exact value over int64's ns range), refused as out of
 * range. */
static inline bool tl_ev_set_hta(struct tl_event *e, int64_t ts_us, int64_t end_us)
{
	int64_t end_ns, ts_h, end_h, dt, de;

	if (__builtin_add_overflow(e->ts_ns, e->dur_ns, &end_ns) ||
	    __builtin_mul_overflow(ts_us, 1000, &ts_h) ||
	    __builtin_mul_overflow(end_us, 1000, &end_h) ||
	    __builtin_sub_overflow(ts_h, e->ts_ns, &dt) ||
	    __builtin_sub_overflow(end_h, end_ns, &de) || dt < INT16_MIN || dt > INT16_MAX ||
	    de < INT16_MIN || de > INT16_MAX)
		return false;
	e->hta_ts_off = (int16_t)dt;
	e->hta_end_off = (int16_t)de;
	return true;
}

/* Typed args the analyses need; absent numbers are -1, absent strings 0. */
struct tl_args {
	int64_t wait_on_stream;		   /* cuda_sync: args.wait_on_stream */
	int64_t wait_on_event_record_corr; /* args.wait_on_cuda_event_record_corr_id */
	int64_t wait_on_event_id;	   /* args.wait_on_cuda_event_id */
	int64_t queued;			   /* kernel: args.queued */
	int64_t bytes;			   /* memcpy/memset: args.bytes */
	int64_t in_msg_nelems;		   /* "In msg nelems" */
	int64_t out_msg_nelems;		   /* "Out msg nelems" */
	int64_t group_size;		   /* "Group size" */
	int64_t context;		   /* args.context */
	uint32_t collective_name;	   /* "Collective name" (string id) */
	uint32_t dtype;			   /* "dtype" */
	uint32_t pg_name;		   /* "Process Group Name" */
	uint32_t pg_desc;		   /* "Process Group Description" */
	uint32_t pg_ranks;  /* "Process Group Ranks", text as in the file e.g. "[0, 1]" */
	uint32_t in_split;  /* "In split size", text */
	uint32_t out_split; /* "Out split size", text */
	int32_t grid[3];    /* kernel: args.grid, -1 */
	int32_t block[3];   /* kernel: args.block, -1 */
};

/* Metadata names (ph M: process_name, thread_name, process_labels). */
enum tl_meta_kind { TL_META_PROCESS_NAME = 1, TL_META_THREAD_NAME, TL_META_PROCESS_LABELS };
struct tl_meta {
	int64_t pid, tid; /* -1 when not numeric */
	uint32_t kind;	  /* enum tl_meta_kind */
	uint32_t value;	  /* string id of args.name / args.labels */
};

/* deviceProperties[] entry. */
struct tl_device {
	int64_t total_global_mem;
	int32_t id;
	uint32_t name; /* string id */
	int32_t compute_major, compute_minor;
	int32_t num_sms, warp_size;
	int32_t max_threads_per_block, max_threads_per_sm;
	int32_t regs_per_block, shared_mem_per_block;
};

/* Per-stream index entry: GPU-side events of one (stream, pid) pair. */
struct tl_stream {
	int64_t stream;
	int64_t pid;	/* the GPU row's pid (device for Kineto) */
	uint32_t first; /* into tl_rank.by_stream */
	uint32_t count;
};

/* Per-thread index entry: all events of one (pid, tid) pair. */
struct tl_thread {
	int64_t pid, tid;
	uint32_t first; /* into tl_rank.by_thread */
	uint32_t count;
	uint32_t flags; /* TL_EV_PID_STR / TL_EV_TID_STR of its events */
	uint32_t reserved;
};

enum tl_rank_flags {
	TL_RANK_HTA_ROUNDING = 1u << 0,	  /* some ts was non-integer/missing: HTA rounds */
	TL_RANK_STEP_FILTERED = 1u << 1,  /* the ProfilerStep filter ran */
	TL_RANK_FINALIZED = 1u << 2,	  /* indexes below are built */
	TL_RANK_FROM_DIST_INFO = 1u << 3, /* rank came from distributedInfo.rank */
	/* the rows the ProfilerStep filter dropped are in tail[] (captures
	 * encoded before version 2 lost them) */
	TL_RANK_TAIL_KEPT = 1u << 4,
};

struct tl_rank {
	int32_t rank;
	uint32_t flags; /* enum tl_rank_flags */

	struct tl_event *ev; /* kept events, ascending index */
	uint32_t nev;
	struct tl_args *args;
	uint32_t nargs;
	struct tl_meta *meta;
	uint32_t nmeta;
	struct tl_device *devices;
	uint32_t ndevices;

	/* Load facts, before the ProfilerStep filter. */
	uint32_t raw_events;	    /* elements of traceEvents */
	uint32_t parsed_events;	    /* rows HTA parses (dur + cat, not Trace) */
	int64_t min_ts_ns;	    /* over parsed rows (INT64_MAX if none) */
	int64_t hta_min_ts_us;	    /* HTA's min over parsed rows, rounded ts */
	int64_t step_cutoff_hta_us; /* unaligned start of the last ProfilerStep; -1 */
	int64_t step_cutoff_ns;	    /* same in ns; -1 */
	uint32_t trace_name;	    /* top-level traceName (string id), 0 */
	uint32_t reserved;
	int64_t base_time_ns; /* top-level baseTimeNanoseconds, -1 */

	/*
	 * The rows HTA's ProfilerStep filter dropped (from the last
	 * step's start on) that the communication metrics read — GPU work,
	 * annotations, record_param_comms — in file order, for the analyses
	 * that count every iteration. Not in any index, and no HTA analysis
	 * reads them: tail[i].args indexes tail_args, link is -1.
	 */
	struct tl_event *tail;
	uint32_t ntail;
	struct tl_args *tail_args;
	uint32_t ntail_args;

	/* Built by timeline_finalize(); positions into ev[]. */
	uint32_t *by_stream; /* GPU-side events grouped per tl_stream, each by (ts_ns, index) */
	struct tl_stream *streams; /* sorted by (stream, pid) */
	uint32_t nstreams;
	uint32_t nby_stream;
	uint32_t *by_thread;	   /* all events grouped per tl_thread, each by (ts_ns, index) */
	struct tl_thread *threads; /* sorted by (pid, tid) */
	uint32_t nthreads;
	uint32_t *by_corr; /* events with correlation != -1, sorted by (correlation, index) */
	uint32_t nby_corr;
	/* corr_keys[i] = ev[by_corr[i]].correlation: tl_rank_corr() searches
	 * this contiguous copy instead of reading an event per step */
	int64_t *corr_keys;
	/* Buckets of 2^corr_shift ids from corr_lo: corr_start[b] ..
	 * corr_start[b + 1] is the run in by_corr of the ids c with
	 * (c - corr_lo) >> corr_shift == b (corr_span buckets, + 1 entries;
	 * NULL when no row has a correlation). corr_shift is the smallest
	 * that keeps the buckets within 4 x nby_corr + 64: 0 when the ids are
	 * dense (a bucket is one id, tl_rank_corr() is O(1)); else
	 * tl_rank_corr() binary-searches corr_keys within the bucket. */
	uint32_t *corr_start;
	int64_t corr_lo;
	uint32_t corr_span;
	uint32_t corr_shift;
};

struct timeline; /* opaque: string table + ranks */

/* ---- lifecycle ------------------------------------------------------- */

/* Empty timeline. Returns 0 or -ENOMEM. */
int timeline_new(struct timeline **ret);
/* Frees everything; NULL is a no-op. */
void timeline_free(struct timeline *tl);

enum timeline_finalize_flags {
	TL_FIN_NO_STEP_FILTER = 1u << 0, /* keep everything (not HTA's default) */
};
/*
 * Apply HTA's ProfilerStep filter (only when the timeline-wide string
 * table has >= 2 distinct ProfilerStep#N names; each rank cut at its own last
 * step start) to every rank not yet filtered, then build the indexes and
 * links of every rank. Idempotent. Importing more ranks afterwards and
 * calling it again filters/indexes only the new ranks. 0 or -ENOMEM.
 */
int timeline_finalize(struct timeline *tl, unsigned flags);

/* ---- accessors (valid after finalize; pointers live with tl) ---------- */

uint32_t timeline_nranks(const struct timeline *tl);
/* i-th rank in ascending rank order, NULL if out of range. */
const struct tl_rank *timeline_rank_at(const struct timeline *tl, uint32_t i);
/* Rank by number, NULL if absent. */
const struct tl_rank *timeline_rank(const struct timeline *tl, int32_t rank);

/* String by id ("" for 0 or an unknown id). *len optional. */
const char *timeline_str(const struct timeline *tl, uint32_t id, size_t *len);
uint32_t timeline_nstrs(const struct timeline *tl); /* ids are 0..n-1 */
/* Give back the growth slack of a finished timeline's arrays (events,
 * args), before keeping it for long. */
void timeline_shrink(struct timeline *tl);
/* Bytes the timeline holds (events, args, indexes, strings): what keeping
 * it costs (the decoded-timeline cache's budget). */
size_t timeline_mem_bytes(const struct timeline *tl);
/* Id of an existing string, or 0 if not interned (0 is also ""). */
uint32_t timeline_str_find(const struct timeline *tl, const char *s, size_t len);

/* Earliest event over all ranks (parsed rows, before the step filter):
 * HTA's alignment offset is timeline_hta_min_ts_us(). */
int64_t timeline_min_ts_ns(const struct timeline *tl);
int64_t timeline_hta_min_ts_us(const struct timeline *tl);

/* Positions (into r->ev) of events with this correlation: *first indexes
 * r->by_corr; returns the count (0 if none). */
uint32_t tl_rank_corr(const struct tl_rank *r, int64_t correlation, uint32_t *first);
/* Stream entry for (stream, pid), pid < 0 = first entry of that stream; NULL. */
const struct tl_stream *tl_rank_stream(const struct tl_rank *r, int64_t stream, int64_t pid);
/* Args of an event, NULL when it has none. */
static inline const struct tl_args *tl_event_args(const struct tl_rank *r, const struct tl_event *e)
{
	return e->args == TL_NO_ARGS ? NULL : &r->args[e->args];
}

/* HTA's ts in µs, unaligned (subtract timeline_hta_min_ts_us for HTA's alignment). */
static inline int64_t tl_hta_ts(const struct tl_rank *r, const struct tl_event *e)
{
	(void)r;
	return tl_ev_hta_ts_us(e); /* integral ts: ceil is the identity */
}
/* HTA's dur in µs (float64 in HTA): rounded as HTA rounds, else the file's value. */
static inline double tl_hta_dur(const struct tl_rank *r, const struct tl_event *e)
{
	if (r->flags & TL_RANK_HTA_ROUNDING)
		return (double)(tl_ev_hta_dur_ns(e) / 1000);
	return (double)e->dur_ns / 1000.0;
}

/* ---- serialization (CAPSEC_TIMELINE extra section of a capture) ------- */

#define TIMELINE_ENC_VERSION 2 /* 2: the step filter's tail; 1 still decodes */
/*
 * Encode a finalized timeline into a malloc'ed buffer (*buf, freed by the
 * caller). Little-endian, versioned, self-describing lengths; indexes are not
 * stored (decode rebuilds them). 0 or -ENOMEM / -EINVAL (not finalized).
 */
int timeline_encode(const struct timeline *tl, void **buf, size_t *len);
/*
 * Decode bytes from timeline_encode (untrusted: every count and id is checked,
 * allocations are bounded by len). 0, or -EBADMSG with a reason in why,
 * -ENOTSUP for an unknown version, -ENOMEM. *ret untouched on failure.
 */
int timeline_decode(const void *buf, size_t len, struct timeline **ret, char *why, size_t whylen);
/* true if a and b hold identical content (tests, round trips). */
bool timeline_equal(const struct timeline *a, const struct timeline *b);

#endif /* GPUPROF_TIMELINE_H */
