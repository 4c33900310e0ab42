// SPDX-License-Identifier: MIT
/*
 * gen_kineto: write realistic synthetic Kineto JSON traces.
 *   gen_kineto [--size 1G | --iters N] [--ranks R] [--streams S] [-o PREFIX]
 *   gen_kineto --repeat TRACE [--size 1G | --copies N] [-o PREFIX]
 * Writes PREFIX_rank<r>.json for every rank (default PREFIX "gen"), or the
 * rank-0 trace to stdout with -o -. --repeat writes one file instead: the
 * Kineto trace TRACE (plain or gzip) repeated with shifted timestamps and
 * ids until --size bytes, or --copies times (repeat.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' }, { "iters", required_argument, NULL, 'i' },
		{ "ranks", required_argument, NULL, 'r' }, { "streams", required_argument, NULL, 'S' },
		{ "out", required_argument, NULL, 'o' }, { "help", no_argument, NULL, 'h' },
		{ "repeat", required_argument, NULL, 'R' }, { "copies", required_argument, NULL, 'c' },
		{ 0 }
	};
	struct gen_opts o = { .size = 64ull << 20, .streams = 3 };
	const char *prefix = "gen", *repeat = NULL;
	int ranks = 1, copies = 0, c;

	while ((c = getopt_long(argc, argv, "s:i:r:S:o:hR:c:", lo, NULL)) != -1) {
		switch (c) {
		case 's': o.size = gen_parse_size(optarg); break;
		case 'i': o.iters = strtoull(optarg, NULL, 10); break;
		case 'r': ranks = atoi(optarg); break;
		case 'S': o.streams = atoi(optarg); break;
		case 'o': prefix = optarg; break;
		case 'R': repeat = optarg; break;
		case 'c': copies = atoi(optarg); break;
		default:
			fprintf(stderr,
				"usage: %s [--size 1G | --iters N] [--ranks R] [--streams 1-3] "
				"[-o PREFIX|-]\n       %s --repeat TRACE [--size 1G | --copies N] "
				"[-o PREFIX|-]\n",
				argv[0], argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if ((!o.size && !o.iters) || ranks < 1 || o.streams < 1 || o.streams > 3) {
		fprintf(stderr, "%s: bad arguments\n", argv[0]);
		return 2;
	}
	if (repeat) {
		char path[4096], err[4400];
		uint64_t n = 0;
		FILE *f = stdout;
		int reps;

		snprintf(path, sizeof(path), "%s_rank0.json", prefix);
		if (strcmp(prefix, "-") && !(f = fopen(path, "w"))) {
			perror(path);
			return 1;
		}
		reps = gen_repeat_write(f, repeat, o.size, copies, &n, err, sizeof(err));
		if ((f != stdout ? fclose(f) : fflush(f)) && reps >= 0) {
			snprintf(err, sizeof(err), "%s: %s", path, strerror(errno));
			reps = -1;
		}
		if (reps < 0) {
			fprintf(stderr, "%s: %s\n", argv[0], err);
			return 1;
		}
		if (f != stdout)
			printf("%s: %llu bytes, %s repeated %d times\n", path, (unsigned long long)n,
			       repeat, reps);
		return 0;
	}
	o.world = ranks;
	if (!strcmp(prefix, "-")) {
		gen_kineto_write(stdout, &o, 0);
		return fflush(stdout) ? 1 : 0;
	}
	for (int r = 0; r < ranks; r++) {
		char path[4096];
		FILE *f;
		uint64_t n;

		snprintf(path, sizeof(path), "%s_rank%d.json", prefix, r);
		f = fopen(path, "w");
		if (!f) {
			perror(path);
			return 1;
		}
		n = gen_kineto_write(f, &o, r);
		if (fclose(f)) {
			perror(path);
			return 1;
		}
		printf("%s: %llu bytes\n", path, (unsigned long long)n);
	}
	return 0;
}
