// SPDX-License-Identifier: MIT
/*
 * bench_import: import throughput (MB/s of uncompressed JSON, wall clock and
 * per CPU-second of all threads; the time of the finalize that ends it,
 * timeline_finalize(), apart)
 * and peak RSS (getrusage ru_maxrss) on
 *   1. the largest reference trace (or --trace FILE), and
 *   2. a generated trace of --size bytes (default 1G), written to a
 *      temporary file first (the generator streams; it adds no RSS) and
 *      fsync'ed, so the kernel's write-back does not run during the import.
 * --runs N imports each file N times (peak RSS is the process's, so it is
 * that of the largest run) and prints the best and the range. Last, the
 * resident size once every timeline is freed, and after the kept scratch
 * blocks and malloc_trim(0) gave the free pages back (what the daemon does
 * once idle: memory.idle_trim).
 * A gzip trace is inflated on a second thread (the importer's default)
 * unless --serial, with ISA-L where the build has it unless --zlib.
 *   bench_import [--size 1G] [--trace FILE] [--tmpdir DIR] [--skip-gen] [--runs N] [--serial]
 *                [--zlib] [--no-spec]
 */
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "alloc/bigalloc.h"
#include "import/import.h"
#include "timeline/timeline.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* Resident now, MB. */
static double rss_mb(void)
{
	unsigned long total, res;
	FILE *f = fopen("/proc/self/statm", "r");
	bool ok = f && fscanf(f, "%lu %lu", &total, &res) == 2;

	if (f)
		fclose(f);
	return ok ? (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0 : 0;
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int runs = 1;
static bool serial; /* --serial: inflate on the parsing thread */
static bool zlib; /* --zlib: inflate with zlib even where ISA-L is built in */
static bool no_spec; /* --no-spec: the inflate thread parses nothing (import_opts.spec) */

static int bench_one(const char *label, const char *path, double *cpu_mbs, double *wall_mbs);

static int bench_file(const char *label, const char *path)
{
	double best = 0, worst = 1e30, mbs, wbest = 0, wmbs;

	for (int i = 0; i < runs; i++) {
		if (bench_one(label, path, &mbs, &wmbs))
			return 1;
		best = mbs > best ? mbs : best;
		worst = mbs < worst ? mbs : worst;
		wbest = wmbs > wbest ? wmbs : wbest;
	}
	if (runs > 1)
		printf("  best of %d: %.1f MB/s per CPU-second (range %.1f-%.1f), "
		       "%.1f MB/s wall\n",
		       runs, best, worst, best, wbest);
	return 0;
}

static int bench_one(const char *label, const char *path, double *cpu_mbs, double *wall_mbs)
{
	struct import_result res;
	struct timeline *tl;
	double t0, tf, t1, c0, c1;
	long rss0 = maxrss_kb();
	int fd = open(path, O_RDONLY), err;

	if (fd < 0) {
		perror(path);
		return 1;
	}
	timeline_new(&tl);
	c0 = cpu_s();
	t0 = now();
	/* finalized apart (what timeline_import_fd does last), to time it */
	err = timeline_import_fd(fd,
				 &(struct import_opts){ .rank = -1, .no_inflate_thread = serial,
							.inflate_zlib = zlib, .spec = no_spec ? 1 : 0,
							.no_finalize = true },
				 tl, &res);
	tf = now();
	if (!err && (err = timeline_finalize(tl, 0)) < 0)
		snprintf(res.error_msg, sizeof(res.error_msg), "out of memory while indexing");
	if (!err)
		res.events_kept = timeline_rank(tl, res.rank)->nev;
	t1 = now();
	c1 = cpu_s();
	close(fd);
	if (err < 0) {
		fprintf(stderr, "%s: import failed: %s\n", path, res.error_msg);
		timeline_free(tl);
		return 1;
	}
	printf("%-10s %s\n", label, path);
	printf("  json %.1f MB%s%s%s, %llu events kept (%llu raw), %llu warnings\n",
	       res.bytes_json / 1e6, res.gzip ? " (gzip, inflated by " : "",
	       res.gzip ? (zlib ? "zlib" : import_inflate_backend()) : "", res.gzip ? ")" : "",
	       (unsigned long long)res.events_kept, (unsigned long long)res.events_raw,
	       (unsigned long long)res.warnings_total);
	if (!serial)
		printf("  second thread parsed %.1f %% of the JSON bytes\n",
		       100.0 * (double)res.bytes_spec / (double)(res.bytes_json ? res.bytes_json : 1));
	printf("  cpu %.3f s  throughput per CPU-second %.1f MB/s\n", c1 - c0,
	       res.bytes_json / 1e6 / (c1 - c0));
	*cpu_mbs = res.bytes_json / 1e6 / (c1 - c0);
	*wall_mbs = res.bytes_json / 1e6 / (t1 - t0);
	printf("  time %.3f s (finalize %.3f s)  throughput %.1f MB/s  peak RSS %.1f MB"
	       " (before %.1f MB)  RSS/json %.2f\n",
	       t1 - t0, t1 - tf, res.bytes_json / 1e6 / (t1 - t0), maxrss_kb() / 1024.0, rss0 / 1024.0,
	       maxrss_kb() * 1024.0 / (double)res.bytes_json);
	timeline_free(tl);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' }, { "trace", required_argument, NULL, 't' },
		{ "tmpdir", required_argument, NULL, 'd' }, { "skip-gen", no_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'r' }, { "serial", no_argument, NULL, 'S' },
		{ "zlib", no_argument, NULL, 'z' }, { "no-spec", no_argument, NULL, 'T' }, { 0 }
	};
	const char *sh = getenv("GPUPROF_SHARED"), *trace = NULL, *tmpdir = "/tmp";
	struct gen_opts o = { .size = 1ull << 30, .streams = 3, .world = 8 };
	char ref[1024], gpath[1100];
	bool gen = true;
	int c, rc = 0;
	double trim_s;

	while ((c = getopt_long(argc, argv, "s:t:d:nr:SzT", lo, NULL)) != -1) {
		switch (c) {
		case 's': o.size = gen_parse_size(optarg); break;
		case 't': trace = optarg; break;
		case 'd': tmpdir = optarg; break;
		case 'n': gen = false; break;
		case 'r': runs = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
		case 'S': serial = true; break;
		case 'z': zlib = true; break;
		case 'T': no_spec = true; break;
		default:
			fprintf(stderr, "usage: %s [--size 1G] [--trace FILE] [--tmpdir DIR] "
					"[--skip-gen] [--runs N] [--serial] [--zlib] [--no-spec]\n", argv[0]);
			return 2;
		}
	}
	if (!trace) {
		snprintf(ref, sizeof(ref), "%s/reference/hta/traces/nccl_parser_config/nccl_data.json.gz",
			 sh ? sh : "../shared");
		trace = ref;
	}
	if (access(trace, R_OK) == 0)
		rc |= bench_file("reference", trace);
	else
		fprintf(stderr, "skipping reference trace %s (not readable)\n", trace);
	if (gen && o.size) {
		FILE *f;
		double t0 = now();
		uint64_t n;

		snprintf(gpath, sizeof(gpath), "%s/bench_import_%d.json", tmpdir, (int)getpid());
		f = fopen(gpath, "w");
		if (!f) {
			perror(gpath);
			return 1;
		}
		n = gen_kineto_write(f, &o, 0);
		fflush(f);
		fsync(fileno(f)); /* no write-back of 1 GB during the measurement */
		fclose(f);
		fprintf(stderr, "generated %.1f MB in %.1f s\n", n / 1e6, now() - t0);
		rc |= bench_file("generated", gpath);
		unlink(gpath);
	}
	printf("resident with every timeline freed: %.1f MB", rss_mb());
	bigalloc_trim(true);
	trim_s = now();
	malloc_trim(0);
	trim_s = now() - trim_s;
	printf(", after the kept scratch blocks and malloc_trim(0): %.1f MB (the trim took %.1f ms)\n",
	       rss_mb(), trim_s * 1e3);
	return rc;
}
