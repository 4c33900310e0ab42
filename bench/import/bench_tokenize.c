// SPDX-License-Identifier: MIT
/*
 * bench_tokenize --trace FILE [--runs 50] [--chunk 65536]
 *
 * The JSON tokenizer alone (daemon/import/kineto/jsontok.c): FILE (plain JSON) read
 * into memory once, then fed in --chunk pieces to a tokenizer whose
 * callbacks only count, --runs times; prints the best run's MB/s and the
 * tokens seen. No allocation and no page fault in the timed part, so a
 * change to the tokenizer shows here with less of the noise a whole import
 * has on a shared machine (bench_import measures that).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "import/kineto/jsontok.h"

static unsigned long nbegin, nkey, nvalue;

static int on_begin(void *ctx, char type)
{
	nbegin++;
	return 0;
}

static int on_end(void *ctx, char type)
{
	return 0;
}

static int on_key(void *ctx, const char *s, size_t n, bool truncated)
{
	nkey++;
	return 0;
}

static int on_value(void *ctx, const struct jv *v)
{
	nvalue++;
	return 0;
}

static const struct json_sax sax = { on_begin, on_end, on_key, on_value };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	int runs = 50, opt;
	size_t chunk = 65536, n;
	double best = 1e30;
	char *buf;
	FILE *f;
	static const struct option lo[] = { { "trace", required_argument, NULL, 't' },
					    { "runs", required_argument, NULL, 'r' },
					    { "chunk", required_argument, NULL, 'c' },
					    { 0 } };

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 't': path = optarg; break;
		case 'r': runs = atoi(optarg); break;
		case 'c': chunk = (size_t)strtoul(optarg, NULL, 0); break;
		default: path = NULL; runs = 0;
		}
	}
	if (!path || runs < 1 || !chunk) {
		fprintf(stderr, "usage: %s --trace FILE [--runs 50] [--chunk 65536]\n", argv[0]);
		return 2;
	}
	if (!(f = fopen(path, "rb")) || fseek(f, 0, SEEK_END) || (long)(n = (size_t)ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) || !(buf = malloc(n + 1)) || fread(buf, 1, n, f) != n) {
		perror(path);
		return 1;
	}
	fclose(f);
	for (int r = 0; r < runs; r++) {
		struct json_tok t;
		double t0;
		int err = 0;

		nbegin = nkey = nvalue = 0;
		json_tok_init(&t, &sax, NULL, 64, 1u << 20);
		t0 = now();
		for (size_t o = 0; o < n && !err; o += chunk)
			err = json_tok_feed(&t, buf + o, n - o < chunk ? n - o : chunk);
		if (!err)
			err = json_tok_end(&t);
		t0 = now() - t0;
		if (err) {
			fprintf(stderr, "%s: byte %llu: %s\n", path, (unsigned long long)t.err_offset,
				t.err);
			return 1;
		}
		json_tok_finish(&t);
		best = t0 < best ? t0 : best;
	}
	printf("%s: %.1f MB, %lu containers, %lu keys, %lu values\n", path, (double)n / 1e6, nbegin,
	       nkey, nvalue);
	printf("  best of %d: %.2f ms, %.0f MB/s\n", runs, best * 1e3, (double)n / best / 1e6);
	free(buf);
	return 0;
}
