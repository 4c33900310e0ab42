// SPDX-License-Identifier: MIT
/*
 * bench_grow [--mb 310] [--runs 1] [--mode NAME]
 *
 * What growing the importer's event array costs, and what it leaves for
 * the passes after it (docs/import.md, "2026-11-26"): MB of 112-byte rows
 * (struct tl_event) appended one at a time, then read twice in order. Per
 * mode, wall ms of the fill, the first read and the second read:
 *   realloc       bigalloc_grow() (realloc, mremap on each move), 4 KiB faults
 *   realloc+pop   the same, populated 4 MiB ahead (bigalloc_prefault): the
 *                 importer before 2026-11-26
 *   grow_pop      bigalloc_grow_pop(): huge pages, 4 times the room, copies
 *                 instead of moves, populated ahead: the importer now
 *   huge-fault    one huge-page array that never moves, faulted in
 *   huge-pop      the same, populated 4 MiB ahead
 * The modes run interleaved, --runs times each, or only --mode NAME. A
 * first read that is much slower than the second is the cost of pages the
 * grow moved. Memory another mode just freed is cheaper to fill than memory
 * the host has taken back (free page reporting on a VM): the first mode of
 * a process pays more; compare modes each run first, in its own process.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "timeline/timeline_int.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static volatile int64_t sink;

static void read_rows(const struct tl_event *ev, uint32_t n)
{
	int64_t s = 0;

	for (uint32_t i = 0; i < n; i++)
		s += ev[i].ts_ns + ev[i].name;
	sink += s;
}

static void fill_row(struct tl_event *e, uint32_t i)
{
	memset(e, 0, sizeof(*e));
	e->ts_ns = i;
	e->name = i & 7;
	e->link = -1;
}

enum mode { REALLOC, REALLOC_POP, GROW_POP, HUGE_FAULT, HUGE_POP, NMODES };
static const char *const mode_names[NMODES] = { "realloc", "realloc+pop", "grow_pop",
						"huge-fault", "huge-pop" };

static int run(enum mode m, uint32_t n)
{
	struct tl_event *ev = NULL;
	uint32_t cap = 0;
	size_t pop = 0, bytes = (size_t)n * sizeof(*ev);
	size_t huge_len = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	double t0, t1, t2, t3;

	if (m == HUGE_FAULT || m == HUGE_POP) {
		if (posix_memalign((void **)&ev, 2u << 20, huge_len))
			return -1;
		madvise(ev, huge_len, MADV_HUGEPAGE);
		cap = n;
	}
	t0 = now_ms();
	for (uint32_t i = 0; i < n; i++) {
		int err = 0;

		switch (m) {
		case REALLOC:
			err = bigalloc_grow((void **)&ev, &cap, i + 1, sizeof(*ev));
			break;
		case REALLOC_POP:
			if (i + 1 > cap) {
				struct tl_event *old = ev;

				err = bigalloc_grow((void **)&ev, &cap, i + 1, sizeof(*ev));
				if (ev != old)
					pop = (size_t)i * sizeof(*ev);
			}
			bigalloc_prefault(ev, (size_t)cap * sizeof(*ev), &pop, (size_t)(i + 1) * sizeof(*ev));
			break;
		case GROW_POP:
			err = bigalloc_grow_pop((void **)&ev, &cap, &pop, i, 1, sizeof(*ev));
			break;
		case HUGE_POP:
			bigalloc_prefault(ev, huge_len, &pop, (size_t)(i + 1) * sizeof(*ev));
			break;
		default:
			break;
		}
		if (err < 0) {
			free(ev);
			return -1;
		}
		fill_row(&ev[i], i);
	}
	t1 = now_ms();
	read_rows(ev, n);
	t2 = now_ms();
	read_rows(ev, n);
	t3 = now_ms();
	printf("  %-12s fill %8.1f ms   first read %7.1f ms   second read %6.1f ms\n", mode_names[m],
	       t1 - t0, t2 - t1, t3 - t2);
	free(ev);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "mb", required_argument, NULL, 'm' },
					       { "runs", required_argument, NULL, 'r' },
					       { "mode", required_argument, NULL, 'o' },
					       { 0 } };
	long mb = 310, runs = 1;
	int c, only = -1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'm')
			mb = strtol(optarg, NULL, 10);
		else if (c == 'r')
			runs = strtol(optarg, NULL, 10);
		else if (c == 'o') {
			for (only = 0; only < NMODES && strcmp(optarg, mode_names[only]); only++)
				;
			if (only == NMODES) {
				fprintf(stderr, "--mode: realloc, realloc+pop, grow_pop, huge-fault, "
						"huge-pop\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: %s [--mb 310] [--runs 1] [--mode NAME]\n", argv[0]);
			return 2;
		}
	}
	if (mb < 1 || mb > 65536 || runs < 1) {
		fprintf(stderr, "--mb 1..65536, --runs >= 1\n");
		return 2;
	}
	uint32_t n = (uint32_t)((size_t)mb * 1000000 / sizeof(struct tl_event));

	printf("%u rows of %zu bytes (%ld MB), appended one at a time, then read twice\n", n,
	       sizeof(struct tl_event), mb);
	for (long r = 0; r < runs; r++)
		for (int m = 0; m < NMODES; m++)
			if ((only < 0 || m == only) && run((enum mode)m, n) < 0) {
				fprintf(stderr, "%s: out of memory\n", mode_names[m]);
				return 1;
			}
	return 0;
}
