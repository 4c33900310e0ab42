/* SPDX-License-Identifier: MIT */
/* Internals of the GPU job collector shared by gpu_job.c (BPF groups,
 * lifecycle) and gpu_job_rec.c (records into the pairer and the store). */
#ifndef GPUPROF_COLLECT_GPU_JOB_INT_H
#define GPUPROF_COLLECT_GPU_JOB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_job_abi.h"
#include "collector.h"
#include "gpu_job_pair.h"
#include "rbloop.h"

struct gpu_job_bpf;
struct bpf_link;

#define GJ_MAX_LINKS 8

struct gj_group {
	struct gpu_job_bpf *skel; /* this group's instance, NULL when not loaded */
	struct bpf_link *links[GJ_MAX_LINKS];
	unsigned nlinks;
	const char *tracepoints[GJ_MAX_LINKS]; /* attached, for status */
	unsigned ntps;
	bool attached;
	char reason[160]; /* why not, when not */
	uint64_t events;  /* records received */
};

/* A dma_fence_ops function address -> its symbol ("i915_fence" for
 * i915_fence_get_driver_name, "drm_sched_fence_release_finished"). */
struct gj_fence_name {
	uint64_t addr;
	char name[48];
	bool skip; /* container / scheduler fences, or a driver group covers it */
};

struct gj_priv {
	struct collector *c;
	struct gj_group groups[GPU_JOB_G_COUNT];
	struct gpu_job_bpf *owner; /* instance owning the ring buffer and counters */
	struct rbloop rbl;
	struct gj_pair *pair;
	size_t pending; /* pairer capacity (gpu_jobs.pending) */
	size_t ringbuf_bytes;
	bool user_stacks;
	char btf_dir[32]; /* /sys/kernel/btf */
	int ncpus;
	uint64_t *percpu;
	uint64_t lost, local_drops, filtered;
	uint64_t stacks_fp_fallback;  /* copying on, ring over half full: frame pointers */
	struct gj_fence_name *fnames; /* sorted by addr */
	size_t nfnames;
	uint64_t fnames_loaded_ns; /* last /proc/kallsyms read */
};

/* gpu_job_rec.c */
/* Whether a ring record of size bytes is one to feed: type, version, group,
 * and the frames a full record says it has (the stack bytes are checked
 * where they are read). */
bool gj_record_ok(const void *data, size_t size);
/* A record (gj_record_ok) into the pairer; a SUBMIT's user stack, unwound
 * from its copy when it has one, into the store. r is a ring record of size
 * bytes, or a struct gpu_job_hdr / gpu_job_rec the caller built. */
void gj_feed_record(struct gj_priv *p, const struct gpu_job_rec *r, size_t size);
void gj_emit(void *arg, const struct gj_interval *iv);
void gj_release(void *arg, uint32_t comm, uint32_t stack);
/* Read the fence ops functions' symbols from /proc/kallsyms (again at most every
 * 10 s when an unknown ops address shows up: a module loaded later). */
void gj_fence_names_load(struct gj_priv *p);
void gj_fence_names_free(struct gj_priv *p);

#endif
