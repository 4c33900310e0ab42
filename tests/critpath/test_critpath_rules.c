// SPDX-License-Identifier: MIT
/*
 * One hand-built Kineto trace per edge rule of HTA's critical path, imported with
 * timeline_import_buf: launch delay vs kernel-kernel delay (and the 1500 µs
 * threshold), blocking sync calls with zero weight and GPU->CPU sync edges,
 * cudaEventRecord -> cudaStreamWaitEvent across streams, a cycle rejected
 * with the offending event named, and what-if edits; the table's entry and
 * the graph cache.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "analysis/critpath/cpcache.h"
#include "analysis/critpath/critpath_int.h"
#include "import/import.h"
#include "test.h"

#define CPU(name, cat, ts, dur, corr)                                                              \
	"{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts  \
	",\"dur\":" #dur ",\"args\":{\"correlation\":" #corr "}}"
#define GPU(name, cat, stream, ts, dur, corr, extra)                                               \
	"{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"pid\":0,\"tid\":" #stream       \
	",\"ts\":" #ts ",\"dur\":" #dur ",\"args\":{\"device\":0,\"stream\":" #stream              \
	",\"correlation\":" #corr extra "}}"

static struct timeline *load(const char *events)
{
	char buf[8192];
	struct timeline *tl = NULL;
	struct import_result res;
	int n = snprintf(buf, sizeof(buf), "{\"traceEvents\":[%s]}", events);

	CHECK(timeline_new(&tl) == 0);
	CHECK_EQ_INT(timeline_import_buf(buf, (size_t)n, NULL, tl, &res), 0);
	return tl;
}

static struct cp_graph *build(struct timeline *tl, int64_t thr_us)
{
	struct cp_opts o;
	struct cp_graph *g = NULL;
	char err[256] = "";

	cp_opts_default(&o);
	if (thr_us)
		o.kk_threshold_ns = thr_us * 1000;
	CHECK_EQ_INT(cp_build(tl, &o, &g, err, sizeof(err)), 0);
	return g;
}

/* Edge between event indices (start/end nodes), or NULL. */
static const struct cp_edge *edge(const struct cp_graph *g, uint32_t a, bool as, uint32_t b,
				  bool bs)
{
	for (uint32_t i = 0; i < g->nedges; i++) {
		const struct cp_node *u = &g->nodes[g->edges[i].u], *v = &g->nodes[g->edges[i].v];

		if (g->ev[u->ev].index == a && u->is_start == as && g->ev[v->ev].index == b &&
		    v->is_start == bs)
			return &g->edges[i];
	}
	return NULL;
}

/* 0 op, 1 launch A, 2 launch B, 3 launch D, 4 kernel A, 5 kernel B, 6 kernel D */
static const char *launches = CPU("aten::op", "cpu_op", 0, 300, -1) "," CPU(
    "cudaLaunchKernel", "cuda_runtime", 10, 10,
    1) "," CPU("cudaLaunchKernel", "cuda_runtime", 40, 5,
	       2) "," CPU("cudaLaunchKernel", "cuda_runtime", 50, 5,
			  3) "," GPU("kA", "kernel", 7, 30, 50, 1,
				     "") "," GPU("kB", "kernel", 7, 90, 10, 2,
						 "") "," GPU("kD", "kernel", 7, 2000, 10, 3, "");

static void test_launch_vs_kernel_kernel(void)
{
	struct timeline *tl = load(launches);
	struct cp_graph *g = build(tl, 0);
	const struct cp_edge *e;

	/* A: nothing queued on stream 7 at launch -> launch delay 30-10 µs */
	e = edge(g, 1, true, 4, true);
	CHECK(e && e->type == CP_E_LAUNCH);
	CHECK_EQ_INT(e ? e->w : -1, 20000);
	/* B launched while A ran and starts after it: kernel-kernel 90-80 µs */
	e = edge(g, 4, false, 5, true);
	CHECK(e && e->type == CP_E_KERNEL_KERNEL);
	CHECK_EQ_INT(e ? e->w : -1, 10000);
	CHECK(!edge(g, 2, true, 5, true));
	/* D queued behind B, 1900 µs gap >= 1500 µs: no edge at all */
	CHECK(!edge(g, 5, false, 6, true));
	CHECK_EQ_INT(g->warnings, 1);
	cp_graph_free(g);
	g = build(tl, 2000); /* a larger threshold links it */
	e = edge(g, 5, false, 6, true);
	CHECK(e && e->type == CP_E_KERNEL_KERNEL);
	cp_graph_free(g);
	timeline_free(tl);
}

/* 0 op, 1 launch, 2 cudaStreamSynchronize, 3 kernel, 4 Stream Sync */
static void test_blocking_sync(void)
{
	struct timeline *tl = load(CPU("aten::op", "cpu_op", 0, 300, -1) "," CPU(
	    "cudaLaunchKernel", "cuda_runtime", 10, 10,
	    1) "," CPU("cudaStreamSynchronize", "cuda_runtime", 30, 200,
		       9) "," GPU("kA", "kernel", 7, 40, 100, 1,
				  "") "," GPU("Stream Sync", "cuda_sync", 7, 30, 120, 9, ""));
	struct cp_graph *g = build(tl, 0);
	struct cp_path p = {0};
	char err[256];
	const struct cp_edge *e = edge(g, 2, true, 2, false);

	CHECK(e && e->type == CP_E_OPERATOR);
	CHECK_EQ_INT(e ? e->w : -1, 0); /* blocking call: zero weight (Q11) */
	e = edge(g, 3, false, 2, false);
	CHECK(e && e->type == CP_E_SYNC);
	CHECK_EQ_INT(cp_solve(g, NULL, &p, err, sizeof(err)), 0);
	/* op start -> launch -> kernel (20 + 100) -> sync -> call end -> op end */
	CHECK_EQ_INT(p.length_ns, (10 + 30 + 100 + 70) * 1000);
	CHECK_EQ_INT(p.by_bound_ns[CP_B_GPU_COMPUTE], 100000);
	CHECK_EQ_INT(p.by_bound_ns[CP_B_LAUNCH], 30000);
	cp_path_finish(&p);
	cp_graph_free(g);
	timeline_free(tl);
}

/* 0 op, 1 launch A, 2 record, 3 wait, 4 launch C, 5 kA (s7), 6 Stream Wait Event (s8),
 * 7 kC (s8). Event 0 is a plain op: index_correlation 0 means "no partner"
 * to HTA (Q6), so a launch must not sit at index 0. */
static void test_event_record_wait(void)
{
	struct timeline *tl = load(CPU("aten::op", "cpu_op", 0, 5, -1) "," CPU(
	    "cudaLaunchKernel", "cuda_runtime",
	    10, 10, 1) "," CPU("cudaEventRecord", "cuda_runtime", 40, 1,
			       20) "," CPU("cudaStreamWaitEvent", "cuda_runtime", 42, 1,
					   21) "," CPU("cudaLaunchKernel", "cuda_runtime", 44, 1,
						       22) "," GPU("kA", "kernel", 7, 30, 50, 1,
								   "") "," GPU("Stream Wait Event",
									       "cuda_sync", 8, 44,
									       1, 21,
									       ",\"wait_on_"
									       "stream\":7,\"wait_"
									       "on_cuda_event_"
									       "record_corr_id\":"
									       "20") "," GPU("kC",
											     "kerne"
											     "l",
											     8, 200,
											     10, 22,
											     ""));
	struct cp_graph *g = build(tl, 0);
	const struct cp_edge *e = edge(g, 5, false, 7, true);

	CHECK(e && e->type == CP_E_SYNC); /* kA end -> kC start, across streams */
	CHECK_EQ_INT(e ? e->w : -1, 0);
	/* the sync finished after C's launch: no launch-delay edge for C */
	CHECK(!edge(g, 4, true, 7, true));
	cp_graph_free(g);
	timeline_free(tl);
}

/* A sync call that ends before the launch it "waits" for: a cycle. */
static void test_cycle_rejected(void)
{
	struct timeline *tl = load(CPU("aten::op", "cpu_op", 0, 300, -1) "," CPU(
	    "cudaStreamSynchronize", "cuda_runtime", 5, 3,
	    9) "," CPU("cudaLaunchKernel", "cuda_runtime", 10, 10,
		       1) "," GPU("kA", "kernel", 7, 30, 50, 1,
				  "") "," GPU("Stream Sync", "cuda_sync", 7, 85, 1, 9, ""));
	struct cp_graph *g = build(tl, 0);
	struct cp_path p = {0};
	char err[256] = "";

	CHECK_EQ_INT(cp_solve(g, NULL, &p, err, sizeof(err)), -EDOM);
	CHECK(strstr(err, "cycle through event") != NULL);
	fprintf(stderr, "cycle error: %s\n", err);
	cp_graph_free(g);
	timeline_free(tl);
}

static void test_whatif(void)
{
	struct timeline *tl = load(launches);
	struct cp_graph *g = build(tl, 2000);
	struct cp_path a = {0}, b = {0};
	cJSON *ed = cJSON_Parse("[{\"kind\":\"kernel\",\"scale\":0.5},"
				"{\"match\":\"^cudaLaunch\",\"set_us\":1}]");
	int64_t *w = NULL;
	uint32_t matched = 0;
	char err[256];

	CHECK_EQ_INT(cp_solve(g, NULL, &a, err, sizeof(err)), 0);
	CHECK_EQ_INT(cp_whatif(g, ed, &w, &matched, err, sizeof(err)), 0);
	CHECK(matched >= 6);
	CHECK_EQ_INT(cp_solve(g, w, &b, err, sizeof(err)), 0);
	CHECK(b.length_ns < a.length_ns);
	cJSON_Delete(ed);
	ed = cJSON_Parse("[{\"kind\":\"bogus\",\"scale\":1}]");
	CHECK_EQ_INT(cp_whatif(g, ed, &w, &matched, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "edits[0]") != NULL);
	cJSON_Delete(ed);
	free(w);
	cp_path_finish(&a);
	cp_path_finish(&b);
	cp_graph_free(g);
	timeline_free(tl);
}

/* The graph cache stays within its budget: least recently used graphs go,
 * a graph over half the budget is used once, a budget of 0 keeps none, and
 * what it keeps is freed with it (ASan's leak check). */
static void test_graph_cache(void)
{
	struct timeline *tl = load(launches);
	struct cp_graph *g = build(tl, 2000);
	size_t bytes = cp_graph_bytes(g);
	struct cp_cache *c = NULL;
	struct cp_cached *h;

	CHECK_EQ_INT(cp_cache_new(3 * bytes, &c), 0);
	h = cp_cache_put(c, "a", g);
	CHECK(h && cp_cached_graph(h) == g);
	cp_cache_release(c, h);
	h = cp_cache_get(c, "a");
	CHECK(h && cp_cached_graph(h) == g);
	cp_cache_release(c, h);
	cp_cache_release(c, cp_cache_put(c, "b", build(tl, 2000)));
	cp_cache_release(c, cp_cache_put(c, "c", build(tl, 2000)));
	h = cp_cache_get(c, "b"); /* now "a" is the least recently used */
	cp_cache_release(c, cp_cache_put(c, "d", build(tl, 2000))); /* 4 x bytes > budget */
	CHECK(cp_cache_get(c, "a") == NULL);
	cp_cache_release(c, h);
	h = cp_cache_get(c, "d");
	CHECK(h != NULL);
	cp_cache_release(c, h);
	cp_cache_free(c);

	CHECK_EQ_INT(cp_cache_new(bytes, &c), 0); /* over half the budget */
	h = cp_cache_put(c, "a", build(tl, 2000));
	CHECK(h != NULL);
	CHECK(cp_cache_get(c, "a") == NULL);
	cp_cache_release(c, h); /* frees it */
	cp_cache_free(c);
	CHECK_EQ_INT(cp_cache_new(0, &c), 0);
	cp_cache_release(c, cp_cache_put(c, "a", build(tl, 2000)));
	CHECK(cp_cache_get(c, "a") == NULL);
	cp_cache_free(c);
	timeline_free(tl);
}

/* The analysis table's entry (analysis_run) and a request solved on a
 * built graph (what the RPC method does) give the same tree, what-if
 * included. */
static void test_table_entry(void)
{
	struct timeline *tl = load(launches);
	cJSON *p = cJSON_Parse("{\"kernel_kernel_threshold_us\": 2000, \"edits\": "
			       "[{\"kind\":\"kernel\",\"scale\":0.5}]}");
	cJSON *viatable = NULL, *direct = NULL;
	struct cp_request rq;
	struct cp_solved s;
	struct cp_graph *g = NULL;
	char err[256] = "", *a, *b;

	CHECK_EQ_INT(analysis_run("critical_path", tl, p, &viatable, err, sizeof(err)), 0);
	CHECK_EQ_INT(cp_request_parse(p, &rq, err, sizeof(err)), 0);
	rq.o.rank = 0;
	CHECK_EQ_INT(cp_build(tl, &rq.o, &g, err, sizeof(err)), 0);
	CHECK_EQ_INT(cp_request_solve(g, &rq, &s, &direct, err, sizeof(err)), 0);
	cp_request_whatif_json(&rq, &s, direct);
	CHECK(cJSON_GetObjectItemCaseSensitive(viatable, "whatif") != NULL);
	a = cJSON_PrintUnformatted(viatable);
	b = cJSON_PrintUnformatted(direct);
	CHECK_STREQ(a, b);
	free(a);
	free(b);
	cp_solved_finish(&s);
	cp_graph_free(g);
	cJSON_Delete(viatable);
	cJSON_Delete(direct);
	cJSON_Delete(p);
	timeline_free(tl);
}

/*
 * The annotation's instances count in HTA's row order (4.9): after the
 * step filter, GPUKernelFilter rows before the others. 0 ProfilerStep#1,
 * 1 "mark" (CPU), 2 launch, 3 kernel "mark_k", 4 an op inside the
 * kernel's time, 5 ProfilerStep#2 (cut).
 */
static void test_annotation_order(void)
{
	struct timeline *tl = load(
	    CPU("ProfilerStep#1", "user_annotation", 0, 150, -1) "," CPU(
		"mark", "cpu_op", 10, 5, -1) "," CPU("cudaLaunchKernel", "cuda_runtime", 20, 5,
						     7) "," GPU("mark_k", "kernel", 7, 50, 10, 7,
								"") "," CPU("aten::op", "cpu_op", 52, 3,
									    -1) "," CPU("ProfilerStep#2",
											"user_annotation",
											200, 50, -1));
	const struct tl_rank *r = timeline_rank_at(tl, 0);
	struct cp_opts o;
	struct cp_graph *g = NULL;
	char err[256] = "";

	CHECK(r->flags & TL_RANK_STEP_FILTERED);
	cp_opts_default(&o);
	o.annotation = "mark";
	for (int i = 0; i < 2; i++) {
		o.instance_lo = o.instance_hi = i;
		CHECK_EQ_INT(cp_build(tl, &o, &g, err, sizeof(err)), 0);
		/* instance 0: the kernel (a GPUKernelFilter row), then the op */
		CHECK_EQ_INT((g ? g->win_lo : -1), (i ? 10000 : 50000));
		CHECK_EQ_INT((g ? g->win_hi : -1), (i ? 15000 : 60000));
		cp_graph_free(g);
		g = NULL;
	}
	o.instance_lo = o.instance_hi = 2;
	CHECK(cp_build(tl, &o, &g, err, sizeof(err)) < 0);
	CHECK(strstr(err, "2 instances") != NULL);
	timeline_free(tl);
}

int main(void)
{
	RUN(test_launch_vs_kernel_kernel);
	RUN(test_blocking_sync);
	RUN(test_event_record_wait);
	RUN(test_cycle_rejected);
	RUN(test_whatif);
	RUN(test_annotation_order);
	RUN(test_table_entry);
	RUN(test_graph_cache);
	return test_summary();
}
