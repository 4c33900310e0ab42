// SPDX-License-Identifier: MIT
/*
 * gpuprofctl import: pass each trace file's open descriptor to
 * capture.import. On a terminal, progress comes from the file offset: the
 * daemon reads through the same open file description, so lseek(fd, 0,
 * SEEK_CUR) on our copy shows how far it got.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct import_args {
	int64_t rank;
	const char *name;
};

static int import_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct import_args *a = ctx;
	uint64_t v;

	switch (opt) {
	case 'r':
		if (!cli_parse_u64(arg, &v) || v > INT32_MAX)
			return cli_usage_error(cli, "invalid rank '%s'", arg);
		a->rank = (int64_t)v;
		break;
	case 'n':
		a->name = arg;
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

static void show_progress(const char *path, int fd, off_t total)
{
	char b1[32], b2[32];
	off_t pos = lseek(fd, 0, SEEK_CUR);

	if (pos < 0)
		pos = 0;
	fprintf(stderr, "\r\033[Kimporting %s: %s / %s (%d%%)", path, fmt_bytes(b1, (double)pos),
		fmt_bytes(b2, (double)total), total ? (int)(100.0 * (double)pos / (double)total) : 0);
}

/*
 * capture.import through the event-loop API so we can draw progress while
 * waiting. Returns 0 with *res set, or a negative errno (-EREMOTEIO: the
 * error was printed here, *status set).
 */
static int import_with_progress(struct cli *cli, const char *path, int fd, off_t total,
				const char *params, char **res)
{
	struct gpuprof_client *c = cli->client;
	int64_t deadline = cli->timeout_ms ? now_ms() + cli->timeout_ms : -1;
	uint64_t id, rid;
	int r;

	r = gpuprof_client_send(c, "capture.import", params, &fd, 1, &id);
	if (r < 0)
		return r;
	for (;;) {
		struct pollfd pfd = {.fd = gpuprof_client_get_fd(c), .events = POLLIN};
		char *result = NULL, *msg = NULL;
		int code = 0;

		if (gpuprof_client_pending_output(c))
			pfd.events |= POLLOUT;
		show_progress(path, fd, total);
		if (deadline >= 0 && now_ms() >= deadline)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, 200) < 0 && errno != EINTR)
			return -errno;
		if (pfd.revents & POLLOUT) {
			r = gpuprof_client_flush(c);
			if (r < 0)
				return r;
		}
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = gpuprof_client_process(c);
		if (r < 0)
			return r;
		while (gpuprof_client_next_reply(c, &rid, &result, &code, &msg) == 1) {
			if (rid != id && rid != 0) {
				free(result);
				free(msg);
				continue;
			}
			fputc('\n', stderr);
			if (code) {
				fprintf(stderr, "gpuprofctl: capture.import: %s: %s (code %d)\n", path,
					msg, code);
				free(msg);
				return -EREMOTEIO;
			}
			*res = result;
			return 0;
		}
	}
}

static int import_one(struct cli *cli, const char *path, const struct import_args *a,
		      int64_t rank)
{
	struct stat st;
	char *res = NULL;
	int fd, r, status = EXIT_OK;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		status = cli_fail(EXIT_LOCAL_IO, "cannot stat %s: %s", path, strerror(errno));
		goto out;
	}
	cJSON *p = cJSON_CreateObject();
	if (rank >= 0)
		cJSON_AddNumberToObject(p, "rank", (double)rank);
	if (a->name)
		cJSON_AddStringToObject(p, "name", a->name);
	char *params = cJSON_PrintUnformatted(p);
	cJSON_Delete(p);

	if (S_ISREG(st.st_mode) && isatty(STDERR_FILENO)) {
		cJSON *withfd = cJSON_Parse(params);
		cJSON_AddNumberToObject(withfd, "fd", 0);
		char *text = cJSON_PrintUnformatted(withfd);
		cJSON_Delete(withfd);
		r = import_with_progress(cli, path, fd, st.st_size, text, &res);
		free(text);
		if (r == -EREMOTEIO)
			status = EXIT_REMOTE;
		else if (r < 0)
			status = cli_call_failed(cli, "capture.import", r);
	} else {
		r = gpuprof_call_with_input(cli->client, "capture.import", params, fd, &res);
		if (r < 0) {
			if (r == -EREMOTEIO)
				fprintf(stderr, "gpuprofctl: capture.import: %s: %s (code %d)\n", path,
					gpuprof_client_error_message(cli->client),
					gpuprof_client_error_code(cli->client));
			status = r == -EREMOTEIO ? EXIT_REMOTE
						 : cli_call_failed(cli, "capture.import", r);
		}
	}
	free(params);
	if (status != EXIT_OK)
		goto out;
	if (cli->json) {
		print_json_text(res);
	} else {
		cJSON *info = cJSON_Parse(res);
		printf("%s: capture %.0f, %.0f records\n", path, json_num(info, "id", 0),
		       json_num(info, "records", 0));
		cJSON_Delete(info);
	}
out:
	free(res);
	close(fd);
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
	for (int i = first; i < argc; i++) {
		int64_t rank = a.rank >= 0 ? a.rank + (i - first) : -1;
		r = import_one(cli, argv[i], &a, rank);
		if (r != EXIT_OK)
			return r;
	}
	return EXIT_OK;
}
