/* SPDX-License-Identifier: MIT */
/*
 * The timeline of a live capture (docs/import.md, "Live captures"), built
 * from its driver-side GPU job intervals (STORE_REC_GPU_INTERVAL, the
 * gpu_jobs collector) and runtime launches (STORE_REC_GPU_LAUNCH), so that
 * the analyses run on live captures as on imported traces:
 *
 *  - one rank per submitting pid (rank number = pid; 0 = submitter unknown);
 *  - each interval is a GPU kernel event (cat "kernel") on stream = its
 *    fence context (one per exec queue / context timeline), GPU row pid 0,
 *    device 0, named after the launch it carried (capture/gpumatch.h: the
 *    last launch of its batch) or, with none, after its engine ("xe/ccs";
 *    copy-engine work as "Memcpy xe/bcs", so it counts as memory);
 *  - each launch of that pid is a runtime/driver call of zero duration on
 *    its thread, with its correlation id, which the kernel it was matched
 *    to carries too (the launch ↔ kernel link the idle and queue analyses
 *    use).
 *
 * NVIDIA activity from the CUPTI library (store.h) is laid out as a
 * Kineto trace of the same run would be (docs/import.md, "Live captures"):
 * kernels, copies, sets and syncs on GPU rows (pid = device, tid =
 * stream) with Kineto's categories and args, the runtime / driver calls
 * (STORE_REC_GPU_API) on their threads with their durations and CUPTI's
 * correlation ids, NVTX ranges as user annotations. A pid with CUPTI
 * records shows no launch-probe rows (its calls stand for them, and the
 * probes' ids are another space).
 */
#ifndef GPUPROF_TIMELINE_LIVE_H
#define GPUPROF_TIMELINE_LIVE_H

struct capture;
struct timeline;

/* Build and finalize. 0, -ENODATA (no interval records), -ENOMEM, -E2BIG. */
int timeline_from_capture(const struct capture *c, struct timeline **ret);

/*
 * Add the CAPSEC_TIMELINE section built by timeline_from_capture() to a live
 * capture that has intervals and no timeline yet. 0 (also when there is
 * nothing to add), or -ENOMEM / -E2BIG.
 */
int timeline_live_attach(struct capture *c);

#endif
