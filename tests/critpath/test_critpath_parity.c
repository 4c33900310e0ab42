// SPDX-License-Identifier: MIT
/*
 * HTA parity of the critical path on every reference invocation
 * (outputs/<trace>/critical_path*.json, read at run time from
 * $GPUPROF_SHARED): node and edge counts by type, path length, summary
 * percentages and the set of critical event indices.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/critpath/critpath.h"
#include "analysis/parity.h"
#include "test.h"

struct inv {
	const char *trace, *file;
};

static const struct inv invs[] = {
    {"simple_add", "critical_path"},
    {"simple_add", "critical_path_env_default"},
    {"simple_add", "critical_path_end_to_end_variant"},
    {"simple_add", "critical_path_end_to_end_variant_env_default"},
    {"alexnet", "critical_path"},
    {"alexnet", "critical_path_env_default"},
    {"cuda_event_sync", "critical_path"},
    {"cuda_event_sync", "critical_path_env_default"},
    {"cuda_event_sync_multi_stream", "critical_path"},
    {"cuda_event_sync_multi_stream", "critical_path_env_default"},
    {"amd_trace", "critical_path_extra"},
    {"amd_trace", "critical_path_extra_env_default"},
    {NULL, NULL},
};

static int64_t jint_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (int64_t)llround(v->valuedouble) : -1;
}

static void one(const struct inv *v, struct timeline *tl)
{
	cJSON *ref = parity_load_ref(v->trace, v->file);
	const cJSON *in, *x, *it;
	struct cp_opts o;
	struct cp_graph *g = NULL;
	struct cp_path p = {0};
	struct cp_counts c;
	char err[512] = "";
	int rc, bad = 0;

	if (!ref) {
		TEST_FAIL_AT("%s/%s: reference missing", v->trace, v->file);
		return;
	}
	in = cJSON_GetObjectItemCaseSensitive(ref, "invocation");
	cp_opts_default(&o);
	o.annotation = cJSON_GetObjectItemCaseSensitive(in, "annotation")->valuestring;
	x = cJSON_GetObjectItemCaseSensitive(in, "instance_id");
	o.instance_lo = o.instance_hi = cJSON_IsNumber(x) ? (int64_t)x->valuedouble : 0;
	o.zero_weight_launch =
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(in, "zero_weight_launch_edges"));
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(in, "data_load_events"))
	    o.data_load[o.ndata_load++] = it->valuestring;
	rc = cp_build(tl, &o, &g, err, sizeof(err));
	CHECK_EQ_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "%s/%s: %s\n", v->trace, v->file, err);
		goto out;
	}
	rc = cp_solve(g, NULL, &p, err, sizeof(err));
	CHECK_EQ_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "%s/%s: %s\n", v->trace, v->file, err);
		goto out;
	}
	cp_graph_counts(g, &c);
#define EQ(a, b)                                                                                   \
	do {                                                                                       \
		if ((int64_t)(a) != (int64_t)(b))                                                  \
			bad++;                                                                     \
		CHECK_EQ_INT(a, b);                                                                \
	} while (0)
	EQ(c.nodes, jint_of(ref, "num_nodes"));
	EQ(c.edges, jint_of(ref, "num_edges"));
	EQ(c.node_list, jint_of(ref, "num_node_list"));
	x = cJSON_GetObjectItemCaseSensitive(ref, "edge_count_by_type");
	for (int t = 0; t < CP_E_COUNT; t++) {
		int64_t want = jint_of(x, cp_edge_type_name[t]);

		EQ(c.by_type[t], want < 0 ? 0 : want);
	}
	EQ(p.length_ns, jint_of(ref, "critical_path_length_sum_of_edge_weights") * 1000);
	EQ(p.nnodes, jint_of(ref, "critical_path_num_nodes"));
	x = cJSON_GetObjectItemCaseSensitive(ref, "critical_event_indices_sorted");
	EQ(p.nevents, cJSON_GetArraySize(x));
	{
		uint32_t i = 0, diff = 0;

		cJSON_ArrayForEach(it, x)
		{
			if (i >= p.nevents || p.events[i] != (uint32_t)it->valuedouble)
				diff++;
			i++;
		}
		EQ(diff, 0);
	}
	x = cJSON_GetObjectItemCaseSensitive(ref, "summary");
	for (int b = 1; b < CP_B_COUNT; b++) {
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(x, cp_bound_name[b]);
		double want = cJSON_IsNumber(s) ? s->valuedouble : 0;
		double got =
		    p.length_ns ? 100.0 * (double)p.by_bound_ns[b] / (double)p.length_ns : 0;

		if (fabs(got - want) > 1e-9)
			bad++;
		CHECK_NEAR(got, want, 1e-9);
	}
	printf("parity %s/%s: nodes %u edges %u path %.0f us, %u critical events: %s\n", v->trace,
	       v->file, c.nodes, c.edges, (double)p.length_ns / 1000.0, p.nevents,
	       bad ? "MISMATCH" : "equal");
out:
	cp_path_finish(&p);
	cp_graph_free(g);
	cJSON_Delete(ref);
}

static void test_parity(void)
{
	const char *cur = NULL;
	struct timeline *tl = NULL;

	for (const struct inv *v = invs; v->trace; v++) {
		if (!cur || strcmp(cur, v->trace)) {
			timeline_free(tl);
			tl = parity_load_trace(v->trace);
			cur = v->trace;
			if (!tl) {
				TEST_FAIL_AT("cannot load trace %s", v->trace);
				continue;
			}
		}
		if (tl)
			one(v, tl);
	}
	timeline_free(tl);
}

int main(void)
{
	RUN(test_parity);
	return test_summary();
}
