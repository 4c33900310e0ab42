// SPDX-License-Identifier: MIT
/*
 * "status" round trips against a running gpuprofd: 1 and 64 clients, each
 * in its own thread with its own connection, for T seconds each.
 *
 *   bench_status [SOCKET] [-t SECONDS]     (SOCKET defaults to $GPUPROF_SOCKET)
 *
 * Prints requests/s and p50/p99/max latency in microseconds per run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gpuprof/client.h>

struct worker {
	const char *socket;
	int64_t run_ns;
	pthread_barrier_t *start;
	uint32_t *lat_us; /* one entry per completed request */
	size_t n, cap;
	int err; /* first failure, negative errno */
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct gpuprof_client *c = NULL;

	w->err = gpuprof_client_connect(w->socket, &c);
	pthread_barrier_wait(w->start);
	if (w->err < 0)
		return NULL;
	gpuprof_client_set_timeout(c, 10000);
	/* The clock starts once every client is connected. */
	int64_t deadline = now_ns() + w->run_ns;
	while (now_ns() < deadline) {
		int64_t t0 = now_ns();
		char *res = NULL;
		int r = gpuprof_status(c, &res);
		int64_t dt = now_ns() - t0;
		free(res);
		if (r < 0) {
			w->err = r;
			break;
		}
		if (w->n == w->cap) {
			size_t cap = w->cap ? w->cap * 2 : 4096;
			uint32_t *p = realloc(w->lat_us, cap * sizeof(*p));
			if (!p) {
				w->err = -ENOMEM;
				break;
			}
			w->lat_us = p;
			w->cap = cap;
		}
		w->lat_us[w->n++] = (uint32_t)(dt / 1000 > UINT32_MAX ? UINT32_MAX : dt / 1000);
	}
	gpuprof_client_free(c);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* One configuration; returns 0 or a negative errno (message printed). */
static int run(const char *socket, int nclients, double seconds)
{
	struct worker *w = calloc((size_t)nclients, sizeof(*w));
	pthread_t *t = calloc((size_t)nclients, sizeof(*t));
	pthread_barrier_t start;
	size_t total = 0;
	int err = 0;

	if (!w || !t) {
		free(w);
		free(t);
		return -ENOMEM;
	}
	pthread_barrier_init(&start, NULL, (unsigned)nclients + 1);
	for (int i = 0; i < nclients; i++) {
		w[i].socket = socket;
		w[i].start = &start;
		w[i].run_ns = (int64_t)(seconds * 1e9);
	}
	for (int i = 0; i < nclients; i++)
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	pthread_barrier_wait(&start);
	int64_t t0 = now_ns();
	for (int i = 0; i < nclients; i++)
		pthread_join(t[i], NULL);
	double elapsed = (double)(now_ns() - t0) / 1e9;

	for (int i = 0; i < nclients; i++) {
		total += w[i].n;
		if (w[i].err && !err)
			err = w[i].err;
	}
	if (err)
		fprintf(stderr, "bench_status: %d clients: %s%s\n", nclients, strerror(-err),
			err == -ENOENT || err == -ECONNREFUSED ? " (is gpuprofd running?)" : "");
	uint32_t *all = malloc((total ? total : 1) * sizeof(*all));
	size_t k = 0;
	for (int i = 0; i < nclients; i++) {
		if (all)
			memcpy(all + k, w[i].lat_us, w[i].n * sizeof(*all));
		k += w[i].n;
		free(w[i].lat_us);
	}
	if (all && total) {
		qsort(all, total, sizeof(*all), cmp_u32);
		printf("%3d clients: %9.0f req/s  p50 %6u us  p99 %6u us  max %7u us  (%zu requests, "
		       "%.1f s)\n",
		       nclients, (double)total / elapsed, all[total / 2], all[total * 99 / 100],
		       all[total - 1], total, elapsed);
	}
	free(all);
	pthread_barrier_destroy(&start);
	free(t);
	free(w);
	return err;
}

int main(int argc, char **argv)
{
	static const int configs[] = {1, 64};
	const char *socket = getenv("GPUPROF_SOCKET");
	double seconds = 3;
	int opt;

	while ((opt = getopt(argc, argv, "t:h")) != -1) {
		switch (opt) {
		case 't':
			seconds = atof(optarg);
			if (seconds <= 0) {
				fprintf(stderr, "bench_status: -t wants seconds > 0\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: bench_status [SOCKET] [-t SECONDS]\n");
			return 2;
		}
	}
	if (optind < argc)
		socket = argv[optind];

	/* Fail once, clearly, when there is no daemon. */
	struct gpuprof_client *probe = NULL;
	int r = gpuprof_client_connect(socket, &probe);
	if (r < 0) {
		fprintf(stderr, "bench_status: cannot connect to %s: %s\n",
			socket ? socket : "the default socket", strerror(-r));
		return 3;
	}
	gpuprof_client_free(probe);

	printf("gpuprofd status round trips, %.1f s per run\n", seconds);
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++)
		if (run(socket, configs[i], seconds) < 0)
			return 1;
	return 0;
}
