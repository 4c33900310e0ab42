/* SPDX-License-Identifier: MIT */
/*
 * gpuprofd configuration: compiled-in defaults, then the config file
 * ("key = value" lines, '#' comments; docs/operations.md lists the keys),
 * then the environment ($GPUPROF_SOCKET), then command-line options.
 */
#ifndef GPUPROF_CONFIG_H
#define GPUPROF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct config {
	char socket_path[108]; /* sun_path size */
	unsigned socket_mode;  /* when gpuprofd binds the socket itself */
	char state_dir[4096];
	size_t store_budget_bytes; /* memory.store_budget */
	size_t capture_max_bytes;  /* memory.capture_max: per capture in memory / on disk */
	size_t jobs_max_bytes; /* memory.jobs_max: what all jobs together may reserve; 0 = no limit */
	unsigned idle_trim_ms; /* memory.idle_trim: heap given back this long after the last job; 0 = never */
	size_t analysis_cache_bytes;   /* analysis.cache_bytes: decoded timelines kept */
	size_t graph_cache_bytes;      /* analysis.graph_cache_bytes: critical-path graphs kept */
	size_t analysis_scratch_bytes; /* analysis.scratch_bytes: freed big scratch arrays kept */
	size_t captures_max;	       /* limits.captures: persisted captures kept */
	/* Per-uid quotas for unprivileged peers and the share of each global
	 * limit kept for privileged ones, so one user cannot lock out root
	 * (or, within the per-uid caps, everyone else). Privileged peers are
	 * bound by the global limits only. */
	unsigned user_captures;	    /* limits.user_captures: captures one uid keeps */
	unsigned reserved_captures; /* limits.reserved_captures: kept for privileged peers */
	uint64_t user_disk_bytes;   /* limits.user_disk: bytes one uid's captures take */
	unsigned user_clients;	    /* limits.user_clients: connections of one uid */
	unsigned reserved_clients;  /* limits.reserved_clients */
	unsigned user_jobs;	    /* limits.user_jobs: concurrent jobs of one uid */
	unsigned reserved_jobs;	    /* limits.reserved_jobs */
	/* Captures whose window closed while every job slot was busy wait for
	 * one, ahead of new jobs: at most this many (limits.persist_queue),
	 * holding at most these bytes (memory.persist_queue). */
	unsigned persist_queue;
	size_t persist_queue_bytes;
	uint32_t sample_freq_hz; /* sampling.cpu_frequency */
	/* sampling.stack_bytes: user stack copied per sample for CFI
	 * unwinding (0: frame pointers in BPF only) */
	uint32_t stack_bytes;
	/* gpu.stack_bytes: the same for GPU launches and jobs that take a
	 * stack (1 in gpu.stack_sample), whose stacks run deeper */
	uint32_t gpu_stack_bytes;
	size_t unwind_max_bytes; /* memory.unwind_max: the unwinder's caches */
	size_t python_max_bytes; /* memory.python_max: Python frame names, processes */
	bool python_frames;	 /* sampling.python: Python frames in stacks */
	bool cpu_sampling;	 /* sampling.cpu */
	bool demangle;		 /* symbols.demangle: C++/Rust frame names demangled */
	bool sym_lines;		 /* symbols.lines: file:line recorded where DWARF is */
	size_t gpu_jobs_pending; /* gpu_jobs.pending: GPU jobs awaiting completion */
	/* gpu.stack_sample: the GPU launch probes walk the user stack for 1
	 * launch in N per (thread, kernel, call site); 1 = every launch. */
	uint32_t gpu_stack_sample;
	unsigned gpu_watcher;	     /* gpu.watcher: CONFIG_GPU_WATCHER_* */
	size_t max_msg_bytes;	     /* limits.max_message */
	size_t max_conn_out_bytes;   /* limits.max_output_buffer: per-client pending replies */
	int max_nesting;	     /* limits.max_nesting */
	unsigned max_clients;	     /* limits.max_clients */
	unsigned idle_timeout_ms;    /* limits.idle_timeout */
	unsigned request_timeout_ms; /* limits.request_timeout: a partial message this old */
	unsigned io_timeout_ms;	     /* limits.io_timeout: a passed fd making no progress */
	unsigned max_jobs;	     /* limits.max_jobs: concurrent worker jobs */
	size_t import_max_bytes;     /* limits.import_max: uncompressed trace bytes */
	int verbosity;		     /* 0 = warnings, 1 = info, 2 = debug */
	/* access.admin_group: peers of this gid (SO_PEERCRED gid or one of
	 * SO_PEERGROUPS, both fixed at connect) are privileged like root;
	 * meaningful only when admin_group_set. */
	bool admin_group_set;
	gid_t admin_gid;
	/* comm.params: JSON object of analyze.comm defaults (link_bandwidth,
	 * tags, tp/pp/dp/ep, iteration); request params win. "" = none. */
	char comm_params[4096];
	/* xe.*: the Intel Xe EU-stall / OA collector (docs/xe.md) */
	struct config_xe {
		uint64_t sample_rate;	   /* xe.sample_rate: GPU cycles, the advertised rate
				       * nearest is used; CONFIG_XE_RATE_SLOWEST/_FASTEST */
		uint32_t wait_num_reports; /* xe.wait_num_reports; 0 = a quarter XeCore buffer */
		uint32_t rows;		   /* xe.rows: aggregation rows */
		uint32_t deferred;	   /* xe.deferred: samples waiting for their kernel */
		uint32_t kernels;	   /* xe.kernels: kernel table entries */
		uint64_t interval_ns;	   /* xe.interval */
		bool oa;		   /* xe.oa: OA frequency / busy metrics */
		uint64_t oa_period_ns;	   /* xe.oa_period; 0 = 2^log2(OA clock) ticks (~1 s) */
		uint8_t submit_hook;	   /* xe.submit_hook: CONFIG_XE_HOOK_* */
	} xe;
	/* metrics.*: the Prometheus endpoint (metrics/metrics.h) */
	struct config_metrics {
		/* metrics.listen: "HOST:PORT" (numeric IPv4, "[IPv6]") or an
		 * absolute Unix socket path; "" = no endpoint (the default) */
		char listen[108];
		bool per_process;     /* metrics.per_process: CPU samples per process */
		bool per_process_gpu; /* metrics.per_process_gpu: GPU launches per process */
		unsigned top;	      /* metrics.top: processes with their own series */
		bool bpf_stats;	      /* metrics.bpf_stats: kernel BPF run-time accounting on */
	} metrics;
	/* cupti.*: the CUPTI library's socket and its peers' bounds
	 * (collect/cupti.h) */
	struct config_cupti {
		char socket[108];	   /* cupti.socket; "" = off */
		unsigned max_peers;	   /* cupti.max_peers: connections at once */
		unsigned user_peers;	   /* cupti.user_peers: of one uid (root: no cap) */
		uint32_t peer_rate;	   /* cupti.peer_rate: records per second per peer */
		size_t peer_strings;	   /* cupti.peer_strings: bytes of names per peer */
		size_t peer_cubin_bytes;   /* cupti.peer_cubin_bytes: cubin bytes per peer */
		size_t cubin_cache_bytes;  /* cupti.cubin_cache_bytes: cubins kept, all peers */
		char nvdisasm[256];	   /* cupti.nvdisasm: "" = PATH, CUDA prefix; "off" */
		uint32_t hello_timeout_ms; /* cupti.hello_timeout */
	} cupti;
	/* push.*: continuous profiles to a profiling store and/or a
	 * directory (daemon/push/); off while both url and dir are "" */
	struct config_push {
		char url[1024];		      /* push.url: the ingest endpoint */
		uint32_t interval_ms;	      /* push.interval */
		char app_name[128];	      /* push.app_name */
		char bearer_token_file[4096]; /* push.bearer_token_file */
		char basic_auth_file[4096];   /* push.basic_auth_file: "user:password" */
		char tenant[256];	      /* push.tenant: X-Scope-OrgID */
		char ca_file[4096];	      /* push.ca_file: CAs instead of the system's */
		uint32_t queue_max;	      /* push.queue_max: profiles waiting */
		size_t queue_max_bytes;	      /* push.queue_max_bytes */
		uint32_t timeout_ms;	      /* push.timeout: one upload */
		uint32_t retry_max_ms;	      /* push.retry_max: longest backoff */
		char dir[4096];		      /* push.dir */
		size_t dir_max_bytes;	      /* push.dir_max_bytes */
	} push;
};

/* xe.submit_hook: the BPF batch-buffer parser on every xe exec / i915
 * execbuffer. */
#define CONFIG_XE_HOOK_AUTO 0 /* "auto": when the xe or i915 driver is loaded */
#define CONFIG_XE_HOOK_ON 1   /* "on": always (costs a compare per syscall) */
#define CONFIG_XE_HOOK_OFF 2  /* "off": batch buffers only from dumps */

#define CONFIG_XE_RATE_SLOWEST 0
#define CONFIG_XE_RATE_FASTEST UINT64_MAX

/* gpu.watcher: how the GPU launch collector sees new library mappings. */
#define CONFIG_GPU_WATCHER_AUTO 0     /* "auto": the narrow hook, else sys_exit */
#define CONFIG_GPU_WATCHER_SYS_EXIT 1 /* "sys_exit": every syscall exit */

void config_defaults(struct config *cfg);

/*
 * What unprivileged peers together may use of a global limit: all of it
 * but the privileged reserve, and at least one (a reserve as large as the
 * limit would lock every member out, which no setting means).
 */
static inline size_t config_unpriv_max(size_t global, size_t reserved)
{
	return reserved < global ? global - reserved : (global > 0);
}

/* One uid's cap: its own limit, never more than the unprivileged share. */
static inline size_t config_user_max(size_t global, size_t reserved, size_t user)
{
	size_t share = config_unpriv_max(global, reserved);
	return user < share ? user : share;
}

/*
 * Read a config file. Unknown keys and bad values are errors naming the
 * line: err (if not NULL) receives a message. Returns 0 or -errno
 * (-ENOENT for a missing file, which callers may ignore for the default
 * path).
 */
int config_load(struct config *cfg, const char *path, char *err, size_t errlen);

/* push.* keys (config_push.c): defaults, and one key; -ENOKEY when the
 * key is not one of them. */
void config_push_defaults(struct config_push *p);
int config_push_set(struct config_push *p, const char *key, const char *v);

/* Parse "64M", "1G", "4096", "512K" into bytes. */
int config_parse_size(const char *text, size_t *out);

#endif
