// SPDX-License-Identifier: MIT
/*
 * libgpuprof-client I/O against the fake daemon (fake_srv.h): output and
 * input descriptors passed with SCM_RIGHTS, an oversized reply, the server
 * closing, and the call timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fake_srv.h"

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

int main(void)
{
	RUN(test_fd_passing);
	RUN(test_input_pipe);
	RUN(test_oversized_reply);
	RUN(test_server_closes);
	RUN(test_timeout);
	return test_summary();
}
