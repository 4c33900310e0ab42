// SPDX-License-Identifier: MIT
/* gpuprofctl top: the hottest GPU kernels, live, from gpu.top. */
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TOP_MAX_PIDS 64

struct top_args {
	int64_t pids[TOP_MAX_PIDS];
	size_t npids;
	uint64_t window_ms, interval_ms, limit, count;
};

static volatile sig_atomic_t top_stop;

/* "500ms", "5s", "2m" or bare seconds, into ms. The CLI links only the
 * client library, so it parses the few units it accepts itself. */
static int parse_ms(const char *s, uint64_t *ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -EINVAL;
	if (!*end || !strcmp(end, "s"))
		v *= 1000;
	else if (!strcmp(end, "m"))
		v *= 60000;
	else if (strcmp(end, "ms"))
		return -EINVAL;
	if (v > 86400000.0)
		return -ERANGE;
	*ms = (uint64_t)v;
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

static int top_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct top_args *a = ctx;

	switch (opt) {
	case 'p': {
		int64_t pid;
		int r = cli_opt_pid(cli, arg, a->npids, TOP_MAX_PIDS, &pid);

		if (r != CLI_CONTINUE)
			return r;
		a->pids[a->npids++] = pid;
		break;
	}
	case 'w':
		if (parse_ms(arg, &a->window_ms) < 0 || !a->window_ms || a->window_ms > 3600000)
			return cli_usage_error(cli, "invalid --window '%s' (1ms to 1h)", arg);
		break;
	case 'i':
		if (parse_ms(arg, &a->interval_ms) < 0 || a->interval_ms < 100)
			return cli_usage_error(cli, "invalid --interval '%s' (at least 100ms)",
					       arg);
		break;
	case 'n':
		if (!cli_parse_u64(arg, &a->limit) || !a->limit || a->limit > 1000)
			return cli_usage_error(cli, "invalid --limit '%s' (1 to 1000)", arg);
		break;
	case 'c':
		if (!cli_parse_u64(arg, &a->count) || !a->count)
			return cli_usage_error(cli, "invalid --count '%s'", arg);
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

static void print_top(const cJSON *res, const struct top_args *a, bool clear)
{
	static const char *const hdr[] = {">LAUNCHES", ">PER SEC", "KERNEL", "GEOMETRY",
					  "CALL SITES (launches)"};
	const cJSON *ks = cJSON_GetObjectItemCaseSensitive(res, "kernels"), *k;
	char b1[32], b2[32], sites[512];
	struct table *t;

	if (clear)
		fputs("\033[H\033[2J", stdout);
	printf("gpuprofctl top: %.0f launches in the last %s (%.1f/s)",
	       json_num(res, "launches", 0), fmt_duration_ns(b1, (double)a->window_ms * 1e6),
	       json_num(res, "launches_per_s", 0));
	if (a->npids) {
		printf(", pid");
		for (size_t i = 0; i < a->npids; i++)
			printf(" %lld", (long long)a->pids[i]);
	}
	printf("\n\n");
	t = table_new(5, hdr);
	cJSON_ArrayForEach(k, ks)
	{
		const cJSON *ss = cJSON_GetObjectItemCaseSensitive(k, "call_sites"), *s;
		size_t off = 0;

		sites[0] = '\0';
		cJSON_ArrayForEach(s, ss)
		{
			int n = snprintf(sites + off, sizeof(sites) - off, "%s%s (%.0f)",
					 off ? ", " : "", json_str(s, "name", "?"),
					 json_num(s, "launches", 0));
			if (n < 0 || (size_t)n >= sizeof(sites) - off)
				break;
			off += (size_t)n;
		}
		snprintf(b1, sizeof(b1), "%.0f", json_num(k, "launches", 0));
		snprintf(b2, sizeof(b2), "%.1f", json_num(k, "launches_per_s", 0));
		table_add(t, b1, b2, json_str(k, "name", "?"), json_str(k, "geometry", ""), sites);
	}
	table_print(t);
	table_free(t);
	fflush(stdout);
}

int cmd_gpu_top(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"window", required_argument, NULL, 'w'},
		{"interval", required_argument, NULL, 'i'},
		{"limit", required_argument, NULL, 'n'},
		{"count", required_argument, NULL, 'c'},
		{},
	};
	struct top_args a = {.window_ms = 5000, .interval_ms = 1000, .limit = 20};
	bool tty = isatty(STDOUT_FILENO);
	int first, r;
	cJSON *p;

	r = cli_parse(cli, argc, argv, "p:w:i:n:c:", opts, top_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (first < argc)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first]);
	r = cli_connect(cli);
	if (r)
		return r;
	p = cJSON_CreateObject();
	if (!p)
		return cli_fail(EXIT_LOCAL_IO, "out of memory");
	if (a.npids) {
		cJSON *pa = cJSON_AddArrayToObject(p, "pids");
		for (size_t i = 0; i < a.npids; i++)
			cJSON_AddItemToArray(pa, cJSON_CreateNumber((double)a.pids[i]));
	}
	cJSON_AddNumberToObject(p, "window_ms", (double)a.window_ms);
	cJSON_AddNumberToObject(p, "limit", (double)a.limit);
	char *params = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	if (!params)
		return cli_fail(EXIT_LOCAL_IO, "out of memory");

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	for (uint64_t n = 0; !top_stop; n++) {
		char *res = NULL;

		r = gpuprof_client_call(cli->client, "gpu.top", params, NULL, 0, &res);
		if (r < 0) {
			free(params);
			return cli_call_failed(cli, "gpu.top", r);
		}
		if (cli->json) {
			r = print_json_text(res);
			free(res);
			break;
		}
		cJSON *o = cli_parse_reply(res);
		free(res);
		if (!o) {
			free(params);
			return cli_fail(EXIT_REMOTE, "gpu.top: malformed reply");
		}
		print_top(o, &a, tty);
		cJSON_Delete(o);
		r = EXIT_OK;
		if ((a.count && n + 1 >= a.count) || (!tty && !a.count))
			break; /* not a terminal: one table, like top -b -n 1 */
		struct timespec ts = {(time_t)(a.interval_ms / 1000),
				      (long)(a.interval_ms % 1000) * 1000000};
		while (!top_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	free(params);
	return r;
}
