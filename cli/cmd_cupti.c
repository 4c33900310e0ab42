// SPDX-License-Identifier: MIT
/*
 * gpuprofctl cupti release PID: the daemon asks that process's CUPTI
 * injection library to give CUPTI up, so that a profiler started in it
 * next (torch.profiler) gets all of it (docs/collectors.md,
 * "Other CUPTI users"). The command then waits (--wait, default 5 s) until
 * the library says, in status' cupti.peer_list, that it no longer holds
 * the subscription: a profiler started before that would fail to
 * subscribe for the rest of the process's life (Kineto never retries).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "help.h"

#define WAIT_DEFAULT_MS 5000u
#define POLL_MS 50

enum { OPT_WAIT = 0x200, OPT_NO_WAIT };

struct release_args {
	uint64_t wait_ms;
};

static int release_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct release_args *a = ctx;

	switch (opt) {
	case OPT_WAIT:
		if (gpuprof_parse_duration_ms(arg, &a->wait_ms) < 0 || !a->wait_ms ||
		    a->wait_ms > 600000)
			return cli_usage_error(cli,
					       "invalid --wait '%s' (e.g. 500ms, 10s; at most 10m)",
					       arg);
		break;
	case OPT_NO_WAIT:
		a->wait_ms = 0;
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

enum peer_says { PEER_HOLDS, PEER_RELEASED, PEER_UNSAID, PEER_GONE, PEER_ERROR };

/* What status says of pid's library now; *state: its state (static). */
static enum peer_says peer_status(struct cli *cli, uint64_t pid, char *state, size_t len)
{
	char *result = NULL;
	cJSON *st, *list, *p, *sub, *idle;
	enum peer_says r = PEER_GONE;

	if (gpuprof_client_call(cli->client, "status", "{}", NULL, 0, &result) < 0)
		return PEER_ERROR;
	st = cJSON_Parse(result);
	free(result);
	list = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "cupti"),
						"peer_list");
	cJSON_ArrayForEach(p, list)
	{
		if (json_num(p, "pid", 0) != (double)pid)
			continue;
		snprintf(state, len, "%s", json_str(p, "state", "?"));
		sub = cJSON_GetObjectItemCaseSensitive(p, "subscribed");
		/* let go only until its next duty window
		 * (GPUPROF_CUPTI_IDLE=unsubscribe): it still holds CUPTI */
		idle = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "idle"),
							"unsubscribed_now");
		if (cJSON_IsBool(sub))
			r = cJSON_IsTrue(sub) || cJSON_IsTrue(idle) ? PEER_HOLDS : PEER_RELEASED;
		else
			r = PEER_UNSAID;
		break;
	}
	cJSON_Delete(st);
	return r;
}

/* Polls status until pid's library says the subscription is gone:
 * an exit status (messages printed). */
static int wait_released(struct cli *cli, uint64_t pid, uint64_t wait_ms)
{
	int64_t t0 = now_ms(), el;
	enum peer_says s;
	char state[32] = "?";

	for (;;) {
		s = peer_status(cli, pid, state, sizeof(state));
		el = now_ms() - t0;
		if (s == PEER_RELEASED) {
			if (!cli->json)
				printf("cupti: pid %llu released CUPTI (state %s) after %lld ms: "
				       "start the profiler now\n",
				       (unsigned long long)pid, state, (long long)el);
			return EXIT_OK;
		}
		/* a library that does not report its subscription: its state
		 * is all there is (it may hold CUPTI up to a second more) */
		if (s == PEER_UNSAID && !strcmp(state, "conflict")) {
			if (!cli->json)
				printf("cupti: pid %llu stepped aside after %lld ms; its library does "
				       "not report its subscription: wait a second before starting "
				       "the profiler\n",
				       (unsigned long long)pid, (long long)el);
			return EXIT_OK;
		}
		if (s == PEER_GONE)
			return cli_fail(EXIT_REMOTE,
					"cupti: pid %llu's library disconnected before it confirmed "
					"the release",
					(unsigned long long)pid);
		if (s == PEER_ERROR)
			return cli_fail(EXIT_REMOTE,
					"cupti: status failed while waiting for pid %llu",
					(unsigned long long)pid);
		if (el >= (int64_t)wait_ms)
			return cli_fail(EXIT_REMOTE,
					"cupti: pid %llu still holds the CUPTI subscription after "
					"%llu ms (state %s): a profiler started now would get no GPU "
					"activity",
					(unsigned long long)pid, (unsigned long long)wait_ms,
					state);
		nanosleep(&(struct timespec){.tv_nsec = POLL_MS * 1000000L}, NULL);
	}
}

int cmd_cupti(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"wait", required_argument, NULL, OPT_WAIT},
		{"no-wait", no_argument, NULL, OPT_NO_WAIT},
		{},
	};
	struct release_args a = {.wait_ms = WAIT_DEFAULT_MS};
	char *result = NULL, params[64];
	const char *sub = argc > 1 ? argv[1] : NULL;
	uint64_t pid;
	int first, r;

	if (!sub)
		return cli_usage_error(cli, "missing subcommand (release)");
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
		help_print(stdout, "cupti");
		return EXIT_OK;
	}
	if (strcmp(sub, "release"))
		return cli_usage_error(cli, "unknown subcommand '%s'", sub);
	r = cli_parse(cli, argc - 1, argv + 1, "", opts, release_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (argc - 1 - first != 1 || !cli_parse_u64(argv[1 + first], &pid) || !pid ||
	    pid > 0x7fffffff)
		return cli_usage_error(cli,
				       "usage: gpuprofctl cupti release [--wait DUR|--no-wait] PID");
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

		printf("cupti: asked pid %llu to release CUPTI (it was %s)%s\n",
		       (unsigned long long)pid, json_str(o, "state_before", "?"),
		       a.wait_ms ? "" : "; `gpuprofctl status` shows subscribed false once done");
		cJSON_Delete(o);
		r = EXIT_OK;
	}
	free(result);
	if (r == EXIT_OK && a.wait_ms)
		r = wait_released(cli, pid, a.wait_ms);
	return r;
}
