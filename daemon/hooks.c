// SPDX-License-Identifier: MIT
#include "hooks.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "capreg.h"
#include "collector.h"
#include "collect/registry.h"
#include "gpd.h"
#include "log.h"
#include "pyframes/pyreg.h"
#include "sym.h"
#include "collect/cpu.h"
#include "collect/cupti_sass.h"
#include "collect/cupti_sassmemo.h"
#include "collect/gpu_launch.h"
#include "timeline/live.h"
#include "unwind/unwind.h"
#include "xe_collector.h"
#include "zebin.h"

static void note_pid(void *arg, uint32_t pid, bool exec)
{
	if (exec)
		sym_note_exec(arg, pid);
	else
		sym_note_pid(arg, pid);
}

/* NEO's launch USDT names a kernel's GPU range: the EU-stall kernel table
 * attributes samples to it (batch-buffer KSPs only fill gaps). */
static void feed_xe(void *arg, const struct gpu_launch_kernel *k)
{
	struct xe *x = xe_collector_core(arg);

	if (x && xe_ktab_add(x, &(struct xe_kernel_info){
					.gpu_addr = k->gpu_addr,
					.size = k->size,
					.iba = k->iba,
					.pid = k->pid,
					.uid = k->uid,
					.name = k->name,
					.comm = k->comm,
					.cgroup = k->cgroup,
					.ustack = k->ustack,
					.nustack = k->nustack,
				}) < 0)
		log_debug("xe: kernel %s at %#llx not added to the table", k->name ? k->name : "?",
			  (unsigned long long)k->gpu_addr);
}

/* NEO's compile_kernel USDT: debug zebins name kernels and give their ISA
 * (the gpu collector reads and parses the file on the thread pool with
 * xe_zebin_read_new; loaded here, on the loop). */
static int zebin_load(void *arg, void *state, uint32_t pid, const char *path, char *why,
		      size_t whylen)
{
	struct xe *x = xe_collector_core(arg);
	int r = -ENODEV;

	if (x) {
		r = xe_zebin_load(x, xe_collector_kbin(arg), state, path, pid, 0);
		if (r < 0)
			snprintf(why, whylen, "adding the kernels: %s", strerror(-r));
	}
	xe_zebin_free(state);
	return r;
}

/* NVIDIA PC samples: the SASS text of their instructions kept in the
 * capture (names demangled first: nvdisasm's are matched either way);
 * what names the capture in the log: "capture 7", "push window" */
static void sass_text(struct gpd *g, struct capture *c, struct cupti_sass_memo *memo,
		      const char *what)
{
	struct collector *cc = collectors_find(g, "cupti");
	struct cupti_sass_totals t;
	int r = cupti_sass_attach(cc ? cc->priv : NULL, g->cfg.cupti.nvdisasm, c, memo, &t);

	if (r < 0)
		log_warn("%s: SASS text not kept: %s", what, strerror(-r));
	else if (t.keys)
		log_debug("%s: SASS text of %zu of %zu instructions kept (%zu bytes, %zu known "
			  "from earlier windows), %zu without text, %zu over the bounds",
			  what, t.texts, t.keys, t.bytes, t.memo_hits, t.missing, t.capped);
}

static void symbolize(void *arg, struct capture *c)
{
	struct gpd *g = arg;
	struct collector *xe_coll = collectors_find(g, "xe");

	if (xe_coll && xe_collector_attach_capture(xe_coll, c) < 0)
		log_warn("capture %llu: EU-stall profile not attached", (unsigned long long)c->id);
	/* GPU kernel names demangled first: the timeline copies them */
	int r = sym_demangle_kernels(g->symbolizer, c);
	if (r < 0)
		log_warn("capture %llu: GPU kernel names not demangled: %s",
			 (unsigned long long)c->id, strerror(-r));
	/* GPU job intervals -> the timeline the analyses read (timeline/live.h) */
	r = timeline_live_attach(c);
	if (r < 0)
		log_warn("capture %llu: no timeline from the GPU job intervals: %s",
			 (unsigned long long)c->id, strerror(-r));
	r = sym_symbolize_capture(g->symbolizer, c);
	if (r < 0)
		log_warn("capture %llu: symbolization failed: %s", (unsigned long long)c->id,
			 strerror(-r));
	char what[40];

	snprintf(what, sizeof(what), "capture %llu", (unsigned long long)c->id);
	sass_text(g, c, NULL, what);
}

/* The texts earlier push windows resolved: only the push builder thread
 * uses it (one window at a time), freed by hooks_finish() after the
 * builder is joined. NULL until the first window with PC samples, and
 * when memory ran out (each window then runs nvdisasm itself). */
static struct cupti_sass_memo *push_memo;

/* A continuous profile's window (push.h), already symbolized: the same
 * SASS text a saved capture of it would keep, so its stall frames show
 * instructions, not offsets. The window has no owner filter: every
 * uid's cubins, as in root's capture (the profile goes where the
 * administrator's push.url / push.dir send it). */
void hooks_push_window(void *arg, struct capture *c)
{
	bool pcs = false;

	for (size_t i = 0; i < c->nrecs && !pcs; i++)
		pcs = c->recs[i].type == STORE_REC_GPU_PC;
	if (pcs && !push_memo && cupti_sass_memo_new(&push_memo) < 0)
		push_memo = NULL;
	sass_text(arg, c, push_memo, "push window");
}

/* The unwinder's first sight of a process takes the mappings the
 * symbolizer read for it an instant before (cpu.c notes a pid before
 * unwinding its stack), instead of reading them again. */
static int shared_maps(void *arg, uint32_t pid, uint64_t max_age_ns,
		       void (*each)(void *ctx, const struct pmq_map *m, const char *name),
		       void *ctx)
{
	return sym_fresh_maps(arg, pid, max_age_ns, each, ctx);
}

static bool py_name(const void *ctx, uint64_t ip, char *name, size_t len, char *line,
		    size_t linelen)
{
	return pyreg_frame_name(ctx, ip, name, len, line, linelen);
}

void hooks_init(struct gpd *g)
{
	struct sym_opts so = {
		.refresh_ns = 10ull * 1000000000ull,
		.no_demangle = !g->cfg.demangle,
		.lines = g->cfg.sym_lines,
		.py_name = py_name,
		.py_ctx = g->pyreg,
	};
	struct symbolizer *symbolizer;
	struct collector *xe_coll = collectors_find(g, "xe");

	if (sym_new(&so, &symbolizer) < 0) {
		log_warn("symbolizer unavailable (out of memory): frames stay raw addresses");
		return;
	}
	g->symbolizer = symbolizer;
	capreg_set_prepare(g->captures, symbolize, g);
	struct collector *cpu = collectors_find(g, "cpu");
	if (cpu)
		cpu_collector_set_pid_hook(cpu, note_pid, symbolizer);
	if (g->unwinder)
		unwind_set_maps_source(g->unwinder, shared_maps, symbolizer);
	/* and the Python registry's look for an interpreter in them */
	if (g->pyreg)
		pyreg_set_maps_source(g->pyreg, shared_maps, symbolizer);
	/* Launching processes may never be sampled on CPU: snapshot their
	 * maps when they are found, so launch stacks resolve after exit. */
	struct collector *gpu = collectors_find(g, "gpu");
	if (gpu)
		gpu_launch_set_pid_hook(gpu, note_pid, symbolizer);
	if (gpu && xe_coll &&
	    (gpu_launch_set_kernel_hook(gpu, feed_xe, xe_coll) < 0 ||
	     gpu_launch_set_zebin_hook(gpu, &(struct gpu_launch_zebin_hook){
						    .read = xe_zebin_read_new,
						    .load = zebin_load,
						    .discard = xe_zebin_free,
						    .arg = xe_coll,
						    .max_bytes = XE_ZEBIN_MAX_FILE,
					    }) < 0))
		log_warn(
			"gpu: launches and zebins do not reach the EU-stall kernel table (out of memory)");
}

void hooks_finish(struct gpd *g)
{
	if (g->unwinder)
		unwind_set_maps_source(g->unwinder, NULL, NULL);
	pyreg_set_maps_source(g->pyreg, NULL, NULL);
	sym_free(g->symbolizer);
	g->symbolizer = NULL;
	cupti_sass_memo_free(push_memo);
	push_memo = NULL;
}
