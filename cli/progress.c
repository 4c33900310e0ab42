// SPDX-License-Identifier: MIT
/*
 * A request that takes a while (capture --duration, import), with one
 * status line on stderr while it runs. The line is drawn only when stderr
 * is a terminal that understands "\r\033[K" (so never into a pipe, a file
 * or a log), is rewritten in place, and is erased before the call returns:
 * what the command prints next (a table, or --json on stdout sharing the
 * terminal) starts on a clean line. SIGINT and SIGTERM while it is up erase
 * it too, then end the process as they would have.
 */
#include "cli.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t cli_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool cli_progress_wanted(void)
{
	const char *term = getenv("TERM");

	return isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
}

void cli_progress_clear(void)
{
	fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* Interrupted while the line is up: erase it (write() is async-signal-safe),
 * then die of the signal as before, so the shell's prompt starts clean. */
static void erase_and_die(int sig)
{
	static const char clear[] = "\r\033[K";
	ssize_t w = write(STDERR_FILENO, clear, sizeof(clear) - 1);

	(void)w;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(bool on, struct sigaction old[2])
{
	static const int sigs[2] = {SIGINT, SIGTERM};
	struct sigaction sa = {.sa_handler = erase_and_die};

	for (int i = 0; i < 2; i++) {
		if (on)
			sigaction(sigs[i], &sa, &old[i]);
		else
			sigaction(sigs[i], &old[i], NULL);
	}
}

/* The reply to request id, popped from the client: 1 (with *res, or the
 * error printed), 0 none yet. */
static int take_reply(struct gpuprof_client *c, const char *method, uint64_t id, bool drawn,
		      char **res, int *err)
{
	char *result, *msg;
	uint64_t rid;
	int code;

	for (;;) {
		result = msg = NULL;
		code = 0;
		if (gpuprof_client_next_reply(c, &rid, &result, &code, &msg) != 1)
			return 0;
		if (rid == id || rid == 0)
			break;
		free(result); /* not ours (cannot happen on the CLI's one connection) */
		free(msg);
	}
	if (drawn)
		cli_progress_clear();
	if (code) {
		/* the message may quote a name or a trace's text: escaped */
		char *em = cli_escape(msg ? msg : "");

		fprintf(stderr, "gpuprofctl: %s: %s (code %d)\n", method, em ? em : "?", code);
		free(em);
		free(result);
		free(msg);
		*err = -EREMOTEIO;
		return 1;
	}
	free(msg);
	*res = result;
	*err = 0;
	return 1;
}

int cli_call_progress(struct cli *cli, const char *method, const char *params, const int *fds,
		      size_t nfds, cli_progress_fn draw, void *ctx, char **res)
{
	struct gpuprof_client *c = cli->client;
	int64_t deadline = cli->timeout_ms ? cli_now_ms() + cli->timeout_ms : -1;
	bool tty = draw && cli_progress_wanted(), drawn = false;
	struct sigaction old[2];
	uint64_t id;
	int r, err;

	r = gpuprof_client_send(c, method, params, fds, nfds, &id);
	if (r < 0)
		return r;
	if (tty)
		catch_signals(true, old);
	for (;;) {
		struct pollfd pfd = {.fd = gpuprof_client_get_fd(c), .events = POLLIN};

		if (gpuprof_client_pending_output(c))
			pfd.events |= POLLOUT;
		if (tty) {
			char line[160];

			line[0] = '\0';
			draw(ctx, line, sizeof(line));
			fprintf(stderr, "\r\033[K%s", line);
			fflush(stderr);
			drawn = true;
		}
		if (deadline >= 0 && cli_now_ms() >= deadline) {
			r = -ETIMEDOUT;
			break;
		}
		if (poll(&pfd, 1, 200) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (pfd.revents & POLLOUT) {
			r = gpuprof_client_flush(c);
			if (r < 0)
				break;
		}
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		r = gpuprof_client_process(c);
		if (r < 0)
			break;
		if (take_reply(c, method, id, drawn, res, &err)) {
			r = err;
			goto out;
		}
	}
	if (drawn)
		cli_progress_clear();
out:
	if (tty)
		catch_signals(false, old);
	return r;
}
