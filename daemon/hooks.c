// SPDX-License-Identifier: MIT
#include "hooks.h"

#include <string.h>

#include "capreg.h"
#include "collect/collector.h"
#include "collect/registry.h"
#include "gpd.h"
#include "log.h"
#include "sym.h"
#ifdef HAVE_CPU_COLLECTOR
#include "collect/cpu.h"
#endif

static struct symbolizer *symbolizer;

static void note_pid(void *arg, uint32_t pid)
{
	sym_note_pid(arg, pid);
}

static void symbolize(void *arg, struct capture *c)
{
	int r = sym_symbolize_capture(arg, c);
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
#ifdef HAVE_CPU_COLLECTOR
	struct collector *cpu = collectors_find(g, "cpu");
	if (cpu)
		cpu_collector_set_pid_hook(cpu, note_pid, symbolizer);
#else
	(void)note_pid;
#endif
}

void hooks_finish(struct gpd *g)
{
	(void)g;
	sym_free(symbolizer);
	symbolizer = NULL;
}
