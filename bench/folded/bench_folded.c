// SPDX-License-Identifier: MIT
/*
 * Folded output speed: 1,000,000 samples over 10,000 unique stacks (depth
 * 10-40, 64 processes), symbols pre-resolved in a CAPSEC_SYMBOLS section,
 * rendered to /dev/null. Prints the time and samples/s (target < 0.5 s).
 * With --heatmap, the same samples spread over SPAN seconds (default 60)
 * render the interactive heat map instead (its grid and embedded per-cell
 * stacks, heatmap.c; target well under 1 s), with its data bound (bytes,
 * default the daemon's 4 MiB) and what bounding it did.
 *
 *   bench_folded [samples] [stacks]
 *   bench_folded --heatmap [samples] [stacks] [span_s] [max_bytes]
 */
#include "capture/capture.h"
#include "render/flamegraph.h"
#include "render/folded.h"
#include "symtab.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p) {
		perror("calloc");
		exit(1);
	}
	return p;
}

static uint64_t out_bytes;
static int sink(void *ctx, const void *buf, size_t len)
{
	(void)ctx, (void)buf;
	out_bytes += len;
	return 0;
}

static int bench_heatmap(const struct capture *c, uint64_t max_bytes)
{
	struct heatmap_opts o = {.capture_id = 1, .max_bytes = max_bytes};
	struct heatmap_totals t;
	double best = 1e9, best_cpu = 1e9;
	for (int run = 0; run < 5; run++) {
		struct timespec c0, c1;
		double t0 = now();
		out_bytes = 0;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		if (heatmap_render(c, &o, sink, NULL, &t) < 0) {
			fprintf(stderr, "heatmap_render failed\n");
			return 1;
		}
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		double dt = now() - t0, cpu = (double)(c1.tv_sec - c0.tv_sec) +
						(double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
		best = dt < best ? dt : best;
		best_cpu = cpu < best_cpu ? cpu : best_cpu;
	}
	printf("heatmap: %llu samples, %llu x %llu cells (bucket %llu ms) -> %llu bytes, "
	       "stacks %llu bytes (bound %llu; %llu nodes, %llu names, min count %llu, "
	       "%llu pruned) in %.3f s (best of 5; CPU time %.3f s), %.1f M samples/s\n",
	       (unsigned long long)t.samples, (unsigned long long)t.columns,
	       (unsigned long long)t.rows, (unsigned long long)(t.bucket_ns / 1000000),
	       (unsigned long long)out_bytes, (unsigned long long)t.data_bytes,
	       (unsigned long long)(max_bytes ? max_bytes : 4u << 20),
	       (unsigned long long)t.nodes, (unsigned long long)t.names,
	       (unsigned long long)t.min_count, (unsigned long long)t.pruned, best, best_cpu,
	       (double)t.samples / best / 1e6);
	return 0;
}

int main(int argc, char **argv)
{
	bool heat = argc > 1 && !strcmp(argv[1], "--heatmap");
	if (heat)
		argc--, argv++;
	uint64_t span_ns = (argc > 3 ? strtoull(argv[3], NULL, 0) : 60) * 1000000000ull;
	uint64_t max_bytes = argc > 4 ? strtoull(argv[4], NULL, 0) : 0;
	size_t nsamples = argc > 1 ? strtoull(argv[1], NULL, 0) : 1000000;
	uint32_t nstacks = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 10000;
	const uint32_t npids = 64, nfuncs = 5000;
	struct capture *c;
	struct sym_table_builder *b;
	char name[96];

	if (capture_new(&c) < 0 || sym_tb_new(false, &b) < 0)
		return 1;
	/* strings: one comm per pid */
	c->str_blob = xmalloc(npids * 16);
	c->strs = xmalloc(npids * sizeof(*c->strs));
	for (uint32_t i = 0; i < npids; i++) {
		int n = snprintf(c->str_blob + c->str_blob_len, 16, "worker-%u", i % 8);
		c->strs[i] = (struct capture_str){(uint32_t)c->str_blob_len, (uint32_t)n};
		c->str_blob_len += (size_t)n;
	}
	c->nstrs = npids;
	/* function names, C++-ish lengths */
	uint32_t *fname = xmalloc(nfuncs * sizeof(*fname));
	for (uint32_t i = 0; i < nfuncs; i++) {
		int n =
		    snprintf(name, sizeof(name), "ns::component%u::Class%u::method_%u(int, long)",
			     i % 17, i % 101, i);
		sym_tb_name(b, name, (size_t)n, &fname[i]);
	}
	/* stacks: 10-40 frames, the last 3 kernel; each used by one pid */
	c->stacks = xmalloc(nstacks * sizeof(*c->stacks));
	c->ips = xmalloc((size_t)nstacks * 40 * sizeof(*c->ips));
	uint32_t *stack_pid = xmalloc(nstacks * sizeof(*stack_pid)), idx[40];
	for (uint32_t s = 0; s < nstacks; s++) {
		uint16_t depth = (uint16_t)(10 + rnd() % 31), nk = 3;
		c->stacks[s] =
		    (struct capture_stack){(uint32_t)c->nips, (uint16_t)(depth - nk), nk};
		for (uint16_t f = 0; f < depth; f++) {
			uint32_t fn = f >= depth - 4 ? f : (uint32_t)(rnd() % nfuncs);
			c->ips[c->nips++] = 0x400000 + (uint64_t)fn * 64;
			idx[f] = fname[fn];
		}
		stack_pid[s] = 1000 + s % npids;
		sym_tb_add(b, stack_pid[s], s + 1, idx, NULL, (uint16_t)(depth - nk), nk);
	}
	c->nstacks = nstacks;
	void *sec;
	size_t seclen;
	if (sym_tb_encode(b, &sec, &seclen) < 0 ||
	    capture_add_extra(c, CAPSEC_SYMBOLS, sec, seclen) < 0)
		return 1;
	free(sec);
	sym_tb_free(b);
	/* samples: skewed towards few hot stacks, like real profiles */
	c->recs = xmalloc(nsamples * sizeof(*c->recs));
	for (size_t i = 0; i < nsamples; i++) {
		uint64_t r = rnd();
		uint32_t s = (uint32_t)(r % 4 ? (r >> 8) % (nstacks / 20 + 1) : (r >> 8) % nstacks);
		c->recs[i] = (struct store_rec){.ts_ns = heat ? span_ns / nsamples * i : i * 1000,
						.pid = stack_pid[s],
						.tid = stack_pid[s] + (uint32_t)(r >> 40) % 4,
						.comm = stack_pid[s] - 1000 + 1,
						.stack = s + 1,
						.type = STORE_REC_CPU_SAMPLE,
						.aux32 = 1};
	}
	c->nrecs = nsamples;

	if (heat) {
		int r = bench_heatmap(c, max_bytes);
		free(fname);
		free(stack_pid);
		capture_free(c);
		return r;
	}
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct folded_totals t;
	double best = 1e9;
	for (int run = 0; run < 5; run++) {
		double t0 = now();
		if (folded_write_fd(c, NULL, fd, &t) < 0) {
			fprintf(stderr, "folded_write failed\n");
			return 1;
		}
		double dt = now() - t0;
		if (dt < best)
			best = dt;
	}
	printf("folded: %zu samples, %u stacks (section %zu KiB) -> %llu lines in %.3f s "
	       "(best of 5), %.1f M samples/s\n",
	       nsamples, nstacks, seclen / 1024, (unsigned long long)t.stacks, best,
	       (double)nsamples / best / 1e6);
	close(fd);
	free(fname);
	free(stack_pid);
	capture_free(c);
	return 0;
}
