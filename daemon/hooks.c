// SPDX-License-Identifier: MIT
#include "hooks.h"

#include <string.h>

#include "capreg.h"
#include "collect/collector.h"
#include "collect/registry.h"
#include "gpd.h"
#include "log.h"
#include "sym.h"
#include "timeline/live.h"
#ifdef HAVE_CPU_COLLECTOR
#include "collect/cpu.h"
#endif
#ifdef HAVE_GPU_LAUNCH_COLLECTOR
#include "collect/gpu_launch.h"
#endif

static struct symbolizer *symbolizer;
#ifdef HAVE_XE_COLLECTOR
#include "xe_collector.h"
static struct collector *xe_coll; /* EU-stall profile joins each capture */
#endif

static void note_pid(void *arg, uint32_t pid)
{
	sym_note_pid(arg, pid);
}

#if defined(HAVE_XE_COLLECTOR) && defined(HAVE_GPU_LAUNCH_COLLECTOR)
/* NEO's launch USDT names a kernel's GPU range: the EU-stall kernel table
 * attributes samples to it (issue #8; batch-buffer KSPs only fill gaps). */
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
				    .ustack = k->ustack,
				    .nustack = k->nustack,
			    }) < 0)
		log_debug("xe: kernel %s at %#llx not added to the table",
			  k->name ? k->name : "?", (unsigned long long)k->gpu_addr);
}
#endif

static void symbolize(void *arg, struct capture *c)
{
#ifdef HAVE_XE_COLLECTOR
	if (xe_coll && xe_collector_attach_capture(xe_coll, c) < 0)
		log_warn("capture %llu: EU-stall profile not attached", (unsigned long long)c->id);
#endif
	/* GPU job intervals -> the timeline the analyses read (timeline/live.h) */
	int r = timeline_live_attach(c);
	if (r < 0)
		log_warn("capture %llu: no timeline from the GPU job intervals: %s",
			 (unsigned long long)c->id, strerror(-r));
	r = sym_symbolize_capture(arg, c);
	if (r < 0)
		log_warn("capture %llu: symbolization failed: %s", (unsigned long long)c->id,
			 strerror(-r));
}

void hooks_init(struct gpd *g)
{
	if (sym_new(NULL, &symbolizer) < 0) {
		log_warn("symbolizer unavailable (out of memory): frames stay raw addresses");
		return;
	}
	capreg_set_prepare(g->captures, symbolize, symbolizer);
#ifdef HAVE_XE_COLLECTOR
	xe_coll = collectors_find(g, "xe");
#endif
#ifdef HAVE_CPU_COLLECTOR
	struct collector *cpu = collectors_find(g, "cpu");
	if (cpu)
		cpu_collector_set_pid_hook(cpu, note_pid, symbolizer);
#else
	(void)note_pid;
#endif
#ifdef HAVE_GPU_LAUNCH_COLLECTOR
	/* Launching processes may never be sampled on CPU: snapshot their
	 * maps when they are found, so launch stacks resolve after exit. */
	struct collector *gpu = collectors_find(g, "gpu");
	if (gpu)
		gpu_launch_set_pid_hook(gpu, note_pid, symbolizer);
#ifdef HAVE_XE_COLLECTOR
	if (gpu && xe_coll)
		gpu_launch_set_kernel_hook(gpu, feed_xe, xe_coll);
#endif
#endif
}

struct symbolizer *hooks_symbolizer(void)
{
	return symbolizer;
}

void hooks_finish(struct gpd *g)
{
	(void)g;
	sym_free(symbolizer);
	symbolizer = NULL;
}
