// SPDX-License-Identifier: MIT
/*
 * libgpuprof-client against a fake daemon (fake_srv.h): a socketpair() whose
 * far end speaks the real framing (common/framing.h) from a thread. Calls,
 * replies, ids and errors here; descriptors, size and time limits in
 * test_client_io.c.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "client-private.h"
#include "framing.h"
#include "test.h"

#include "fake_srv.h"

/* ---- scripts ---- */

static void echo_script(struct srv *s)
{
	while (srv_read(s)) {
		char *p = s->params ? cJSON_PrintUnformatted(s->params) : NULL;
		srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"method\":\"%s\",\"params\":%s}}",
			 (long long)s->id, strcmp(s->method, "status") == 0 ? "status" : "other",
			 p ? p : "null");
		free(p);
	}
}

static void test_call_reply(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, echo_script);
	char *res = NULL;

	CHECK_EQ_INT(gpuprof_status(c, &res), 0);
	CHECK_STREQ(res, "{\"method\":\"status\",\"params\":null}");
	free(res);
	res = NULL;
	CHECK_EQ_INT(gpuprof_client_call(c, "x.y", "{\"a\":\"q\\\"\\n\",\"b\":[1,2]}", NULL, 0, &res),
		     0);
	CHECK_STREQ(res, "{\"method\":\"other\",\"params\":{\"a\":\"q\\\"\\n\",\"b\":[1,2]}}");
	free(res);
	CHECK_EQ_INT(gpuprof_client_call(c, "status", NULL, NULL, 0, NULL), 0);
	stop(&s, c);
}

/* Method names with quotes and newlines are escaped, ids increment. */
static void method_script(struct srv *s)
{
	int64_t last = 0;
	while (srv_read(s)) {
		bool ok = strcmp(s->method, "we\"ird\nname") == 0 && s->id == last + 1;
		last = s->id;
		srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}", (long long)s->id,
			 ok ? "true" : "false");
	}
}

static void test_escaping_and_ids(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, method_script);

	for (int i = 0; i < 3; i++) {
		char *res = NULL;
		CHECK_EQ_INT(gpuprof_client_call(c, "we\"ird\nname", NULL, NULL, 0, &res), 0);
		CHECK_STREQ(res, "true");
		free(res);
	}
	stop(&s, c);
}

static void test_async_out_of_order(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, NULL);
	uint64_t ids[3], got[3];
	int64_t seen[3];

	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(gpuprof_client_send(c, "m", "[]", NULL, 0, &ids[i]), 0);
	CHECK_EQ_U64(ids[1], ids[0] + 1);
	CHECK_EQ_U64(gpuprof_client_pending_output(c), 0);
	for (int i = 0; i < 3; i++) {
		CHECK(srv_read(&s));
		seen[i] = s.id;
	}
	/* Reply in the order 3, 1, 2. */
	int order[3] = {2, 0, 1};
	for (int i = 0; i < 3; i++)
		srv_send(&s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%d}",
			 (long long)seen[order[i]], order[i]);
	int n = 0;
	for (int tries = 0; tries < 100 && n < 3; tries++) {
		struct pollfd p = {.fd = gpuprof_client_get_fd(c), .events = POLLIN};
		poll(&p, 1, 100);
		n = gpuprof_client_process(c);
	}
	CHECK_EQ_INT(n, 3);
	for (int i = 0; i < 3; i++) {
		char *res = NULL, *msg = NULL;
		int code = -1;
		CHECK_EQ_INT(gpuprof_client_next_reply(c, &got[i], &res, &code, &msg), 1);
		CHECK_EQ_INT(code, 0);
		CHECK(msg == NULL);
		CHECK_EQ_INT(atoi(res), order[i]);
		free(res);
	}
	CHECK_EQ_U64(got[0], ids[2]);
	CHECK_EQ_U64(got[1], ids[0]);
	CHECK_EQ_INT(gpuprof_client_next_reply(c, NULL, NULL, NULL, NULL), 0);
	stop(&s, c);
}

/* A blocking call while an async request is in flight: its reply comes
 * second and the async one stays queued for next_reply. */
static void reversed_script(struct srv *s)
{
	CHECK(srv_read(s));
	int64_t a = s->id;
	CHECK(srv_read(s));
	srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32003,\"message\":"
		    "\"no such capture\",\"data\":{\"id\":5}}}",
		 (long long)a);
	srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"b\":1}}", (long long)s->id);
	while (srv_read(s))
		;
}

static void test_blocking_keeps_async_replies(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, reversed_script);
	uint64_t a, got;
	char *res = NULL, *msg = NULL;
	int code = 0;

	CHECK_EQ_INT(gpuprof_client_send(c, "a", NULL, NULL, 0, &a), 0);
	CHECK_EQ_INT(gpuprof_client_call(c, "b", NULL, NULL, 0, &res), 0);
	CHECK_STREQ(res, "{\"b\":1}");
	free(res);
	res = NULL;
	CHECK_EQ_INT(gpuprof_client_next_reply(c, &got, &res, &code, &msg), 1);
	CHECK_EQ_U64(got, a);
	CHECK_EQ_INT(code, -32003);
	CHECK(res == NULL);
	CHECK_STREQ(msg, "no such capture");
	free(msg);
	stop(&s, c);
}

static void error_script(struct srv *s)
{
	CHECK(srv_read(s));
	srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32003,\"message\":"
		    "\"no such capture\",\"data\":{\"id\":5}}}",
		 (long long)s->id);
	CHECK(srv_read(s));
	srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32001,\"message\":"
		    "\"message too large\"}}");
	while (srv_read(s))
		;
}

static void test_error_reply(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, error_script);
	char *res = NULL;

	CHECK_EQ_INT(gpuprof_capture_info(c, 5, &res), -EREMOTEIO);
	CHECK(res == NULL);
	CHECK_EQ_INT(gpuprof_client_error_code(c), GPUPROF_ERR_NOT_FOUND);
	CHECK_STREQ(gpuprof_client_error_message(c), "no such capture");
	CHECK_STREQ(gpuprof_client_error_data(c), "{\"id\":5}");
	/* An error without id answers the waiting call. */
	CHECK_EQ_INT(gpuprof_client_call(c, "big", NULL, NULL, 0, &res), -EREMOTEIO);
	CHECK_EQ_INT(gpuprof_client_error_code(c), GPUPROF_ERR_TOO_LARGE);
	CHECK(gpuprof_client_error_data(c) == NULL);
	stop(&s, c);
}

static void test_invalid_params(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, NULL);
	static const char *const bad[] = {"", "[1,", "42", "\"str\"", "{} x", "null", "{\"a\":}"};
	int fds[GPUPROF_MAX_FDS_PER_MSG + 1] = {0};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ_INT(gpuprof_client_call(c, "m", bad[i], NULL, 0, NULL), -EINVAL);
	CHECK_EQ_INT(gpuprof_client_call(c, NULL, NULL, NULL, 0, NULL), -EINVAL);
	CHECK_EQ_INT(gpuprof_client_send(c, "m", NULL, fds, GPUPROF_MAX_FDS_PER_MSG + 1, NULL),
		     -EINVAL);
	CHECK_EQ_INT(gpuprof_client_send(c, "m", NULL, NULL, 1, NULL), -EINVAL);
	struct gpuprof_capture_opts o = {.duration_ms = 1, .last_ms = 1};
	CHECK_EQ_INT(gpuprof_capture_start(c, &o, NULL), -EINVAL);
	/* The size field: shorter than the first layout, or a newer caller's
	 * larger struct with a field this library does not know set. */
	struct gpuprof_capture_opts ok = {
		.size = offsetof(struct gpuprof_capture_opts, name) + sizeof(ok.name) - 1,
		.last_ms = 1};
	CHECK_EQ_INT(gpuprof_capture_start(c, &ok, NULL), -EINVAL);
	/* the window: exactly one of duration, last and start; an end only
	 * for a window in the past */
	struct gpuprof_capture_opts win[] = {
		{.size = sizeof(win[0]), .last_ms = 1, .has_start = 1, .start_ns = 5},
		{.size = sizeof(win[0]), .duration_ms = 1, .has_start = 1},
		{.size = sizeof(win[0]), .duration_ms = 1, .has_end = 1, .end_ns = 9},
		{.size = sizeof(win[0]), .has_end = 1, .end_ns = 9},
	};
	for (size_t i = 0; i < sizeof(win) / sizeof(win[0]); i++)
		CHECK_EQ_INT(gpuprof_capture_start(c, &win[i], NULL), -EINVAL);
	struct {
		struct gpuprof_capture_opts o;
		uint64_t newer;
	} big = {.o = {.size = sizeof(big), .last_ms = 1}, .newer = 7};
	CHECK_EQ_INT(gpuprof_capture_start(c, &big.o, NULL), -E2BIG);
	/* Nothing reached the wire. */
	CHECK_EQ_U64(gpuprof_client_pending_output(c), 0);
	char b;
	CHECK_EQ_INT(recv(s.fd, &b, 1, MSG_DONTWAIT), -1);
	stop(&s, c);
}

static void test_connect_path(void)
{
	char dir[] = "/tmp/gpuprof-sock-XXXXXX", path[64];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct gpuprof_client *c = NULL;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/s", dir);
	CHECK_EQ_INT(gpuprof_client_connect(path, &c), -ENOENT);
	CHECK(c == NULL);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	CHECK_EQ_INT(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	CHECK_EQ_INT(listen(l, 1), 0);
	setenv(GPUPROF_SOCKET_ENV, path, 1);
	CHECK_EQ_INT(gpuprof_client_connect(NULL, &c), 0);
	unsetenv(GPUPROF_SOCKET_ENV);
	int a = accept(l, NULL, NULL);
	CHECK(a >= 0);
	CHECK(gpuprof_client_get_fd(c) >= 0);
	gpuprof_client_free(c);
	gpuprof_client_free(NULL);
	close(a);
	close(l);
	unlink(path);
	rmdir(dir);
}

static void test_parse_duration(void)
{
	static const struct {
		const char *text;
		int ret;
		uint64_t ms;
	} cases[] = {
		{"500ms", 0, 500},
		{"5s", 0, 5000},
		{"2m", 0, 120000},
		{"1h", 0, 3600000},
		{"0", 0, 0},
		{"7", 0, 7000},
		{"junk", -EINVAL, 0},
		{"", -EINVAL, 0},
		{"5x", -EINVAL, 0},
		{"-1s", -EINVAL, 0},
		{"99999999999999999999", -ERANGE, 0},
		{"18446744073709551615h", -ERANGE, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ms = 0;
		int r = gpuprof_parse_duration_ms(cases[i].text, &ms);
		if (r != cases[i].ret || (r == 0 && ms != cases[i].ms))
			TEST_FAIL_AT("\"%s\": ret %d ms %llu, want %d %llu", cases[i].text, r,
				     (unsigned long long)ms, cases[i].ret,
				     (unsigned long long)cases[i].ms);
	}
}

int main(void)
{
	RUN(test_call_reply);
	RUN(test_escaping_and_ids);
	RUN(test_async_out_of_order);
	RUN(test_blocking_keeps_async_replies);
	RUN(test_error_reply);
	RUN(test_invalid_params);
	RUN(test_connect_path);
	RUN(test_parse_duration);
	return test_summary();
}
