// SPDX-License-Identifier: MIT
/*
 * Program a (and f): built -O2 -fomit-frame-pointer. A known four-deep chain
 * main -> chain_a -> chain_b -> chain_c -> chain_d; chain_d spends its time
 * in its own loop and in qsort() with the comparator cmp_ints (libc's
 * msort_with_tmp recursion between them).
 *
 *   unwind_chain [seconds]
 */
#include <stdint.h>
#include <stdio.h>

#include "common.h"

#define N 4096

static volatile uint64_t sink;
static int v[N];

FRAME static int cmp_ints(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

FRAME static uint64_t chain_d(uint64_t seed)
{
	uint64_t h = seed;

	for (int i = 0; i < N; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = (int)(h >> 33);
	}
	qsort(v, N, sizeof(v[0]), cmp_ints);
	/* chain_d's own hot loop: a leaf sample in chain_d itself */
	for (int r = 0; r < 64; r++)
		for (int i = 0; i < N; i++)
			h ^= (uint64_t)v[i] * (h | 1);
	return h;
}

/* Each link uses its callee's result after the call, so no call becomes a
 * jump (a sibling call would drop the caller's frame from every stack). */
FRAME static uint64_t chain_c(uint64_t s)
{
	uint64_t r = chain_d(s + 3);

	sink += r;
	return r ^ s;
}

FRAME static uint64_t chain_b(uint64_t s)
{
	uint64_t r = chain_c(s + 2);

	sink += r;
	return r ^ s;
}

FRAME static uint64_t chain_a(uint64_t s)
{
	uint64_t r = chain_b(s + 1);

	sink += r;
	return r ^ s;
}

int main(int argc, char **argv)
{
	double end = prog_now() + prog_seconds(argc, argv, 4.0);
	uint64_t s = 1;

	while (prog_now() < end)
		s = chain_a(s);
	printf("%llu\n", (unsigned long long)(s & 1));
	return 0;
}
