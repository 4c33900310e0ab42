// SPDX-License-Identifier: MIT
/* version, status */
#include <malloc.h>
#include <stdio.h>
#include <unistd.h>

#include "capreg.h"
#include "collect/cupti.h"
#include "collect/registry.h"
#include "gpd.h"
#include "tlcache.h"
#include "json.h"
#include "gpuprof-build.h"
#include "methods.h"
#include "push/push.h"
#include "store/store.h"
#include "alloc/bigalloc.h"
#include "analysis/critpath/cpcache.h"
#include "timeline/timeline.h"
#include "pyframes/pyreg.h"
#include "unwind/unwind.h"

/* libasan's, when linked (weak: NULL otherwise). */
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

static const char *const no_params[] = {NULL};

void method_version(struct rpc_req *req, const cJSON *params)
{
	if (!params_only(req, params, no_params))
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "version", GPUPROF_VERSION);
	cJSON_AddNumberToObject(o, "protocol", GPUPROF_PROTOCOL_VERSION);
	rpc_reply(req, o);
}

/* A cache kept under a budget, under name: the same keys for each. */
static void add_cache_stats(cJSON *o, const char *name, const struct cache_stats *st)
{
	cJSON *c = cJSON_AddObjectToObject(o, name);

	json_add_u64(c, "entries", st->entries);
	json_add_u64(c, "bytes", st->bytes);
	json_add_u64(c, "budget_bytes", st->budget);
	json_add_u64(c, "hits", st->hits);
	json_add_u64(c, "misses", st->misses);
	json_add_u64(c, "evicted", st->evicted);
	json_add_u64(c, "too_large", st->too_large);
}

/* The status result: the RPC method's reply, and what the metrics endpoint
 * (metrics/) turns into series, so both report the same figures. */
cJSON *rpc_status_json(struct gpd *g, uid_t uid, bool privileged)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "version", GPUPROF_VERSION);
	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "uptime_s", (double)(gpd_now_ns() - g->start_mono_ns) / 1e9);

	struct store_stats st;
	store_get_stats(g->store, &st);
	cJSON *s = cJSON_AddObjectToObject(o, "store");
	json_add_u64(s, "budget_bytes", (uint64_t)st.budget_bytes);
	json_add_u64(s, "capacity", (uint64_t)st.capacity);
	json_add_u64(s, "records", (uint64_t)st.records);
	json_add_u64(s, "appended", (uint64_t)st.appended);
	json_add_u64(s, "dropped", (uint64_t)st.dropped);
	json_add_u64(s, "evicted", (uint64_t)st.evicted);
	json_add_u64(s, "strings", (uint64_t)st.strings);
	json_add_u64(s, "stacks", (uint64_t)st.stacks);
	json_add_u64(s, "table_bytes", (uint64_t)st.table_bytes);
	json_add_u64(s, "table_budget_bytes", (uint64_t)st.table_budget);
	json_add_u64(s, "oldest_ns", (uint64_t)st.oldest_ts_ns);
	json_add_u64(s, "newest_ns", (uint64_t)st.newest_ts_ns);

	cJSON_AddItemToObject(o, "collectors", collectors_status(g));
	/* the CUPTI library's peers: a member sees its own processes' */
	cupti_status_json(g, o, uid, privileged);
	/* Which processes are sampled is what ps shows anyway, but keep the
	 * per-process list to those who may see every process's stacks. */
	if (g->unwinder)
		unwind_status(g->unwinder, cJSON_AddObjectToObject(o, "unwind"), privileged);
	if (g->pyreg)
		pyreg_status(g->pyreg, cJSON_AddObjectToObject(o, "python"), privileged);

	cJSON *cl = cJSON_AddObjectToObject(o, "clients");
	cJSON_AddNumberToObject(cl, "connected", rpc_server_clients(g->rpc));
	cJSON_AddNumberToObject(cl, "max", g->cfg.max_clients);
	cJSON_AddBoolToObject(cl, "privileged", privileged);

	push_status(g->push, o, privileged);

	cJSON *cp = cJSON_AddObjectToObject(o, "captures");
	json_add_u64(cp, "count", (uint64_t)capreg_count(g->captures));
	json_add_u64(cp, "bytes", (uint64_t)capreg_bytes(g->captures));

	/* The daemon's own memory: resident set and the allocator's view
	 * (bytes in use vs held), so growth can be told from fragmentation. */
	cJSON *mem = cJSON_AddObjectToObject(o, "memory");
	struct mallinfo2 mi = mallinfo2();
	json_add_u64(mem, "heap_in_use_bytes", mi.uordblks + mi.hblkhd);
	json_add_u64(mem, "heap_free_bytes", mi.fordblks);
	/* memory.idle_trim: malloc_trim(0) runs, and those that gave pages back */
	json_add_u64(mem, "idle_trims", g->heap_trims);
	json_add_u64(mem, "idle_trims_released", g->heap_trims_released);
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long pages_total, pages_rss;
	if (f && fscanf(f, "%lu %lu", &pages_total, &pages_rss) == 2)
		json_add_u64(mem, "rss_bytes",
			     (uint64_t)pages_rss * (uint64_t)sysconf(_SC_PAGESIZE));
	if (f)
		fclose(f);
	/* Under AddressSanitizer its allocator replaces malloc: what the
	 * program holds is this, while RSS also counts ASan's caches. */
	if (__sanitizer_get_current_allocated_bytes)
		json_add_u64(mem, "asan_allocated_bytes",
			     (uint64_t)__sanitizer_get_current_allocated_bytes());

	cJSON *j = cJSON_AddObjectToObject(o, "jobs");
	cJSON_AddNumberToObject(j, "running", g->jobs_running);
	cJSON_AddNumberToObject(j, "max", g->cfg.max_jobs);

	{ /* freed big scratch arrays kept for the next analysis */
		struct bigalloc_stats bs;
		cJSON *sc = cJSON_AddObjectToObject(o, "analysis_scratch");

		bigalloc_stats(&bs);
		json_add_u64(sc, "bytes", bs.cached);
		json_add_u64(sc, "cap_bytes", bs.cap);
		json_add_u64(sc, "reused", bs.reused);
		json_add_u64(sc, "fresh", bs.fresh);
		json_add_u64(sc, "trimmed_bytes", bs.trimmed);
	}

	if (g->tlcache) { /* decoded timelines kept between analyses */
		struct cache_stats cs;

		tlcache_get_stats(g->tlcache, &cs);
		add_cache_stats(o, "analysis_cache", &cs);
	}
	if (g->cpcache) { /* built critical-path graphs kept between requests */
		struct cache_stats cs;

		cp_cache_get_stats(g->cpcache, &cs);
		add_cache_stats(o, "graph_cache", &cs);
	}
	return o;
}

void method_status(struct rpc_req *req, const cJSON *params)
{
	if (!params_only(req, params, no_params))
		return;
	rpc_reply(req, rpc_status_json(req->gpd, req->uid, req->privileged));
}
