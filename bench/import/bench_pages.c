// SPDX-License-Identifier: MIT
/*
 * bench_pages [--mb 512] [--sleep 5]
 *
 * What fresh memory costs on this machine: the rate at which anonymous
 * memory is populated (MADV_POPULATE_WRITE, huge pages advised, as
 * bigalloc_malloc() does) the first time, right after the same amount was
 * unmapped, and again after --sleep seconds idle; then the same with
 * 4 KiB pages. On a VM whose guest reports free pages to its host, memory
 * not touched for a few seconds comes back from the host at first touch,
 * and that rate bounds any import or analysis of a large capture there.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Map, advise, populate, write once, unmap: MB/s of populate and write. */
static int once(size_t bytes, bool huge, double *pop, double *wr)
{
	double t0, t1, t2;
	char *p;

	t0 = now();
	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	madvise(p, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#ifdef MADV_POPULATE_WRITE
	madvise(p, bytes, MADV_POPULATE_WRITE);
#endif
	t1 = now();
	memset(p, 1, bytes);
	t2 = now();
	munmap(p, bytes);
	*pop = (double)bytes / 1e6 / (t1 - t0);
	*wr = (double)bytes / 1e6 / (t2 - t1);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "mb", required_argument, NULL, 'm' },
					    { "sleep", required_argument, NULL, 's' },
					    { 0 } };
	size_t mb = 512;
	int nap = 5, c;

	while ((c = getopt_long(argc, argv, "m:s:", lo, NULL)) != -1) {
		if (c == 'm' && atoi(optarg) > 0)
			mb = (size_t)atoi(optarg);
		else if (c == 's' && atoi(optarg) >= 0)
			nap = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [--mb 512] [--sleep 5]\n", argv[0]);
			return 2;
		}
	}
	printf("%zu MB anonymous, populate then write (MB/s)\n", mb);
	for (int huge = 1; huge >= 0; huge--) {
		static const char *const when[] = { "first", "again at once", "after idle" };

		for (int i = 0; i < 3; i++) {
			double pop, wr;

			if (i == 2)
				sleep((unsigned)nap);
			if (once(mb << 20, huge, &pop, &wr)) {
				perror("mmap");
				return 1;
			}
			printf("  %-9s %-14s populate %8.0f  write %8.0f%s\n",
			       huge ? "2 MiB" : "4 KiB", when[i], pop, wr,
			       i == 2 ? "  (idle seconds: --sleep)" : "");
		}
	}
	return 0;
}
