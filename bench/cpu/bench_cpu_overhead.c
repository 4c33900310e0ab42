// SPDX-License-Identifier: MIT
/*
 * What the always-on CPU sampler costs: run the collector on its own event
 * loop, as gpuprofd does, for N seconds (default 20) at F Hz (default 49)
 * while one child spins, then print this process's CPU use (getrusage
 * utime + stime over wall time) as % of one core, the samples received per
 * second, and -- from the kernel's BPF run-time statistics -- what the BPF
 * program itself cost in the interrupted tasks.
 *
 *   bench-cpu-overhead [seconds] [frequency_hz]
 *
 * Needs root. Build without sanitizers for figures worth quoting.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <uv.h>

#include "collect/collector.h"
#include "collect/cpu.h"
#include "cpu_sample.h"
#include "gpd.h"
#include "store/store.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Same figure at nanosecond resolution, as a cross-check of getrusage(). */
static double cputime_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Mean ring-buffer bytes per sample: 8-byte ring header, record header,
 * captured frames (records are variable-length). */
static double mean_record_bytes(const struct store *s)
{
	size_t n = store_count(s), cnt = 0;
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		const struct store_rec *r = store_at(s, i);
		uint16_t nu = 0, nk = 0;

		if (r->type != STORE_REC_CPU_SAMPLE || !store_stack(s, r->stack, &nu, &nk))
			continue;
		sum += 8 + CPU_SAMPLE_HDR_BYTES + 8.0 * (nu + nk);
		cnt++;
	}
	return cnt ? sum / (double)cnt : 0;
}

/* The newest loaded perf_event program named "cpu_sample": ours. */
static int find_prog(struct bpf_prog_info *out)
{
	uint32_t id = 0, best = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = {0};
		uint32_t len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    info.type == BPF_PROG_TYPE_PERF_EVENT && !strcmp(info.name, "cpu_sample") &&
		    id > best) {
			best = id;
			*out = info;
		}
		close(fd);
	}
	return best ? 0 : -ENOENT;
}

static void on_done(uv_timer_t *t)
{
	uv_stop(t->loop);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 20.0;
	uint32_t freq = argc > 2 ? (uint32_t)atoi(argv[2]) : 49;
	struct store_config sc = {.budget_bytes = 64u << 20};
	struct gpd g = {0};
	struct collector c = {0};
	struct bpf_prog_info info = {0};
	uv_loop_t loop;
	uv_timer_t done;
	int stats_fd, r;
	pid_t child;
	double t0, c0, p0, wall, used, pused;

	if (secs <= 0 || !freq) {
		fprintf(stderr, "usage: %s [seconds] [frequency_hz]\n", argv[0]);
		return 2;
	}
	uv_loop_init(&loop);
	config_defaults(&g.cfg);
	g.cfg.sample_freq_hz = freq;
	g.loop = &loop;
	if (store_new(&sc, &g.store) < 0)
		return 1;
	c.ops = &cpu_collector_ops;
	c.gpd = &g;

	/* Run-time statistics of BPF programs while this fd is open
	 * (BPF_ENABLE_STATS, Linux 5.8). Optional. */
	stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	child = fork();
	if (child == 0) {
		for (volatile uint64_t n = 0;; n++)
			;
	}

	r = c.ops->open(&c);
	if (r == 0 && c.state == COLLECTOR_OFF)
		r = c.ops->start(&c);
	if (r < 0 || c.state != COLLECTOR_ATTACHED) {
		fprintf(stderr, "collector not attached: %s\n", c.reason);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}

	uv_timer_init(&loop, &done);
	uv_timer_start(&done, on_done, (uint64_t)(secs * 1000), 0);
	t0 = now_s();
	c0 = cpu_s();
	p0 = cputime_s();
	uv_run(&loop, UV_RUN_DEFAULT);
	used = cpu_s() - c0;
	pused = cputime_s() - p0;
	wall = now_s() - t0;

	if (stats_fd >= 0 && find_prog(&info) == 0 && info.run_cnt) {
		printf("bpf program: %llu runs, %.0f ns/run, %.4f%% of one core in "
		       "interrupted tasks\n",
		       (unsigned long long)info.run_cnt,
		       (double)info.run_time_ns / (double)info.run_cnt,
		       (double)info.run_time_ns / 1e9 / wall * 100.0);
	}

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	c.ops->stop(&c);
	printf("cpu collector: %.1f s at %u Hz on %ld CPUs, 1 spinning child\n", wall, freq,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("daemon-side cpu: %.4f%% of one core (getrusage utime+stime %.3f s; "
	       "CLOCK_PROCESS_CPUTIME_ID %.4f%%)\n",
	       used / wall * 100.0, used, pused / wall * 100.0);
	printf("samples: %llu (%.1f/s), drops %llu, mean %.0f ring bytes/sample\n",
	       (unsigned long long)c.events, (double)c.events / wall, (unsigned long long)c.drops,
	       mean_record_bytes(g.store));

	c.ops->free(&c);
	uv_close((uv_handle_t *)&done, NULL);
	while (uv_loop_close(&loop) == UV_EBUSY)
		uv_run(&loop, UV_RUN_NOWAIT);
	store_free(g.store);
	if (stats_fd >= 0)
		close(stats_fd);
	return 0;
}
