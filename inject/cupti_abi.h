/* SPDX-License-Identifier: MIT */
/*
 * The wire between libgpuprof-cupti.so, which runs inside a CUDA process
 * (loaded by the driver through CUDA_INJECTION64_PATH), and gpuprofd's
 * `cupti` collector (docs/collectors.md, "NVIDIA"). This header is the one
 * place both sides take the layout from; plain C11, no CUDA or daemon types.
 *
 * Transport: a SOCK_SEQPACKET Unix socket the daemon listens on
 * (`cupti.socket`, default GPI_SOCKET_DEFAULT). Any local user may connect:
 * the processes a fleet profiles run as every user, not as members of group
 * `gpuprof`. So the daemon trusts nothing in a message about who sent it:
 * every record is attributed to the peer the kernel reports for the
 * connection (SO_PEERCRED pid and uid, fixed at connect), and the fields
 * below that name a thread, device or stream are only ever read as facts
 * about that peer.
 *
 * One message = one batch: a struct gpi_hdr, then records back to back,
 * each starting with a struct gpi_rec whose len (a multiple of 8, header
 * included) says where the next one starts. A message is at most
 * GPI_MSG_MAX bytes. The library sends with MSG_DONTWAIT: a batch the
 * socket cannot take at once is dropped and counted (gpi_stats), so the
 * application never waits for the daemon.
 *
 * Times are CLOCK_MONOTONIC nanoseconds (the clock of bpf_ktime_get_ns()
 * and of every other record in the store): the library registers a CUPTI
 * timestamp callback reading that clock, and converts when it cannot.
 *
 * Strings (kernel, API, marker and domain names) travel once per
 * connection as GPI_STRING records defining a small id; later records
 * name them by id (0 = none). A string record may redefine an id that is
 * already defined (the library recycles ids when its table is full); the
 * new text applies to records after it in the same connection. Ids are
 * below GPI_STRING_IDS, texts at most GPI_STRING_MAX bytes.
 *
 * Versioning: the daemon refuses a connection whose first message is not
 * a GPI_HELLO of a version it knows. Record types it does not know are
 * skipped by len (a newer library may send more); a record shorter than
 * its type's struct is malformed, and a malformed message closes the
 * connection.
 */
#ifndef GPUPROF_INJECT_CUPTI_ABI_H
#define GPUPROF_INJECT_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

#define GPI_SOCKET_DEFAULT "/run/gpuprof/cupti.sock"
/* the environment variable naming another socket (tests, private daemons) */
#define GPI_SOCKET_ENV "GPUPROF_CUPTI_SOCKET"

#define GPI_MAGIC 0x49505047u /* "GPPI", little-endian */
#define GPI_VERSION 1
#define GPI_MSG_MAX 65536u
#define GPI_STRING_IDS 65536u
#define GPI_STRING_MAX 4095u

/* 16 bytes; seq counts the connection's messages from 0, so the daemon
 * sees batches the library dropped as gaps */
struct gpi_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t nrec; /* records in this message */
	uint32_t seq;
	uint32_t rsv; /* 0 */
};

enum gpi_type {
	GPI_HELLO = 1,	/* struct gpi_hello: first record of the first message */
	GPI_STRING = 2, /* struct gpi_string */
	GPI_KERNEL = 3, /* struct gpi_kernel */
	GPI_MEMCPY = 4, /* struct gpi_memcpy */
	GPI_MEMSET = 5, /* struct gpi_memset */
	GPI_SYNC = 6,	/* struct gpi_sync */
	GPI_GRAPH = 7,	/* struct gpi_graph: a graph launch as one interval */
	GPI_API = 8,	/* struct gpi_api: a runtime / driver call (callbacks) */
	GPI_MARKER = 9, /* struct gpi_marker: an NVTX range or mark */
	GPI_STATS = 10, /* struct gpi_stats: the library's counters and state */
	/* PC sampling: stall reason names, PC samples, cubins */
	GPI_STALL_NAME = 11, /* struct gpi_stall_name */
	GPI_PC = 12,	     /* struct gpi_pc */
	GPI_CUBIN = 13,	     /* struct gpi_cubin: one chunk of a cubin */
	GPI_PC_STATS = 14,   /* struct gpi_pc_stats: PC sampling's counters */
	GPI_CUDA_EVENT = 15, /* struct gpi_cuda_event: a CUDA event recorded on a stream */
	GPI_WINDOW = 16,     /* struct gpi_window: a duty cycle's collection window */
	/* daemon -> library (the one message type that travels that way) */
	GPI_CONTROL = 32, /* struct gpi_control */
};

/* 8 bytes at the start of every record */
struct gpi_rec {
	uint16_t type; /* enum gpi_type */
	uint16_t len;  /* bytes, this header included, a multiple of 8 */
	uint32_t rsv;  /* 0 */
};

/* the library's features (gpi_hello.features, gpi_stats.on / .failed) */
enum gpi_feature {
	GPI_F_KERNEL = 1u << 0, /* CONCURRENT_KERNEL activity */
	GPI_F_MEMCPY = 1u << 1, /* MEMCPY (and MEMCPY2, peer to peer) */
	GPI_F_MEMSET = 1u << 2, /* MEMSET */
	GPI_F_SYNC = 1u << 3,	/* SYNCHRONIZATION */
	GPI_F_GRAPH = 1u << 4,	/* GRAPH_TRACE */
	GPI_F_API = 1u << 5,	/* launch / copy API callbacks (gpi_api) */
	GPI_F_NVTX = 1u << 6,	/* MARKER (NVTX ranges and marks) */
	GPI_F_PC = 1u << 7,	/* PC sampling */
	GPI_F_MONO = 1u << 8,	/* CUPTI's timestamps are CLOCK_MONOTONIC (callback) */
	GPI_F_EVENT = 1u << 9,	/* CUDA_EVENT (asked for with GPI_F_SYNC) */
};

struct gpi_hello {
	struct gpi_rec h;
	uint32_t lib_version;	/* GPI_VERSION the library was built with */
	uint32_t cupti_version; /* cuptiGetVersion() */
	int32_t driver_version; /* cuDriverGetVersion(), -1 unknown */
	uint32_t features;	/* enum gpi_feature asked for by configuration */
	uint64_t mono_ns;	/* CLOCK_MONOTONIC when sent */
};

struct gpi_string {
	struct gpi_rec h;
	uint32_t id;  /* 1 .. GPI_STRING_IDS - 1 */
	uint32_t len; /* bytes of text, <= GPI_STRING_MAX, no NUL needed */
	char text[];  /* then padding to a multiple of 8 */
};

/* gpi_kernel.flags */
enum { GPI_KF_DEVICE_LAUNCHED = 1u << 0 };

struct gpi_kernel {
	struct gpi_rec h;
	uint64_t start, end; /* ns; both 0: CUPTI had no timestamp (skipped) */
	uint32_t corr;	     /* correlation id: = the launching gpi_api's */
	uint32_t name;	     /* string id of the (mangled) kernel name */
	uint32_t device, context, stream;
	uint32_t grid[3], block[3];
	uint32_t static_smem, dynamic_smem, local_mem; /* bytes (local: per thread) */
	uint16_t regs;				       /* registers per thread */
	uint8_t flags;				       /* GPI_KF_* */
	uint8_t rsv;
	uint32_t graph_id; /* 0 when not launched from a graph */
	uint64_t graph_node;
};

/* gpi_memcpy.copy_kind: CUpti_ActivityMemcpyKind values (1 HtoD, 2 DtoH,
 * 8 DtoD, 10 PtoP ...); src_kind / dst_kind: CUpti_ActivityMemoryKind */
enum { GPI_MF_ASYNC = 1u << 0, GPI_MF_P2P = 1u << 1 };

struct gpi_memcpy {
	struct gpi_rec h;
	uint64_t start, end;
	uint64_t bytes;
	uint32_t corr;
	uint32_t device, context, stream;
	uint32_t src_device, dst_device; /* peer to peer; else = device */
	uint8_t copy_kind, src_kind, dst_kind, flags;
	uint32_t graph_id;
};

struct gpi_memset {
	struct gpi_rec h;
	uint64_t start, end;
	uint64_t bytes;
	uint32_t corr;
	uint32_t device, context, stream;
	uint32_t value;
	uint8_t mem_kind, flags, rsv[2];
	uint32_t graph_id;
	uint32_t rsv2;
};

/* gpi_sync.type: CUpti_ActivitySynchronizationType */
enum {
	GPI_SYNC_EVENT = 1,	  /* cudaEventSynchronize */
	GPI_SYNC_STREAM_WAIT = 2, /* cudaStreamWaitEvent */
	GPI_SYNC_STREAM = 3,	  /* cudaStreamSynchronize */
	GPI_SYNC_CONTEXT = 4,	  /* cudaDeviceSynchronize / cuCtxSynchronize */
};
#define GPI_NO_STREAM UINT32_MAX

struct gpi_sync {
	struct gpi_rec h;
	uint64_t start, end;
	uint32_t corr;
	uint32_t type;
	uint32_t context, stream; /* stream GPI_NO_STREAM when none */
	uint32_t event;		  /* CUDA event id, 0 none */
	uint32_t rsv;
};

/*
 * A CUDA event recorded on a stream (CUPTI's CUDA_EVENT activity: one per
 * cudaEventRecord), which is what a gpi_sync's event names: a sync of type
 * GPI_SYNC_EVENT or GPI_SYNC_STREAM_WAIT waits on the latest record of its
 * (context, event) whose correlation id is below the sync's own, since one
 * event is recorded again and again. CUPTI gives the record no host time:
 * time is the entry of the cudaEventRecord call when the library saw it
 * (gpi_api), else when the library read the record.
 */
struct gpi_cuda_event {
	struct gpi_rec h;
	uint64_t time;
	uint32_t corr;	/* the cudaEventRecord call's correlation id */
	uint32_t event; /* CUDA event id, as gpi_sync.event */
	uint32_t device, context, stream;
	uint32_t rsv;
};

struct gpi_graph {
	struct gpi_rec h;
	uint64_t start, end;
	uint32_t corr; /* = its cuGraphLaunch's gpi_api */
	uint32_t device, context, stream;
	uint32_t graph_id;
	uint32_t rsv;
};

/* gpi_api.domain */
enum { GPI_API_DRIVER = 1, GPI_API_RUNTIME = 2 };

/*
 * One runtime or driver call that the library's callbacks saw, on the
 * calling thread: the bridge between the daemon's launch probe (which has
 * the CPU stack, the thread and the entry time) and the activity records
 * (which have the correlation id). A runtime call and the driver call it
 * makes share one correlation id.
 */
struct gpi_api {
	struct gpi_rec h;
	uint64_t enter, exit; /* ns at the callback's ENTER and EXIT */
	uint32_t corr;
	uint32_t tid;  /* gettid() of the calling thread */
	uint32_t name; /* string id of the function name */
	uint16_t cbid; /* CUPTI callback id within its domain */
	uint8_t domain;
	uint8_t failed; /* the call returned an error */
};

/* gpi_marker.flags */
enum { GPI_MK_INSTANT = 1u << 0, GPI_MK_RANGE = 1u << 1 };

/* An NVTX range (start..end, paired by the library) or an instant mark
 * (end = start). */
struct gpi_marker {
	struct gpi_rec h;
	uint64_t start, end;
	uint32_t tid;	 /* the thread it was recorded on, 0 unknown */
	uint32_t name;	 /* string id */
	uint32_t domain; /* string id, 0 = the default domain */
	uint32_t flags;	 /* GPI_MK_* */
};

/* gpi_stats.state */
enum gpi_state {
	GPI_ST_ACTIVE = 1,   /* collecting */
	GPI_ST_CONFLICT = 2, /* another CUPTI user holds CUPTI or took it over: stepped aside
			      * (gpi_stats.conflict names it, or says why) */
	GPI_ST_DISABLED = 3, /* nothing could be enabled (every feature failed) */
};

/* gpi_stats.flags. A library older than these sent 0 here (the field was
 * reserved), so GPI_SF_SUB_KNOWN tells "not subscribed" from "not said". */
enum gpi_stats_flag {
	GPI_SF_SUB_KNOWN = 1u << 0,  /* GPI_SF_SUBSCRIBED below is meaningful */
	GPI_SF_SUBSCRIBED = 1u << 1, /* the library holds the process's one CUPTI
				      * subscription: another tool's cuptiSubscribe
				      * fails until it is clear */
	/* GPUPROF_CUPTI_IDLE=unsubscribe was asked for ... */
	GPI_SF_IDLE_UNSUB = 1u << 2,
	/* ... and applies: the subscription is let go between duty windows
	 * (not with PC sampling, which needs it all the time, nor at
	 * GPUPROF_CUPTI_DUTY=100) */
	GPI_SF_IDLE_APPLIES = 1u << 3,
	/* let go now for the time between two windows: the next window takes
	 * it back (so a release is not confirmed by a clear
	 * GPI_SF_SUBSCRIBED alone) */
	GPI_SF_IDLE_OUT = 1u << 4,
};

/* Cumulative since the library started; sent about once a second while
 * connected, at exit, and at once when the state or the subscription
 * changed (so a release is confirmed without waiting for the second). */
struct gpi_stats {
	struct gpi_rec h;
	uint32_t state;		  /* enum gpi_state */
	uint32_t on;		  /* enum gpi_feature: working now */
	uint32_t failed;	  /* enum gpi_feature: turned off after a CUPTI error */
	int32_t last_error;	  /* the last CUptiResult that turned a feature off, 0 */
	uint32_t conflict;	  /* string id: the other subscriber's name or why we yielded, 0 */
	uint32_t flags;		  /* enum gpi_stats_flag (0 from a library that predates it) */
	uint64_t records;	  /* activity records read from CUPTI */
	uint64_t cupti_dropped;	  /* cuptiActivityGetNumDroppedRecords, summed */
	uint64_t buffers_refused; /* CUPTI asked for a buffer when the pool was empty */
	uint64_t api_dropped;	  /* callback records lost to a full per-thread ring */
	uint64_t batches_sent;
	uint64_t batches_dropped; /* socket full, or no daemon */
	uint64_t records_dropped; /* records in those batches */
	uint64_t reconnects;
	/* since: GPUPROF_CUPTI_IDLE=unsubscribe's subscriptions let go at a
	 * window's close, taken back at an open, and failed attempts to take
	 * it back (each makes the library step aside) */
	uint64_t idle_unsubs, idle_subs, idle_sub_failed;
};
#define GPI_STATS_MIN 96 /* what libraries before the idle counters sent */

/*
 * PC sampling. Stall reason indices are per device (CUPTI numbers them per
 * GPU): a GPI_STALL_NAME names one index of one device before the first
 * GPI_PC that uses it (again on every connection). name is a string id of
 * CUPTI's full name (e.g. "smsp__pcsamp_warps_issue_stalled_barrier").
 */
struct gpi_stall_name {
	struct gpi_rec h;
	uint32_t device; /* CUDA device ordinal */
	uint32_t index;	 /* CUPTI's stall reason index */
	uint32_t name;	 /* string id */
	uint32_t rsv;
};

/* One (cubin, function, pc, reason) key with its samples, summed over one
 * drain of CUPTI's PC sampling buffer (the library aggregates identical
 * keys before sending). pc is the byte offset into the function's code
 * as CUPTI reports it. */
struct gpi_pc {
	struct gpi_rec h;
	uint64_t time;	    /* ns when drained (the samples are older) */
	uint64_t cubin_crc; /* cuptiGetCubinCrc of the module = gpi_cubin.crc */
	uint64_t pc;	    /* pcOffset */
	uint32_t function;  /* string id of the (mangled) function name */
	uint32_t reason;    /* stall reason index on device */
	uint32_t samples;
	uint32_t device;
	uint32_t corr; /* correlation id (serialized mode only), else 0 */
	uint32_t rsv;
};

/* GPI_CUBIN_CHUNK bytes (the last chunk less) of a cubin at offset, so the
 * daemon can disassemble the code PC samples point into. The library
 * sends a cubin once per connection, whole (offset 0 .. size), chunks in
 * order and in batches of their own; the daemon keeps a cubin only when
 * every chunk arrived. */
#define GPI_CUBIN_CHUNK 32768u
struct gpi_cubin {
	struct gpi_rec h;
	uint64_t crc;	 /* cuptiGetCubinCrc */
	uint32_t size;	 /* of the whole cubin */
	uint32_t offset; /* of this chunk */
	uint32_t len;	 /* bytes of data here, <= GPI_CUBIN_CHUNK */
	uint32_t rsv;
	uint8_t data[]; /* then padding to a multiple of 8 */
};

/*
 * One window of the collection's duty cycle (GPUPROF_CUPTI_DUTY below
 * 100), sent when it closes: between start and end the activity kinds and
 * API callbacks were on; between windows they were off, so a gap in the
 * records there says nothing about the GPU. A library that sends no
 * window collects all the time.
 */
struct gpi_window {
	struct gpi_rec h;
	uint64_t start, end; /* ns */
	uint32_t duty;	     /* percent of the time collected, 1 - 99 */
	uint32_t period_ms;  /* a window opens this often */
};

/* PC sampling's counters, cumulative, sent with each gpi_stats while PC
 * sampling was asked for. */
struct gpi_pc_stats {
	struct gpi_rec h;
	uint64_t samples;	   /* read from CUPTI */
	uint64_t sent;		   /* in GPI_PC records */
	uint64_t dropped;	   /* CUPTI's droppedSamples + the library's table full */
	uint64_t oom;		   /* hardware buffer full: context disabled, enabled again */
	uint64_t drains, windows;  /* drains started; duty-cycle windows opened */
	uint64_t contexts_refused; /* contexts beyond what the library tracks */
	uint64_t cubins, cubins_refused, cubin_bytes; /* kept, refused (cap, CRC), bytes kept */
	/* added after the first 88 bytes (a daemon reads what it gets,
	 * zeros for the rest): why a process gets no samples */
	uint64_t getdata_calls;	  /* cuptiPCSamplingGetData calls */
	uint64_t pcs;		  /* PC records read */
	uint64_t total_samples;	  /* CUPTI's totalSamples, summed (user, non-user, dropped) */
	uint64_t nonuser_samples; /* CUPTI's nonUsrKernelsTotalSamples, summed */
	uint64_t errors;	  /* CUPTI errors of the PC sampling calls */
	uint64_t cfgbuf_pcs;	  /* PC records CUPTI left in the configured buffer */
	uint64_t names;		  /* distinct function-name pointers held */
	uint64_t names_untracked; /* past the library's bound: never freed by it */
	uint32_t contexts_on;	  /* contexts sampling now */
	uint32_t contexts_ever;	  /* contexts enabled and configured */
	uint32_t contexts_off;	  /* contexts turned off by errors */
	uint32_t last_call;	  /* enum gpi_pc_call that returned last_error */
	int32_t last_error;	  /* the last CUptiResult of those calls, 0 none */
	/* the sampling period (2^period SM cycles) of the last context
	 * configured, as CUPTI reports it; 0: unknown (older libraries sent
	 * zero in this once spare word) */
	uint32_t period;
	/* added after 176 bytes: what the window switching costs the
	 * application and how the library samples */
	/* wall time of the launch callbacks that took the lock (at most
	 * once a ms) to open or close a window, the wait for it included */
	uint64_t launch_ns;
	uint64_t getdata_ns;  /* wall time in cuptiPCSamplingGetData, every thread */
	uint32_t enables;     /* cuptiPCSamplingEnable calls that succeeded */
	uint32_t enable_mode; /* 0: enabled per context, 1: per window (GPUPROF_CUPTI_PC_ENABLE) */
};
#define GPI_PC_STATS_MIN 88 /* what the first libraries sent */

/* gpi_pc_stats.last_call */
enum gpi_pc_call {
	GPI_PC_CALL_NONE = 0,
	GPI_PC_CALL_ENABLE = 1,
	GPI_PC_CALL_STALL_REASONS = 2,
	GPI_PC_CALL_CONFIGURE = 3,
	GPI_PC_CALL_START = 4,
	GPI_PC_CALL_STOP = 5,
	GPI_PC_CALL_GET_DATA = 6,
	GPI_PC_CALL_DISABLE = 7,
};

/* gpi_control.op */
enum gpi_control_op {
	/* Give CUPTI up, as GPUPROF_CUPTI_YIELD does when another tool takes
	 * it over: stop collecting, unsubscribe (state GPI_ST_CONFLICT,
	 * conflict "released on request"), so that a profiler started next
	 * in the process gets all of CUPTI. The subscription is gone once a
	 * gpi_stats says GPI_SF_SUB_KNOWN without GPI_SF_SUBSCRIBED (state
	 * conflict alone does not say so). Also frees a subscription kept
	 * after a takeover (GPUPROF_CUPTI_YIELD=never). There is no way
	 * back. */
	GPI_CTL_RELEASE = 1,
	/* Collect all the time for arg ms from now (at most GPI_FULL_MAX_MS),
	 * then go back to the duty cycle: a user's capture of this process
	 * gets every record. A library that collects all the time anyway, or
	 * no longer holds CUPTI, ignores it; a later request extends it. The
	 * window held open is sent in pieces (GPI_WINDOW) while it lasts. */
	GPI_CTL_FULL = 2,
};
#define GPI_FULL_MAX_MS 3600000u

/* The daemon's requests to the library, on the same connection: a
 * message of a struct gpi_hdr and one struct gpi_control. The daemon
 * decides who may ask (the process's owner or an administrator); the
 * library takes them only from a peer whose SO_PEERCRED uid is 0 or its
 * own, and ignores what it does not know. */
struct gpi_control {
	struct gpi_rec h;
	uint32_t op;  /* enum gpi_control_op */
	uint32_t arg; /* the op's argument (GPI_CTL_FULL: ms), else 0 */
};

_Static_assert(sizeof(struct gpi_hdr) == 16, "gpi_hdr");
_Static_assert(sizeof(struct gpi_pc_stats) == 200, "gpi_pc_stats");
_Static_assert(sizeof(struct gpi_stall_name) == 24, "gpi_stall_name");
_Static_assert(sizeof(struct gpi_pc) == 56, "gpi_pc");
_Static_assert(sizeof(struct gpi_cubin) == 32, "gpi_cubin");
_Static_assert(sizeof(struct gpi_rec) == 8, "gpi_rec");
_Static_assert(sizeof(struct gpi_hello) % 8 == 0, "gpi_hello");
_Static_assert(sizeof(struct gpi_string) == 16, "gpi_string");
_Static_assert(sizeof(struct gpi_kernel) % 8 == 0, "gpi_kernel");
_Static_assert(sizeof(struct gpi_memcpy) % 8 == 0, "gpi_memcpy");
_Static_assert(sizeof(struct gpi_memset) % 8 == 0, "gpi_memset");
_Static_assert(sizeof(struct gpi_sync) % 8 == 0, "gpi_sync");
_Static_assert(sizeof(struct gpi_graph) % 8 == 0, "gpi_graph");
_Static_assert(sizeof(struct gpi_cuda_event) == 40, "gpi_cuda_event");
_Static_assert(sizeof(struct gpi_api) % 8 == 0, "gpi_api");
_Static_assert(sizeof(struct gpi_marker) % 8 == 0, "gpi_marker");
_Static_assert(sizeof(struct gpi_stats) % 8 == 0, "gpi_stats");
_Static_assert(offsetof(struct gpi_stats, idle_unsubs) == GPI_STATS_MIN, "gpi_stats");
_Static_assert(sizeof(struct gpi_control) == 16, "gpi_control");
_Static_assert(sizeof(struct gpi_window) == 32, "gpi_window");

#endif
