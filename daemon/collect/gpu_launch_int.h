/* SPDX-License-Identifier: MIT */
/*
 * GPU launch collector internals, shared by gpu_launch.c (processes,
 * records, lifecycle) and gpu_attach.c (the probes on each runtime library
 * file, attached on the thread pool).
 */
#ifndef GPUPROF_COLLECT_GPU_LAUNCH_INT_H
#define GPUPROF_COLLECT_GPU_LAUNCH_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

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

	void (*pid_hook)(void *arg, uint32_t pid);
	void *pid_hook_arg;
	gpu_launch_kernel_fn kernel_hook;
	void *kernel_hook_arg;
};

/* gpu_attach.c */

/* The library h names, with one more process reference taken by the
 * caller (l->nprocs++); a new one has its probes attached through pid's
 * root, on the thread pool while the collector runs on a loop. NULL when
 * out of memory. */
struct gl_lib *gl_lib_get(struct gl_priv *p, const struct libscan_hit *h, uint32_t pid);

/* Drop one process reference; the last one takes the probes off. */
void gl_lib_put(struct gl_priv *p, struct gl_lib *l);

/* gpu_launch.c */

void gl_state_update(struct gl_priv *p);
/* Free p and its BPF objects (the collector is already gone). */
void gl_priv_release(struct gl_priv *p);

#endif
