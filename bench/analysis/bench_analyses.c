// SPDX-License-Identifier: MIT
/*
 * bench_analyses [--trace NAME|PATH] [--size 256M] [--runs N] [--only a,b,...]
 *
 * Times every analysis (best of N runs, wall clock) on a reference trace
 * (default nccl_parser_config, the largest with outputs) read from
 * $GPUPROF_SHARED, or on the trace file PATH (a name with a '/'), prints HTA's time for the same call from timings.json and
 * the ratio; then the same on a synthetic trace written by bench/import's
 * generator (--size 0 skips it). --only runs just the named analyses
 * (e.g. to profile one of them: perf record bench_analyses --only queue).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "gen.h"
#include "import/import.h"
#include "timeline/timeline.h"

struct job {
	const char *name, *params;
	const char *hta[3]; /* timings.json keys summed for the same work */
};

static const struct job jobs[] = {
	{ "temporal", NULL, { "temporal_breakdown" } },
	{ "idle", "{\"interval_stats\": true}", { "idle_time_breakdown_with_interval_stats" } },
	{ "kernels", NULL, { "gpu_kernel_breakdown_mem_true" } },
	{ "overlap", NULL, { "comm_comp_overlap" } },
	{ "launch", NULL, { "cuda_kernel_launch_stats" } },
	{ "queue", "{\"series\": true}",
	  { "queue_length_summary", "queue_length_time_series", "time_spent_blocked_on_full_queue" } },
	{ "sequences", "{\"operator\": \"aten::linear\"}",
	  { "frequent_cuda_kernel_sequences[aten::linear]" } },
};
#define NJOBS (sizeof(jobs) / sizeof(jobs[0]))

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n)
		buf[n] = 0;
	else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static struct timeline *load_reference(const char *shared, const char *name)
{
	char dir[2048], path[4096];
	struct timeline *tl;
	struct dirent *d;
	DIR *dd;
	int i = 0;

	if (strchr(name, '/')) { /* a trace file of one rank */
		struct import_opts o = { .no_finalize = true };
		int fd = open(name, O_RDONLY);

		if (fd < 0 || timeline_new(&tl))
			return NULL;
		if (timeline_import_fd(fd, &o, tl, NULL)) {
			fprintf(stderr, "cannot import %s\n", name);
			exit(1);
		}
		close(fd);
		timeline_finalize(tl, 0);
		return tl;
	}
	snprintf(dir, sizeof(dir), "%s/reference/hta/traces/%s", shared, name);
	if (timeline_new(&tl) || !(dd = opendir(dir)))
		return NULL;
	while ((d = readdir(dd))) {
		struct import_opts o = { .rank = i++, .no_finalize = true };
		int fd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0 || timeline_import_fd(fd, &o, tl, NULL)) {
			fprintf(stderr, "cannot import %s\n", path);
			exit(1);
		}
		close(fd);
	}
	closedir(dd);
	timeline_finalize(tl, 0);
	return tl;
}

static double hta_ms(const cJSON *best, const struct job *j)
{
	double t = 0;

	for (int k = 0; k < 3 && j->hta[k]; k++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(best, j->hta[k]);

		if (!cJSON_IsNumber(v))
			return -1;
		t += v->valuedouble * 1e3;
	}
	return t;
}

static const char *only; /* --only: comma-separated analysis names, or NULL */

static bool selected(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = only; p && *p; p += strcspn(p, ","), p += *p == ',')
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	return !only;
}

static void bench(const char *label, const struct timeline *tl, const cJSON *best, int runs)
{
	double total = 0, hta_total = 0, ours_timed = 0;
	uint64_t events = 0;

	for (uint32_t i = 0; i < timeline_nranks(tl); i++)
		events += timeline_rank_at(tl, i)->nev;
	printf("\n%s: %llu kept events, %u rank(s), best of %d\n", label,
	       (unsigned long long)events, timeline_nranks(tl), runs);
	printf("  %-10s %12s %12s %8s\n", "analysis", "ours (ms)", "HTA (ms)", "HTA/ours");
	for (size_t j = 0; j < NJOBS; j++) {
		cJSON *p = jobs[j].params ? cJSON_Parse(jobs[j].params) : NULL;
		double bestt = 1e9, h = best ? hta_ms(best, &jobs[j]) : -1;
		int rc = 0;

		if (!selected(jobs[j].name)) {
			cJSON_Delete(p);
			continue;
		}
		for (int r = 0; r < runs; r++) {
			cJSON *res = NULL;
			double t0 = now();

			rc = analysis_run_flags(jobs[j].name, tl, p, ANALYSIS_COMPACT, &res, NULL, 0);
			t0 = now() - t0;
			cJSON_Delete(res);
			bestt = t0 < bestt ? t0 : bestt;
		}
		cJSON_Delete(p);
		total += bestt * 1e3;
		if (h > 0) {
			hta_total += h;
			ours_timed += bestt * 1e3;
			printf("  %-10s %12.3f %12.1f %8.0fx%s\n", jobs[j].name, bestt * 1e3, h,
			       h / (bestt * 1e3), rc ? " (error)" : "");
		} else {
			printf("  %-10s %12.3f %12s %8s%s\n", jobs[j].name, bestt * 1e3, "n/a", "",
			       rc ? " (error)" : "");
		}
	}
	printf("  %-10s %12.3f\n", "all", total);
	if (hta_total > 0)
		printf("  analyses HTA timed: ours %.3f ms, HTA %.1f ms, HTA/ours %.0fx\n", ours_timed,
		       hta_total, hta_total / ours_timed);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "trace", required_argument, NULL, 't' },
					    { "size", required_argument, NULL, 's' },
					    { "runs", required_argument, NULL, 'r' },
					    { "only", required_argument, NULL, 'o' },
					    { 0 } };
	const char *shared = getenv("GPUPROF_SHARED"), *trace = "nccl_parser_config";
	uint64_t size = 256ull << 20;
	int runs = 5, c;
	char path[4096], *tj;
	cJSON *timings = NULL;
	struct timeline *tl;

	while ((c = getopt_long(argc, argv, "t:s:r:o:", lo, NULL)) != -1) {
		if (c == 't')
			trace = optarg;
		else if (c == 's')
			size = strcmp(optarg, "0") ? gen_parse_size(optarg) : 0;
		else if (c == 'r')
			runs = atoi(optarg) > 0 ? atoi(optarg) : 1;
		else if (c == 'o')
			only = optarg;
		else {
			fprintf(stderr,
				"usage: %s [--trace NAME|PATH] [--size 256M|0] [--runs N] [--only a,b]\n",
				argv[0]);
			return 2;
		}
	}
	if (!shared)
		shared = "/work/shared";
	snprintf(path, sizeof(path), "%s/reference/hta/timings.json", shared);
	tj = slurp(path);
	if (tj)
		timings = cJSON_Parse(tj);
	free(tj);
	tl = load_reference(shared, trace);
	if (tl) {
		const cJSON *best = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(timings, "traces"), trace),
			"analyses_s_best");

		bench(trace, tl, best, runs);
		timeline_free(tl);
	} else {
		printf("reference trace %s not found under %s: skipped\n", trace, shared);
	}
	if (size) {
		struct gen_opts o = { .size = size, .streams = 3, .world = 1 };
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		double t0 = now();

		gen_kineto_write(f, &o, 0);
		fclose(f);
		if (timeline_new(&tl) || timeline_import_buf(buf, len, NULL, tl, NULL)) {
			fprintf(stderr, "cannot import the generated trace\n");
			return 1;
		}
		printf("\ngenerated %zu MB of Kineto JSON and imported it in %.2f s\n", len >> 20,
		       now() - t0);
		free(buf);
		snprintf(path, sizeof(path), "generated (%zu MB)", len >> 20);
		bench(path, tl, NULL, runs > 3 ? 3 : runs);
		timeline_free(tl);
	}
	cJSON_Delete(timings);
	return 0;
}
