// SPDX-License-Identifier: MIT
/*
 * gpuprofctl import: pass the trace files' open descriptors to one
 * capture.import (one capture, one rank per file). On a terminal, progress
 * comes from the file offset: the daemon reads through the same open file
 * description, so lseek(fd, 0, SEEK_CUR) on our copy shows how far it got.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct import_args {
	int64_t rank;
	const char *name;
};

static int import_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct import_args *a = ctx;

	switch (opt) {
	case 'r':
		return cli_opt_rank(cli, arg, &a->rank);
	case 'n':
		a->name = arg;
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

struct import_progress {
	const int *fds;
	size_t n;
	off_t total;
	int64_t done_ms; /* when the daemon had read every byte; 0: not yet */
};

/*
 * Reading is most of an import, but after the last byte the daemon still
 * builds its indexes and writes the capture (a second or more on a large
 * trace): say so, rather than sit at 100 %.
 */
static void import_line(void *ctx, char *line, size_t len)
{
	struct import_progress *p = ctx;
	char b1[32], b2[32];
	off_t pos = 0;

	for (size_t i = 0; i < p->n; i++) {
		off_t o = lseek(p->fds[i], 0, SEEK_CUR);
		pos += o > 0 ? o : 0;
	}
	if (p->total && pos >= p->total) {
		if (!p->done_ms)
			p->done_ms = cli_now_ms();
		int64_t s = (cli_now_ms() - p->done_ms) / 1000;

		snprintf(line, len, "importing %zu file%s: %s read, finalizing", p->n,
			 p->n == 1 ? "" : "s", fmt_bytes(b1, (double)p->total));
		if (s > 0)
			snprintf(line + strlen(line), len - strlen(line), " (%llds)", (long long)s);
		return;
	}
	snprintf(line, len, "importing %zu file%s: %s / %s (%d%%)", p->n, p->n == 1 ? "" : "s",
		 fmt_bytes(b1, (double)pos), fmt_bytes(b2, (double)p->total),
		 p->total ? (int)(100.0 * (double)pos / (double)p->total) : 0);
}

static void print_import(struct cli *cli, const char *res)
{
	if (cli->json) {
		print_json_text(res);
		return;
	}
	cJSON *info = cli_parse_reply(res);
	cJSON *imp = cJSON_GetObjectItem(info, "import");
	cJSON *ranks = cJSON_GetObjectItem(imp, "ranks");
	printf("capture %.0f: %d rank%s, %.0f events, %.0f warnings\n", json_num(info, "id", 0),
	       cJSON_GetArraySize(ranks), cJSON_GetArraySize(ranks) == 1 ? "" : "s",
	       json_num(imp, "events", 0), json_num(info, "warnings", 0));
	cJSON_Delete(info);
}

/* All files in one request: one capture holding every rank. */
static int import_all(struct cli *cli, char **paths, size_t n, const struct import_args *a)
{
	int fds[GPUPROF_MAX_FDS_PER_MSG];
	size_t nopen = 0;
	off_t total = 0;
	bool all_regular = true;
	char *res = NULL, *params = NULL;
	int r, status = EXIT_OK;

	if (n > GPUPROF_MAX_FDS_PER_MSG)
		return cli_usage_error(cli, "at most %d files per import", GPUPROF_MAX_FDS_PER_MSG);
	for (; nopen < n; nopen++) {
		struct stat st;
		const char *path = paths[nopen];
		fds[nopen] = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC)
					       : dup(STDIN_FILENO);
		if (fds[nopen] < 0) {
			status = cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path,
					  strerror(errno));
			goto out;
		}
		if (fstat(fds[nopen], &st) < 0) {
			nopen++;
			status = cli_fail(EXIT_LOCAL_IO, "cannot stat %s: %s", path,
					  strerror(errno));
			goto out;
		}
		if (S_ISREG(st.st_mode))
			total += st.st_size;
		else
			all_regular = false;
	}
	if (!all_regular && n > 1) {
		status = cli_usage_error(cli, "a pipe can only be imported on its own");
		goto out;
	}
	cJSON *p = cJSON_CreateObject();
	if (a->rank >= 0) {
		cJSON *ranks = cJSON_AddArrayToObject(p, "ranks");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(ranks,
					     cJSON_CreateNumber((double)(a->rank + (int64_t)i)));
	}
	if (a->name)
		cJSON_AddStringToObject(p, "name", a->name);
	if (all_regular) {
		cJSON *idx = cJSON_AddArrayToObject(p, "fds");
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(idx, cJSON_CreateNumber((double)i));
	}
	params = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);
	if (all_regular) {
		struct import_progress ip = {.fds = fds, .n = n, .total = total};

		r = cli_call_progress(cli, "capture.import", params, fds, n, import_line, &ip,
				      &res);
		if (r == -EREMOTEIO)
			status = EXIT_REMOTE;
		else if (r < 0)
			status = cli_call_failed(cli, "capture.import", r);
	} else {
		/* a pipe: the library relays it, the daemon never sees ours */
		r = gpuprof_call_with_input(cli->client, "capture.import", params, fds[0], &res);
		if (r == -EREMOTEIO) {
			fprintf(stderr, "gpuprofctl: capture.import: %s (code %d)\n",
				gpuprof_client_error_message(cli->client),
				gpuprof_client_error_code(cli->client));
			status = EXIT_REMOTE;
		} else if (r < 0) {
			status = cli_call_failed(cli, "capture.import", r);
		}
	}
	if (status == EXIT_OK)
		print_import(cli, res);
out:
	free(params);
	free(res);
	for (size_t i = 0; i < nopen; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return status;
}

int cmd_import(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"rank", required_argument, NULL, 'r'},
		{"name", required_argument, NULL, 'n'},
		{},
	};
	struct import_args a = {.rank = -1};
	int first, r;

	r = cli_parse(cli, argc, argv, "r:n:", opts, import_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (first >= argc)
		return cli_usage_error(cli, "missing FILE");
	r = cli_connect(cli);
	if (r)
		return r;
	return import_all(cli, argv + first, (size_t)(argc - first), &a);
}
