/* SPDX-License-Identifier: MIT */
/*
 * Folded stacks ("comm;root;...;leaf count" per line), the input of
 * flamegraph.pl, speedscope, inferno and most flame-graph tools.
 *
 * One line per unique (comm[, pid][, tid], resolved frames), counts summed
 * (a sample's count is its weight, aux32, or 1), lines sorted bytewise.
 * Which records count is folded_opts.weight:
 *   samples   STORE_REC_CPU_SAMPLE, each its aux32 weight (the default)
 *   launches  STORE_REC_GPU_LAUNCH, 1 each, the launching user stack with
 *             the kernel as a GPU frame on top: "comm;main;...;site;kern_[G]"
 *   gpu-time  GPU time in ns of STORE_REC_GPU_INTERVAL records on launch
 *             stacks: each interval's duration is split evenly over the
 *             launches matched to it (capture/gpumatch.h: by correlation,
 *             else by pid and submission order), each drawn as for
 *             "launches"; an interval with no launch keeps its own
 *             submission stack topped by its engine ("xe/ccs_[G]"). A
 *             capture without intervals counts launches instead, 1 each
 *             (folded_totals.gpu_time_fallback). NVIDIA (CUPTI)
 *             intervals reach their launch through their API call; one
 *             without is drawn on no stack ("comm;kernel_[G]")
 * Annotation suffixes as iaprof's flame graphs use them: "_[G]" a GPU
 * kernel (or GPU file), "_[g]" an instruction-level GPU frame (none yet),
 * "_[k]" is not used (kernel frames follow the "-" separator instead).
 *
 *   cgroup         with opts.cgroup only: the launch's cgroup v2 path
 *   comm           "python3"; "python3-4242" with pid; "python3-4242/4250"
 *                  with tid (stackcollapse-perf.pl --pid / --tid style)
 *   user frames    root first
 *   "-"            between user and kernel frames, when the sample has both
 *                  and kernel frames are shown (bcc profile -d style)
 *   kernel frames  root first
 *
 * Frame names come from the capture's CAPSEC_SYMBOLS section (symtab.h);
 * frames it does not cover print as raw "0x7f12..." addresses. In names,
 * ';' becomes ':' and control characters become ' ' so that every line
 * keeps its shape; the count always follows the line's last space, so
 * names may contain spaces.
 */
#ifndef GPUPROF_FOLDED_H
#define GPUPROF_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct capture;

/*
 * What the peer asking for an output may see, decided once per request by
 * the RPC layer and passed down to the two places that resolve frames for
 * output (foldline.c for folded text, capframes.c for the exports). The
 * zero value shows everything.
 */
struct render_view {
	/* Every run of kernel frames in a stack is drawn as one "[kernel]"
	 * frame with no address: the kernel hides its symbols and addresses
	 * from this peer (kptr_restrict, perf_event_paranoid), so its outputs
	 * must too. */
	bool kernel_hidden;
};

/* The frame that stands for a hidden run of kernel frames. */
#define RENDER_KERNEL_FRAME "[kernel]"

enum folded_weight {
	FOLDED_WEIGHT_SAMPLES = 0,
	FOLDED_WEIGHT_LAUNCHES = 1,
	FOLDED_WEIGHT_GPU_TIME = 2,
	/* NVIDIA PC samples (STORE_REC_GPU_PC): "...;KERNEL_[G];
	 * sass_instruction_[g];stall_reason_[g] samples", the CPU stack of
	 * the latest launch of that kernel name in that pid at or before the
	 * samples were drained (none: the line starts at the kernel frame) */
	FOLDED_WEIGHT_STALLS = 3,
};

/* SASS text of the instruction at pc of the function name in the cubin
 * crc, as the peer may see it, or NULL (the line then reads "+0x1a0").
 * Stalls weight only. */
typedef const char *(*folded_insn_fn)(void *ctx, uint32_t pid, uint64_t crc, const char *name,
				      uint32_t pc);

struct folded_opts {
	bool no_kernel; /* leave kernel frames out (default: shown) */
	bool pid;	/* "comm-PID" root frames; samples of each pid apart */
	bool tid;	/* "comm-PID/TID" (implies pid) */
	bool lines;	/* "func (file.c:12)" where the section has lines */
	/* the launch's cgroup path as the root frame, before comm
	 * ("/system.slice/a.service;python3;main;...;kern_[G] 5"), so a
	 * shared GPU splits by container; records without one (CPU samples,
	 * launches from before cgroups were recorded) read "[no cgroup]" */
	bool cgroup;
	/* filters; empty = all */
	const uint32_t *pids;
	size_t npids;
	const uint32_t *tids;
	size_t ntids;
	const char *comm;	   /* exact match */
	uint64_t start_ns, end_ns; /* record ts in [start, end]; 0 = open end */
	enum folded_weight weight; /* what counts; default CPU samples */
	struct render_view view;   /* what the peer may see */
	folded_insn_fn insn;	   /* stalls: instruction text; NULL: offsets */
	void *insn_ctx;
};

struct folded_totals {
	uint64_t stacks;	/* lines written */
	uint64_t samples;	/* records that matched the filters */
	uint64_t weight;	/* sum of the counts written */
	bool symbolized;	/* the capture had a usable CAPSEC_SYMBOLS section */
	bool gpu_time_fallback; /* gpu-time asked, no intervals: launches counted */
	/* gpu-time on NVIDIA (capture/gpumatch.h): CUPTI intervals, those
	 * whose API call is not in the capture, those whose call had no
	 * launch probe (both drawn without a launch stack); synchronization
	 * intervals are CPU waits, not GPU time, and count nothing */
	uint64_t cupti_intervals, cupti_no_call, cupti_no_launch;
	/* stalls: the capture's SASS section (capture/capsass.h), when it has
	 * one: instructions kept, keys without text, keys over its bounds */
	bool sass;
	uint64_t sass_kept, sass_missing, sass_capped;
};

/* Receives the output in chunks of up to 1 MiB; returns 0 or -errno
 * (which stops the rendering and is returned). */
typedef int (*folded_write_fn)(void *ctx, const void *buf, size_t len);

/*
 * Render c. totals may be NULL. Returns 0, -EINVAL for bad arguments,
 * -ENOMEM, or the writer's error. A damaged symbols section is ignored
 * (raw addresses are printed) and totals->symbolized says so.
 * Pure: reads c only, so it may run on a worker thread.
 */
int folded_write(const struct capture *c, const struct folded_opts *o, folded_write_fn fn,
		 void *ctx, struct folded_totals *totals);

/*
 * Per-record lines, for renderers that need each record's stack with its
 * time (the heat map): the filters, weights, symbols and text of
 * folded_write(), one record at a time. Records with equal keys have equal
 * lines, so a caller resolves each key once. Not thread-safe; one liner per
 * thread.
 */
struct store_rec;
struct folded_liner;
struct folded_key {
	uint32_t stack, pid, tid, comm, name, cgroup;
	uint32_t pc, reason; /* stalls: the instruction and the stall reason */
	uint64_t crc;	     /* stalls: the cubin */
};

/* o is copied, but its pids/tids/comm must outlive the liner. -EINVAL for
 * bad options, -ENOMEM. */
int folded_liner_new(const struct capture *c, const struct folded_opts *o,
		     struct folded_liner **ret);
void folded_liner_free(struct folded_liner *l);
/* Whether r counts (its type per o->weight, window, filters); if so, its
 * key and its count (weight). */
bool folded_liner_match(struct folded_liner *l, const struct store_rec *r, struct folded_key *key,
			uint64_t *count);
/* The line of key without its count ("comm;main;...;leaf"); *text is valid
 * until the next call. 0 or -ENOMEM. */
int folded_liner_line(struct folded_liner *l, const struct folded_key *key, const char **text,
		      size_t *len);

/* Same, to a file descriptor (a client-passed one: EINTR, short writes and
 * a non-blocking fd are handled; a reader stalled 30 s gives -ETIMEDOUT). */
int folded_write_fd(const struct capture *c, const struct folded_opts *o, int fd,
		    struct folded_totals *totals);

#endif
