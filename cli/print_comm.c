// SPDX-License-Identifier: MIT
/*
 * gpuprofctl analyze comm ID [--rank R] [--svg FILE] [KEY=VALUE]...:
 * communication metrics as tables (breakdown per rank, bandwidth per tag,
 * phase windows, groups, stragglers), --json for the raw result, and an
 * SVG (stacked bars + phase-window CDF) the daemon writes to FILE.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gpuprof/client.h>

static const char *const tags[] = {"DP", "TP", "PP", "EP", "OTHER"};

static const cJSON *path(const cJSON *o, const char *a, const char *b, const char *c)
{
	o = cJSON_GetObjectItemCaseSensitive(o, a);
	if (b)
		o = cJSON_GetObjectItemCaseSensitive(o, b);
	if (c)
		o = cJSON_GetObjectItemCaseSensitive(o, c);
	return o;
}

static const char *pct(char *buf, const cJSON *v)
{
	if (!cJSON_IsNumber(v))
		return "-";
	snprintf(buf, 32, "%.1f%%", 100 * v->valuedouble);
	return buf;
}

static const char *num(char *buf, const cJSON *v, double scale, int decimals)
{
	if (!cJSON_IsNumber(v))
		return "-";
	snprintf(buf, 32, "%.*f", decimals, v->valuedouble * scale);
	return buf;
}

static void breakdown_row(struct table *t, const char *who, const cJSON *b, const cJSON *ov)
{
	const cJSON *u = path(b, "union", "ratios", NULL), *cm = path(u, "comm", NULL, NULL);
	char c[10][32];

	table_add(t, who, num(c[0], path(b, "union", "iteration_time_us", NULL), 1e-3, 3),
		  pct(c[1], path(u, "compute", NULL, NULL)), pct(c[2], path(cm, "DP", NULL, NULL)),
		  pct(c[3], path(cm, "TP", NULL, NULL)), pct(c[4], path(cm, "PP", NULL, NULL)),
		  pct(c[5], path(cm, "EP", NULL, NULL)), pct(c[6], path(cm, "OTHER", NULL, NULL)),
		  pct(c[7], path(u, "memory", NULL, NULL)), pct(c[8], path(u, "idle", NULL, NULL)),
		  pct(c[9], ov));
}

/* A step not counted: rank, start, and the reason wrapped within 100
 * columns. */
static void print_left_out(const cJSON *x)
{
	const char *why = json_str(x, "reason", "?");
	char c[32];
	int col;

	col = printf("  left out: rank %d, the step at %s us:", (int)json_num(x, "rank", -1),
		     num(c, path(x, "start_us", NULL, NULL), 1, 3));
	while (*why) {
		size_t n = strcspn(why, " ");

		if (col + 1 + (int)n > 98)
			col = printf("\n   ");
		col += printf(" %.*s", (int)n, why);
		why += n;
		why += strspn(why, " ");
	}
	printf("\n");
}

/* At most this many (rank, iteration) rows; --json has them all. */
#define ITER_ROWS 24

/* Per (rank, iteration): the specification's breakdown, in ms. */
static void print_iterations(const cJSON *r)
{
	static const char *const h[] = {"RANK", ">ITER", ">TIME ms", ">DP",	 ">TP",
					">PP",	">EP",	 ">OTHER",   ">COMPUTE", ">IDLE"};
	const cJSON *x, *i;
	struct table *t = table_new(10, h);
	int rows = 0, more = 0;
	char c[10][32];

	printf("Per iteration (ms; comm = sums per tag, compute = T - comm union, idle = T - "
	       "kernels - comm):\n");
	cJSON_ArrayForEach(x, path(r, "ranks", NULL, NULL))
	{
		cJSON_ArrayForEach(i, path(x, "iteration_list", NULL, NULL))
		{
			const cJSON *b = path(i, "breakdown", NULL, NULL);
			const cJSON *cm = path(b, "comm_us", NULL, NULL);

			if (rows++ >= ITER_ROWS) {
				more++;
				continue;
			}
			snprintf(c[0], 32, "%d", (int)json_num(x, "rank", -1));
			table_add(t, c[0], num(c[1], path(i, "index", NULL, NULL), 1, 0),
				  num(c[2], path(i, "time_us", NULL, NULL), 1e-3, 3),
				  num(c[3], path(cm, "DP", NULL, NULL), 1e-3, 3),
				  num(c[4], path(cm, "TP", NULL, NULL), 1e-3, 3),
				  num(c[5], path(cm, "PP", NULL, NULL), 1e-3, 3),
				  num(c[6], path(cm, "EP", NULL, NULL), 1e-3, 3),
				  num(c[7], path(cm, "OTHER", NULL, NULL), 1e-3, 3),
				  num(c[8], path(b, "compute_spec_us", NULL, NULL), 1e-3, 3),
				  num(c[9], path(b, "idle_spec_us", NULL, NULL), 1e-3, 3));
		}
	}
	table_print(t);
	table_free(t);
	if (more)
		printf("(%d more rows: --json, or --rank R)\n", more);
	printf("\n");
}

/* Per collective type: events, sizes, time and its share of comm time. */
static void print_types(const cJSON *r)
{
	static const char *const h[] = {"TYPE",	  ">EVENTS",  ">NO SIZE",
					">BYTES", ">TIME ms", ">SHARE"};
	const cJSON *x, *types = path(r, "types", NULL, NULL);
	struct table *t = table_new(6, h);
	double all = 0;
	char c[5][32];

	cJSON_ArrayForEach(x, types) all += json_num(x, "time_us", 0);
	cJSON_ArrayForEach(x, types)
	{
		const cJSON *b = path(x, "bytes", NULL, NULL);

		snprintf(c[4], 32, "%.1f%%", all > 0 ? 100 * json_num(x, "time_us", 0) / all : 0);
		table_add(t, x->string, num(c[0], path(x, "events", NULL, NULL), 1, 0),
			  num(c[1], path(x, "events_bytes_unknown", NULL, NULL), 1, 0),
			  cJSON_IsNumber(b) ? fmt_bytes(c[2], b->valuedouble) : "-",
			  num(c[3], path(x, "time_us", NULL, NULL), 1e-3, 3), c[4]);
	}
	printf("Per collective type:\n");
	table_print(t);
	table_free(t);
	printf("\n");
}

void print_comm(const cJSON *r)
{
	static const char *const bh[] = {"RANK", ">ITER ms", ">COMPUTE", ">DP",	  ">TP",     ">PP",
					 ">EP",	 ">OTHER",   ">MEMORY",	 ">IDLE", ">OVERLAP"};
	static const char *const wh[] = {"TAG",	      ">EVENTS",     ">NO SIZE",    ">BYTES",
					 ">TIME ms",  ">ALGBW GB/s", ">BUSBW GB/s", ">AVG UTIL",
					 ">P95 UTIL", ">GLOBAL UTIL"};
	static const char *const ph[] = {"FROM", "TO", ">COUNT", ">MEAN us", ">P50 us", ">P95 us"};
	static const char *const gh[] = {"GROUP",  "DESC",    ">SIZE",	      "TAG",
					 "SOURCE", ">EVENTS", "TYPES BY RULE"};
	static const char *const sh[] = {"GROUP",   ">INSTANCES", ">P50 us",
					 ">P95 us", ">MAX us",	  "LAST ARRIVALS (rank:count)"};
	const cJSON *it = path(r, "iterations", NULL, NULL), *x;
	struct table *t;
	char c[12][32];

	printf("ranks: %d   iterations: %d (%s)   iteration time mean %s ms, p99 %s ms\n",
	       (int)json_num(r, "nranks", 0), (int)json_num(it, "count", 0),
	       json_str(it, "source", "?"),
	       num(c[0], path(it, "time_mean_us", NULL, NULL), 1e-3, 3),
	       num(c[1], path(it, "time_p99_us", NULL, NULL), 1e-3, 3));
	cJSON_ArrayForEach(x, path(it, "left_out", NULL, NULL)) print_left_out(x);
	printf("link bandwidth: %s GB/s (%s)\n\n",
	       num(c[2], path(r, "link_bandwidth_Bps", NULL, NULL), 1e-9, 1),
	       json_str(r, "link_bandwidth_source", "?"));

	printf("Time breakdown (exact interval union; shares of iteration time):\n");
	t = table_new(11, bh);
	cJSON_ArrayForEach(x, path(r, "ranks", NULL, NULL))
	{
		char who[24];

		snprintf(who, sizeof(who), "%d", (int)json_num(x, "rank", -1));
		breakdown_row(t, who, path(x, "breakdown", NULL, NULL),
			      path(x, "overlap_ratio", NULL, NULL));
	}
	breakdown_row(t, "all", path(r, "breakdown", NULL, NULL),
		      path(r, "overlap", "average_overlap_ratio", NULL));
	table_print(t);
	table_free(t);
	{
		const cJSON *s = path(r, "breakdown", "sum", "ratios"),
			    *cm = path(s, "comm", NULL, NULL);

		printf("simple sums: kernels %s", pct(c[0], path(s, "compute", NULL, NULL)));
		for (int k = 0; k < 5; k++)
			printf(" %s %s", tags[k], pct(c[1], path(cm, tags[k], NULL, NULL)));
		printf(" memory %s idle %s\n", pct(c[2], path(s, "memory", NULL, NULL)),
		       pct(c[3], path(s, "idle", NULL, NULL)));
		printf("specification: compute = T - comm union %s, "
		       "idle = T - kernels - comm %s\n\n",
		       pct(c[0], path(s, "compute_spec", NULL, NULL)),
		       pct(c[1], path(s, "idle_spec", NULL, NULL)));
	}
	print_iterations(r);
	print_types(r);

	printf("Bandwidth and volume per parallelism:\n");
	t = table_new(10, wh);
	for (int k = 0; k < 5; k++) {
		const cJSON *b = path(r, "bandwidth", tags[k], NULL);

		if (json_num(b, "events", 0) == 0)
			continue;
		table_add(t, tags[k], num(c[0], path(b, "events", NULL, NULL), 1, 0),
			  num(c[1], path(b, "events_bytes_unknown", NULL, NULL), 1, 0),
			  cJSON_IsNumber(path(b, "total_bytes", NULL, NULL))
				  ? fmt_bytes(c[2], json_num(b, "total_bytes", 0))
				  : "-",
			  num(c[3], path(b, "time_us", NULL, NULL), 1e-3, 3),
			  num(c[4], path(b, "algbw_Bps", NULL, NULL), 1e-9, 2),
			  num(c[5], path(b, "busbw_Bps", NULL, NULL), 1e-9, 2),
			  pct(c[6], path(b, "avg_util", NULL, NULL)),
			  pct(c[7], path(b, "p95_util", NULL, NULL)),
			  pct(c[8], path(b, "global_avg_util", NULL, NULL)));
	}
	table_print(t);
	table_free(t);

	printf("\nPhase windows (next phase start - previous phase end; < 0 = overlap):\n");
	t = table_new(6, ph);
	cJSON_ArrayForEach(x, path(r, "phase_windows", NULL, NULL))
		table_add(t, json_str(x, "from", "?"), json_str(x, "to", "?"),
			  num(c[0], path(x, "count", NULL, NULL), 1, 0),
			  num(c[1], path(x, "mean_us", NULL, NULL), 1, 3),
			  num(c[2], path(x, "p50_us", NULL, NULL), 1, 3),
			  num(c[3], path(x, "p95_us", NULL, NULL), 1, 3));
	table_print(t);
	table_free(t);

	printf("\nProcess groups:\n");
	t = table_new(7, gh);
	cJSON_ArrayForEach(x, path(r, "groups", NULL, NULL))
	{
		char moved[128] = "";
		size_t n = 0;
		const cJSON *y;

		/* types a "collective" rule gave another tag */
		cJSON_ArrayForEach(y, path(x, "type_tags", NULL, NULL)) if (n < sizeof(moved) - 40)
			n += (size_t)snprintf(moved + n, sizeof(moved) - n, "%s%s:%s", n ? " " : "",
					      y->string, json_str(y, "tag", "?"));
		table_add(t, json_str(x, "key", ""), json_str(x, "desc", ""),
			  num(c[0], path(x, "size", NULL, NULL), 1, 0), json_str(x, "tag", ""),
			  json_str(x, "tag_source", ""),
			  num(c[1], path(x, "events", NULL, NULL), 1, 0), moved);
	}
	table_print(t);
	table_free(t);
	if (cJSON_GetArraySize(path(r, "unmapped_groups", NULL, NULL)) > 0)
		printf("unmapped groups are OTHER: map them with tags='[{\"match\":\"REGEX\",\"tag\":\"TP\"}]'\n");

	if (cJSON_GetArraySize(path(r, "straggler", "groups", NULL)) > 0) {
		printf("\nStragglers (start spread of one collective across ranks):\n");
		t = table_new(6, sh);
		cJSON_ArrayForEach(x, path(r, "straggler", "groups", NULL))
		{
			char last[256] = "";
			size_t n = 0;
			const cJSON *l;

			cJSON_ArrayForEach(l, path(x, "last_arrivals", NULL,
						   NULL)) if (n < sizeof(last) - 24)
				n += (size_t)snprintf(last + n, sizeof(last) - n, "%s%d:%d",
						      n ? " " : "", (int)json_num(l, "rank", -1),
						      (int)json_num(l, "count", 0));
			table_add(t, json_str(x, "group", ""),
				  num(c[0], path(x, "instances", NULL, NULL), 1, 0),
				  num(c[1], path(x, "spread_p50_us", NULL, NULL), 1, 1),
				  num(c[2], path(x, "spread_p95_us", NULL, NULL), 1, 1),
				  num(c[3], path(x, "spread_max_us", NULL, NULL), 1, 1), last);
		}
		table_print(t);
		table_free(t);
	}
	x = path(r, "reconciliation", NULL, NULL);
	printf("\nreconciliation: comm kernels %s ms = in iterations %s + outside %s",
	       num(c[0], path(x, "comm_kernel_time_us", NULL, NULL), 1e-3, 3),
	       num(c[1], path(x, "comm_time_in_iterations_us", NULL, NULL), 1e-3, 3),
	       num(c[2], path(x, "comm_time_outside_iterations_us", NULL, NULL), 1e-3, 3));
	if (json_num(x, "comm_time_left_out_us", 0) > 0) /* iterations=hta */
		printf("; left out %s ms",
		       num(c[5], path(x, "comm_time_left_out_us", NULL, NULL), 1e-3, 3));
	printf("\n  union %s ms (<= sum: %s); ratios sum to %s\n",
	       num(c[3], path(x, "comm_union_us", NULL, NULL), 1e-3, 3),
	       cJSON_IsTrue(path(x, "union_le_sum", NULL, NULL)) ? "yes" : "NO",
	       num(c[4], path(x, "union_ratio_sum", NULL, NULL), 1, 6));
}
