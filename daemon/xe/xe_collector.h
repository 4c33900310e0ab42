/* SPDX-License-Identifier: MIT */
/*
 * The "xe" collector: EU-stall (and OA) streams of every xe GT, feeding
 * the attribution core (xe.h). Ops table: xe_collector_ops.
 *
 * For the launch probes / USDT (docs/xe.md "Feeding the kernel table"):
 *
 *	struct collector *xc = collectors_find(g, "xe");
 *	struct xe *x = xc ? xe_collector_core(xc) : NULL;
 *	if (x)
 *		xe_ktab_add(x, &(struct xe_kernel_info){ .gpu_addr = ..., ... });
 */
#ifndef GPUPROF_XE_COLLECTOR_H
#define GPUPROF_XE_COLLECTOR_H

#include <stdint.h>

#include "collector.h"
#include "stream.h"
#include "xe.h"

struct capture;
struct xe_cs;
struct xe_kbin;
struct xe_insn_src;

extern const struct collector_ops xe_collector_ops;

/* The attribution core, or NULL while the collector has no stream (then
 * there is nothing to attribute and adds may be skipped). Lives until the
 * collector is freed. */
struct xe *xe_collector_core(struct collector *c);

/* Add a stream over any source (tests: a pipe behind scripted ops; the
 * device probe uses it too). The collector becomes available. Returns 0
 * or -errno. Loop thread. */
int xe_collector_add_stream(struct collector *c, const struct xe_stream_cfg *cfg,
			    const struct xe_obs_ops *ops, void *ops_ctx);

/* Release every stream for seconds (0 = until resume) / take them back.
 * Return -ENODEV when the collector has no stream. Loop thread. */
int xe_collector_pause(struct collector *c, uint64_t seconds);
int xe_collector_resume(struct collector *c);

/* Add the window's EU-stall profile to a capture being persisted (the
 * CAPSEC_XE_EU_STALL section), honouring its pid / uid filters. Any
 * thread. Returns 0 (also when there is nothing to add) or -errno. */
int xe_collector_attach_capture(struct collector *c, struct capture *cap);

/* The host batch-buffer parser (cs.h, docs/gpu-cs.md): feed it dumps with
 * xe_cs_load(..., xe_collector_core(c), ...). NULL only when out of
 * memory. Lives until the collector is freed. Loop thread. */
struct xe_cs *xe_collector_cs(struct collector *c);

/* The kernel-binary store (zebin.h): xe_zebin_load(xe_collector_core(c),
 * xe_collector_kbin(c), ...). NULL only when out of memory. Lives until
 * the collector is freed. Loop thread. */
struct xe_kbin *xe_collector_kbin(struct collector *c);

/* Instruction text for an output run (xe_insn_src_text over the store and
 * an IGA context for the device's graphics IP, owned by it); free it
 * with xe_insn_src_free. -ENODEV without a device, else as xe_iga_new.
 * Any thread, while the collector lives. */
int xe_collector_insn_src(struct collector *c, struct xe_insn_src **ret);

/* Put the launch stacks of an encoded section's kernels into cap's stack
 * table (capture_add_stacks: the symbolizer then resolves them with the
 * kernel's pid) and write their ids into the kernels' stack fields, in
 * place. Returns 0, -EBADMSG for a section that does not decode, -ENOMEM. */
int xe_sec_link_stacks(struct capture *cap, void *buf, size_t len);

#endif
