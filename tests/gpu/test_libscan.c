// SPDX-License-Identifier: MIT
/*
 * Runtime library discovery (daemon/collect/libscan.c) on a made-up
 * /proc/PID/maps: which files count as runtimes, one hit per file with all
 * of its executable ranges, and nothing carried over from the caller's
 * buffer (a hit's ranges once kept whatever malloc left there).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collect/libscan.h"
#include "test.h"

static void names(void)
{
	CHECK_EQ_INT(libscan_match("libcuda.so"), GPU_RT_CUDA);
	CHECK_EQ_INT(libscan_match("libcuda.so.550.54.14"), GPU_RT_CUDA);
	CHECK_EQ_INT(libscan_match("libcudart.so.12"), -1);
	CHECK_EQ_INT(libscan_match("libze_loader.so.1.21.9"), GPU_RT_ZE);
	CHECK_EQ_INT(libscan_match("libze_intel_gpu.so.1"), GPU_RT_NEO);
	CHECK_EQ_INT(libscan_match("libamdhip64.so.6"), GPU_RT_HIP);
	CHECK_EQ_INT(libscan_match("libc.so.6"), -1);
}

static void maps(void)
{
	char dir[] = "/tmp/gpuprof-libscan-XXXXXX", sub[64], path[96];
	struct libscan_hit *hits = malloc(4 * sizeof(*hits));
	FILE *f;
	int n;

	CHECK(hits && mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/4242", dir);
	CHECK_EQ_INT(mkdir(sub, 0700), 0);
	snprintf(path, sizeof(path), "%s/maps", sub);
	f = fopen(path, "w");
	CHECK(f);
	fputs("55d000000000-55d000001000 r--p 00000000 08:01 100 /usr/bin/app\n"
	      "55d000001000-55d000002000 r-xp 00001000 08:01 100 /usr/bin/app\n"
	      "7f0000000000-7f0000010000 r--p 00000000 08:01 200 /usr/lib/libcuda.so.550.1\n"
	      "7f0000010000-7f0000090000 r-xp 00010000 08:01 200 /usr/lib/libcuda.so.550.1\n"
	      "7f00000a0000-7f00000b0000 r-xp 000a0000 08:01 200 /usr/lib/libcuda.so.550.1\n"
	      "7f1000000000-7f1000010000 r-xp 00000000 08:01 300 /usr/lib/libcudart.so.12\n"
	      "7f2000000000-7f2000010000 r-xp 00000000 08:01 400 /old/libamdhip64.so.6 (deleted)\n"
	      "7f3000000000-7f3000010000 r-xp 00000000 08:01 500 /opt/libze_loader.so.1\n"
	      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n",
	      f);
	fclose(f);
	memset(hits, 0xa5, 4 * sizeof(*hits)); /* what a reused buffer holds */
	n = libscan_pid(dir, 4242, hits, 4);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_EQ_INT(hits[0].rt, GPU_RT_CUDA);
		CHECK_STREQ(hits[0].path, "/usr/lib/libcuda.so.550.1");
		CHECK_EQ_U64(hits[0].ino, 200);
		CHECK_EQ_INT(hits[0].nranges, 2);
		CHECK_EQ_U64(hits[0].ranges[0].lo, 0x7f0000010000ull);
		CHECK_EQ_U64(hits[0].ranges[0].hi, 0x7f0000090000ull);
		CHECK_EQ_U64(hits[0].ranges[1].lo, 0x7f00000a0000ull);
		CHECK_EQ_INT(hits[1].rt, GPU_RT_ZE);
		CHECK_EQ_INT(hits[1].nranges, 1);
		CHECK_EQ_U64(hits[1].ranges[0].hi, 0x7f3000010000ull);
	}
	/* Room for one: the first file only. */
	CHECK_EQ_INT(libscan_pid(dir, 4242, hits, 1), 1);
	CHECK_EQ_INT(libscan_pid(dir, 4243, hits, 4), -ENOENT);
	unlink(path);
	rmdir(sub);
	rmdir(dir);
	free(hits);
}

int main(void)
{
	RUN(names);
	RUN(maps);
	return test_summary();
}
