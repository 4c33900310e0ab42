// SPDX-License-Identifier: MIT
/*
 * bench_hta_ratio [--runs N] [--size 1G|0] [--tmpdir DIR] [--jobs N] [--no-spec] [--per-call]
 *
 * Load + analyses, ours against HTA's, per reference trace. For every trace
 * in $GPUPROF_SHARED/reference/hta/timings.json, times (wall clock, best of
 * N) our import of its files (timeline_import_fd, finalized once) plus the
 * analyses HTA timed on it, one call each, in one thread (a gzip trace is
 * inflated on a second thread, with ISA-L where built in, as the daemon
 * does); and prints HTA's
 * recorded load_s_best + the sum of the same analyses' analyses_s_best, and
 * the ratio. HTA's figures are *recorded* (HTA is not installed here); they
 * were taken on the same kind of 2-CPU x86_64 machine. Critical path is
 * not in the set (the reference figure leaves it out). --jobs N runs the
 * analyses on N threads at once, as the daemon does for analysis requests
 * sent together (its job pool, limits.max_jobs); the default is one.
 * --per-call prints each call's time in the best run under its row: the
 * first call of each analysis after an import, as a user's first request
 * (fresh scratch memory shows there, not in bench_analyses' best of N).
 *
 * Then the same on two traces of --size bytes (plain JSON, written to a
 * temporary file first), against HTA's load + analyses on the largest
 * reference trace scaled up: extrapolations, labelled as such.
 *  - a generated Kineto trace (gen.c), HTA scaled by JSON bytes;
 *  - the largest reference trace repeated with shifted timestamps and ids
 *    (repeat.c), HTA scaled by the number of copies. Its event mix is the
 *    reference's, so this is the fairer of the two.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "gen.h"
#include "import/import.h"
#include "timeline/timeline.h"

/* HTA's timed call → our analysis and params. The three queue calls are one
 * of ours ("series": true computes summary, time series and blocked time). */
static const struct map {
	const char *hta, *name, *params;
} maps[] = {
	{ "temporal_breakdown", "temporal", NULL },
	{ "idle_time_breakdown", "idle", NULL },
	{ "idle_time_breakdown_with_interval_stats", "idle", "{\"interval_stats\": true}" },
	{ "gpu_kernel_breakdown_mem_true", "kernels", NULL },
	{ "gpu_kernel_breakdown_mem_false", "kernels", "{\"include_memory\": false}" },
	{ "comm_comp_overlap", "overlap", NULL },
	{ "cuda_kernel_launch_stats", "launch", NULL },
	{ "queue_length_summary", "queue", "{\"series\": true}" },
	{ "queue_length_time_series", NULL, NULL }, /* in the call above */
	{ "time_spent_blocked_on_full_queue", NULL, NULL }, /* same */
};
#define NMAPS (sizeof(maps) / sizeof(maps[0]))
#define SEQ_KEY "frequent_cuda_kernel_sequences["
#define MAX_JOBS 16

struct job {
	const char *name;
	cJSON *params;
};

struct set {
	struct job job[MAX_JOBS];
	int n;
	double hta_s; /* HTA's analyses_s_best summed over the same calls */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1))) {
		if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = '\0';
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}

static void add_job(struct set *s, const char *name, cJSON *params)
{
	if (s->n < MAX_JOBS)
		s->job[s->n++] = (struct job){ .name = name, .params = params };
	else
		cJSON_Delete(params);
}

/* The calls HTA timed on one trace (its analyses_s_best), as ours. */
static void set_from_hta(const cJSON *best, struct set *s)
{
	const cJSON *v;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < NMAPS; i++) {
		v = cJSON_GetObjectItemCaseSensitive(best, maps[i].hta);
		if (!cJSON_IsNumber(v))
			continue;
		s->hta_s += v->valuedouble;
		if (maps[i].name) {
			add_job(s, maps[i].name, maps[i].params ? cJSON_Parse(maps[i].params) : NULL);
		} else if (!s->n || strcmp(s->job[s->n - 1].name, "queue")) {
			add_job(s, "queue", cJSON_Parse("{\"series\": true}"));
		}
	}
	cJSON_ArrayForEach(v, best) {
		size_t kl = strlen(SEQ_KEY), n = strlen(v->string);
		char op[256];
		cJSON *p;

		if (strncmp(v->string, SEQ_KEY, kl) || n < kl + 2 || v->string[n - 1] != ']' ||
		    n - kl - 1 >= sizeof(op) || !cJSON_IsNumber(v))
			continue;
		memcpy(op, v->string + kl, n - kl - 1);
		op[n - kl - 1] = '\0';
		p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "operator", op);
		add_job(s, "sequences", p);
		s->hta_s += v->valuedouble;
	}
}

static void set_free(struct set *s)
{
	for (int i = 0; i < s->n; i++)
		cJSON_Delete(s->job[i].params);
}

struct figures {
	double import_s, analyses_s, total_s, cpu_s;
	uint64_t json_bytes, events;
	int errors, nodata; /* analyses that failed; of them, for no GPU activity */
	char why[160]; /* the first failure */
	double call_ms[MAX_JOBS]; /* each call of the set, wall clock */
};

static int njobs = 1; /* --jobs: analyses run on this many threads at once */
static bool no_spec; /* --no-spec: the inflate thread parses nothing (import_opts.spec) */
static bool per_call; /* --per-call: each call's time under its row */

struct pool {
	const struct set *s;
	const struct timeline *tl;
	pthread_mutex_t mu;
	int next, errors, nodata;
	char why[160];
	double ms[MAX_JOBS];
};

/* Take the next analysis of the set until none is left. */
static void *pool_main(void *arg)
{
	struct pool *p = arg;

	for (;;) {
		cJSON *out = NULL;
		char why[120];
		double t;
		int j, r;

		pthread_mutex_lock(&p->mu);
		j = p->next++;
		pthread_mutex_unlock(&p->mu);
		if (j >= p->s->n)
			return NULL;
		/* as the daemon runs them (compact number arrays) */
		t = now();
		r = analysis_run_flags(p->s->job[j].name, p->tl, p->s->job[j].params,
				       ANALYSIS_COMPACT, &out, why, sizeof(why));
		cJSON_Delete(out);
		t = now() - t;
		pthread_mutex_lock(&p->mu);
		p->ms[j] = t * 1e3;
		if (r < 0 && !p->errors++)
			snprintf(p->why, sizeof(p->why), "%.12s: %s", p->s->job[j].name, why);
		p->nodata += r == -ENODATA;
		pthread_mutex_unlock(&p->mu);
	}
}

/* The set on njobs threads (this one included), as the daemon runs
 * analysis requests sent at once on its job pool (limits.max_jobs). */
static void run_set(const struct timeline *tl, const struct set *s, struct figures *f)
{
	struct pool p = { .s = s, .tl = tl };
	pthread_t th[16];
	int n = 0;

	pthread_mutex_init(&p.mu, NULL);
	while (n < njobs - 1 && n < 16 && pthread_create(&th[n], NULL, pool_main, &p) == 0)
		n++;
	pool_main(&p);
	while (n > 0)
		pthread_join(th[--n], NULL);
	pthread_mutex_destroy(&p.mu);
	f->errors = p.errors;
	f->nodata = p.nodata;
	memcpy(f->call_ms, p.ms, sizeof(f->call_ms));
	if (p.errors)
		memcpy(f->why, p.why, sizeof(f->why));
}

/* One run: import the files as ranks 0.., finalize, run the set. */
static int run_once(char **files, int nf, const struct set *s, struct figures *f)
{
	struct timeline *tl;
	double t0 = now(), c0 = cpu_now(), t1;
	int err = 0;

	memset(f, 0, sizeof(*f));
	if (timeline_new(&tl))
		return -ENOMEM;
	for (int i = 0; i < nf && !err; i++) {
		struct import_opts o = { .rank = i, .no_finalize = true, .spec = no_spec ? 1 : 0 };
		struct import_result res;
		int fd = open(files[i], O_RDONLY);

		if (fd < 0) {
			fprintf(stderr, "%s: %s\n", files[i], strerror(errno));
			err = -errno;
			break;
		}
		err = timeline_import_fd(fd, &o, tl, &res);
		close(fd);
		if (err < 0)
			fprintf(stderr, "%s: %s\n", files[i], res.error_msg);
		f->json_bytes += res.bytes_json;
		f->events += res.events_raw;
	}
	if (!err)
		err = timeline_finalize(tl, 0);
	t1 = now();
	f->import_s = t1 - t0;
	if (!err)
		run_set(tl, s, f);
	f->analyses_s = now() - t1;
	f->total_s = now() - t0;
	if (err < 0)
		snprintf(f->why, sizeof(f->why), "import: %s", strerror(-err));
	f->cpu_s = cpu_now() - c0;
	timeline_free(tl);
	return err;
}

static int best_of(char **files, int nf, const struct set *s, int runs, struct figures *best)
{
	struct figures f;

	memset(best, 0, sizeof(*best));
	best->total_s = 1e30;
	for (int r = 0; r < runs; r++) {
		if (run_once(files, nf, s, &f) < 0) {
			*best = f;
			return -1;
		}
		if (f.total_s < best->total_s)
			*best = f;
	}
	return 0;
}

static void print_head(void)
{
	printf("%-29s %7s %5s %7s %8s %7s %8s | %6s %6s %6s | %7s %7s\n", "trace", "JSON MB",
	       "calls", "import", "analyses", "ours", "ours cpu", "HTA ld", "HTA an", "HTA",
	       "HTA/us", "HTA/cpu");
	printf("%-29s %7s %5s %7s %8s %7s %8s | %6s %6s %6s | %7s %7s\n", "", "", "", "ms", "ms",
	       "ms", "ms", "s", "s", "s", "wall", "");
}

static void print_row(const char *label, const struct figures *f, int calls, double hta_load,
		      double hta_an)
{
	double hta = hta_load + hta_an;

	printf("%-29s %7.2f %5d %7.2f %8.2f %7.2f %8.2f | %6.3f %6.3f %6.3f | %6.1fx %6.1fx%s\n",
	       label, (double)f->json_bytes / 1e6, calls, f->import_s * 1e3, f->analyses_s * 1e3,
	       f->total_s * 1e3, f->cpu_s * 1e3, hta_load, hta_an, hta, hta / f->total_s,
	       hta / f->cpu_s, f->errors ? " (analysis errors)" : "");
}

/* --per-call: the set's calls in the best run, in ms. */
static void print_calls(const struct figures *f, const struct set *s)
{
	if (!per_call)
		return;
	printf("    per call, ms:");
	for (int j = 0; j < s->n; j++)
		printf(" %s%s %.2f", s->job[j].name, s->job[j].params ? "*" : "", f->call_ms[j]);
	printf("\n");
}

/*
 * A --size trace, plain JSON in tmpdir: generated (repeat NULL) or the
 * reference trace repeat repeated (repeat.c). HTA's columns are the largest
 * reference trace's, scaled by JSON bytes for the generated trace and by the
 * number of repetitions for the repeated one.
 */
static void extrapolated(const cJSON *largest, double largest_bytes, const char *repeat,
			 uint64_t size, const char *tmpdir, int runs)
{
	const cJSON *best = cJSON_GetObjectItemCaseSensitive(largest, "analyses_s_best");
	double hl = cJSON_GetObjectItemCaseSensitive(largest, "load_s_best")->valuedouble;
	struct gen_opts o = { .size = size, .streams = 3, .world = 8 };
	char gpath[4200], label[64], err[4400], *fp[1] = { gpath };
	struct figures f;
	struct set s;
	double scale;
	FILE *out;
	int reps = 0;

	snprintf(gpath, sizeof(gpath), "%s/bench_hta_ratio_%d.json", tmpdir, (int)getpid());
	if (!(out = fopen(gpath, "w"))) {
		perror(gpath);
		return;
	}
	if (repeat)
		reps = gen_repeat_write(out, repeat, size, 0, NULL, err, sizeof(err));
	else
		gen_kineto_write(out, &o, 0);
	fflush(out);
	fsync(fileno(out)); /* no write-back during the measurement */
	fclose(out);
	if (reps < 0) {
		fprintf(stderr, "repeat: %s\n", err);
		unlink(gpath);
		return;
	}
	set_from_hta(best, &s);
	if (best_of(fp, 1, &s, runs > 3 ? 3 : runs, &f) == 0) {
		if (repeat) {
			scale = reps;
			printf("\n%s repeated %d times with shifted timestamps and ids (bench/import/"
			       "repeat.c, plain JSON),\nthe calls HTA timed on it. HTA columns: NOT "
			       "MEASURED, HTA's times on %s x%d\n(the number of copies; HTA's "
			       "ProfilerStep filter drops a third of the single trace but\nonly the "
			       "last copy's tail here, so HTA would do more than this per copy):\n\n",
			       largest->string, reps, largest->string, reps);
			snprintf(label, sizeof(label), "%s x%d", largest->string, reps);
		} else {
			scale = (double)f.json_bytes / largest_bytes;
			printf("\nGenerated trace (bench/import/gen.c, plain JSON), the calls HTA timed "
			       "on %s.\nHTA columns: NOT MEASURED, extrapolated linearly by JSON bytes "
			       "from %s (x%.1f).\nThe generated trace has about 3.5x the reference's GPU "
			       "kernels per byte, which HTA's\nanalyses scale with, so HTA's real "
			       "time on it would be longer:\n\n",
			       largest->string, largest->string, scale);
			snprintf(label, sizeof(label), "generated %.0f MB", (double)f.json_bytes / 1e6);
		}
		print_head();
		print_row(label, &f, s.n, hl * scale, s.hta_s * scale);
		print_calls(&f, &s);
	}
	set_free(&s);
	unlink(gpath);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "runs", required_argument, NULL, 'r' },
					    { "size", required_argument, NULL, 's' },
					    { "tmpdir", required_argument, NULL, 'd' },
					    { "jobs", required_argument, NULL, 'j' },
					    { "no-spec", no_argument, NULL, 'S' },
					    { "per-call", no_argument, NULL, 'P' },
					    { 0 } };
	const char *shared = getenv("GPUPROF_SHARED"), *tmpdir = "/tmp";
	const cJSON *traces, *t, *largest = NULL;
	double largest_bytes = 0, sum_ratio_log = 0, min_ratio = 1e30;
	uint64_t size = 1ull << 30;
	int runs = 5, c, ntraces = 0;
	char path[4096], *text;
	cJSON *timings;

	while ((c = getopt_long(argc, argv, "r:s:d:j:SP", lo, NULL)) != -1) {
		if (c == 'r')
			runs = atoi(optarg) > 0 ? atoi(optarg) : 1;
		else if (c == 's')
			size = strcmp(optarg, "0") ? gen_parse_size(optarg) : 0;
		else if (c == 'd')
			tmpdir = optarg;
		else if (c == 'j')
			njobs = atoi(optarg) >= 1 && atoi(optarg) <= 16 ? atoi(optarg) : 1;
		else if (c == 'S')
			no_spec = true;
		else if (c == 'P')
			per_call = true;
		else {
			fprintf(stderr,
				"usage: %s [--runs N] [--size 1G|0] [--tmpdir DIR] [--jobs N] "
				"[--no-spec] [--per-call]\n",
				argv[0]);
			return 2;
		}
	}
	if (!shared)
		shared = "../shared";
	snprintf(path, sizeof(path), "%s/reference/hta/timings.json", shared);
	if (!(text = slurp(path))) {
		fprintf(stderr, "%s: cannot read (set GPUPROF_SHARED)\n", path);
		return 1;
	}
	timings = cJSON_Parse(text);
	free(text);
	traces = cJSON_GetObjectItemCaseSensitive(timings, "traces");
	if (!cJSON_IsObject(traces)) {
		fprintf(stderr, "%s: no \"traces\" object\n", path);
		cJSON_Delete(timings);
		return 1;
	}
	printf("HTA figures are HTA's own recorded timings from reference/hta/timings.json (HTA\n"
	       "0.6.1, best of 3, on the same kind of 2-CPU x86_64 machine); HTA is not installed\n"
	       "here and was not run. HTA load = TraceAnalysis construction; HTA an = the sum of\n"
	       "the analysis calls it timed on that trace (critical path excluded), which are\n"
	       "the calls we run. Ours: wall clock, best of %d, import (gzip inflated by %s on a\n"
	       "second thread) + finalize + those analyses on %d thread(s); a shared machine, so\n"
	       "these are lower bounds on our speed. \"ours cpu\" is user + system time of both\n"
	       "threads (best run): HTA/cpu is the ratio a fully busy machine would still see.\n\n",
	       runs, import_inflate_backend(), njobs);
	print_head();
	cJSON_ArrayForEach(t, traces) {
		const cJSON *files = cJSON_GetObjectItemCaseSensitive(t, "files"), *fe;
		const cJSON *load = cJSON_GetObjectItemCaseSensitive(t, "load_s_best");
		const cJSON *best = cJSON_GetObjectItemCaseSensitive(t, "analyses_s_best");
		char *fp[16];
		int nf = 0;
		double bytes = 0;
		struct figures f;
		struct set s;

		if (!cJSON_IsNumber(load) || !cJSON_IsObject(best))
			continue;
		cJSON_ArrayForEach(fe, files) {
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(fe, "path");
			const cJSON *ub = cJSON_GetObjectItemCaseSensitive(fe, "uncompressed_bytes");
			const char *base;

			if (!cJSON_IsString(p) || nf == 16)
				continue;
			base = strrchr(p->valuestring, '/') ? strrchr(p->valuestring, '/') + 1 :
							      p->valuestring;
			snprintf(path, sizeof(path), "%s/reference/hta/traces/%s/%s", shared,
				 t->string, base);
			fp[nf++] = strdup(path);
			bytes += cJSON_IsNumber(ub) ? ub->valuedouble : 0;
		}
		set_from_hta(best, &s);
		if (nf && s.n && best_of(fp, nf, &s, runs, &f) == 0 && f.nodata == s.n) {
			printf("%-29s %7.2f  no GPU activity: not compared (%s)\n", t->string,
			       (double)f.json_bytes / 1e6, f.why);
		} else if (nf && s.n && f.errors == 0) {
			double ratio = (load->valuedouble + s.hta_s) / f.total_s;

			print_row(t->string, &f, s.n, load->valuedouble, s.hta_s);
			print_calls(&f, &s);
			sum_ratio_log += log(ratio);
			min_ratio = ratio < min_ratio ? ratio : min_ratio;
			ntraces++;
			if (bytes > largest_bytes) {
				largest_bytes = bytes;
				largest = t;
			}
		} else if (nf && s.n) {
			printf("%-29s failed: %s\n", t->string, f.why[0] ? f.why : "import");
		}
		set_free(&s);
		for (int i = 0; i < nf; i++)
			free(fp[i]);
	}
	if (ntraces)
		printf("\n%d traces: HTA/ours geometric mean %.1fx, lowest %.1fx\n", ntraces,
		       exp(sum_ratio_log / ntraces), min_ratio);
	if (size && largest) {
		/* one rank: the largest trace's first file */
		const cJSON *fe = cJSON_GetArrayItem(
		    cJSON_GetObjectItemCaseSensitive(largest, "files"), 0);
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(fe, "path");
		const char *base = cJSON_IsString(p) ? strrchr(p->valuestring, '/') : NULL;

		snprintf(path, sizeof(path), "%s/reference/hta/traces/%s/%s", shared,
			 largest->string, base ? base + 1 : "");
		extrapolated(largest, largest_bytes, NULL, size, tmpdir, runs);
		extrapolated(largest, largest_bytes, path, size, tmpdir, runs);
	}
	cJSON_Delete(timings);
	return 0;
}
