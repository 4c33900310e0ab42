// SPDX-License-Identifier: MIT
#include "gpd.h"

#include <time.h>

uint64_t gpd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t gpd_mono_to_realtime_ns(void)
{
	struct timespec m, r;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return ((int64_t)r.tv_sec - (int64_t)m.tv_sec) * 1000000000ll +
	       ((int64_t)r.tv_nsec - (int64_t)m.tv_nsec);
}
