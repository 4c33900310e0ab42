// SPDX-License-Identifier: MIT
/* gpuprofctl folded / flamegraph / analyze: results on fds and in JSON. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TIDS 64

/* Open FILE for writing ("-" or NULL: stdout). Returns fd or -1 (printed). */
static int open_out(const char *path)
{
	int fd;

	if (!path || strcmp(path, "-") == 0) {
		fflush(stdout);
		return STDOUT_FILENO;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path, strerror(errno));
	return fd;
}

static int close_out(int fd, const char *path, int status)
{
	if (fd == STDOUT_FILENO || fd < 0)
		return status;
	if (close(fd) < 0 && status == EXIT_OK)
		return cli_fail(EXIT_LOCAL_IO, "writing %s: %s", path, strerror(errno));
	return status;
}

struct folded_args {
	const char *out, *comm;
	bool kernel, pid, tid;
	int64_t tids[MAX_TIDS];
	size_t ntids;
};

enum { OPT_KERNEL = 0x200, OPT_NO_KERNEL, OPT_PID_FRAMES, OPT_TID_FRAMES, OPT_COMM, OPT_TID };

static int folded_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct folded_args *a = ctx;
	uint64_t v;

	switch (opt) {
	case 'o':
		a->out = arg;
		break;
	case OPT_KERNEL:
	case OPT_NO_KERNEL:
		a->kernel = opt == OPT_KERNEL;
		break;
	case OPT_PID_FRAMES:
		a->pid = true;
		break;
	case OPT_TID_FRAMES:
		a->tid = true;
		break;
	case OPT_COMM:
		a->comm = arg;
		break;
	case OPT_TID:
		if (!cli_parse_u64(arg, &v) || v == 0 || v > INT32_MAX)
			return cli_usage_error(cli, "invalid tid '%s'", arg);
		if (a->ntids == MAX_TIDS)
			return cli_usage_error(cli, "at most %d --tid", MAX_TIDS);
		a->tids[a->ntids++] = (int64_t)v;
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

/* The single capture ID operand at argv[first]. */
static int one_id(struct cli *cli, int argc, char **argv, int first, uint64_t *id)
{
	if (first >= argc)
		return cli_usage_error(cli, "missing capture ID");
	if (!cli_parse_u64(argv[first], id) || *id == 0)
		return cli_usage_error(cli, "invalid capture ID '%s'", argv[first]);
	return CLI_CONTINUE;
}

int cmd_folded(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"kernel", no_argument, NULL, OPT_KERNEL},
		{"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
		{"pid-frames", no_argument, NULL, OPT_PID_FRAMES},
		{"tid-frames", no_argument, NULL, OPT_TID_FRAMES},
		{"comm", required_argument, NULL, OPT_COMM},
		{"tid", required_argument, NULL, OPT_TID},
		{},
	};
	struct folded_args a = {.kernel = true};
	uint64_t id;
	int first, fd, r;

	r = cli_parse(cli, argc, argv, "o:", opts, folded_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	r = one_id(cli, argc, argv, first, &id);
	if (r != CLI_CONTINUE)
		return r;
	if (argc - first > 1)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first + 1]);
	r = cli_connect(cli);
	if (r)
		return r;
	fd = open_out(a.out);
	if (fd < 0)
		return EXIT_LOCAL_IO;

	cJSON *p = cJSON_CreateObject();
	cJSON_AddBoolToObject(p, "kernel", a.kernel);
	cJSON_AddBoolToObject(p, "pid", a.pid);
	cJSON_AddBoolToObject(p, "tid", a.tid);
	if (a.comm)
		cJSON_AddStringToObject(p, "comm", a.comm);
	if (a.ntids) {
		cJSON *tids = cJSON_AddArrayToObject(p, "tids");
		for (size_t i = 0; i < a.ntids; i++)
			cJSON_AddItemToArray(tids, cJSON_CreateNumber((double)a.tids[i]));
	}
	r = cli_write_folded(cli, id, fd, p);
	cJSON_Delete(p);
	return close_out(fd, a.out, r);
}

/* Options of flamegraph and analyze: --out, --rank, then KEY=VALUE operands. */
struct render_args {
	const char *out;
	int64_t rank;
};

static int render_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct render_args *a = ctx;
	uint64_t v;

	switch (opt) {
	case 'o':
		a->out = arg;
		break;
	case 'r':
		if (!cli_parse_u64(arg, &v) || v > INT32_MAX)
			return cli_usage_error(cli, "invalid rank '%s'", arg);
		a->rank = (int64_t)v;
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

/* {"id": ID, KEY: VALUE...} from the operands after the id; NULL on a bad pair. */
static cJSON *id_and_extras(struct cli *cli, uint64_t id, int argc, char **argv, int from)
{
	cJSON *p = cJSON_CreateObject();

	for (int i = from; i < argc; i++) {
		if (!cli_add_kv_param(p, argv[i])) {
			cli_usage_error(cli, "expected KEY=VALUE, got '%s'", argv[i]);
			cJSON_Delete(p);
			return NULL;
		}
	}
	cJSON_DeleteItemFromObjectCaseSensitive(p, "id");
	cJSON_AddNumberToObject(p, "id", (double)id);
	return p;
}

int cmd_flamegraph(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{},
	};
	struct render_args a = {.rank = -1};
	uint64_t id;
	int first, fd, r;

	r = cli_parse(cli, argc, argv, "o:", opts, render_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	r = one_id(cli, argc, argv, first, &id);
	if (r != CLI_CONTINUE)
		return r;
	if (!a.out)
		return cli_usage_error(cli, "--out FILE is required ('-' for stdout)");
	cJSON *p = id_and_extras(cli, id, argc, argv, first + 1);
	if (!p)
		return EXIT_USAGE;
	cJSON_DeleteItemFromObjectCaseSensitive(p, "fd");
	char *params = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	r = cli_connect(cli);
	if (r)
		goto out;
	fd = open_out(a.out);
	if (fd < 0) {
		r = EXIT_LOCAL_IO;
		goto out;
	}
	char *res = NULL;
	r = gpuprof_call_with_output(cli->client, "capture.flamegraph", params, fd, &res);
	r = r < 0 ? cli_call_failed(cli, "capture.flamegraph", r) : EXIT_OK;
	if (r == EXIT_OK && cli->json && fd != STDOUT_FILENO)
		print_json_text(res);
	free(res);
	r = close_out(fd, a.out, r);
out:
	free(params);
	return r;
}

int cmd_analyze(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"rank", required_argument, NULL, 'r'},
		{},
	};
	struct render_args a = {.rank = -1};
	char method[96];
	uint64_t id;
	int first, r;

	r = cli_parse(cli, argc, argv, "r:", opts, render_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (first >= argc)
		return cli_usage_error(cli, "missing analysis NAME");
	const char *name = argv[first];
	for (const char *s = name; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return cli_usage_error(cli, "invalid analysis name '%s'", name);
	if (!*name || strlen(name) > 64)
		return cli_usage_error(cli, "invalid analysis name '%s'", name);
	snprintf(method, sizeof(method), "analyze.%s", name);
	r = one_id(cli, argc, argv, first + 1, &id);
	if (r != CLI_CONTINUE)
		return r;
	cJSON *p = id_and_extras(cli, id, argc, argv, first + 2);
	if (!p)
		return EXIT_USAGE;
	if (a.rank >= 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "rank");
		cJSON_AddNumberToObject(p, "rank", (double)a.rank);
	}
	char *params = cJSON_PrintUnformatted(p), *res = NULL;
	cJSON_Delete(p);
	r = cli_connect(cli);
	if (r)
		goto out;
	r = gpuprof_client_call(cli->client, method, params, NULL, 0, &res);
	if (r < 0) {
		r = cli_call_failed(cli, method, r);
		goto out;
	}
	if (cli->json) {
		print_json_text(res);
	} else {
		cJSON *v = cJSON_Parse(res);
		print_result_tables(v);
		cJSON_Delete(v);
	}
	r = EXIT_OK;
out:
	free(res);
	free(params);
	return r;
}
