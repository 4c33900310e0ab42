/* SPDX-License-Identifier: MIT */
/*
 * Batch-buffer parsing on the host (docs/gpu-cs.md): the command-stream
 * parser of bpf/gpu_cs_parse.h run over copies of GPU memory that reached the
 * daemon by other means than a BPF submission hook (a dump file, a tool),
 * feeding the kernel start pointers it finds into the xe kernel table so
 * EU-stall samples get attributed.
 *
 * GPU memory is registered as buffers (GPU VA range of one address space
 * plus a copy of its bytes); a submission names its address space and
 * batch start. A parse that needs memory not registered yet (a chained
 * batch, an unwritten tail) waits on a bounded retry list and runs again
 * when a buffer of its address space arrives or on xe_cs_retry().
 *
 * Loop thread only (no lock): the xe collector owns one.
 */
#ifndef GPUPROF_XE_CS_H
#define GPUPROF_XE_CS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "gpu_cs_abi.h"

struct xe;
struct xe_cs;

struct xe_cs_config {
	uint32_t max_buffers;  /* registered buffers; default 256 */
	uint64_t max_bytes;    /* their bytes; default 64 MiB */
	uint32_t max_retry;    /* submissions waiting for memory; default 64 */
	uint32_t max_attempts; /* parses of one submission before giving up; default 5 */
	uint32_t max_ksps;     /* KSPs remembered for sizing kernels; default 4096 */
};

/* One submission (an exec / execbuffer): where its batch starts. */
struct xe_cs_submit {
	uint32_t asid; /* address space: xe vm_id / i915 ppGTT, or the pid */
	uint32_t pid, uid;
	uint64_t batch;	  /* GPU VA of the first command */
	const char *comm; /* may be NULL; copied when the submission waits */
};

struct xe_cs_stats {
	uint64_t submits;		   /* submissions parsed (first attempts) */
	uint64_t status[GPU_CS_NSTATUS];   /* how every parse ended, retries included */
	uint64_t ksps, sips;		   /* distinct KSPs / SIPs found */
	uint64_t ktab_added, ktab_refused; /* xe_ktab_add results */
	uint64_t retry_now, retry_ok, retry_given_up, retry_dropped;
	uint64_t buffers, bytes, buffers_evicted;
};

/* Returns 0 or -ENOMEM; cfg NULL or 0 fields = defaults. */
int xe_cs_new(const struct xe_cs_config *cfg, struct xe_cs **ret);
void xe_cs_free(struct xe_cs *cs); /* NULL: no-op */

/*
 * Register (a copy of) GPU memory [gpu_addr, gpu_addr + len) of address
 * space asid. Buffers it overlaps are replaced; over the limits the oldest
 * go. Waiting submissions of asid are parsed again (KSPs to x, which may
 * be NULL). Returns 0, -EINVAL (empty, unaligned, over the 48-bit VA or
 * larger than max_bytes) or -ENOMEM.
 */
int xe_cs_add_buffer(struct xe_cs *cs, struct xe *x, uint32_t asid, uint64_t gpu_addr,
		     const void *data, size_t len);

/*
 * Parse a submission's batch; KSPs go to x's kernel table (x NULL: only
 * counted). GPU_CS_RETRY puts it on the retry list. Returns the parse's
 * enum gpu_cs_status; out (may be NULL) receives the whole result.
 */
int xe_cs_submit(struct xe_cs *cs, struct xe *x, const struct xe_cs_submit *s,
		 struct gpu_cs_result *out);

/*
 * A parse done elsewhere (the BPF submission hook, cs_hook.h), its
 * attempt-th (1: at the submission; later ones are the hook's deferred
 * re-parses, final when no other follows): its KSPs to x's kernel table,
 * the counters as for host parses (retry_ok, retry_given_up).
 */
void xe_cs_feed_result(struct xe_cs *cs, struct xe *x, const struct xe_cs_submit *s,
		       const struct gpu_cs_result *r, uint32_t attempt, bool final);

/* What status reports as the path ("bpf" / "host") and why; by default
 * xe_cs_path()'s answer for this machine. why is copied. */
void xe_cs_set_path(struct xe_cs *cs, const char *path, const char *why);

/* Parse every waiting submission again; one that still cannot be parsed
 * after max_attempts is given up (counted). */
void xe_cs_retry(struct xe_cs *cs, struct xe *x);

/*
 * Feed a batch-buffer dump (format in docs/gpu-cs.md: "GPUCSDMP", version,
 * then BUFFER and SUBMIT records). Returns the number of submissions, or
 * -EBADMSG with why filled in (what was read before the bad record stays)
 * or -ENOMEM.
 */
int xe_cs_load(struct xe_cs *cs, struct xe *x, const void *buf, size_t len, char *why,
	       size_t whylen);

void xe_cs_get_stats(const struct xe_cs *cs, struct xe_cs_stats *st);

/* "bpf" or "host", and why, for this machine (docs/gpu-cs.md, "Paths"). */
const char *xe_cs_path(char *why, size_t whylen);

/* Add the "batch_parser" object (path, reason, counters) to a status. */
void xe_cs_status(const struct xe_cs *cs, cJSON *o);

const char *xe_cs_status_name(uint32_t status);

#endif
