// SPDX-License-Identifier: MIT
/* gpuprofctl status / version. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof-build.h"

/* Commands without options or operands share this. */
static int no_operands(struct cli *cli, int argc, char **argv)
{
	int first, r = cli_parse(cli, argc, argv, "", NULL, NULL, NULL, &first);

	if (r != CLI_CONTINUE)
		return r;
	if (first < argc)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first]);
	return CLI_CONTINUE;
}

/* The user-stack unwinder: completeness, why stacks stopped, its memory,
 * and (privileged peers) the busiest processes' modes. */
static void print_unwind(const cJSON *u)
{
	const cJSON *by = cJSON_GetObjectItemCaseSensitive(u, "truncated_by");
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(u, "by_process"), *p;
	double n = json_num(u, "samples", 0);
	char b1[32], b2[32];

	if (!u)
		return;
	printf("unwind:     %.0f stacks, %.1f%% complete; truncated: %.0f stack copy, %.0f no rule, "
	       "%.0f process gone, %.0f depth, %.0f bad frame\n",
	       n, n > 0 ? 100.0 * json_num(u, "complete", 0) / n : 100.0,
	       json_num(by, "stack_copy", 0), json_num(by, "no_rule", 0),
	       json_num(by, "process_gone", 0), json_num(by, "depth", 0),
	       json_num(by, "bad_frame", 0));
	printf("            caches %s of %s, %.0f processes, %.0f objects; %.0f B copied per stack\n",
	       fmt_bytes(b1, json_num(u, "bytes", 0)),
	       fmt_bytes(b2, json_num(u, "budget_bytes", 0)), json_num(u, "processes", 0),
	       json_num(u, "objects", 0), json_num(u, "stack_bytes_per_sample", 0));
	if (!cJSON_IsArray(procs) || !cJSON_GetArraySize(procs))
		return;
	static const char *const hdr[] = {">PID", "MODE", ">STACKS", ">TRUNCATED", ">MAPPINGS"};
	struct table *t = table_new(5, hdr);
	char c1[32], c2[32], c3[32], c4[32];
	cJSON_ArrayForEach(p, procs)
	{
		snprintf(c1, sizeof(c1), "%.0f", json_num(p, "pid", 0));
		snprintf(c2, sizeof(c2), "%.0f", json_num(p, "samples", 0));
		snprintf(c3, sizeof(c3), "%.0f", json_num(p, "truncated", 0));
		snprintf(c4, sizeof(c4), "%.0f", json_num(p, "mappings", 0));
		table_add(t, c1, json_str(p, "mode", "?"), c2, c3, c4);
	}
	putchar('\n');
	table_print(t);
	table_free(t);
}

/* Continuous profiles, when the daemon pushes them: what left, what was
 * lost and why. */
static void print_push(const cJSON *p)
{
	const cJSON *up = cJSON_GetObjectItemCaseSensitive(p, "upload");
	const cJSON *dir = cJSON_GetObjectItemCaseSensitive(p, "dir_sink");

	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "enabled")))
		return;
	printf("push:       %.0f profiles of %.0f windows, %.0f skipped busy, %.0f failed\n",
	       json_num(p, "profiles", 0), json_num(p, "windows", 0),
	       json_num(p, "skipped_busy", 0), json_num(p, "build_failures", 0));
	if (up)
		printf("            upload: %.0f sent, %.0f queued, %.0f retries, %.0f dropped "
		       "(queue full), %.0f rejected\n",
		       json_num(up, "sent", 0), json_num(up, "queued", 0),
		       json_num(up, "retries", 0), json_num(up, "dropped_queue_full", 0),
		       json_num(up, "dropped_rejected", 0));
	if (dir)
		printf("            directory: %.0f written, %.0f files kept, %.0f removed, "
		       "%.0f failed\n",
		       json_num(dir, "written", 0), json_num(dir, "files", 0),
		       json_num(dir, "removed", 0), json_num(dir, "write_failures", 0));
}

/* One process's PC sampling as its library counts it: enough to tell why
 * it got no samples (no GetData, CUPTI gave none, or an error and which
 * call returned it). */
static void print_pc(double pid, const char *when, const cJSON *pl)
{
	char err[96] = "";

	if (!pl)
		return;
	if (json_num(pl, "errors", 0) > 0)
		snprintf(err, sizeof(err), "; last error %.0f from %s",
			 json_num(pl, "last_error", 0), json_str(pl, "last_error_call", "?"));
	printf("pc:         pid %.0f%s: %.0f samples, %.0f sent; %.0f GetData, %.0f PCs, CUPTI "
	       "total %.0f; contexts %.0f on, %.0f ever, %.0f off; %.0f errors%s; %.0f windows, "
	       "enabled per %s\n",
	       pid, when, json_num(pl, "samples", 0), json_num(pl, "sent", 0),
	       json_num(pl, "getdata_calls", 0), json_num(pl, "pcs", 0),
	       json_num(pl, "cupti_total_samples", 0), json_num(pl, "contexts_on", 0),
	       json_num(pl, "contexts_ever", 0), json_num(pl, "contexts_off", 0),
	       json_num(pl, "errors", 0), err, json_num(pl, "windows", 0),
	       json_str(pl, "enable_mode", "context"));
}

/* A connection whose library lets CUPTI's subscription go between duty
 * windows (GPUPROF_CUPTI_IDLE=unsubscribe): one line; nothing for the
 * default, which keeps it. */
static void print_idle(double pid, const cJSON *idle)
{
	if (strcmp(json_str(idle, "mode", ""), "unsubscribe"))
		return;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(idle, "applies"))) {
		printf("cupti idle: pid %.0f keeps the subscription between windows (for %s)\n",
		       pid, json_str(idle, "kept_for", "?"));
		return;
	}
	printf("cupti idle: pid %.0f unsubscribes between windows: %.0f let go, %.0f taken back, "
	       "%.0f failed%s\n",
	       pid, json_num(idle, "unsubscribes", 0), json_num(idle, "resubscribes", 0),
	       json_num(idle, "resubscribe_failures", 0),
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(idle, "unsubscribed_now"))
		       ? "; out now"
		       : "");
}

/* The CUPTI library's connections (docs/collectors.md, "NVIDIA"): totals,
 * then the connections the caller may see. */
static void print_cupti(const cJSON *cu)
{
	const cJSON *dr = cJSON_GetObjectItemCaseSensitive(cu, "drops");
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(cu, "records");
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(cu, "closed");
	const cJSON *peers = cJSON_GetObjectItemCaseSensitive(cu, "peer_list"), *p;
	double kinds = 0;
	const cJSON *k;

	if (!cu || !cJSON_GetObjectItemCaseSensitive(cu, "peers_ever"))
		return;
	cJSON_ArrayForEach(k, rec)
	{
		if (cJSON_IsNumber(k) && strcmp(k->string, "string") &&
		    strcmp(k->string, "stats") && strcmp(k->string, "unknown"))
			kinds += k->valuedouble;
	}
	printf("cupti:      %.0f connections (%.0f ever), %.0f stepped aside, %.0f records\n",
	       json_num(cu, "peers", 0), json_num(cu, "peers_ever", 0),
	       json_num(cu, "conflicts", 0), kinds);
	printf("            dropped: %.0f rate, %.0f names, %.0f time; closed: %.0f malformed, "
	       "%.0f refused\n",
	       json_num(dr, "rate", 0), json_num(dr, "strings", 0) + json_num(dr, "undefined", 0),
	       json_num(dr, "time", 0), json_num(cl, "malformed", 0),
	       json_num(cl, "limit", 0) + json_num(cl, "credentials", 0));
	cJSON_ArrayForEach(p, peers)
	{
		print_pc(json_num(p, "pid", 0), "",
			 cJSON_GetObjectItemCaseSensitive(p, "pc_library"));
		print_idle(json_num(p, "pid", 0), cJSON_GetObjectItemCaseSensitive(p, "idle"));
	}
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(cu, "pc_closed"))
	{
		print_pc(json_num(p, "pid", 0), " (gone)",
			 cJSON_GetObjectItemCaseSensitive(p, "pc_library"));
	}
	if (!cJSON_IsArray(peers) || !cJSON_GetArraySize(peers))
		return;
	static const char *const hdr[] = {">PID",     "COMM",	  ">UID",      "STATE",
					  ">RECORDS", "CONFLICT", "LAST ERROR"};
	struct table *t = table_new(7, hdr);
	char c1[32], c2[32], c3[32];
	cJSON_ArrayForEach(p, peers)
	{
		snprintf(c1, sizeof(c1), "%.0f", json_num(p, "pid", 0));
		snprintf(c2, sizeof(c2), "%.0f", json_num(p, "uid", 0));
		snprintf(c3, sizeof(c3), "%.0f", json_num(p, "records", 0));
		table_add(t, c1, json_str(p, "comm", ""), c2, json_str(p, "state", "?"), c3,
			  json_str(p, "conflict", ""), json_str(p, "last_error", ""));
	}
	putchar('\n');
	table_print(t);
	table_free(t);
}

/* A cache the analyses keep under a budget (status's analysis_cache,
 * graph_cache): use against budget, then how well it serves. */
static void print_cache(const char *label, const cJSON *c)
{
	char b1[32], b2[32];

	if (!c)
		return;
	printf("%-12s%.0f kept, %s of %s; %.0f hits, %.0f misses, %.0f evicted, %.0f too large\n",
	       label, json_num(c, "entries", 0), fmt_bytes(b1, json_num(c, "bytes", 0)),
	       fmt_bytes(b2, json_num(c, "budget_bytes", 0)), json_num(c, "hits", 0),
	       json_num(c, "misses", 0), json_num(c, "evicted", 0), json_num(c, "too_large", 0));
}

/* The analyses' caches: decoded timelines, critical-path graphs, and the
 * big scratch blocks kept for the next analysis. */
static void print_caches(const cJSON *st)
{
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(st, "analysis_scratch");
	char b1[32], b2[32], b3[32];

	print_cache("timelines:", cJSON_GetObjectItemCaseSensitive(st, "analysis_cache"));
	print_cache("graphs:", cJSON_GetObjectItemCaseSensitive(st, "graph_cache"));
	if (sc)
		printf("scratch:    %s of %s kept; %.0f reused, %.0f fresh, %s given back\n",
		       fmt_bytes(b1, json_num(sc, "bytes", 0)),
		       fmt_bytes(b2, json_num(sc, "cap_bytes", 0)), json_num(sc, "reused", 0),
		       json_num(sc, "fresh", 0), fmt_bytes(b3, json_num(sc, "trimmed_bytes", 0)));
}

static void print_status(const cJSON *st)
{
	const cJSON *store = cJSON_GetObjectItemCaseSensitive(st, "store");
	const cJSON *clients = cJSON_GetObjectItemCaseSensitive(st, "clients");
	const cJSON *caps = cJSON_GetObjectItemCaseSensitive(st, "captures");
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(st, "jobs");
	const cJSON *cols = cJSON_GetObjectItemCaseSensitive(st, "collectors");
	char b1[32], b2[32], b3[32];

	printf("daemon:     gpuprofd %s, pid %.0f, up %s\n", json_str(st, "version", "?"),
	       json_num(st, "pid", 0), fmt_duration_ns(b1, json_num(st, "uptime_s", 0) * 1e9));
	if (store) {
		double newest = json_num(store, "newest_ns", 0),
		       oldest = json_num(store, "oldest_ns", 0);
		printf("store:      %.0f of %.0f records, budget %s; tables %s of %s\n",
		       json_num(store, "records", 0), json_num(store, "capacity", 0),
		       fmt_bytes(b1, json_num(store, "budget_bytes", 0)),
		       fmt_bytes(b2, json_num(store, "table_bytes", 0)),
		       fmt_bytes(b3, json_num(store, "table_budget_bytes", 0)));
		printf("            %.0f appended, %.0f dropped, %.0f evicted, %.0f strings, "
		       "%.0f stacks, spans %s\n",
		       json_num(store, "appended", 0), json_num(store, "dropped", 0),
		       json_num(store, "evicted", 0), json_num(store, "strings", 0),
		       json_num(store, "stacks", 0),
		       fmt_duration_ns(b1, newest > oldest ? newest - oldest : 0));
	}
	if (clients)
		printf("clients:    %.0f of %.0f connected%s\n", json_num(clients, "connected", 0),
		       json_num(clients, "max", 0),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(clients, "privileged"))
			       ? " (you are privileged)"
			       : "");
	if (caps)
		printf("captures:   %.0f, %s on disk\n", json_num(caps, "count", 0),
		       fmt_bytes(b1, json_num(caps, "bytes", 0)));
	if (jobs)
		printf("jobs:       %.0f of %.0f running\n", json_num(jobs, "running", 0),
		       json_num(jobs, "max", 0));
	print_caches(st);
	print_push(cJSON_GetObjectItemCaseSensitive(st, "push"));
	print_unwind(cJSON_GetObjectItemCaseSensitive(st, "unwind"));
	print_cupti(cJSON_GetObjectItemCaseSensitive(st, "cupti"));
	if (!cJSON_IsArray(cols))
		return;
	static const char *const hdr[] = {"NAME", "STATE", ">EVENTS", ">DROPS", "REASON"};
	struct table *t = table_new(5, hdr);
	const cJSON *c;
	cJSON_ArrayForEach(c, cols)
	{
		snprintf(b1, sizeof(b1), "%.0f", json_num(c, "events", 0));
		snprintf(b2, sizeof(b2), "%.0f", json_num(c, "drops", 0));
		table_add(t, json_str(c, "name", "?"), json_str(c, "state", "?"), b1, b2,
			  json_str(c, "reason", ""));
	}
	putchar('\n');
	table_print(t);
	table_free(t);
}

static void print_version(const cJSON *v)
{
	printf("gpuprofctl %s (protocol %d)\n", GPUPROF_VERSION, GPUPROF_PROTOCOL_VERSION);
	printf("gpuprofd   %s (protocol %.0f)\n", json_str(v, "version", "?"),
	       json_num(v, "protocol", 0));
}

/* A call without parameters: its result as JSON (--json) or through print. */
static int query(struct cli *cli, int argc, char **argv, const char *method,
		 int (*call)(struct gpuprof_client *client, char **result_json),
		 void (*print)(const cJSON *result))
{
	char *res = NULL;
	int r = no_operands(cli, argc, argv);

	if (r != CLI_CONTINUE)
		return r;
	r = cli_connect(cli);
	if (r)
		return r;
	r = call(cli->client, &res);
	if (r < 0)
		return cli_call_failed(cli, method, r);
	if (cli->json) {
		print_json_text(res);
	} else {
		cJSON *o = cli_parse_reply(res);
		print(o);
		cJSON_Delete(o);
	}
	free(res);
	return EXIT_OK;
}

int cmd_status(struct cli *cli, int argc, char **argv)
{
	return query(cli, argc, argv, "status", gpuprof_status, print_status);
}

int cmd_version(struct cli *cli, int argc, char **argv)
{
	return query(cli, argc, argv, "version", gpuprof_version, print_version);
}
