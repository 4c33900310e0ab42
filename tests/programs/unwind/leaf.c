// SPDX-License-Identifier: MIT
/*
 * Program c: built -O2 -fno-omit-frame-pointer, except leaf_spin, which sets
 * up no frame (optimize("omit-frame-pointer")): a sample in it has rbp still
 * pointing at caller_frame's frame, so a frame-pointer walk goes straight
 * from leaf_spin to main and loses caller_frame. The right stack is
 * main;caller_frame;leaf_spin. The test checks the shape with objdump.
 * Built with -DLEAF_HAS_FRAME it is the test's positive control: every
 * function has a frame, so today's frame-pointer unwinding must agree.
 *
 *   unwind_leaf [seconds]
 */
#include <stdint.h>
#include <stdio.h>

#include "common.h"

static volatile uint64_t sink;

/* LEAF_HAS_FRAME: the control build, where leaf_spin keeps a frame (GCC 12
 * builds one in a leaf only when it uses the stack, whatever the frame
 * pointer flags) and a frame-pointer walk is right. */
#ifdef LEAF_HAS_FRAME
__attribute__((noipa)) uint64_t leaf_spin(uint64_t x)
{
	volatile uint64_t on_stack = 0;

	x += on_stack;
#else
__attribute__((noipa, optimize("omit-frame-pointer"))) uint64_t leaf_spin(uint64_t x)
{
#endif
	for (int i = 0; i < 200000; i++)
		x = (x * 6364136223846793005ull + 1442695040888963407ull) ^ (x >> 17);
	return x;
}

FRAME uint64_t caller_frame(uint64_t x)
{
	volatile uint64_t local[4] = {x, 0, 0, 0}; /* a frame of its own */

	for (int i = 0; i < 8; i++)
		local[i & 3] += leaf_spin(local[(i + 1) & 3] + (uint64_t)i);
	return local[0] ^ local[3];
}

int main(int argc, char **argv)
{
	double end = prog_now() + prog_seconds(argc, argv, 4.0);
	uint64_t x = 1;

	while (prog_now() < end) {
		x = caller_frame(x);
		sink += x;
	}
	printf("%llu\n", (unsigned long long)(sink & 1));
	return 0;
}
