/* SPDX-License-Identifier: MIT */
/*
 * Shared by the unwinding accuracy programs (tests/integration/test_unwind_accuracy.py):
 * a wall-clock deadline that is cheap to poll, so the hot paths spend their
 * time in the code under test and not in clock_gettime (a vDSO frame that
 * the two unwinders name differently).
 */
#ifndef UNWIND_PROG_COMMON_H
#define UNWIND_PROG_COMMON_H

#include <stdlib.h>
#include <time.h>

/* Every function whose frame the test expects is noipa: no inlining, no
 * clones with suffixed names (foo.constprop.0), no interprocedural
 * shortcuts, so the chain in the source is the chain in the binary. */
#define FRAME __attribute__((noipa))

static inline double prog_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline double prog_seconds(int argc, char **argv, double dflt)
{
	return argc > 1 ? atof(argv[1]) : dflt;
}

#endif
