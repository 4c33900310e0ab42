// SPDX-License-Identifier: MIT
/* Framing, nesting pre-check, fd passing, durations and config parsing. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "duration.h"
#include <gpuprof/protocol.h>
#include "framing.h"
#include "test.h"

static void feed(struct frame_buf *fb, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		char *p;
		size_t avail;
		CHECK_EQ_INT(frame_buf_reserve(fb, &p, &avail), 0);
		size_t k = n < avail ? n : avail;
		memcpy(p, s, k);
		frame_buf_commit(fb, k);
		s += k;
		n -= k;
	}
}

static void test_split_messages(void)
{
	struct frame_buf fb;
	frame_buf_init(&fb, 64);
	feed(&fb, "{\"a\":1}\n{\"b\"");
	char *m;
	size_t len;
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), 1);
	CHECK_STREQ(m, "{\"a\":1}");
	CHECK_EQ_INT(len, 7);
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), 0);
	CHECK_EQ_INT(frame_buf_pending(&fb), 4);
	feed(&fb, ":2}\n\n");
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), 1);
	CHECK_STREQ(m, "{\"b\":2}");
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), 1); /* empty line is a message */
	CHECK_EQ_INT(len, 0);
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), 0);
	CHECK_EQ_INT(frame_buf_pending(&fb), 0);
	frame_buf_finish(&fb);
}

static void test_byte_at_a_time(void)
{
	struct frame_buf fb;
	frame_buf_init(&fb, 1024);
	const char *msg = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}\n";
	int got = 0;
	for (int rep = 0; rep < 3; rep++) {
		for (const char *p = msg; *p; p++) {
			char one[2] = {*p, 0};
			feed(&fb, one);
			char *m;
			size_t len;
			int r;
			while ((r = frame_buf_next(&fb, &m, &len)) == 1) {
				CHECK_EQ_INT(len, strlen(msg) - 1);
				got++;
			}
			CHECK_EQ_INT(r, 0);
		}
	}
	CHECK_EQ_INT(got, 3);
	frame_buf_finish(&fb);
}

static void test_oversized(void)
{
	struct frame_buf fb;
	frame_buf_init(&fb, 16);
	feed(&fb, "0123456789abcdef");
	char *m;
	size_t len;
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), 0); /* exactly max, no newline yet */
	feed(&fb, "X");
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), -EMSGSIZE);
	frame_buf_finish(&fb);

	/* a complete but oversized message is refused too */
	frame_buf_init(&fb, 4);
	feed(&fb, "12345\n");
	CHECK_EQ_INT(frame_buf_next(&fb, &m, &len), -EMSGSIZE);
	frame_buf_finish(&fb);

	/* the buffer never grows far past max: reserve refuses once full */
	frame_buf_init(&fb, 100);
	int refused = 0;
	for (int i = 0; i < 100000 && !refused; i++) {
		char *p;
		size_t avail;
		if (frame_buf_reserve(&fb, &p, &avail) < 0) {
			refused = 1;
			break;
		}
		memset(p, 'x', avail);
		frame_buf_commit(&fb, avail);
	}
	CHECK(refused);
	CHECK(fb.cap <= 100 + 1 + 65536);
	frame_buf_finish(&fb);
}

static void test_nesting(void)
{
	CHECK(json_nesting_ok("{\"a\":[1,{\"b\":2}]}", 17, 3));
	CHECK(!json_nesting_ok("{\"a\":[1,{\"b\":2}]}", 17, 2));
	/* brackets inside strings do not count, escaped quotes do not end them */
	const char *s = "{\"a\":\"[[[[[[\\\"[[[[\"}";
	CHECK(json_nesting_ok(s, strlen(s), 1));
	char deep[200];
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	CHECK(!json_nesting_ok(deep, 200, 32));
	CHECK(json_nesting_ok(deep, 200, 100));
}

static void span_is(const char *json, const char *key, const char *want)
{
	size_t st = 0, n = 0;
	bool found = json_member_span(json, strlen(json), key, &st, &n);
	if (!want) {
		if (found)
			TEST_FAIL_AT("\"%s\" found in %s", key, json);
		return;
	}
	if (!found || n != strlen(want) || memcmp(json + st, want, n) != 0)
		TEST_FAIL_AT("member \"%s\" of %s: got \"%.*s\", want \"%s\"", key, json,
			     found ? (int)n : 0, found ? json + st : "", want);
}

static void test_member_span(void)
{
	span_is("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":1795317132742946687}}", "result",
		"{\"t\":1795317132742946687}");
	span_is("{\"result\":18446744073709551615,\"id\":2}", "result", "18446744073709551615");
	span_is("{ \"id\" : 3 , \"result\" : [1, \"a]}\\\"\", {\"x\": []}] }", "result",
		"[1, \"a]}\\\"\", {\"x\": []}]");
	span_is("{\"a\":{\"result\":1},\"result\":\"top\"}", "result", "\"top\"");
	span_is("{\"a\":{\"result\":1}}", "result", NULL);
	span_is("{\"res\\\"ult\":1,\"result\":null}", "result", "null");
	span_is("{}", "result", NULL);
}

static void test_fd_passing(void)
{
	int sv[2];
	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	int pfd[2];
	CHECK_EQ_INT(pipe(pfd), 0);
	int fds[2] = {pfd[0], pfd[1]};
	CHECK_EQ_INT(fd_send(sv[0], "hi\n", 3, fds, 2, 0), 3);
	char buf[16];
	int got[8];
	size_t n = 0;
	bool trunc = false;
	CHECK_EQ_INT(fd_recv(sv[1], buf, sizeof(buf), got, &n, 1, &trunc, 0), 3);
	CHECK_EQ_INT(n, 1); /* one accepted, the other closed */
	CHECK(trunc);
	struct stat a, b;
	CHECK_EQ_INT(fstat(got[0], &a), 0);
	CHECK_EQ_INT(fstat(pfd[0], &b), 0);
	CHECK_EQ_U64(a.st_ino, b.st_ino);
	CHECK(fcntl(got[0], F_GETFD) & FD_CLOEXEC);
	CHECK_EQ_INT(fd_send(sv[0], "x", 1, fds, GPUPROF_MAX_FDS_PER_MSG + 1, 0), -EINVAL);
	close(got[0]);
	close(pfd[0]);
	close(pfd[1]);
	close(sv[0]);
	close(sv[1]);
}

static void test_durations(void)
{
	static const struct {
		const char *in;
		int r;
		uint64_t ms;
	} cases[] = {
		{"500ms", 0, 500},   {"5s", 0, 5000},	    {"2m", 0, 120000},   {"1h", 0, 3600000},
		{"7", 0, 7000},	     {"0", 0, 0},	    {"250us", 0, 1},	 {"1500us", 0, 2},
		{"", -EINVAL, 0},    {"s", -EINVAL, 0},	    {"5 s", -EINVAL, 0}, {"-5s", -EINVAL, 0},
		{"5x", -EINVAL, 0},  {"99999999999999999999", -ERANGE, 0},
		{"999999999999999999h", -ERANGE, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ms = 12345;
		int r = duration_parse_ms(cases[i].in, &ms);
		if (r != cases[i].r)
			TEST_FAIL_AT("duration \"%s\": %d, expected %d", cases[i].in, r, cases[i].r);
		else if (r == 0 && ms != cases[i].ms)
			TEST_FAIL_AT("duration \"%s\": %llu ms", cases[i].in, (unsigned long long)ms);
	}
}

static const char *write_tmp(const char *text)
{
	static char path[] = "/tmp/gpuprof-conf-XXXXXX";
	strcpy(path, "/tmp/gpuprof-conf-XXXXXX");
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, text, strlen(text)), (long long)strlen(text));
	close(fd);
	return path;
}

/* metrics.*: off by default; the address is checked when it is bound
 * (tests/metrics), the rest here. */
static void test_config_metrics(void)
{
	static const char *const bad[] = {
		"metrics.top = 0\n",
		"metrics.top = 1001\n",
		"metrics.per_process = maybe\n",
		"metrics.per_process_gpu = 2\n",
		"metrics.bpf_stats = yes please\n",
		"metrics.listen = /a/very/long/path/that/does/not/fit/in/sun_path/of/a/unix/socket/"
		"address/which/is/one/hundred/and/eight/bytes.sock\n",
		"metrics.port = 9464\n",
	};
	struct config c;
	char err[256];
	const char *p;

	config_defaults(&c);
	CHECK_STREQ(c.metrics.listen, "");
	CHECK(!c.metrics.per_process && !c.metrics.per_process_gpu && !c.metrics.bpf_stats);
	CHECK_EQ_INT(c.metrics.top, 10);
	p = write_tmp("metrics.listen = [::1]:9464\nmetrics.per_process = true\n"
		      "metrics.per_process_gpu = on\nmetrics.top = 1000\nmetrics.bpf_stats = 1\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK_STREQ(c.metrics.listen, "[::1]:9464");
	CHECK(c.metrics.per_process && c.metrics.per_process_gpu && c.metrics.bpf_stats);
	CHECK_EQ_INT(c.metrics.top, 1000);
	unlink(p);
	p = write_tmp("metrics.listen = off\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK_STREQ(c.metrics.listen, "");
	unlink(p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_defaults(&c);
		p = write_tmp(bad[i]);
		if (config_load(&c, p, err, sizeof(err)) != -EINVAL)
			TEST_FAIL_AT("config \"%s\" accepted", bad[i]);
		unlink(p);
	}
}

static void test_config(void)
{
	struct config c;
	char err[256];
	config_defaults(&c);
	CHECK_EQ_INT(c.sample_freq_hz, 49);
	CHECK_EQ_INT(c.gpu_stack_sample, 32);
	CHECK_EQ_INT(c.gpu_watcher, CONFIG_GPU_WATCHER_AUTO);
	CHECK_EQ_INT(c.max_clients, 64);
	CHECK(c.demangle);
	CHECK(c.sym_lines);
	CHECK_EQ_INT(c.xe.submit_hook, CONFIG_XE_HOOK_AUTO);
	CHECK(!c.admin_group_set); /* root only by default */
	const char *p = write_tmp("# comment\n  memory.store_budget = 16M  # trailing\n"
				  "sampling.cpu_frequency=99\nlimits.idle_timeout = 1500ms\n"
				  "sampling.cpu = off\nsocket = /tmp/x.sock\nsocket_mode = 0600\n\n"
				  "gpu.stack_sample = 8\ngpu.watcher = sys_exit\n"
				  "symbols.demangle = false\nsymbols.lines = false\nxe.submit_hook = off\n"
				  "analysis.cache_bytes = 1G\nanalysis.scratch_bytes = 64M\n"
				  "access.admin_group = 4242\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK_EQ_U64(c.store_budget_bytes, 16u << 20);
	CHECK_EQ_INT(c.sample_freq_hz, 99);
	CHECK_EQ_INT(c.idle_timeout_ms, 1500);
	CHECK(!c.cpu_sampling);
	CHECK(!c.demangle);
	CHECK(!c.sym_lines);
	CHECK_STREQ(c.socket_path, "/tmp/x.sock");
	CHECK_EQ_INT(c.socket_mode, 0600);
	CHECK_EQ_INT(c.gpu_stack_sample, 8);
	CHECK_EQ_INT(c.gpu_watcher, CONFIG_GPU_WATCHER_SYS_EXIT);
	CHECK_EQ_INT(c.xe.submit_hook, CONFIG_XE_HOOK_OFF);
	CHECK_EQ_U64(c.analysis_cache_bytes, 1u << 30);
	CHECK_EQ_U64(c.analysis_scratch_bytes, 64u << 20);
	CHECK(c.admin_group_set);
	CHECK_EQ_INT(c.admin_gid, 4242);
	unlink(p);
	/* by name (resolved at load), and "none" turns it off again */
	p = write_tmp("access.admin_group = root\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK(c.admin_group_set);
	CHECK_EQ_INT(c.admin_gid, 0);
	unlink(p);
	p = write_tmp("access.admin_group = none\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK(!c.admin_group_set);
	unlink(p);

	/* per-uid limits: defaults leave one uid short of every global limit */
	config_defaults(&c);
	CHECK(c.user_clients < config_unpriv_max(c.max_clients, c.reserved_clients));
	CHECK(c.user_captures < config_unpriv_max(c.captures_max, c.reserved_captures));
	CHECK(c.user_jobs < config_unpriv_max(c.max_jobs, c.reserved_jobs));
	CHECK(c.reserved_clients > 0 && c.reserved_captures > 0 && c.reserved_jobs > 0);
	p = write_tmp("limits.user_clients = 3\nlimits.reserved_clients = 0\n"
		      "limits.user_captures = 5\nlimits.reserved_captures = 2\n"
		      "limits.user_jobs = 1\nlimits.reserved_jobs = 2\n"
		      "limits.user_disk = 1M\nlimits.persist_queue = 0\n"
		      "memory.persist_queue = 1G\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.user_clients, 3);
	CHECK_EQ_INT(c.reserved_clients, 0);
	CHECK_EQ_INT(c.user_captures, 5);
	CHECK_EQ_INT(c.reserved_captures, 2);
	CHECK_EQ_INT(c.user_jobs, 1);
	CHECK_EQ_INT(c.reserved_jobs, 2);
	CHECK_EQ_U64(c.user_disk_bytes, 1u << 20);
	CHECK_EQ_INT(c.persist_queue, 0);
	CHECK_EQ_U64(c.persist_queue_bytes, 1u << 30);
	unlink(p);
	/* a reserve as large as the limit leaves members one; a cap above
	 * the members' share is held to it */
	CHECK_EQ_U64(config_unpriv_max(4, 1), 3);
	CHECK_EQ_U64(config_unpriv_max(2, 5), 1);
	CHECK_EQ_U64(config_unpriv_max(64, 0), 64);
	CHECK_EQ_U64(config_user_max(64, 8, 100), 56);
	CHECK_EQ_U64(config_user_max(4, 1, 2), 2);

	static const char *const bad[] = {
		"nokey\n",
		"unknown.key = 1\n",
		"limits.max_clients = lots\n",
		"limits.max_clients = 0\n",
		"memory.store_budget = 1K\n",
		"limits.max_message = 2G\n",
		"limits.max_nesting = 99\n",
		"socket = relative/path\n",
		"sampling.cpu = maybe\n",
		"symbols.demangle = 2\n",
		"symbols.lines = maybe\n",
		"gpu.stack_sample = 0\n",
		"gpu.watcher = kprobe\n",
		"xe.submit_hook = maybe\n",
		"access.admin_group = no-such-group-gpuprof\n",
		"access.admin_group = 4294967295\n",
		"limits.user_clients = 0\n",
		"limits.user_jobs = 65\n",
		"limits.user_captures = many\n",
		"limits.reserved_jobs = -1\n",
		"limits.user_disk = 0\n",
		"limits.persist_queue = 1e3\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_defaults(&c);
		p = write_tmp(bad[i]);
		err[0] = '\0';
		int r = config_load(&c, p, err, sizeof(err));
		if (r != -EINVAL)
			TEST_FAIL_AT("config \"%s\" accepted", bad[i]);
		CHECK(strstr(err, ":1:") != NULL);
		unlink(p);
	}
	CHECK_EQ_INT(config_load(&c, "/nonexistent/gpuprofd.conf", err, sizeof(err)), -ENOENT);

	size_t sz;
	CHECK_EQ_INT(config_parse_size("4KiB", &sz), 0);
	CHECK_EQ_U64(sz, 4096);
	CHECK_EQ_INT(config_parse_size("1G", &sz), 0);
	CHECK_EQ_U64(sz, 1u << 30);
	CHECK_EQ_INT(config_parse_size("1T", &sz), -EINVAL);
}

/* push.*: off by default, "none" turns a string off again, and values
 * that would smuggle a header line, credentials in the URL or a relative
 * path are refused. */
static void test_config_push(void)
{
	struct config c;
	char err[256];
	config_defaults(&c);
	CHECK_STREQ(c.push.url, "");
	CHECK_STREQ(c.push.dir, "");
	CHECK_EQ_INT(c.push.interval_ms, 15000);
	CHECK_STREQ(c.push.app_name, "gpuprof");
	const char *p = write_tmp("push.url = https://pyro.example:4040/ingest\n"
				  "push.interval = 2s\npush.app_name = gpu.fleet-1\n"
				  "push.bearer_token_file = /etc/gpuprof/token\npush.tenant = team-a\n"
				  "push.ca_file = /etc/gpuprof/ca.pem\n"
				  "push.queue_max = 3\npush.queue_max_bytes = 1M\npush.timeout = 500ms\n"
				  "push.retry_max = 5s\npush.dir = /var/lib/gpuprof/profiles\n"
				  "push.dir_max_bytes = 64K\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK_STREQ(c.push.url, "https://pyro.example:4040/ingest");
	CHECK_EQ_INT(c.push.interval_ms, 2000);
	CHECK_STREQ(c.push.app_name, "gpu.fleet-1");
	CHECK_STREQ(c.push.bearer_token_file, "/etc/gpuprof/token");
	CHECK_STREQ(c.push.tenant, "team-a");
	CHECK_STREQ(c.push.ca_file, "/etc/gpuprof/ca.pem");
	CHECK_EQ_INT(c.push.queue_max, 3);
	CHECK_EQ_U64(c.push.queue_max_bytes, 1u << 20);
	CHECK_EQ_INT(c.push.timeout_ms, 500);
	CHECK_EQ_INT(c.push.retry_max_ms, 5000);
	CHECK_STREQ(c.push.dir, "/var/lib/gpuprof/profiles");
	CHECK_EQ_U64(c.push.dir_max_bytes, 64u << 10);
	unlink(p);
	p = write_tmp("push.url = none\npush.dir = none\npush.tenant = none\n");
	CHECK_EQ_INT(config_load(&c, p, err, sizeof(err)), 0);
	CHECK_STREQ(c.push.url, "");
	CHECK_STREQ(c.push.dir, "");
	CHECK_STREQ(c.push.tenant, "");
	unlink(p);
	static const char *const bad[] = {
		"push.url = ftp://host/ingest\n",
		"push.url = https://user:pw@host/ingest\n",
		"push.url = host:4040/ingest\n",
		"push.interval = 500ms\n",
		"push.app_name = app{x=y}\n",
		"push.bearer_token_file = token.txt\n",
		"push.tenant = a b\n",
		"push.queue_max = 0\n",
		"push.queue_max_bytes = 1K\n",
		"push.dir = relative\n",
		"push.dir_max_bytes = 10\n",
		"push.nothing = 1\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_defaults(&c);
		p = write_tmp(bad[i]);
		if (config_load(&c, p, err, sizeof(err)) != -EINVAL)
			TEST_FAIL_AT("config \"%s\" accepted", bad[i]);
		unlink(p);
	}
}

int main(void)
{
	RUN(test_split_messages);
	RUN(test_config_push);
	RUN(test_byte_at_a_time);
	RUN(test_oversized);
	RUN(test_nesting);
	RUN(test_member_span);
	RUN(test_fd_passing);
	RUN(test_durations);
	RUN(test_config);
	RUN(test_config_metrics);
	return test_summary();
}
