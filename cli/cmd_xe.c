// SPDX-License-Identifier: MIT
/*
 * Intel Xe EU-stall commands (docs/xe.md):
 *   flamescope CAPTURE [-i 100ms] [-p PID] [-o FILE]   per-interval breakdown (TSV)
 *   xe folded|iaprof CAPTURE [-p PID] [--cgroup] [-o FILE]
 *   xe pause [SECONDS] | xe resume                     release the GTs for other tools
 *   xe batch FILE|-                                    a batch-buffer dump to the
 *                                                      host parser (docs/gpu-cs.md)
 *   xe zebin FILE|- [PID]                              a NEO debug zebin: kernels and
 *                                                      binaries (instruction text)
 */
#include "cli.h"
#include "help.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct xe_args {
	const char *out;
	uint64_t interval_ms, pid;
	bool cgroup;
};

enum { OPT_CGROUP = 0x300 };

static int xe_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct xe_args *a = ctx;

	switch (opt) {
	case 'o':
		a->out = arg;
		break;
	case 'i':
		if (gpuprof_parse_duration_ms(arg, &a->interval_ms) < 0 || !a->interval_ms)
			return cli_usage_error(cli, "invalid interval '%s' (e.g. 100ms, 1s)", arg);
		break;
	case 'p':
		if (!cli_parse_u64(arg, &a->pid) || !a->pid || a->pid > UINT32_MAX)
			return cli_usage_error(cli, "invalid pid '%s'", arg);
		break;
	case OPT_CGROUP:
		a->cgroup = true;
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

/* Run an xe output method on CAPTURE into -o FILE or stdout. */
static int run_output(struct cli *cli, const char *method, int argc, char **argv, bool scope)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"interval", required_argument, NULL, 'i'},
		{"pid", required_argument, NULL, 'p'},
		{"cgroup", no_argument, NULL, OPT_CGROUP},
		{},
	};
	struct xe_args a = {.interval_ms = 100};
	uint64_t id;
	char *text = NULL, *result = NULL;
	int first, fd, r;
	struct cli_out out = {.fd = -1};
	cJSON *p;

	r = cli_parse(cli, argc, argv, "o:i:p:", opts, xe_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (first >= argc)
		return cli_usage_error(cli, "missing capture id");
	if (!cli_parse_u64(argv[first], &id))
		return cli_usage_error(cli, "invalid capture id '%s'", argv[first]);
	if (argc - first > 1)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first + 1]);
	r = cli_connect(cli);
	if (r)
		return r;
	r = cli_out_open(&out, a.out);
	if (r)
		return r;
	fd = out.fd;
	p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "id", (double)id);
	if (a.pid)
		cJSON_AddNumberToObject(p, "pid", (double)a.pid);
	if (scope)
		cJSON_AddNumberToObject(p, "interval_ms", (double)a.interval_ms);
	else if (a.cgroup)
		cJSON_AddBoolToObject(p, "cgroup", true);
	text = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	r = text ? gpuprof_call_with_output(cli->client, method, text, fd, &result) : -ENOMEM;
	free(text);
	if (r < 0) {
		free(result);
		cli_out_close(&out, EXIT_REMOTE);
		return cli_call_failed(cli, method, r);
	}
	if (cli_out_close(&out, EXIT_OK) != EXIT_OK) {
		free(result);
		return EXIT_LOCAL_IO;
	}
	if (result && cli->json)
		print_json_text(result);
	else if (result) {
		char *e = cli_escape(result);
		fprintf(stderr, "%s\n", e ? e : "");
		free(e);
	}
	free(result);
	return r > 0 ? r : EXIT_OK;
}

int cmd_flamescope(struct cli *cli, int argc, char **argv)
{
	return run_output(cli, "xe.flamescope", argc, argv, true);
}

/* Send the file at path ("-": stdin) to method as its descriptor. 0 with
 * *result, else the exit code. */
static int call_with_file(struct cli *cli, const char *method, const char *sub, const char *params,
			  const char *path, char **result)
{
	int fd, r;

	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(STDIN_FILENO);
	if (fd < 0)
		return cli_fail(EXIT_LOCAL_IO, "%s: %s", path, strerror(errno));
	r = cli_connect(cli);
	if (r) {
		close(fd);
		return r;
	}
	r = gpuprof_call_with_input(cli->client, method, params, fd, result);
	close(fd);
	return r < 0 ? cli_call_failed(cli, sub, r) : 0;
}

/* A batch-buffer dump (docs/gpu-cs.md) to the daemon's host parser. */
static int run_batch(struct cli *cli, int argc, char **argv)
{
	const char *path = argc == 3 ? argv[2] : NULL;
	char *result = NULL;
	cJSON *o, *b, *ends;
	int r;

	if (!path)
		return cli_usage_error(cli, "expected one dump FILE (or - for stdin)");
	r = call_with_file(cli, "xe.batch", "batch", "{}", path, &result);
	if (r)
		return r;
	if (cli->json) {
		r = print_json_text(result);
		free(result);
		return r;
	}
	o = cli_parse_reply(result);
	b = cJSON_GetObjectItemCaseSensitive(o, "batch_parser");
	ends = cJSON_GetObjectItemCaseSensitive(b, "ends");
	printf("submissions: %.0f (path %s: %s)\n", json_num(o, "submits", 0),
	       json_str(b, "path", "?"), json_str(b, "reason", ""));
	printf("ends:");
	for (const cJSON *e = ends ? ends->child : NULL; e; e = e->next)
		printf(" %s %.0f", e->string, e->valuedouble);
	printf("\nksps: %.0f, sips: %.0f, kernels added: %.0f, waiting for memory: %.0f\n",
	       json_num(b, "ksps", 0), json_num(b, "sips", 0), json_num(b, "kernels_added", 0),
	       json_num(b, "retry_waiting", 0));
	cJSON_Delete(o);
	free(result);
	return EXIT_OK;
}

/* A NEO debug zebin (docs/xe.md): kernels and binaries to the daemon. */
static int run_zebin(struct cli *cli, int argc, char **argv)
{
	const char *path = argc == 3 || argc == 4 ? argv[2] : NULL;
	char *result = NULL, *params;
	cJSON *p, *o;
	uint64_t pid = 0;
	int r;

	if (!path)
		return cli_usage_error(cli, "expected one zebin FILE (or - for stdin) [PID]");
	if (argc == 4 && (!cli_parse_u64(argv[3], &pid) || pid > UINT32_MAX))
		return cli_usage_error(cli, "invalid PID '%s'", argv[3]);
	/* the path as the kernels' file frame (cJSON escapes it) */
	p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "pid", (double)pid);
	if (strcmp(path, "-"))
		cJSON_AddStringToObject(p, "file", path);
	params = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	if (!params)
		return cli_fail(EXIT_LOCAL_IO, "out of memory");
	r = call_with_file(cli, "xe.zebin", "zebin", params, path, &result);
	free(params);
	if (r)
		return r;
	if (cli->json) {
		r = print_json_text(result);
		free(result);
		return r;
	}
	o = cli_parse_reply(result);
	printf("kernels: %.0f (%s), binaries held: %.0f (%.0f bytes, %.0f dropped)\n",
	       json_num(o, "kernels", 0),
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "kernel_table"))
		       ? "added to the kernel table"
		       : "no EU-stall stream: binaries only",
	       json_num(o, "binaries", 0), json_num(o, "binary_bytes", 0),
	       json_num(o, "binaries_dropped", 0));
	cJSON_Delete(o);
	free(result);
	return EXIT_OK;
}

int cmd_xe(struct cli *cli, int argc, char **argv)
{
	char *result = NULL, params[64];
	const char *sub = argc > 1 ? argv[1] : NULL;
	int r;

	if (!sub)
		return cli_usage_error(
			cli, "missing subcommand (folded, iaprof, pause, resume, batch, zebin)");
	/* as every other command: --help before the subcommand */
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
		help_print(stdout, "xe");
		return EXIT_OK;
	}
	if (!strcmp(sub, "folded"))
		return run_output(cli, "xe.folded", argc - 1, argv + 1, false);
	if (!strcmp(sub, "iaprof"))
		return run_output(cli, "xe.iaprof", argc - 1, argv + 1, false);
	if (!strcmp(sub, "batch"))
		return run_batch(cli, argc, argv);
	if (!strcmp(sub, "zebin"))
		return run_zebin(cli, argc, argv);
	if (strcmp(sub, "pause") && strcmp(sub, "resume"))
		return cli_usage_error(cli, "unknown subcommand '%s'", sub);
	if (!strcmp(sub, "pause")) {
		uint64_t secs = 60;

		if (argc > 2 && (!cli_parse_u64(argv[2], &secs) || secs > 86400))
			return cli_usage_error(cli, "invalid seconds '%s'", argv[2]);
		snprintf(params, sizeof(params), "{\"seconds\":%llu}", (unsigned long long)secs);
	} else {
		snprintf(params, sizeof(params), "{}");
	}
	r = cli_connect(cli);
	if (r)
		return r;
	r = gpuprof_client_call(cli->client, !strcmp(sub, "pause") ? "xe.pause" : "xe.resume",
				params, NULL, 0, &result);
	if (r < 0)
		return cli_call_failed(cli, sub, r);
	if (cli->json) {
		r = print_json_text(result);
	} else {
		cJSON *o = cli_parse_reply(result);

		printf("xe: %s\n", json_str(o, "state", "?"));
		cJSON_Delete(o);
		r = EXIT_OK;
	}
	free(result);
	return r;
}
