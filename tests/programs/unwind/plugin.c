// SPDX-License-Identifier: MIT
/*
 * The shared library of program d, built -O2 -fomit-frame-pointer -fPIC:
 * plugin_entry -> plugin_mid -> plugin_leaf, all hot, none with a frame
 * pointer. Loaded with dlopen() after the program started.
 */
#include <stdint.h>

#define FRAME __attribute__((noipa))

static volatile uint64_t sink;

FRAME static uint64_t plugin_leaf(uint64_t h)
{
	for (int i = 0; i < 50000; i++)
		h = (h * 6364136223846793005ull + 1442695040888963407ull) ^ (h >> 29);
	return h;
}

FRAME static uint64_t plugin_mid(uint64_t h)
{
	uint64_t r = plugin_leaf(h + 1);

	sink += r;
	return r ^ h;
}

uint64_t plugin_entry(uint64_t h)
{
	uint64_t r = plugin_mid(h + 1);

	sink += r;
	return r ^ h;
}
