/* SPDX-License-Identifier: MIT */
/*
 * GPU launch collector internals, shared by gpu_launch.c (ops, load,
 * attach, status), gpu_launch_proc.c (processes mapping a runtime),
 * gpu_launch_rec.c (ring-buffer records) and gpu_attach.c (the probes on
 * each runtime library file, attached on the thread pool).
 */
#ifndef GPUPROF_COLLECT_GPU_LAUNCH_INT_H
#define GPUPROF_COLLECT_GPU_LAUNCH_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

#include "cgpath.h"
#include "collector.h"
#include "gpu_launch.h"
#include "gpu_sites.h"
#include "libscan.h"
#include "rbloop.h"

#define GL_TICK_MS 200
#define GL_DRAIN_BUDGET 8192
#define GL_PROC_BUCKETS 256
#define GL_MAX_LIBS_PER_PROC 8
#define GL_MAX_LINKS 24

/* One runtime library file (dev, ino) with probes on it. */
struct gl_lib {
	struct gl_lib *next;
	dev_t dev;
	ino_t ino;
	enum gpu_runtime rt;
	char path[PATH_MAX];
	struct bpf_link *links[GL_MAX_LINKS];
	unsigned nlinks;
	unsigned nprocs; /* processes mapping it: the probes' refcount */
	bool usdt;	 /* NEO's launch USDT attached */
	bool attaching;	 /* its probes are being attached on the thread pool */
	bool dead;	 /* released while attaching: freed when that ends */
	bool unread;	 /* its last attach could not read the file: the next
			  * process seen mapping it tries again */
	char err[160];	 /* why some or all probes are missing */
};

struct gl_proc {
	struct gl_proc *next;
	uint32_t pid;
	bool launched; /* pid hook called after the first launch */
	unsigned nlibs;
	struct gl_lib *libs[GL_MAX_LIBS_PER_PROC];
	unsigned nranges; /* executable ranges of those libraries */
	struct {
		uint64_t lo, hi;
	} ranges[GL_MAX_LIBS_PER_PROC * 2];
};

struct gl_priv {
	struct collector *c; /* NULL once freed with attaches in flight */
	struct gpu_launch_bpf *skel;
	struct bpf_link *watch_links[4];
	const char *mmap_hook;	  /* the watcher's mmap program now attached */
	char mmap_hook_note[160]; /* why the narrow one is not in use */
	uint32_t stack_sample;	  /* gpu.stack_sample as loaded */
	struct gpu_sites sites;
	struct cgpath cg;  /* launch cgroup id -> path; mnt_fd -1 until open */
	struct rbloop rbl; /* the ring buffer on the loop, between start and stop */
	size_t ringbuf_bytes;
	int ncpus;
	uint64_t *percpu;

	struct gl_lib *libs;
	unsigned nlibs;
	struct gl_proc *procs[GL_PROC_BUCKETS];
	unsigned nprocs;
	unsigned inflight; /* attach and detach jobs on the thread pool */
	bool freeing;	   /* collector freed: the last attach job frees this */

	uint64_t lost, unnamed, local_drops, attach_errors, proc_events;
	/* entry-probe stacks whose walk skipped the call site, put back (frame
	 * pointers from a function's first instruction; CFI finds it itself) */
	uint64_t callers_inserted;
	/* stacks walked by frame pointers in BPF although copying is on: the
	 * ring was over half full */
	uint64_t stacks_fp_fallback;

	struct collector_pid_hook pid_hook;
	gpu_launch_kernel_fn kernel_hook;
	void *kernel_hook_arg;

	/* gpu_zebin.c: NEO's compile_kernel USDT -> debug zebins */
	struct gpu_launch_zebin_hook zebin_hook; /* .load NULL: none */
	unsigned zebins_pending;
	uint64_t zebins_seen, zebins_loaded, zebins_failed, zebins_skipped, zebins_dropped;
	char zebin_error[256]; /* the last failure, with its path */
};

/* gpu_attach.c */

/* The library h names, with one more process reference taken by the
 * caller (l->nprocs++); a new one has its probes attached through pid's
 * root, on the thread pool while the collector runs on a loop. NULL when
 * out of memory. */
struct gl_lib *gl_lib_get(struct gl_priv *p, const struct libscan_hit *h, uint32_t pid);

/* Drop one process reference; the last one takes the probes off. */
void gl_lib_put(struct gl_priv *p, struct gl_lib *l);

/* gpu_launch_proc.c */

struct gpu_proc_rec;
/* The tracked process pid, or NULL. */
struct gl_proc *gl_proc_find(struct gl_priv *p, uint32_t pid);
/* Forget pid: its library references, call sites and BPF map entries. */
void gl_proc_drop(struct gl_priv *p, uint32_t pid);
/* Find the processes already mapping a runtime (once, at start). */
void gl_initial_scan(struct gl_priv *p);
/* A record of the library watcher. */
void gl_on_proc(struct gl_priv *p, const struct gpu_proc_rec *r);

/* gpu_launch_rec.c */

/* rbloop callback: one ring-buffer record (ctx: the gl_priv). */
int gl_on_event(void *ctx, void *data, size_t size);
/* Sum the BPF per-CPU counters into p (lost, unnamed) and c->drops. */
void gl_read_counters(struct gl_priv *p);

/* gpu_zebin.c */

#define GL_ZEBIN_PENDING 16 /* zebin files read at once; more are dropped */

struct gpu_zebin_rec;
/* A compile_kernel record (size checked): queue its file for the hook. */
void gl_on_zebin(struct gl_priv *p, const struct gpu_zebin_rec *r);
void gl_zebin_status(struct gl_priv *p, cJSON *obj);

/* gpu_launch.c */

void gl_state_update(struct gl_priv *p);
/* Free p and its BPF objects (the collector is already gone). */
void gl_priv_release(struct gl_priv *p);

#endif
