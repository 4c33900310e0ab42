// SPDX-License-Identifier: MIT
/*
 * A GPU application against the fake runtimes (fake_*.c): loads one with
 * dlopen (as CUDA's runtime loads libcuda.so.1), names kernels the way real
 * programs do, and launches them a known number of times from distinctive
 * call sites. Built with frame pointers and -rdynamic so its frames unwind
 * and resolve by name.
 *
 *   gpu_app RUNTIME LIBRARY N [--hold] [--bench] [--deep KIB]
 *
 * RUNTIME is ze, cuda or hip. Prints "ready PID" once the library is
 * loaded, waits for a line on stdin, launches, prints "done", then exits
 * (with --hold: waits for end of stdin first). Launch counts, per call
 * site, are in docs/collectors.md's test description and below:
 *   ze:   ze_call_site_one   gpuprof_ze_alpha  N   (AppendLaunchKernel)
 *         ze_call_site_two   gpuprof_ze_beta   2N  (...CooperativeKernel)
 *         ze_call_site_three gpuprof_ze_alpha  3   (...KernelWithArguments)
 *         ze_call_site_four  gpuprof_ze_beta   2   (...KernelIndirect)
 *   cuda: cu_call_site_one   gpuprof_cu_saxpy  N   (cuLaunchKernel)
 *         cu_call_site_two   gpuprof_cu_reduce 2N  (cuLaunchKernelEx)
 *         cu_call_site_three gpuprof_cu_reduce 3   (cuLaunchKernel, CUkernel)
 *         (gpuprof_cu_reduce's name is read from a page not yet mapped in)
 *   hip:  hip_call_site_one  gpuprof_hip_stencil N  (hipLaunchKernel)
 *         hip_call_site_two  gpuprof_hip_gemm   2N  (hipModuleLaunchKernel)
 *         (gpuprof_hip_stencil's name is read from a page not yet mapped in)
 * --bench: N launches of the first kind only, timed; prints "ns_per_launch X"
 *          (wall clock) and "cpu_ns_per_launch X" (this thread's CPU time,
 *          user + kernel, where the uprobe and its BPF program run: steadier
 *          than wall time on a busy machine).
 * --deep KIB: launch from under KIB KiB more of (touched) stack. The main
 *          thread's stack is shallow here and a stack copy stops at its top;
 *          a real launcher's copy is the whole sampling.stack_bytes.
 */
#include <alloca.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *lib;
volatile uint64_t app_sink;

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "gpu_app: %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- ze */

typedef struct {
	uint32_t stype;
	const void *pNext;
	uint32_t flags;
	const char *pKernelName;
} ze_kernel_desc_t;
typedef struct {
	uint32_t x, y, z;
} ze_group_count_t;
typedef int (*ze_create_fn)(void *, const ze_kernel_desc_t *, void **);
typedef int (*ze_gs_fn)(void *, uint32_t, uint32_t, uint32_t);
typedef int (*ze_launch_fn)(void *, void *, const ze_group_count_t *, void *, uint32_t, void **);
typedef int (*ze_launch_args_fn)(void *, void *, ze_group_count_t, ze_group_count_t, void **,
				 const void *, void *, uint32_t, void **);

void ze_call_site_one(void *cl, void *k, long n);
void ze_call_site_two(void *cl, void *k, long n);
void ze_call_site_three(void *cl, void *k, long n);
void ze_call_site_four(void *cl, void *k, long n);
void run_ze(long n, int bench);

NOINLINE void ze_call_site_one(void *cl, void *k, long n)
{
	ze_launch_fn f = (ze_launch_fn)sym("zeCommandListAppendLaunchKernel");
	ze_group_count_t gc = {8, 4, 2};

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(cl, k, &gc, NULL, 0, NULL);
	app_sink++;
}

NOINLINE void ze_call_site_two(void *cl, void *k, long n)
{
	ze_launch_fn f = (ze_launch_fn)sym("zeCommandListAppendLaunchCooperativeKernel");
	ze_group_count_t gc = {16, 1, 1};

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(cl, k, &gc, NULL, 0, NULL);
	app_sink++;
}

NOINLINE void ze_call_site_three(void *cl, void *k, long n)
{
	ze_launch_args_fn f = (ze_launch_args_fn)sym("zeCommandListAppendLaunchKernelWithArguments");
	ze_group_count_t gc = {5, 6, 7}, gs = {32, 2, 1};

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(cl, k, gc, gs, NULL, NULL, NULL, 0, NULL);
	app_sink++;
}

NOINLINE void ze_call_site_four(void *cl, void *k, long n)
{
	ze_launch_fn f = (ze_launch_fn)sym("zeCommandListAppendLaunchKernelIndirect");

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(cl, k, NULL, NULL, 0, NULL);
	app_sink++;
}

NOINLINE void run_ze(long n, int bench)
{
	ze_create_fn create = (ze_create_fn)sym("zeKernelCreate");
	ze_gs_fn gs = (ze_gs_fn)sym("zeKernelSetGroupSize");
	ze_kernel_desc_t da = {0x1d, NULL, 0, "gpuprof_ze_alpha"};
	ze_kernel_desc_t db = {0x1d, NULL, 0, "gpuprof_ze_beta"};
	void *ka = NULL, *kb = NULL, *cl = (void *)0x7e57c1;

	if (create(NULL, &da, &ka) || create(NULL, &db, &kb))
		exit(1);
	gs(ka, 64, 1, 1);
	if (bench) {
		ze_call_site_one(cl, ka, n);
		return;
	}
	ze_call_site_one(cl, ka, n);
	ze_call_site_two(cl, kb, 2 * n);
	ze_call_site_three(cl, ka, 3);
	ze_call_site_four(cl, kb, 2);
}

/* -------------------------------------------------------------- cuda */

typedef struct {
	unsigned gx, gy, gz, bx, by, bz, shmem;
	void *stream;
	void *attrs;
	unsigned nattrs;
} cu_launch_config;
typedef int (*cu_get_fn)(void **, void *, const char *);
typedef int (*cu_kgf_fn)(void **, void *);
typedef int (*cu_launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			    unsigned, void *, void **, void **);
typedef int (*cu_launch_ex_fn)(const cu_launch_config *, void *, void **, void **);

void cu_call_site_one(void *f, long n);
void cu_call_site_two(void *f, long n);
void cu_call_site_three(void *k, long n);
void run_cuda(long n, int bench);

NOINLINE void cu_call_site_one(void *fn, long n)
{
	cu_launch_fn f = (cu_launch_fn)sym("cuLaunchKernel");

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(fn, 128, 2, 1, 256, 1, 1, 0, (void *)0x5eed, NULL, NULL);
	app_sink++;
}

NOINLINE void cu_call_site_two(void *fn, long n)
{
	cu_launch_ex_fn f = (cu_launch_ex_fn)sym("cuLaunchKernelEx");
	cu_launch_config cfg = {40, 30, 20, 8, 8, 4, 1024, (void *)0xabc, NULL, 0};

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(&cfg, fn, NULL, NULL);
	app_sink++;
}

NOINLINE void cu_call_site_three(void *k, long n)
{
	cu_launch_fn f = (cu_launch_fn)sym("cuLaunchKernel");

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	app_sink++;
}

/* A string in a page of a file mapping nothing has touched yet: a probe
 * that reads it on entry, before the callee does, finds no page table
 * entry and cannot fault one in. Real libraries name kernels from such
 * pages (cuBLAS's tables in a 500 MB libcublasLt.so). */
static const char *cold_string(const char *s)
{
	char path[] = "/tmp/gpu_app_XXXXXX";
	size_t len = strlen(s) + 1;
	int fd = mkstemp(path);
	void *p;

	if (fd < 0 || write(fd, s, len) != (ssize_t)len)
		exit(1);
	unlink(path);
	p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		exit(1);
	return p;
}

NOINLINE void run_cuda(long n, int bench)
{
	cu_get_fn get = (cu_get_fn)sym("cuModuleGetFunction");
	cu_get_fn lget = (cu_get_fn)sym("cuLibraryGetKernel");
	cu_kgf_fn kgf = (cu_kgf_fn)sym("cuKernelGetFunction");
	void *saxpy = NULL, *kreduce = NULL, *reduce = NULL;

	if (get(&saxpy, NULL, "gpuprof_cu_saxpy") ||
	    lget(&kreduce, NULL, cold_string("gpuprof_cu_reduce")) ||
	    kgf(&reduce, kreduce))
		exit(1);
	if (bench) {
		cu_call_site_one(saxpy, n);
		return;
	}
	cu_call_site_one(saxpy, n);
	cu_call_site_two(reduce, 2 * n);
	cu_call_site_three(kreduce, 3);
}

/* --------------------------------------------------------------- hip */

typedef struct {
	uint32_t x, y, z;
} dim3;
typedef void (*hip_reg_fn)(void **, const void *, char *, const char *, unsigned, void *, void *,
			   dim3 *, dim3 *, int *);
typedef int (*hip_get_fn)(void **, void *, const char *);
typedef int (*hip_launch_fn)(const void *, dim3, dim3, void **, size_t, void *);
typedef int (*hip_mlaunch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			      unsigned, void *, void **, void **);

void hip_stencil_stub(void);
void hip_call_site_one(long n);
void hip_call_site_two(void *f, long n);
void run_hip(long n, int bench);

/* The host stub of a __global__ function: its address is the handle. */
NOINLINE void hip_stencil_stub(void)
{
	app_sink++;
}

NOINLINE void hip_call_site_one(long n)
{
	hip_launch_fn f = (hip_launch_fn)sym("hipLaunchKernel");
	dim3 grid = {100, 2, 3}, block = {64, 4, 1};

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f((const void *)hip_stencil_stub, grid, block, NULL, 512,
					(void *)0x57);
	app_sink++;
}

NOINLINE void hip_call_site_two(void *fn, long n)
{
	hip_mlaunch_fn f = (hip_mlaunch_fn)sym("hipModuleLaunchKernel");

	for (long i = 0; i < n; i++)
		app_sink += (uint64_t)f(fn, 9, 8, 7, 6, 5, 4, 0, (void *)0x58, NULL, NULL);
	app_sink++;
}

NOINLINE void run_hip(long n, int bench)
{
	hip_reg_fn reg = (hip_reg_fn)sym("__hipRegisterFunction");
	hip_get_fn get = (hip_get_fn)sym("hipModuleGetFunction");
	char devfn[] = "_Z19gpuprof_hip_stencilPf";
	void *gemm = NULL;

	reg(NULL, (const void *)hip_stencil_stub, devfn, cold_string("gpuprof_hip_stencil"), 0, NULL, NULL,
	    NULL, NULL, NULL);
	if (get(&gemm, NULL, "gpuprof_hip_gemm"))
		exit(1);
	if (bench) {
		hip_call_site_one(n);
		return;
	}
	hip_call_site_one(n);
	hip_call_site_two(gemm, 2 * n);
}

/* Inlined: main -> run_cuda stays the launches' call chain (the tests
 * expect it). */
static inline __attribute__((always_inline)) int run_runtime(const char *rt, long n, int bench)
{
	if (!strcmp(rt, "ze"))
		run_ze(n, bench);
	else if (!strcmp(rt, "cuda"))
		run_cuda(n, bench);
	else if (!strcmp(rt, "hip"))
		run_hip(n, bench);
	else
		return 2;
	return 0;
}

static NOINLINE int run_deep(long kib, const char *rt, long n, int bench)
{
	volatile char *pad = alloca((size_t)kib * 1024);
	int r;

	memset((char *)pad, 1, (size_t)kib * 1024); /* the pages are present */
	r = run_runtime(rt, n, bench);
	app_sink += pad[0]; /* live across the launches */
	return r;
}

int main(int argc, char **argv)
{
	int hold = 0, bench = 0, r;
	char line[64];
	uint64_t t0, t1, c0, c1;
	long n, deep = 0;

	if (argc < 4) {
		fprintf(stderr,
			"usage: gpu_app ze|cuda|hip LIBRARY N [--hold] [--bench] [--deep KIB]\n");
		return 2;
	}
	for (int i = 4; i < argc; i++) {
		hold |= !strcmp(argv[i], "--hold");
		bench |= !strcmp(argv[i], "--bench");
		if (!strcmp(argv[i], "--deep") && i + 1 < argc)
			deep = atol(argv[++i]);
	}
	if (deep < 0 || deep > 4096)
		return 2;
	n = atol(argv[3]);
	lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "gpu_app: %s\n", dlerror());
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	t0 = clock_ns(CLOCK_MONOTONIC);
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	r = deep ? run_deep(deep, argv[1], n, bench) : run_runtime(argv[1], n, bench);
	if (r)
		return r;
	c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	t1 = clock_ns(CLOCK_MONOTONIC);
	if (bench) {
		printf("ns_per_launch %.1f\n", (double)(t1 - t0) / (double)(n ? n : 1));
		printf("cpu_ns_per_launch %.1f\n", (double)(c1 - c0) / (double)(n ? n : 1));
	}
	printf("done\n");
	fflush(stdout);
	while (hold && fgets(line, sizeof(line), stdin))
		;
	dlclose(lib);
	return 0;
}
