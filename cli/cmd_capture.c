// SPDX-License-Identifier: MIT
/* gpuprofctl capture / list / info / delete. */
#include "cli.h"
#include "timearg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PIDS 64

static const char *owner_name(char *buf, double uid)
{
	struct passwd *pw = getpwuid((uid_t)uid);

	if (pw)
		return pw->pw_name;
	snprintf(buf, 32, "%.0f", uid);
	return buf;
}

/* An integer member of object OBJ in the reply text, exactly: cJSON keeps
 * numbers as doubles, which round nanosecond timestamps past 2^53 ns
 * (104 days after the epoch). The key is found in the raw text: a quote
 * inside a JSON string is escaped, so '"KEY":' can only be a member. */
static bool raw_int(const char *text, const char *obj, const char *key, long long *v)
{
	char pat[64];
	const char *p;
	char *end;

	if (!text)
		return false;
	snprintf(pat, sizeof(pat), "\"%s\":", obj);
	if (!(p = strstr(text, pat)))
		return false;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	if (!(p = strstr(p, pat)))
		return false;
	p += strlen(pat);
	while (*p == ' ')
		p++;
	errno = 0;
	*v = strtoll(p, &end, 10);
	return end != p && errno == 0 && *end != '.' && *end != 'e' && *end != 'E';
}

/* raw: the reply's text, for exact integers (NULL: as parsed). */
void print_capture_info(const cJSON *info, const char *raw)
{
	const cJSON *imp = cJSON_GetObjectItemCaseSensitive(info, "import");
	const cJSON *win = cJSON_GetObjectItemCaseSensitive(info, "window");
	const cJSON *pids = cJSON_GetObjectItemCaseSensitive(info, "pids");
	const cJSON *by_type = cJSON_GetObjectItemCaseSensitive(info, "by_type");
	const cJSON *c;
	char b[32];

	printf("id:                %.0f\n", json_num(info, "id", 0));
	printf("name:              %s\n", json_str(info, "name", ""));
	printf("kind:              %s\n", json_str(info, "kind", "?"));
	printf("state:             %s\n", json_str(info, "state", "?"));
	if (cJSON_GetObjectItemCaseSensitive(info, "damage"))
		printf("damage:            %s\n", json_str(info, "damage", "?"));
	if (cJSON_GetObjectItemCaseSensitive(info, "error"))
		printf("error:             %s\n", json_str(info, "error", "?"));
	printf("owner:             %s\n", owner_name(b, json_num(info, "owner_uid", 0)));
	printf("created:           %s\n", json_str(info, "created", "?"));
	if (win) {
		long long a, z;

		if (raw_int(raw, "window", "start_ns", &a) && raw_int(raw, "window", "end_ns", &z))
			printf("window:            %lld .. %lld ns\n", a, z);
		else
			printf("window:            %.0f .. %.0f ns\n", json_num(win, "start_ns", 0),
			       json_num(win, "end_ns", 0));
		printf("duration:          %s\n",
		       fmt_duration_ns(b, json_num(win, "duration_ns", 0)));
	}
	printf("pids:             ");
	if (cJSON_GetArraySize(pids) == 0)
		printf(" all");
	cJSON_ArrayForEach(c, pids) printf(" %.0f", c->valuedouble);
	putchar('\n');
	if (imp) /* an import's trace events live in its timeline, not as records */
		printf("events:            %.0f\n", json_num(imp, "events", 0));
	printf("records:           %.0f\n", json_num(info, "records", 0));
	cJSON_ArrayForEach(c, by_type) printf("  %-16s %.0f\n", c->string, c->valuedouble);
	printf("strings:           %.0f\n", json_num(info, "strings", 0));
	printf("stacks:            %.0f\n", json_num(info, "stacks", 0));
	printf("size:              %s\n", fmt_bytes(b, json_num(info, "file_bytes", 0)));
	printf("evicted in window: %.0f\n", json_num(info, "evicted_in_window", 0));
	printf("warnings:          %.0f\n", json_num(info, "warnings", 0));
	/* a duty-cycled CUPTI library: the rest of the window is unknown */
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(info, "gpu_coverage");
	if (g)
		printf("gpu coverage:      %.1f %% (CUPTI duty %.0f %%, %.0f windows): GPU time and "
		       "idle outside the windows are unknown\n",
		       100 * json_num(g, "covered_fraction", 0), json_num(g, "duty_percent", 0),
		       json_num(g, "windows", 0));
}

int cli_write_folded(struct cli *cli, uint64_t id, int out_fd, cJSON *params, bool print_result)
{
	char *text, *res = NULL;
	int r;

	cJSON_DeleteItemFromObjectCaseSensitive(params, "id");
	cJSON_AddNumberToObject(params, "id", (double)id);
	text = cJSON_PrintUnformatted(params);
	if (!text)
		return cli_fail(EXIT_LOCAL_IO, "out of memory");
	r = gpuprof_call_with_output(cli->client, "capture.folded", text, out_fd,
				     print_result ? &res : NULL);
	free(text);
	if (r < 0)
		return cli_call_failed(cli, "capture.folded", r);
	r = print_result && res ? print_json_text(res) : EXIT_OK;
	free(res);
	return r;
}

struct capture_args {
	int32_t pids[MAX_PIDS];
	size_t npids;
	uint64_t duration_ms, last_ms;
	/* --since / --until: set, the time, its clock (wall or monotonic) */
	bool since, until, since_wall, until_wall;
	uint64_t since_ns, until_ns;
	const char *name, *out;
	bool no_wait;
};

enum { OPT_NO_WAIT = 0x200, OPT_SINCE, OPT_UNTIL };

/* --since / --until T. */
static int time_opt(struct cli *cli, const char *opt, const char *arg, bool *set, uint64_t *ns,
		    bool *wall)
{
	int r = cli_parse_time(arg, ns, wall);

	if (r == -EDOM)
		return cli_usage_error(cli, "%s '%s': give the time zone (Z or +HH:MM)", opt, arg);
	if (r < 0)
		return cli_usage_error(cli,
				       "%s '%s': not a time (the daemon's monotonic ns as a "
				       "capture's window shows them, @EPOCH_SECONDS, or "
				       "2026-11-28T07:30:00Z)",
				       opt, arg);
	*set = true;
	return CLI_CONTINUE;
}

static int capture_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct capture_args *a = ctx;
	uint64_t v;

	switch (opt) {
	case 'p': {
		int64_t pid;
		int r = cli_opt_pid(cli, arg, a->npids, MAX_PIDS, &pid);

		if (r != CLI_CONTINUE)
			return r;
		a->pids[a->npids++] = (int32_t)pid;
		break;
	}
	case 'd':
	case 'l':
		if (gpuprof_parse_duration_ms(arg, &v) < 0 || v == 0)
			return cli_usage_error(cli, "invalid duration '%s' (e.g. 500ms, 10s, 2m)",
					       arg);
		*(opt == 'd' ? &a->duration_ms : &a->last_ms) = v;
		break;
	case 'n':
		a->name = arg;
		break;
	case 'o':
		a->out = arg;
		break;
	case OPT_NO_WAIT:
		a->no_wait = true;
		break;
	case OPT_SINCE:
		return time_opt(cli, "--since", arg, &a->since, &a->since_ns, &a->since_wall);
	case OPT_UNTIL:
		return time_opt(cli, "--until", arg, &a->until, &a->until_ns, &a->until_wall);
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

/* A --duration recording: the daemon answers when the window is over. */
struct countdown {
	int64_t start_ms, duration_ms;
};

static void fmt_secs(char *buf, size_t len, int64_t s)
{
	if (s < 60)
		snprintf(buf, len, "%llds", (long long)s);
	else
		snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
}

/* "capturing: 7s left of 10s [#########...........]", then, past the end,
 * the daemon's closing of the capture. */
static void countdown_line(void *ctx, char *line, size_t len)
{
	const struct countdown *cd = ctx;
	int64_t el = cli_now_ms() - cd->start_ms, left = cd->duration_ms - el;
	char l[32], t[32], bar[21];
	int fill;

	fmt_secs(t, sizeof(t), (cd->duration_ms + 999) / 1000);
	if (left <= 0) {
		snprintf(line, len, "capturing: %s recorded, finishing", t);
		return;
	}
	fmt_secs(l, sizeof(l), (left + 999) / 1000);
	fill = (int)(20 * el / cd->duration_ms);
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[20] = '\0';
	snprintf(line, len, "capturing: %s left of %s [%s]", l, t, bar);
}

int cmd_capture(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"pid", required_argument, NULL, 'p'},
		{"duration", required_argument, NULL, 'd'},
		{"last", required_argument, NULL, 'l'},
		{"name", required_argument, NULL, 'n'},
		{"out", required_argument, NULL, 'o'},
		{"no-wait", no_argument, NULL, OPT_NO_WAIT},
		{"since", required_argument, NULL, OPT_SINCE},
		{"until", required_argument, NULL, OPT_UNTIL},
		{},
	};
	struct capture_args a = {0};
	int first, out_fd = -1, r;
	struct cli_out out = {.fd = -1};
	char *res = NULL;

	r = cli_parse(cli, argc, argv, "p:d:l:n:o:", opts, capture_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (first < argc)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first]);
	if (a.npids == 0)
		return cli_usage_error(cli, "--pid PID is required");
	if (!!a.duration_ms + !!a.last_ms + a.since != 1)
		return cli_usage_error(cli, "give exactly one of --duration, --last and --since");
	if (a.until && a.duration_ms)
		return cli_usage_error(cli, "--until ends a window in the past: use it with "
					    "--since or --last, not --duration");
	if (a.since && a.until && a.since_wall != a.until_wall)
		return cli_usage_error(cli, "give --since and --until on one clock: both "
					    "monotonic ns, or both wall-clock times");
	if (a.out && a.no_wait)
		return cli_usage_error(cli, "--out needs the finished capture: drop --no-wait");
	/* Open the output before a long recording, so a bad path fails fast. */
	if (a.out) {
		r = cli_out_open(&out, a.out);
		if (r)
			return r;
		out_fd = out.fd;
	}
	r = cli_connect(cli);
	if (r)
		goto out;

	cJSON *p = cJSON_CreateObject(), *pids = cJSON_AddArrayToObject(p, "pids");
	for (size_t i = 0; i < a.npids; i++)
		cJSON_AddItemToArray(pids, cJSON_CreateNumber(a.pids[i]));
	if (a.duration_ms || a.last_ms)
		cJSON_AddNumberToObject(p, a.duration_ms ? "duration_ms" : "last_ms",
					(double)(a.duration_ms ? a.duration_ms : a.last_ms));
	if (a.since)
		cJSON_AddNumberToObject(p, "start_ns", (double)a.since_ns);
	if (a.until)
		cJSON_AddNumberToObject(p, "end_ns", (double)a.until_ns);
	if (a.since || a.until)
		cJSON_AddStringToObject(p, "clock",
					(a.since ? a.since_wall : a.until_wall) ? "realtime"
										: "monotonic");
	cJSON_AddBoolToObject(p, "wait", !a.no_wait);
	if (a.name)
		cJSON_AddStringToObject(p, "name", a.name);
	char *params = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	/* Elsewhere the blocking call, which also prints an error's detail. */
	if (a.duration_ms && !a.no_wait && cli_progress_wanted()) {
		struct countdown cd = {cli_now_ms(), (int64_t)a.duration_ms};

		r = cli_call_progress(cli, "capture.start", params, NULL, 0, countdown_line, &cd,
				      &res);
		if (r == -EREMOTEIO) /* printed */
			r = EXIT_REMOTE;
		else if (r < 0)
			r = cli_call_failed(cli, "capture.start", r);
	} else {
		r = gpuprof_client_call(cli->client, "capture.start", params, NULL, 0, &res);
		r = r < 0 ? cli_call_failed(cli, "capture.start", r) : EXIT_OK;
	}
	free(params);
	if (r) /* an exit status: the call failed */
		goto out;
	cJSON *info = cli_parse_reply(res);
	uint64_t id = (uint64_t)json_num(info, "id", 0);
	if (cli->json)
		print_json_text(res);
	else
		print_capture_info(info, res);
	cJSON_Delete(info);
	r = EXIT_OK;
	if (out_fd >= 0) {
		cJSON *fp = cJSON_CreateObject();
		cJSON_AddBoolToObject(fp, "kernel", true);
		cJSON_AddBoolToObject(fp, "pid", false);
		cJSON_AddBoolToObject(fp, "tid", false);
		r = cli_write_folded(cli, id, out_fd, fp, false);
		cJSON_Delete(fp);
	}
out:
	if (out_fd >= 0)
		r = cli_out_close(&out, r);
	free(res);
	return r;
}

int cmd_list(struct cli *cli, int argc, char **argv)
{
	static const char *const hdr[] = {">ID",     "NAME",	  "KIND",    "STATE", "OWNER",
					  "CREATED", ">DURATION", ">EVENTS", ">SIZE"};
	char *res = NULL;
	int first, r;

	r = cli_parse(cli, argc, argv, "", NULL, NULL, NULL, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (first < argc)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first]);
	r = cli_connect(cli);
	if (r)
		return r;
	r = gpuprof_capture_list(cli->client, &res);
	if (r < 0)
		return cli_call_failed(cli, "capture.list", r);
	if (cli->json) {
		print_json_text(res);
		free(res);
		return EXIT_OK;
	}
	cJSON *root = cli_parse_reply(res), *c;
	struct table *t = table_new(9, hdr);
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "captures"))
	{
		char id[32], own[32], dur[32], rec[32], size[32];
		const cJSON *win = cJSON_GetObjectItemCaseSensitive(c, "window");
		snprintf(id, sizeof(id), "%.0f", json_num(c, "id", 0));
		const cJSON *imp = cJSON_GetObjectItemCaseSensitive(c, "import");
		/* an import holds trace events, a live capture store records */
		snprintf(rec, sizeof(rec), "%.0f",
			 imp ? json_num(imp, "events", 0) : json_num(c, "records", 0));
		table_add(t, id, json_str(c, "name", ""), json_str(c, "kind", "?"),
			  json_str(c, "state", "?"), owner_name(own, json_num(c, "owner_uid", 0)),
			  json_str(c, "created", "?"),
			  fmt_duration_ns(dur, json_num(win, "duration_ns", 0)), rec,
			  fmt_bytes(size, json_num(c, "file_bytes", 0)));
	}
	table_print(t);
	table_free(t);
	cJSON_Delete(root);
	free(res);
	return EXIT_OK;
}

/* info and delete: one or more capture ids as operands. */
static int for_each_id(struct cli *cli, int argc, char **argv, bool one, bool del)
{
	int first, r;

	r = cli_parse(cli, argc, argv, "", NULL, NULL, NULL, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (first >= argc)
		return cli_usage_error(cli, "missing capture ID");
	if (one && argc - first > 1)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first + 1]);
	for (int i = first; i < argc; i++) {
		uint64_t id;
		if (!cli_parse_u64(argv[i], &id) || id == 0)
			return cli_usage_error(cli, "invalid capture ID '%s'", argv[i]);
	}
	r = cli_connect(cli);
	if (r)
		return r;
	for (int i = first; i < argc; i++) {
		uint64_t id;
		char *res = NULL;
		cli_parse_u64(argv[i], &id);
		r = del ? gpuprof_capture_delete(cli->client, id)
			: gpuprof_capture_info(cli->client, id, &res);
		if (r < 0)
			return cli_call_failed(cli, del ? "capture.delete" : "capture.info", r);
		if (del) {
			if (!cli->json)
				printf("deleted capture %" PRIu64 "\n", id);
		} else if (cli->json) {
			print_json_text(res);
		} else {
			cJSON *info = cli_parse_reply(res);
			print_capture_info(info, res);
			cJSON_Delete(info);
		}
		free(res);
	}
	return EXIT_OK;
}

int cmd_info(struct cli *cli, int argc, char **argv)
{
	return for_each_id(cli, argc, argv, true, false);
}

int cmd_delete(struct cli *cli, int argc, char **argv)
{
	return for_each_id(cli, argc, argv, false, true);
}
