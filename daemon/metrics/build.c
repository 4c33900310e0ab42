// SPDX-License-Identifier: MIT
/*
 * Snapshot building (build.h). The daemon's health comes from the status
 * result the status method replies with, so the endpoint and
 * `gpuprofctl status` never disagree and no component is read twice.
 */
#include "build.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpfstats.h"
#include "collector.h"
#include "gpd.h"
#include "gpufreq.h"
#include "gpuprof-build.h"
#include "proctab.h"
#include "rpc/rpc.h"
#include "snap.h"

/* A number of the status tree: cJSON number, or the raw integer literal
 * json_add_u64() writes above 2^53. */
static bool jnum(const cJSON *o, const char *key, double *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	if (cJSON_IsNumber(it)) {
		*v = it->valuedouble;
		return true;
	}
	if (cJSON_IsRaw(it) && it->valuestring) {
		*v = strtod(it->valuestring, NULL);
		return true;
	}
	return false;
}

/* One series per status member (object, member), already in base units. */
static const struct status_series {
	const char *obj, *key;
	const char *name, *unit;
	enum msnap_type type;
	const char *help;
} status_series[] = {
	{NULL, "uptime_s", "gpuprof_uptime_seconds", "seconds", MSNAP_GAUGE,
	 "Time since the daemon started."},
	{"store", "budget_bytes", "gpuprof_store_budget_bytes", "bytes", MSNAP_GAUGE,
	 "Memory the store may use (memory.store_budget)."},
	{"store", "capacity", "gpuprof_store_slots", NULL, MSNAP_GAUGE,
	 "Records the store's ring holds when full."},
	{"store", "records", "gpuprof_store_records", NULL, MSNAP_GAUGE,
	 "Records in the store now."},
	{"store", "appended", "gpuprof_store_appended", NULL, MSNAP_COUNTER,
	 "Records appended to the store."},
	{"store", "dropped", "gpuprof_store_dropped", NULL, MSNAP_COUNTER,
	 "Records the store refused (its tables full)."},
	{"store", "evicted", "gpuprof_store_evicted", NULL, MSNAP_COUNTER,
	 "Records pushed out of the store's ring by newer ones."},
	{"store", "strings", "gpuprof_store_strings", NULL, MSNAP_GAUGE,
	 "Interned strings in the store."},
	{"store", "stacks", "gpuprof_store_stacks", NULL, MSNAP_GAUGE,
	 "Deduplicated stacks in the store."},
	{"store", "table_bytes", "gpuprof_store_table_bytes", "bytes", MSNAP_GAUGE,
	 "Memory the store's string and stack tables use."},
	{"store", "table_budget_bytes", "gpuprof_store_table_budget_bytes", "bytes", MSNAP_GAUGE,
	 "Memory the store's string and stack tables may use."},
	{"clients", "connected", "gpuprof_clients", NULL, MSNAP_GAUGE,
	 "Clients connected to the daemon's socket."},
	{"clients", "max", "gpuprof_clients_max", NULL, MSNAP_GAUGE,
	 "Clients the daemon accepts at once (limits.max_clients)."},
	{"captures", "count", "gpuprof_captures", NULL, MSNAP_GAUGE, "Captures the daemon keeps."},
	{"captures", "bytes", "gpuprof_captures_bytes", "bytes", MSNAP_GAUGE,
	 "Size of the captures the daemon keeps."},
	{"jobs", "running", "gpuprof_jobs", NULL, MSNAP_GAUGE,
	 "Worker jobs running (persists, outputs, analyses, imports)."},
	{"jobs", "max", "gpuprof_jobs_max", NULL, MSNAP_GAUGE,
	 "Worker jobs that may run at once (limits.max_jobs)."},
	{"memory", "rss_bytes", "gpuprof_resident_memory_bytes", "bytes", MSNAP_GAUGE,
	 "The daemon's resident set size."},
	{"memory", "heap_in_use_bytes", "gpuprof_heap_in_use_bytes", "bytes", MSNAP_GAUGE,
	 "Heap memory the daemon's allocator has handed out."},
	{"memory", "heap_free_bytes", "gpuprof_heap_free_bytes", "bytes", MSNAP_GAUGE,
	 "Heap memory the daemon's allocator holds unused."},
	{"analysis_cache", "bytes", "gpuprof_analysis_cache_bytes", "bytes", MSNAP_GAUGE,
	 "Decoded timelines kept between analyses."},
	{"analysis_cache", "hits", "gpuprof_analysis_cache_hits", NULL, MSNAP_COUNTER,
	 "Analyses that found their timeline decoded."},
	{"analysis_cache", "misses", "gpuprof_analysis_cache_misses", NULL, MSNAP_COUNTER,
	 "Analyses that decoded their timeline."},
	{"graph_cache", "bytes", "gpuprof_graph_cache_bytes", "bytes", MSNAP_GAUGE,
	 "Critical-path graphs kept between requests."},
	{"graph_cache", "hits", "gpuprof_graph_cache_hits", NULL, MSNAP_COUNTER,
	 "Critical-path requests that found their graph built."},
	{"graph_cache", "misses", "gpuprof_graph_cache_misses", NULL, MSNAP_COUNTER,
	 "Critical-path requests that built their graph."},
};

static void add_collectors(struct msnap *s, const cJSON *arr)
{
	static const enum collector_state states[] = {
		COLLECTOR_OFF,	COLLECTOR_ATTACHED, COLLECTOR_UNAVAILABLE,
		COLLECTOR_BUSY, COLLECTOR_PAUSED,   COLLECTOR_FAILED,
	};
	static const struct {
		const char *key, *name, *help;
	} counters[] = {
		{"events", "gpuprof_collector_events",
		 "Records a collector delivered to the store."},
		{"drops", "gpuprof_collector_drops",
		 "Records a collector lost (ring buffer or tables full)."},
	};
	const cJSON *c;

	msnap_family(s, "gpuprof_collector_state", MSNAP_GAUGE, NULL,
		     "1 for the state a collector is in, 0 for the others.");
	cJSON_ArrayForEach(c, arr)
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
		const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(c, "state"));

		for (size_t i = 0; name && st && i < sizeof(states) / sizeof(states[0]); i++) {
			const char *sn = collector_state_name(states[i]);

			msnap_add(s, !strcmp(sn, st), "collector", name, "state", sn, NULL);
		}
	}
	for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
		msnap_family(s, counters[k].name, MSNAP_COUNTER, NULL, counters[k].help);
		cJSON_ArrayForEach(c, arr)
		{
			const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "name"));
			double v;

			if (name && jnum(c, counters[k].key, &v))
				msnap_add(s, v, "collector", name, NULL);
		}
	}
}

/* One family from the members of a status object, each a label value. */
static void add_labelled(struct msnap *s, const cJSON *obj, const char *name, enum msnap_type type,
			 const char *label, const char *help)
{
	const cJSON *it;
	double v;

	msnap_family(s, name, type, NULL, help);
	cJSON_ArrayForEach(it, obj)
	{
		if (it->string && jnum(obj, it->string, &v))
			msnap_add(s, v, label, it->string, NULL);
	}
}

/* The CUPTI library's connections (status "cupti", docs/collectors.md,
 * "NVIDIA"): totals only, no process is named. */
static void add_cupti(struct msnap *s, const cJSON *cu)
{
	double v;

	msnap_family(s, "gpuprof_cupti_peers", MSNAP_GAUGE, NULL,
		     "CUPTI library connections open now.");
	if (jnum(cu, "peers", &v))
		msnap_add(s, v, NULL);
	msnap_family(s, "gpuprof_cupti_connections", MSNAP_COUNTER, NULL,
		     "CUPTI library connections accepted.");
	if (jnum(cu, "peers_ever", &v))
		msnap_add(s, v, NULL);
	add_labelled(s, cJSON_GetObjectItem(cu, "states"), "gpuprof_cupti_peers_state", MSNAP_GAUGE,
		     "state",
		     "CUPTI library connections by the library's state (conflict: stepped "
		     "aside for another CUPTI subscriber).");
	add_labelled(s, cJSON_GetObjectItem(cu, "records"), "gpuprof_cupti_records", MSNAP_COUNTER,
		     "kind", "Records read from CUPTI library connections, by kind.");
	add_labelled(s, cJSON_GetObjectItem(cu, "drops"), "gpuprof_cupti_drops", MSNAP_COUNTER,
		     "cause", "CUPTI library records the daemon dropped, by cause.");
	add_labelled(s, cJSON_GetObjectItem(cu, "closed"), "gpuprof_cupti_closed", MSNAP_COUNTER,
		     "reason", "CUPTI library connections closed or refused, by reason.");
	add_labelled(s, cJSON_GetObjectItem(cu, "library_drops"), "gpuprof_cupti_library_drops",
		     MSNAP_COUNTER, "counter",
		     "What the CUPTI libraries report they lost, summed over connections.");
}

void metrics_add_status(struct msnap *s, const cJSON *st)
{
	double v, oldest, newest, records, slots;
	const cJSON *store = cJSON_GetObjectItem(st, "store");

	msnap_family(s, "gpuprof_build", MSNAP_INFO, NULL,
		     "Always 1; the daemon's version is the label.");
	msnap_add(s, 1, "version", GPUPROF_VERSION, NULL);
	for (size_t i = 0; i < sizeof(status_series) / sizeof(status_series[0]); i++) {
		const struct status_series *ss = &status_series[i];
		const cJSON *o = ss->obj ? cJSON_GetObjectItem(st, ss->obj) : st;

		msnap_family(s, ss->name, ss->type, ss->unit, ss->help);
		if (o && jnum(o, ss->key, &v))
			msnap_add(s, v, NULL);
	}
	msnap_family(s, "gpuprof_store_fill_ratio", MSNAP_GAUGE, "ratio",
		     "Share of the store's ring in use.");
	if (jnum(store, "records", &records) && jnum(store, "capacity", &slots) && slots > 0)
		msnap_add(s, records / slots, NULL);
	msnap_family(s, "gpuprof_store_window_seconds", MSNAP_GAUGE, "seconds",
		     "Time between the oldest and the newest record in the store: how far back "
		     "a capture can reach.");
	if (jnum(store, "oldest_ns", &oldest) && jnum(store, "newest_ns", &newest) &&
	    newest >= oldest)
		msnap_add(s, (newest - oldest) / 1e9, NULL);
	add_collectors(s, cJSON_GetObjectItem(st, "collectors"));
	if (cJSON_GetObjectItem(st, "cupti"))
		add_cupti(s, cJSON_GetObjectItem(st, "cupti"));
}

struct msnap *metrics_build(struct gpd *g, struct proctab *pt, bool bpf_on)
{
	struct msnap *s = msnap_new();
	struct timespec ts;
	cJSON *st;

	if (!s)
		return NULL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->built_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	/* as root sees it: the endpoint's own privacy rules are applied to
	 * what it emits, and the health figures are the same for everyone */
	st = rpc_status_json(g, 0, true);
	if (!st) {
		msnap_free(s);
		return NULL;
	}
	metrics_add_status(s, st);
	cJSON_Delete(st);
	proctab_emit(pt, s);
	bpfstats_emit(s, bpf_on);
	gpufreq_emit(s, "/sys/class/drm");
	return s;
}
