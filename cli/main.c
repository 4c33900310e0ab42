// SPDX-License-Identifier: MIT
/*
 * gpuprofctl: command line client of gpuprofd. Global options, dispatch to
 * the command table (help.c), shared option parsing and error reporting.
 * Every daemon interaction goes through libgpuprof-client.
 */
#include "cli.h"
#include "help.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof-build.h"

enum {
	OPT_SOCKET = 0x100,
	OPT_JSON,
	OPT_TIMEOUT,
	OPT_WIDE,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option global_opts[] = {
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"json", no_argument, NULL, OPT_JSON},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"wide", no_argument, NULL, OPT_WIDE},
	{"help", no_argument, NULL, OPT_HELP},
};
#define N_GLOBAL_OPTS (sizeof(global_opts) / sizeof(global_opts[0]))

int cli_fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("gpuprofctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return status;
}

int cli_usage_error(struct cli *cli, const char *fmt, ...)
{
	va_list ap;

	fputs("gpuprofctl: ", stderr);
	if (cli->cmd)
		fprintf(stderr, "%s: ", cli->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'gpuprofctl help%s%s' for more information.\n", cli->cmd ? " " : "",
		cli->cmd ? cli->cmd : "");
	return EXIT_USAGE;
}

/* Global options, wherever they appear. Returns CLI_CONTINUE or a status. */
static int handle_global(struct cli *cli, int opt, const char *arg)
{
	uint64_t ms;

	switch (opt) {
	case OPT_SOCKET:
		if (!*arg)
			return cli_usage_error(cli, "--socket needs a path");
		cli->socket = arg;
		return CLI_CONTINUE;
	case OPT_JSON:
		cli->json = true;
		return CLI_CONTINUE;
	case OPT_WIDE:
		cli->wide = true;
		return CLI_CONTINUE;
	case OPT_TIMEOUT:
		if (gpuprof_parse_duration_ms(arg, &ms) < 0 || ms > INT_MAX)
			return cli_usage_error(cli, "invalid --timeout '%s' (e.g. 500ms, 30s, 2m)",
					       arg);
		cli->timeout_ms = (int)ms;
		return CLI_CONTINUE;
	case OPT_HELP:
		help_print(stdout, cli->cmd);
		return EXIT_OK;
	default:
		return cli_usage_error(cli, "internal: unhandled option %d", opt);
	}
}

int cli_parse(struct cli *cli, int argc, char **argv, const char *shortopts,
	      const struct option *opts,
	      int (*handle)(struct cli *cli, int opt, const char *arg, void *ctx), void *ctx,
	      int *first)
{
	struct option all[128]; /* analyze: an option per analysis parameter */
	char shorts[64];
	size_t n = 0;
	int r = CLI_CONTINUE;

	for (; opts && opts[n].name && n < sizeof(all) / sizeof(all[0]) - N_GLOBAL_OPTS - 1; n++)
		all[n] = opts[n];
	memcpy(all + n, global_opts, sizeof(global_opts));
	memset(all + n + N_GLOBAL_OPTS, 0, sizeof(all[0]));
	/* ':' first: report missing arguments ourselves; 'h' is --help. */
	snprintf(shorts, sizeof(shorts), ":h%s", shortopts ? shortopts : "");

	optind = 0; /* glibc: full re-initialisation for each argv */
	opterr = 0;
	for (;;) {
		int c = getopt_long(argc, argv, shorts, all, NULL);
		if (c == -1)
			break;
		if (c == '?')
			return cli_usage_error(cli, "unrecognized option '%s'", argv[optind - 1]);
		if (c == ':')
			return cli_usage_error(cli, "option '%s' needs an argument",
					       argv[optind - 1]);
		if (c == 'h')
			c = OPT_HELP;
		if (c >= OPT_SOCKET && c <= OPT_HELP)
			r = handle_global(cli, c, optarg);
		else if (handle)
			r = handle(cli, c, optarg, ctx);
		else
			r = cli_usage_error(cli, "unexpected option");
		if (r != CLI_CONTINUE)
			return r;
	}
	*first = optind;
	return CLI_CONTINUE;
}

static const char *socket_path(const struct cli *cli)
{
	const char *env = getenv(GPUPROF_SOCKET_ENV);

	if (cli->socket)
		return cli->socket;
	return env && *env ? env : GPUPROF_DEFAULT_SOCKET;
}

/* What a person can do about a failed connect. */
static const char *connect_hint(int r)
{
	switch (r) {
	case -ENOENT:
	case -ECONNREFUSED:
		return " (is gpuprofd running? see --socket)";
	case -EACCES:
	case -EPERM:
		/* The socket is mode 0660, group gpuprof; a group added to a
		 * user counts only in sessions started after the change. */
		return "\n  only root and members of group 'gpuprof' may use gpuprofd: ask an "
		       "administrator to add you (usermod -aG gpuprof USER), then log in again "
		       "or run 'newgrp gpuprof' so the new group membership takes effect";
	}
	return "";
}

int cli_connect(struct cli *cli)
{
	const char *path = socket_path(cli);
	int r;

	if (cli->client)
		return EXIT_OK;
	r = gpuprof_client_connect(path, &cli->client);
	if (r < 0)
		return cli_fail(EXIT_CONNECT, "cannot connect to gpuprofd at %s: %s%s", path,
				strerror(-r), connect_hint(r));
	gpuprof_client_set_timeout(cli->client, cli->timeout_ms);
	return EXIT_OK;
}

int cli_call_failed(struct cli *cli, const char *method, int err)
{
	const char *data;

	switch (err) {
	case -EREMOTEIO: {
		/* the message may quote a name or a trace's text: escaped */
		const char *m = gpuprof_client_error_message(cli->client);
		char *em = cli_escape(m ? m : "");
		fprintf(stderr, "gpuprofctl: %s: %s (code %d)\n", method, em ? em : "?",
			gpuprof_client_error_code(cli->client));
		free(em);
		data = gpuprof_client_error_data(cli->client);
		if (data) {
			char *ed = cli_escape(data);
			fprintf(stderr, "gpuprofctl: %s: detail: %s\n", method, ed ? ed : "?");
			free(ed);
		}
		return EXIT_REMOTE;
	}
	case -ECONNRESET:
		return cli_fail(EXIT_REMOTE, "%s: gpuprofd closed the connection", method);
	case -ETIMEDOUT:
		return cli_fail(EXIT_REMOTE, "%s: no reply within %d ms (--timeout)", method,
				cli->timeout_ms);
	case -EPIPE:
	case -EIO:
	case -ENOSPC:
		return cli_fail(EXIT_LOCAL_IO, "%s: writing output: %s", method, strerror(-err));
	default:
		return cli_fail(EXIT_REMOTE, "%s: %s", method, strerror(-err));
	}
}

bool cli_parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end || x > (1ull << 53))
		return false;
	*v = x;
	return true;
}

int cli_opt_rank(struct cli *cli, const char *arg, int64_t *rank)
{
	uint64_t v;

	if (!cli_parse_u64(arg, &v) || v > INT32_MAX)
		return cli_usage_error(cli, "invalid rank '%s'", arg);
	*rank = (int64_t)v;
	return CLI_CONTINUE;
}

int cli_opt_pid(struct cli *cli, const char *arg, size_t n, size_t max, int64_t *pid)
{
	uint64_t v;

	if (!cli_parse_u64(arg, &v) || v == 0 || v > INT32_MAX)
		return cli_usage_error(cli, "invalid pid '%s'", arg);
	if (n == max)
		return cli_usage_error(cli, "at most %zu --pid", max);
	*pid = (int64_t)v;
	return CLI_CONTINUE;
}

bool cli_add_kv_param(cJSON *params, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char key[128];
	cJSON *val;

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
		return false;
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	val = cJSON_ParseWithOpts(eq + 1, NULL, 1);
	if (!val)
		val = cJSON_CreateString(eq + 1);
	if (!val)
		return false;
	cJSON_DeleteItemFromObjectCaseSensitive(params, key);
	cJSON_AddItemToObject(params, key, val);
	return true;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"socket", required_argument, NULL, OPT_SOCKET},
		{"json", no_argument, NULL, OPT_JSON},
		{"timeout", required_argument, NULL, OPT_TIMEOUT},
		{"wide", no_argument, NULL, OPT_WIDE},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{},
	};
	struct cli cli = {0};
	const struct command *cmd;
	int r = EXIT_OK;

	opterr = 0;
	for (;;) {
		/* '+': stop at the command; its own options follow it. */
		int c = getopt_long(argc, argv, "+:hV", opts, NULL);
		if (c == -1)
			break;
		if (c == 'h')
			c = OPT_HELP;
		if (c == 'V' || c == OPT_VERSION) {
			printf("gpuprofctl %s (protocol %d)\n", GPUPROF_VERSION,
			       GPUPROF_PROTOCOL_VERSION);
			return EXIT_OK;
		}
		if (c == '?')
			return cli_usage_error(&cli, "unrecognized option '%s'", argv[optind - 1]);
		if (c == ':')
			return cli_usage_error(&cli, "option '%s' needs an argument",
					       argv[optind - 1]);
		r = handle_global(&cli, c, optarg);
		if (r != CLI_CONTINUE)
			return r;
	}
	if (optind >= argc) {
		help_print(stderr, NULL);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[optind], "__describe")) /* hidden: for the build */
		return help_describe(stdout);
	cmd = help_find(argv[optind]);
	if (!cmd)
		return cli_usage_error(&cli, "unknown command '%s'", argv[optind]);
	cli.cmd = cmd->name;
	r = cmd->run(&cli, argc - optind, argv + optind);
	gpuprof_client_free(cli.client);
	if (fflush(stdout) != 0 && r == EXIT_OK)
		r = cli_fail(EXIT_LOCAL_IO, "writing to stdout: %s", strerror(errno));
	return r;
}
