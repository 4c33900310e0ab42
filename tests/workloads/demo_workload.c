// SPDX-License-Identifier: MIT
/*
 * A small CPU workload with a recognisable call graph, for the README demo
 * and integration tests: main -> run_epoch -> {matmul_tile, checksum_block,
 * sort_batch, write_log}; write_log is syscall-heavy. Built with frame pointers.
 * Usage: demo_workload [SECONDS]   (default 10; 0 = until killed)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#define N 96

static double a[N][N], b[N][N], c[N][N];
static uint32_t block[1 << 14];
static volatile uint64_t sink;

/* Called at the end of each hot function so none of them is a leaf: GCC 12
 * gives a leaf that needs no stack no frame even with
 * -fno-omit-frame-pointer, and a sample there would lose its caller. */
__attribute__((noinline)) static void publish(uint64_t v)
{
	sink += v;
}

__attribute__((noinline)) static void matmul_tile(void)
{
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < N; k++)
				s += a[i][k] * b[k][j];
			c[i][j] = s;
		}
	publish((uint64_t)c[N / 2][N / 2]);
}

__attribute__((noinline)) static void checksum_block(void)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < sizeof(block) / sizeof(block[0]); i++)
		h = (h ^ block[i]) * 16777619u;
	publish(h);
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t p = *(const uint32_t *)x, q = *(const uint32_t *)y;
	return p < q ? -1 : p > q;
}

__attribute__((noinline)) static void sort_batch(void)
{
	static uint32_t tmp[4096];
	memcpy(tmp, block, sizeof(tmp));
	qsort(tmp, 4096, sizeof(tmp[0]), cmp_u32);
	publish(tmp[100]);
}

/* Syscalls issued inline rather than through libc, whose functions have no
 * frame pointers: samples in the kernel then unwind through write_log. */
static inline __attribute__((always_inline)) long raw_write(int fd, const void *buf,
							   unsigned long len)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(1L /* __NR_write */), "D"((long)fd), "S"(buf), "d"(len)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) static void write_log(int devnull)
{
	static char line[4096];
	for (int i = 0; i < 256; i++) {
		line[i] = (char)('a' + i % 26);
		if (raw_write(devnull, line, sizeof(line)) < 0)
			break;
	}
	publish((uint64_t)line[0]);
}

__attribute__((noinline)) static void run_epoch(int devnull)
{
	matmul_tile();
	matmul_tile();
	checksum_block();
	sort_batch();
	write_log(devnull);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			a[i][j] = i + j, b[i][j] = i - j;
	for (size_t i = 0; i < sizeof(block) / sizeof(block[0]); i++)
		block[i] = (uint32_t)(i * 2654435761u);
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0)
		return 1;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		run_epoch(devnull);
		clock_gettime(CLOCK_MONOTONIC, &t);
		double el = (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
		if (secs > 0 && el >= secs)
			break;
	}
	close(devnull);
	return 0;
}
