// SPDX-License-Identifier: MIT
/*
 * gpuprofctl cupti release PID: the daemon asks that process's CUPTI
 * injection library to give CUPTI up, so that a profiler started in it
 * next (torch.profiler) gets all of it (docs/collectors.md,
 * "Other CUPTI users").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "help.h"

int cmd_cupti(struct cli *cli, int argc, char **argv)
{
	char *result = NULL, params[64];
	const char *sub = argc > 1 ? argv[1] : NULL;
	uint64_t pid;
	int r;

	if (!sub)
		return cli_usage_error(cli, "missing subcommand (release)");
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
		help_print(stdout, "cupti");
		return EXIT_OK;
	}
	if (strcmp(sub, "release"))
		return cli_usage_error(cli, "unknown subcommand '%s'", sub);
	if (argc != 3 || !cli_parse_u64(argv[2], &pid) || !pid || pid > 0x7fffffff)
		return cli_usage_error(cli, "usage: gpuprofctl cupti release PID");
	snprintf(params, sizeof(params), "{\"pid\":%llu}", (unsigned long long)pid);
	r = cli_connect(cli);
	if (r)
		return r;
	r = gpuprof_client_call(cli->client, "cupti.release", params, NULL, 0, &result);
	if (r < 0)
		return cli_call_failed(cli, "cupti.release", r);
	if (cli->json) {
		r = print_json_text(result);
	} else {
		cJSON *o = cli_parse_reply(result);

		printf("cupti: asked pid %llu to release CUPTI (it was %s); `gpuprofctl status` "
		       "shows it in state conflict once done\n",
		       (unsigned long long)pid, json_str(o, "state_before", "?"));
		cJSON_Delete(o);
		r = EXIT_OK;
	}
	free(result);
	return r;
}
