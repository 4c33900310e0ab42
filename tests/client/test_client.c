// SPDX-License-Identifier: MIT
/*
 * libgpuprof-client against a fake daemon written here: a socketpair() whose
 * far end speaks the real framing (common/framing.h) from a thread.
 */
#include <errno.h>
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

/* ---- fake server ---- */

struct srv {
	int fd;
	struct frame_buf fb;
	int fds[16];
	size_t nfds;
	void (*script)(struct srv *s);
	pthread_t thread;
	char method[128];
	int64_t id;
	cJSON *params;
};

/* Read the next request; false at EOF. Received fds queue in s->fds. */
static bool srv_read(struct srv *s)
{
	char *msg, *p;
	size_t len, avail;
	bool trunc = false;

	cJSON_Delete(s->params);
	s->params = NULL;
	for (;;) {
		if (frame_buf_next(&s->fb, &msg, &len) == 1)
			break;
		if (frame_buf_reserve(&s->fb, &p, &avail) < 0)
			return false;
		ssize_t n = fd_recv(s->fd, p, avail, s->fds, &s->nfds, 16, &trunc, 0);
		if (n <= 0)
			return false;
		frame_buf_commit(&s->fb, (size_t)n);
	}
	cJSON *req = cJSON_Parse(msg);
	cJSON *m = cJSON_GetObjectItem(req, "method");
	snprintf(s->method, sizeof(s->method), "%s", cJSON_IsString(m) ? m->valuestring : "?");
	s->id = (int64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(req, "id"));
	if (!cJSON_IsString(cJSON_GetObjectItem(req, "jsonrpc")))
		s->id = -1;
	s->params = cJSON_DetachItemFromObject(req, "params");
	cJSON_Delete(req);
	return true;
}

static void srv_send(struct srv *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void srv_send(struct srv *s, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	fd_send(s->fd, buf, (size_t)n, NULL, 0, 0);
}

static int srv_take_fd(struct srv *s)
{
	if (!s->nfds)
		return -1;
	int fd = s->fds[0];
	memmove(s->fds, s->fds + 1, --s->nfds * sizeof(int));
	return fd;
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;

	s->script(s);
	return NULL;
}

/* A client wired to a server running script in a thread. */
static struct gpuprof_client *start(struct srv *s, void (*script)(struct srv *s))
{
	struct gpuprof_client *c = NULL;
	int sv[2];

	memset(s, 0, sizeof(*s));
	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s->fd = sv[1];
	frame_buf_init(&s->fb, 1 << 20);
	CHECK_EQ_INT(client_new_fd(sv[0], &c), 0);
	s->script = script;
	if (script)
		pthread_create(&s->thread, NULL, srv_main, s);
	return c;
}

static void stop(struct srv *s, struct gpuprof_client *c)
{
	gpuprof_client_free(c);
	if (s->script)
		pthread_join(s->thread, NULL);
	while (s->nfds)
		close(srv_take_fd(s));
	cJSON_Delete(s->params);
	frame_buf_finish(&s->fb);
	close(s->fd);
}

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

/* capture.folded-like: write to the passed fd, then reply. */
static void output_script(struct srv *s)
{
	while (srv_read(s)) {
		int fd = srv_take_fd(s);
		struct stat st;
		char reply[64] = "null";
		if (fd >= 0 && fstat(fd, &st) == 0) {
			/* As the daemon does with pipes. */
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
			CHECK_EQ_INT(write(fd, "a;b 1\n", 6), 6);
			snprintf(reply, sizeof(reply), "{\"ino\":%llu,\"fifo\":%d}",
				 (unsigned long long)st.st_ino, S_ISFIFO(st.st_mode));
			close(fd);
		}
		cJSON *f = cJSON_GetObjectItem(s->params, "fd");
		CHECK(cJSON_IsNumber(f) && f->valueint == 0);
		srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":%s}", (long long)s->id,
			 reply);
	}
}

static void test_fd_passing(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, output_script);
	char path[] = "/tmp/gpuprof-test-XXXXXX", buf[64] = {0}, *res = NULL;
	int fd = mkstemp(path), p[2];
	struct stat st;

	unlink(path);
	fstat(fd, &st);
	/* A regular file goes to the daemon as is. */
	CHECK_EQ_INT(gpuprof_call_with_output(c, "capture.folded", "{\"id\":1}", fd, &res), 0);
	cJSON *r = cJSON_Parse(res);
	CHECK_EQ_U64(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "ino")), st.st_ino);
	cJSON_Delete(r);
	free(res);
	res = NULL;
	CHECK_EQ_INT(pread(fd, buf, sizeof(buf) - 1, 0), 6);
	CHECK_STREQ(buf, "a;b 1\n");
	close(fd);

	/* A pipe is not: the daemon gets our own pipe and we copy. */
	CHECK_EQ_INT(pipe(p), 0);
	fstat(p[1], &st);
	CHECK_EQ_INT(gpuprof_call_with_output(c, "capture.folded", NULL, p[1], &res), 0);
	r = cJSON_Parse(res);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "ino")) != (double)st.st_ino);
	CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "fifo")), 1);
	cJSON_Delete(r);
	free(res);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ_INT(read(p[0], buf, sizeof(buf) - 1), 6);
	CHECK_STREQ(buf, "a;b 1\n");
	CHECK_EQ_INT(fcntl(p[1], F_GETFL) & O_NONBLOCK, 0);
	close(p[0]);
	close(p[1]);

	/* "fd" must not be in the params; arrays are refused. */
	CHECK_EQ_INT(gpuprof_call_with_output(c, "m", "{\"fd\":3}", STDERR_FILENO, NULL), -EINVAL);
	CHECK_EQ_INT(gpuprof_call_with_output(c, "m", "[1]", STDERR_FILENO, NULL), -EINVAL);
	stop(&s, c);
}

/* capture.import-like: read the passed fd to EOF, reply with the size. */
static void input_script(struct srv *s)
{
	while (srv_read(s)) {
		int fd = srv_take_fd(s);
		size_t total = 0;
		char buf[4096];
		struct pollfd p = {.fd = fd, .events = POLLIN};
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		for (;;) {
			ssize_t n = read(fd, buf, sizeof(buf));
			if (n == 0)
				break;
			if (n < 0 && errno == EAGAIN) {
				poll(&p, 1, 1000);
				continue;
			}
			if (n < 0)
				break;
			total += (size_t)n;
		}
		close(fd);
		srv_send(s, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"bytes\":%zu}}",
			 (long long)s->id, total);
	}
}

static void test_input_pipe(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, input_script);
	char *res = NULL;
	int p[2];

	CHECK_EQ_INT(pipe(p), 0);
	CHECK_EQ_INT(write(p[1], "{\"traceEvents\":[]}", 18), 18);
	close(p[1]);
	CHECK_EQ_INT(gpuprof_call_with_input(c, "capture.import", "{\"rank\":0}", p[0], &res), 0);
	CHECK_STREQ(res, "{\"bytes\":18}");
	CHECK_EQ_INT(fcntl(p[0], F_GETFL) & O_NONBLOCK, 0);
	free(res);
	close(p[0]);
	stop(&s, c);
}

static void huge_script(struct srv *s)
{
	static char chunk[1 << 16];

	memset(chunk, 'x', sizeof(chunk));
	CHECK(srv_read(s));
	/* 65 MiB without a delimiter; stops when the client hangs up. */
	for (int i = 0; i < 65 * 16; i++)
		if (send(s->fd, chunk, sizeof(chunk), MSG_NOSIGNAL) < 0)
			break;
}

static void test_oversized_reply(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, huge_script);

	CHECK_EQ_INT(gpuprof_client_call(c, "status", NULL, NULL, 0, NULL), -EMSGSIZE);
	stop(&s, c);
}

static void close_script(struct srv *s)
{
	CHECK(srv_read(s));
	shutdown(s->fd, SHUT_RDWR);
}

static void test_server_closes(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, close_script);

	CHECK_EQ_INT(gpuprof_client_call(c, "status", NULL, NULL, 0, NULL), -ECONNRESET);
	/* Sticky: the stream is gone. */
	CHECK_EQ_INT(gpuprof_client_call(c, "status", NULL, NULL, 0, NULL), -ECONNRESET);
	CHECK_EQ_INT(gpuprof_client_process(c), -ECONNRESET);
	stop(&s, c);
}

static void test_timeout(void)
{
	struct srv s;
	struct gpuprof_client *c = start(&s, NULL);
	struct timespec a, b;

	gpuprof_client_set_timeout(c, 100);
	clock_gettime(CLOCK_MONOTONIC, &a);
	CHECK_EQ_INT(gpuprof_client_call(c, "status", NULL, NULL, 0, NULL), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	CHECK(ms >= 95 && ms < 5000);
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
	RUN(test_fd_passing);
	RUN(test_input_pipe);
	RUN(test_oversized_reply);
	RUN(test_server_closes);
	RUN(test_timeout);
	RUN(test_invalid_params);
	RUN(test_connect_path);
	RUN(test_parse_duration);
	return test_summary();
}
