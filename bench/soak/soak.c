// SPDX-License-Identifier: MIT
/*
 * Load and soak: N concurrent clients issue a mix of status, capture cycles
 * (start --last, info, folded to a pipe, delete), imports and analyses (when
 * the daemon has them) and malformed requests on raw sockets for T seconds.
 * Prints requests/s, p50/p99 latency per method, errors by kind and the
 * daemon's RSS (start, warm, middle, end); the last line is the same as
 * JSON ("SOAK {...}") for tests/integration/test_soak.py.
 *
 *   soak -s SOCKET [-c 64] [-t 60] [-i trace.json[.gz]] [-p PID]
 *
 * Exit status 1 on any unexpected error (busy -32004 is expected under
 * load and counted apart) or a capture that does not read back intact.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <gpuprof/client.h>

enum op { OP_STATUS, OP_VERSION, OP_START, OP_INFO, OP_FOLDED, OP_DELETE, OP_IMPORT,
	  OP_ANALYZE, OP_MALFORMED, OP_LIST, OP_N };
static const char *const op_name[OP_N] = {
	"status", "version", "capture.start", "capture.info", "capture.folded",
	"capture.delete", "capture.import", "analyze", "malformed", "capture.list"};

#define MAX_KEPT 64
#define MAX_KINDS 64

struct lat {
	double *v;
	size_t n, cap;
};

static struct {
	const char *sock;
	const char *trace;
	int clients, seconds, pid;
	bool have_import;
	char analysis[64]; /* an analyze.<name> to run on imports, "" if none */
	double t0, t_end;
	pthread_mutex_t lock;
	struct lat lat[OP_N];
	struct {
		char kind[96];
		unsigned long n;
		bool expected;
	} errs[MAX_KINDS];
	unsigned nerrs;
	unsigned long unexpected, busy, total;
	uint64_t kept[MAX_KEPT];
	unsigned nkept;
	atomic_int stop;
} S = {.clients = 64, .seconds = 60, .lock = PTHREAD_MUTEX_INITIALIZER};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void lat_add(enum op op, double s)
{
	pthread_mutex_lock(&S.lock);
	struct lat *l = &S.lat[op];
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		double *v = realloc(l->v, cap * sizeof(*v));
		if (v) {
			l->v = v;
			l->cap = cap;
		}
	}
	if (l->n < l->cap)
		l->v[l->n++] = s;
	S.total++;
	pthread_mutex_unlock(&S.lock);
}

static void err_add(enum op op, int code, const char *msg, bool expected)
{
	char kind[96];
	snprintf(kind, sizeof(kind), "%s %d", op_name[op], code);
	pthread_mutex_lock(&S.lock);
	unsigned i;
	for (i = 0; i < S.nerrs; i++)
		if (!strcmp(S.errs[i].kind, kind))
			break;
	if (i == S.nerrs && S.nerrs < MAX_KINDS) {
		snprintf(S.errs[i].kind, sizeof(S.errs[i].kind), "%s", kind);
		S.errs[i].expected = expected;
		S.nerrs++;
	}
	if (i < S.nerrs)
		S.errs[i].n++;
	if (code == -32004)
		S.busy++;
	if (!expected) {
		S.unexpected++;
		if (S.unexpected <= 10)
			fprintf(stderr, "soak: unexpected error: %s: %s\n", kind, msg ? msg : "");
	}
	pthread_mutex_unlock(&S.lock);
}

/* A timed call; returns 0, the JSON-RPC code (< 0) of an error reply, or 1
 * for a transport failure. Busy is expected under this load. */
static int timed_call(struct gpuprof_client *c, enum op op, const char *method,
		      const char *params, const int *fds, size_t nfds, char **res)
{
	double t = now_s();
	int r = gpuprof_client_call(c, method, params, fds, nfds, res);
	lat_add(op, now_s() - t);
	if (r == 0)
		return 0;
	if (r == -EREMOTEIO) {
		int code = gpuprof_client_error_code(c);
		err_add(op, code, gpuprof_client_error_message(c), code == -32004);
		return code;
	}
	err_add(op, r, strerror(-r), false);
	return 1;
}

static uint64_t json_u64(const char *text, const char *key)
{
	cJSON *o = cJSON_Parse(text);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	uint64_t r = cJSON_IsNumber(v) ? (uint64_t)v->valuedouble : 0;
	cJSON_Delete(o);
	return r;
}

struct drain {
	int fd;
	uint64_t bytes;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	char buf[65536];
	ssize_t n;
	while ((n = read(d->fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			d->bytes += (uint64_t)n;
	return NULL;
}

/* folded output of id into a pipe read by a thread: the byte count the
 * daemon reports must be what arrived. Returns 0, or -1 (counted). */
static int folded_check(struct gpuprof_client *c, uint64_t id, bool count_busy)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	struct drain d = {.fd = p[0]};
	pthread_t th;
	pthread_create(&th, NULL, drain_main, &d);
	char params[64], *res = NULL;
	snprintf(params, sizeof(params), "{\"id\":%llu,\"fd\":0}", (unsigned long long)id);
	int r = timed_call(c, OP_FOLDED, "capture.folded", params, &p[1], 1, &res);
	close(p[1]);
	pthread_join(th, NULL);
	close(p[0]);
	if (r == 0 && json_u64(res, "bytes") != d.bytes) {
		err_add(OP_FOLDED, 0, "byte count differs from what arrived", false);
		r = -1;
	}
	free(res);
	return r == -32004 && !count_busy ? 0 : r;
}

static void capture_cycle(struct gpuprof_client *c, unsigned *seed)
{
	char params[128], *res = NULL;
	snprintf(params, sizeof(params), "{\"last_ms\":%u,\"wait\":true,\"pids\":[%d]}",
		 100 + rand_r(seed) % 900, S.pid);
	if (timed_call(c, OP_START, "capture.start", params, NULL, 0, &res)) {
		free(res);
		return;
	}
	uint64_t id = json_u64(res, "id");
	free(res);
	res = NULL;
	snprintf(params, sizeof(params), "{\"id\":%llu}", (unsigned long long)id);
	timed_call(c, OP_INFO, "capture.info", params, NULL, 0, &res);
	free(res);
	folded_check(c, id, true);
	/* Keep a few to read back at the end; delete the rest. */
	pthread_mutex_lock(&S.lock);
	bool keep = S.nkept < MAX_KEPT && rand_r(seed) % 8 == 0;
	if (keep)
		S.kept[S.nkept++] = id;
	pthread_mutex_unlock(&S.lock);
	if (!keep)
		timed_call(c, OP_DELETE, "capture.delete", params, NULL, 0, NULL);
}

static void import_cycle(struct gpuprof_client *c)
{
	int fd = open(S.trace, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char *res = NULL, params[96];
	int r = timed_call(c, OP_IMPORT, "capture.import", "{\"fd\":0}", &fd, 1, &res);
	close(fd);
	if (r) {
		free(res);
		return;
	}
	uint64_t id = json_u64(res, "id");
	free(res);
	snprintf(params, sizeof(params), "{\"id\":%llu}", (unsigned long long)id);
	if (S.analysis[0]) {
		res = NULL;
		timed_call(c, OP_ANALYZE, S.analysis, params, NULL, 0, &res);
		free(res);
	}
	timed_call(c, OP_DELETE, "capture.delete", params, NULL, 0, NULL);
}

static const struct {
	const char *line;
	int code;
} bad[] = {
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"", -32700},
	{"not json at all", -32700},
	{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}]", -32600},
	{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"status\"}", -32600},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"no.such\"}", -32601},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"capture.start\",\"params\":{\"last_ms\":-1}}",
	 -32602},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"capture.info\",\"params\":{\"id\":999999999}}",
	 -32003},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"capture.folded\",\"params\":{\"id\":1,\"fd\":0}}",
	 -32006},
	{"{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	 -32001},
};

/* One malformed request on a raw socket: the documented error comes back. */
static void malformed(unsigned *seed)
{
	unsigned i = rand_r(seed) % (sizeof(bad) / sizeof(bad[0]));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", S.sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	double t = now_s();
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err_add(OP_MALFORMED, -errno, "connect", false);
		close(fd);
		return;
	}
	char buf[4096];
	size_t n = 0;
	dprintf(fd, "%s\n", bad[i].line);
	while (n < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(buf, '\n', n))
			break;
	}
	buf[n] = '\0';
	lat_add(OP_MALFORMED, now_s() - t);
	close(fd);
	cJSON *o = cJSON_Parse(buf);
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "error"), "code");
	int got = cJSON_IsNumber(code) ? (int)code->valuedouble : 0;
	cJSON_Delete(o);
	/* -32004: too many clients at accept, expected at the limit */
	err_add(OP_MALFORMED, got, buf, got == bad[i].code || got == -32004);
}

static void *client_main(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;
	struct gpuprof_client *c;
	if (gpuprof_client_connect(S.sock, &c) < 0) {
		err_add(OP_STATUS, -ECONNREFUSED, "connect", false);
		return NULL;
	}
	gpuprof_client_set_timeout(c, 60000);
	while (!atomic_load(&S.stop)) {
		unsigned pick = rand_r(&seed) % 100;
		char *res = NULL;
		if (pick < 30) {
			timed_call(c, OP_STATUS, "status", NULL, NULL, 0, &res);
		} else if (pick < 40) {
			timed_call(c, OP_VERSION, "version", NULL, NULL, 0, &res);
		} else if (pick < 45) {
			timed_call(c, OP_LIST, "capture.list", NULL, NULL, 0, &res);
		} else if (pick < 70) {
			capture_cycle(c, &seed);
		} else if (pick < 85) {
			if (S.have_import && S.trace)
				import_cycle(c);
			else
				capture_cycle(c, &seed);
		} else {
			malformed(&seed);
		}
		free(res);
	}
	gpuprof_client_free(c);
	return NULL;
}

static long rss_kb(int pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "re");
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr, "usage: soak -s SOCKET [-c CLIENTS] [-t SECONDS] [-i TRACE] [-p PID]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int opt;
	S.pid = getpid();
	/* A raw socket refused at the client limit is closed under us. */
	signal(SIGPIPE, SIG_IGN);
	while ((opt = getopt(argc, argv, "s:c:t:i:p:h")) != -1) {
		switch (opt) {
		case 's': S.sock = optarg; break;
		case 'c': S.clients = atoi(optarg); break;
		case 't': S.seconds = atoi(optarg); break;
		case 'i': S.trace = optarg; break;
		case 'p': S.pid = atoi(optarg); break;
		default: usage();
		}
	}
	if (!S.sock)
		S.sock = getenv("GPUPROF_SOCKET");
	if (!S.sock || S.clients < 1 || S.seconds < 1)
		usage();

	struct gpuprof_client *c;
	char *res = NULL;
	if (gpuprof_client_connect(S.sock, &c) < 0 || gpuprof_status(c, &res) < 0) {
		fprintf(stderr, "soak: cannot reach gpuprofd at %s\n", S.sock);
		return 1;
	}
	int dpid = (int)json_u64(res, "pid");
	free(res);
	res = NULL;
	/* Optional methods: probe instead of assuming. */
	if (gpuprof_client_call(c, "capture.import", "{}", NULL, 0, NULL) == -EREMOTEIO)
		S.have_import = gpuprof_client_error_code(c) != -32601;
	if (gpuprof_client_call(c, "analyze.list", NULL, NULL, 0, &res) == 0) {
		cJSON *o = cJSON_Parse(res), *a = cJSON_GetObjectItemCaseSensitive(o, "analyses");
		const cJSON *first = cJSON_GetArrayItem(a, 0);
		const cJSON *nm = cJSON_IsObject(first)
					  ? cJSON_GetObjectItemCaseSensitive(first, "name")
					  : first;
		if (cJSON_IsString(nm))
			snprintf(S.analysis, sizeof(S.analysis), "analyze.%s", nm->valuestring);
		cJSON_Delete(o);
	}
	free(res);

	/* Our own connection would take one of the daemon's client slots
	 * from the N we are about to open. */
	gpuprof_client_free(c);
	long rss[4];
	rss[0] = rss_kb(dpid);
	S.t0 = now_s();
	pthread_t *th = calloc((size_t)S.clients, sizeof(*th));
	for (int i = 0; i < S.clients; i++)
		pthread_create(&th[i], NULL, client_main, (void *)(uintptr_t)(i + 1));
	/* Warm-up is the first half: the allocator (ASan's especially) settles
	 * its regions before growth is judged over the second half. */
	double warm = S.t0 + S.seconds / 2.0, mid = S.t0 + S.seconds * 3.0 / 4.0;
	while (now_s() < warm)
		usleep(50000);
	rss[1] = rss_kb(dpid);
	while (now_s() < mid)
		usleep(50000);
	rss[2] = rss_kb(dpid);
	while (now_s() < S.t0 + S.seconds)
		usleep(50000);
	atomic_store(&S.stop, 1);
	for (int i = 0; i < S.clients; i++)
		pthread_join(th[i], NULL);
	free(th);
	double elapsed = now_s() - S.t0;
	rss[3] = rss_kb(dpid);

	if (gpuprof_client_connect(S.sock, &c) < 0) {
		fprintf(stderr, "soak: gpuprofd gone at the end\n");
		return 1;
	}
	/* Every capture kept must still be listed as ready and read back. */
	unsigned bad_readback = 0;
	for (unsigned i = 0; i < S.nkept; i++) {
		char *info = NULL;
		int r = gpuprof_capture_info(c, S.kept[i], &info);
		cJSON *o = info ? cJSON_Parse(info) : NULL;
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "state");
		int fr = folded_check(c, S.kept[i], false);
		if (r < 0 || !cJSON_IsString(st) || strcmp(st->valuestring, "ready") || fr != 0)
			bad_readback++;
		cJSON_Delete(o);
		free(info);
		gpuprof_capture_delete(c, S.kept[i]);
	}
	res = NULL;
	bool alive = gpuprof_status(c, &res) == 0;
	free(res);
	gpuprof_client_free(c);

	printf("soak: %d clients, %.1f s, %lu requests, %.0f req/s%s%s\n", S.clients, elapsed,
	       S.total, S.total / elapsed, S.have_import ? ", imports" : "",
	       S.analysis[0] ? ", analyses" : "");
	cJSON *out = cJSON_CreateObject();
	cJSON_AddNumberToObject(out, "clients", S.clients);
	cJSON_AddNumberToObject(out, "seconds", elapsed);
	cJSON_AddNumberToObject(out, "requests", (double)S.total);
	cJSON_AddNumberToObject(out, "rps", S.total / elapsed);
	cJSON *lat = cJSON_AddObjectToObject(out, "latency_ms");
	printf("  %-16s %8s %9s %9s\n", "method", "count", "p50 ms", "p99 ms");
	for (int op = 0; op < OP_N; op++) {
		struct lat *l = &S.lat[op];
		if (!l->n)
			continue;
		qsort(l->v, l->n, sizeof(double), cmpd);
		double p50 = l->v[l->n / 2] * 1e3, p99 = l->v[(size_t)(l->n * 0.99)] * 1e3;
		printf("  %-16s %8zu %9.2f %9.2f\n", op == OP_ANALYZE ? S.analysis : op_name[op],
		       l->n, p50, p99);
		cJSON *m = cJSON_AddObjectToObject(lat, op_name[op]);
		cJSON_AddNumberToObject(m, "count", (double)l->n);
		cJSON_AddNumberToObject(m, "p50", p50);
		cJSON_AddNumberToObject(m, "p99", p99);
		free(l->v);
	}
	cJSON *errs = cJSON_AddObjectToObject(out, "errors");
	printf("  errors by kind (method code):\n");
	for (unsigned i = 0; i < S.nerrs; i++) {
		printf("    %-28s %8lu%s\n", S.errs[i].kind, S.errs[i].n,
		       S.errs[i].expected ? "" : "  UNEXPECTED");
		cJSON_AddNumberToObject(errs, S.errs[i].kind, (double)S.errs[i].n);
	}
	printf("  busy (-32004, expected under load): %lu, unexpected: %lu\n", S.busy,
	       S.unexpected);
	printf("  daemon RSS kB: start %ld, warm %ld, middle %ld, end %ld\n", rss[0], rss[1],
	       rss[2], rss[3]);
	printf("  kept captures read back: %u/%u intact\n", S.nkept - bad_readback, S.nkept);
	cJSON_AddNumberToObject(out, "unexpected", (double)S.unexpected);
	cJSON_AddNumberToObject(out, "busy", (double)S.busy);
	cJSON *r = cJSON_AddArrayToObject(out, "rss_kb");
	for (int i = 0; i < 4; i++)
		cJSON_AddItemToArray(r, cJSON_CreateNumber((double)rss[i]));
	cJSON_AddNumberToObject(out, "kept", S.nkept);
	cJSON_AddNumberToObject(out, "bad_readback", bad_readback);
	cJSON_AddBoolToObject(out, "alive", alive);
	cJSON_AddBoolToObject(out, "imports", S.have_import && S.trace);
	cJSON_AddStringToObject(out, "analysis", S.analysis);
	char *text = cJSON_PrintUnformatted(out);
	printf("SOAK %s\n", text);
	free(text);
	cJSON_Delete(out);
	return S.unexpected || bad_readback || !alive ? 1 : 0;
}
