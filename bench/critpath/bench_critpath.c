// SPDX-License-Identifier: MIT
/*
 * Critical-path graph build + longest path on the largest reference graphs
 * (read at run time from $GPUPROF_SHARED) next to HTA's time for the same
 * invocation (reference/hta/timings.json), and on a synthetic trace from
 * bench/import's generator.
 *
 *   bench_critpath [SIZE]     SIZE of the synthetic trace, e.g. 64M (default), 1G
 *   bench_critpath PATH       a trace file (a name with a '/') instead of it
 *
 * Prints figures; never a test. Times are the best of several runs.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/critpath/critpath.h"
#include "analysis/parity.h"
#include "import/import.h"
#include "gen.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One build + solve; returns seconds, or -1. */
static double once(const struct timeline *tl, const struct cp_opts *o, uint32_t *nodes,
		   uint32_t *edges)
{
	struct cp_graph *g = NULL;
	struct cp_path p = {0};
	struct cp_counts c;
	char err[256];
	double t0 = now(), t;

	if (cp_build(tl, o, &g, err, sizeof(err)) || cp_solve(g, NULL, &p, err, sizeof(err))) {
		fprintf(stderr, "critical path failed: %s\n", err);
		cp_graph_free(g);
		return -1;
	}
	t = now() - t0;
	cp_graph_counts(g, &c);
	*nodes = c.node_list;
	*edges = c.edges;
	cp_path_finish(&p);
	cp_graph_free(g);
	return t;
}

static double best(const struct timeline *tl, const struct cp_opts *o, int runs, uint32_t *n,
		   uint32_t *e)
{
	double b = 1e30;

	for (int i = 0; i < runs; i++) {
		double t = once(tl, o, n, e);

		if (t < 0)
			return -1;
		b = t < b ? t : b;
	}
	return b;
}

static double hta_seconds(const char *trace, const char *key)
{
	FILE *f = fopen(parity_path("timings.json"), "rb");
	char *buf;
	long len;
	cJSON *j, *v;
	double s = -1;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
		buf[len] = 0;
		j = cJSON_Parse(buf);
		v = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
			    cJSON_GetObjectItemCaseSensitive(j, "traces"), trace),
			"analyses_s_best"),
		    key);
		if (cJSON_IsNumber(v))
			s = v->valuedouble;
		cJSON_Delete(j);
	}
	free(buf);
	fclose(f);
	return s;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *trace, *key, *annotation;
		int instance;
		const char *data_load;
	} refs[] = {
	    {"alexnet", "critical_path", "[param|pytorch.model.alex_net|0|0|0|measure|forward]", 1,
	     NULL},
	    {"simple_add", "critical_path", "[param|pytorch.model.alex_net|0|0|0|measure|forward]",
	     1, NULL},
	    {"simple_add", "critical_path_end_to_end_variant", "", 0, "data_load"},
	};
	const char *path = argc > 1 && strchr(argv[1], '/') ? argv[1] : NULL;
	uint64_t size = path ? 1 : argc > 1 ? gen_parse_size(argv[1]) : 64ull << 20;
	struct gen_opts go = {.size = size, .streams = 2, .world = 8};

	printf("%-12s %-34s %8s %8s %12s %12s %10s\n", "trace", "invocation", "nodes", "edges",
	       "ours_ms", "hta_ms", "speedup");
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		struct timeline *tl = parity_load_trace(refs[i].trace);
		struct cp_opts o;
		uint32_t n = 0, e = 0;
		double t, h;

		if (!tl) {
			fprintf(stderr, "cannot load %s (GPUPROF_SHARED?)\n", refs[i].trace);
			return 1;
		}
		cp_opts_default(&o);
		o.annotation = refs[i].annotation;
		o.instance_lo = o.instance_hi = refs[i].instance;
		o.zero_weight_launch = true; /* as the timed HTA invocation */
		if (refs[i].data_load)
			o.data_load[o.ndata_load++] = refs[i].data_load;
		t = best(tl, &o, 50, &n, &e);
		h = hta_seconds(refs[i].trace, refs[i].key);
		printf("%-12s %-34s %8u %8u %12.3f %12.1f %9.0fx\n", refs[i].trace, refs[i].key, n,
		       e, t * 1e3, h * 1e3, h > 0 && t > 0 ? h / t : 0);
		timeline_free(tl);
	}
	if (!size) {
		fprintf(stderr, "bad size\n");
		return 2;
	}
	{
		FILE *f = path ? fopen(path, "rb") : tmpfile();
		struct timeline *tl = NULL;
		struct import_result res;
		struct import_opts io = {.rank = 0};
		struct cp_opts o;
		uint32_t n = 0, e = 0;
		uint64_t bytes;
		double t0, ti, t;

		if (!f || timeline_new(&tl))
			return 1;
		if (path) {
			fseek(f, 0, SEEK_END);
			bytes = (uint64_t)ftell(f);
			fseek(f, 0, SEEK_SET);
		} else {
			bytes = gen_kineto_write(f, &go, 0);
			fflush(f);
		}
		lseek(fileno(f), 0, SEEK_SET);
		t0 = now();
		if (timeline_import_fd(fileno(f), &io, tl, &res)) {
			fprintf(stderr, "import failed: %s\n", res.error_msg);
			return 1;
		}
		ti = now() - t0;
		fclose(f);
		cp_opts_default(&o);
		o.rank = res.rank;
		t = best(tl, &o, 3, &n, &e);
		printf("%s %.0f MiB (import %.2f s): whole rank, %u nodes, %u edges: "
		       "build+path %.3f s (%.0f ns per edge); HTA: not timed on this trace\n",
		       path ? path : "synthetic", (double)bytes / 1048576.0, ti, n, e, t,
		       t * 1e9 / (e ? e : 1));
		timeline_free(tl);
	}
	return 0;
}
