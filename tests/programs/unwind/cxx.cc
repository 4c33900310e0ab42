// SPDX-License-Identifier: MIT
/*
 * Program b: C++ -O2 (no frame pointers), hot in std::sort with a lambda
 * comparator and in std::map inserts and look-ups. The template code lives
 * in this binary (std::__introsort_loop<...> and friends, with the lambda
 * inlined into them); the map's rebalancing and node allocation are in
 * libstdc++ and libc.
 *
 *   unwind_cxx [seconds]
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <vector>

#include "common.h"

static volatile uint64_t sink;

FRAME static uint64_t sort_phase(std::vector<uint64_t> &v, uint64_t h)
{
	for (auto &x : v) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		x = h >> 7;
	}
	std::sort(v.begin(), v.end(),
		  [](uint64_t a, uint64_t b) { return (a % 1000003) < (b % 1000003); });
	return h ^ v[v.size() / 2];
}

FRAME static uint64_t map_phase(uint64_t h)
{
	std::map<uint64_t, uint64_t> m;
	uint64_t found = 0;

	for (int i = 0; i < 16000; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		m[h % 20000] += i;
	}
	for (int i = 0; i < 16000; i++) {
		auto it = m.find((uint64_t)i * 7 % 20000);
		if (it != m.end())
			found += it->second;
	}
	return h ^ found;
}

int main(int argc, char **argv)
{
	double end = prog_now() + prog_seconds(argc, argv, 4.0);
	std::vector<uint64_t> v(50000);
	uint64_t h = 1;

	while (prog_now() < end) {
		h = sort_phase(v, h);
		h = map_phase(h);
		sink += h;
	}
	std::printf("%llu\n", (unsigned long long)(sink & 1));
	return 0;
}
