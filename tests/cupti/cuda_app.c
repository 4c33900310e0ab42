// SPDX-License-Identifier: MIT
/*
 * A CUDA program for the injection tests: loads libcuda.so.1 (the fake
 * driver in tests, which plays the stand-in libcupti), calls cuInit (the
 * driver loads CUDA_INJECTION64_PATH there) and does a known amount of
 * work from a known number of threads, then prints exactly what it asked
 * for so that a test can compare sums.
 *
 *   cuda_app [--cuda LIB] [--threads T] [--launches N] [--kernel NAME:NS]...
 *            [--memcpy BYTES:NS] [--memset BYTES:NS] [--sync] [--graph NS]
 *            [--nvtx] [--pause-ms MS] [--sleep-ms MS] [--wait] [--until-eof]
 *            [--fork] [--subscribe-first NAME] [--pc CUBIN]
 *
 * Each of T threads (default 1) runs N iterations (default 10); one
 * iteration launches every --kernel once (default gpuprof_k_a:20000) on
 * the thread's own stream, with the duration given (fake_cuda_set_duration),
 * then one HtoD copy and one DtoH copy of BYTES (--memcpy), one memset of
 * BYTES (--memset), one graph launch (--graph), one cuStreamSynchronize
 * (--sync); with --nvtx the iteration is an NVTX range "iteration" in
 * domain "gpuprof_test" and each thread makes one mark "thread_start".
 * --pause-ms sleeps between iterations, --sleep-ms before exiting, --wait
 * prints "ready PID" and waits for a line on stdin before the work,
 * --until-eof stops the threads after their current iteration once stdin
 * reaches its end (N stays the most), --fork forks a child after the work
 * that launches once and exits. --subscribe-first subscribes to CUPTI
 * (GPUPROF_CUPTI_LIB, else libcupti.so.13) as NAME before cuInit, the way
 * a profiler that started first holds it. --pc plays a context that loads
 * the module CUBIN (a real cubin) after cuInit, and PC sampling of every
 * launch of a --kernel NAME that the cubin defines (the stand-in's fixed
 * sample distribution, fakecupti_pc_kernel); the module unloads and the
 * context goes after the work. The counts printed are of the iterations
 * actually run.
 *
 * Prints, once all threads are done:
 *   tid TID                                  one per worker thread
 *   kernel NAME launches C total_ns S        one per --kernel
 *   memcpy count C bytes B total_ns S
 *   memset count C bytes B total_ns S
 *   graph count C total_ns S
 *   sync count C
 *   nvtx ranges R marks M
 *   pc samples S                             with --pc: what the stand-in sampled
 *   cpu_ns_per_iteration X                   the workers' own CPU time
 *   done
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_KERNELS 16
#define MAX_THREADS 64

typedef int (*init_fn)(unsigned);
typedef int (*getfn_fn)(void **, void *, const char *);
typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			 unsigned, void *, void **, void **);
typedef int (*htod_fn)(unsigned long long, const void *, size_t);
typedef int (*dtoh_fn)(void *, unsigned long long, size_t);
typedef int (*memset_fn)(unsigned long long, unsigned char, size_t);
typedef int (*ssync_fn)(void *);
typedef int (*graph_fn)(void *, void *);
typedef void (*dur_fn)(uint64_t);
typedef int (*push_fn)(const char *, const char *);
typedef int (*pop_fn)(const char *);
typedef void (*mark_fn)(const char *, const char *);

static struct {
	init_fn init;
	getfn_fn getfn;
	launch_fn launch;
	htod_fn htod;
	dtoh_fn dtoh;
	memset_fn memset;
	ssync_fn ssync;
	graph_fn graph;
	dur_fn dur;
	push_fn push;
	pop_fn pop;
	mark_fn mark;
} cu;

static struct {
	const char *name;
	uint64_t ns;
	void *fn;
} kernels[MAX_KERNELS];
static int nkernels;
static int threads = 1, launches = 10, do_sync, nvtx, pause_ms, sleep_ms, wait_stdin, do_fork;
static uint64_t memcpy_bytes, memcpy_ns, memset_bytes, memset_ns, graph_ns;
static int do_memcpy, do_memset, do_graph;
static int until_eof;
static const char *first_subscriber;
static const char *pc_cubin;
static atomic_ullong pc_samples;
/* the stand-in's context and module hooks (fakecupti.h) */
static void (*fk_context)(void *, int);
static void (*fk_module)(void *, uint32_t, const void *, size_t, int);
static uint32_t (*fk_pc_kernel)(void *, const char *);
static void *cubin_bytes;
static size_t cubin_size;
#define PC_CTX ((void *)(uintptr_t)0xc0de)
static pid_t tids[MAX_THREADS];
static int done_iters[MAX_THREADS];
static uint64_t cpu_ns[MAX_THREADS];
static atomic_int stop;

static void *need(void *lib, const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "cuda_app: %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static void load(const char *path)
{
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "cuda_app: %s\n", dlerror());
		exit(1);
	}
	cu.init = (init_fn)need(lib, "cuInit");
	cu.getfn = (getfn_fn)need(lib, "cuModuleGetFunction");
	cu.launch = (launch_fn)need(lib, "cuLaunchKernel");
	cu.htod = (htod_fn)need(lib, "cuMemcpyHtoD_v2");
	cu.dtoh = (dtoh_fn)need(lib, "cuMemcpyDtoH_v2");
	cu.memset = (memset_fn)need(lib, "cuMemsetD8_v2");
	cu.ssync = (ssync_fn)need(lib, "cuStreamSynchronize");
	cu.graph = (graph_fn)need(lib, "cuGraphLaunch");
	/* the fake driver's test hooks */
	cu.dur = (dur_fn)need(lib, "fake_cuda_set_duration");
	cu.push = (push_fn)need(lib, "fake_nvtx_range_push");
	cu.pop = (pop_fn)need(lib, "fake_nvtx_range_pop");
	cu.mark = (mark_fn)need(lib, "fake_nvtx_mark");
}

static void CUPTIAPI other_tool_cb(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
				   const void *data)
{
}

/* Holds CUPTI as another tool would (its handle is never released). */
static void subscribe_first(const char *name)
{
	const char *path = getenv("GPUPROF_CUPTI_LIB");
	void *lib = dlopen(path && *path ? path : "libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	__typeof__(cuptiSubscribe_v2) *sub;
	CUpti_SubscriberParams p = {
		.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
		.subscriberName = name,
	};
	CUpti_SubscriberHandle h;

	if (!lib) {
		fprintf(stderr, "cuda_app: %s\n", dlerror());
		exit(1);
	}
	sub = (__typeof__(sub))need(lib, "cuptiSubscribe_v2");
	if (sub(&h, other_tool_cb, NULL, &p) != CUPTI_SUCCESS) {
		fprintf(stderr, "cuda_app: cuptiSubscribe_v2 failed\n");
		exit(1);
	}
}

static void pc_open(void)
{
	const char *path = getenv("GPUPROF_CUPTI_LIB");
	void *lib = dlopen(path && *path ? path : "libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	FILE *f = fopen(pc_cubin, "rb");

	if (!lib || !f) {
		fprintf(stderr, "cuda_app: --pc: no stand-in libcupti or no %s\n", pc_cubin);
		exit(1);
	}
	fk_context = (__typeof__(fk_context))need(lib, "fakecupti_context");
	fk_module = (__typeof__(fk_module))need(lib, "fakecupti_module");
	fk_pc_kernel = (__typeof__(fk_pc_kernel))need(lib, "fakecupti_pc_kernel");
	fseek(f, 0, SEEK_END);
	cubin_size = (size_t)ftell(f);
	rewind(f);
	cubin_bytes = malloc(cubin_size);
	if (!cubin_bytes || fread(cubin_bytes, 1, cubin_size, f) != cubin_size) {
		fprintf(stderr, "cuda_app: cannot read %s\n", pc_cubin);
		exit(1);
	}
	fclose(f);
	fk_context(PC_CTX, 1);
	fk_module(PC_CTX, 1, cubin_bytes, cubin_size, 1);
}

static void pc_close(void)
{
	fk_module(PC_CTX, 1, cubin_bytes, cubin_size, 0);
	fk_context(PC_CTX, 0);
	free(cubin_bytes);
}

static void iteration(int t, int i)
{
	void *stream = (void *)(uintptr_t)(t + 1);
	static char host[64];

	if (nvtx)
		cu.push("gpuprof_test", "iteration");
	for (int k = 0; k < nkernels; k++) {
		cu.dur(kernels[k].ns);
		cu.launch(kernels[k].fn, (unsigned)(i % 4) + 1, 1, 1, 128, 1, 1, 0, stream, NULL,
			  NULL);
		if (pc_cubin)
			pc_samples += fk_pc_kernel(PC_CTX, kernels[k].name);
	}
	if (do_memcpy) {
		cu.dur(memcpy_ns);
		cu.htod(0x1000, host, memcpy_bytes);
		cu.dtoh(host, 0x1000, memcpy_bytes);
	}
	if (do_memset) {
		cu.dur(memset_ns);
		cu.memset(0x2000, 0, memset_bytes);
	}
	if (do_graph) {
		cu.dur(graph_ns);
		cu.graph((void *)(uintptr_t)0x42, stream);
	}
	if (do_sync) {
		cu.dur(1000);
		cu.ssync(stream);
	}
	if (nvtx)
		cu.pop("gpuprof_test");
	if (pause_ms)
		usleep((useconds_t)pause_ms * 1000);
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;

	tids[t] = (pid_t)syscall(SYS_gettid);
	if (nvtx)
		cu.mark("gpuprof_test", "thread_start");
	struct timespec a, b;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (int i = 0; i < launches && !stop; i++) {
		iteration(t, i);
		done_iters[t]++;
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	cpu_ns[t] = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)b.tv_nsec -
		    (uint64_t)a.tv_nsec;
	return NULL;
}

static void parse_pair(const char *s, uint64_t *a, uint64_t *b)
{
	char *end;

	*a = strtoull(s, &end, 10);
	*b = *end == ':' ? strtoull(end + 1, NULL, 10) : 1000;
}

static void add_kernel(const char *arg)
{
	const char *colon = strrchr(arg, ':');
	char *name;

	if (nkernels == MAX_KERNELS || !colon || colon == arg) {
		fprintf(stderr, "cuda_app: bad --kernel %s\n", arg);
		exit(2);
	}
	name = strndup(arg, (size_t)(colon - arg));
	kernels[nkernels].name = name;
	kernels[nkernels].ns = strtoull(colon + 1, NULL, 10);
	nkernels++;
}

static const char *parse(int argc, char **argv)
{
	const char *lib = "libcuda.so.1";

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(a, "--cuda"))
			lib = v, i++;
		else if (!strcmp(a, "--threads"))
			threads = atoi(v), i++;
		else if (!strcmp(a, "--launches"))
			launches = atoi(v), i++;
		else if (!strcmp(a, "--kernel"))
			add_kernel(v), i++;
		else if (!strcmp(a, "--memcpy"))
			parse_pair(v, &memcpy_bytes, &memcpy_ns), do_memcpy = 1, i++;
		else if (!strcmp(a, "--memset"))
			parse_pair(v, &memset_bytes, &memset_ns), do_memset = 1, i++;
		else if (!strcmp(a, "--graph"))
			graph_ns = strtoull(v, NULL, 10), do_graph = 1, i++;
		else if (!strcmp(a, "--sync"))
			do_sync = 1;
		else if (!strcmp(a, "--nvtx"))
			nvtx = 1;
		else if (!strcmp(a, "--pause-ms"))
			pause_ms = atoi(v), i++;
		else if (!strcmp(a, "--sleep-ms"))
			sleep_ms = atoi(v), i++;
		else if (!strcmp(a, "--wait"))
			wait_stdin = 1;
		else if (!strcmp(a, "--subscribe-first"))
			first_subscriber = v, i++;
		else if (!strcmp(a, "--until-eof"))
			until_eof = 1;
		else if (!strcmp(a, "--fork"))
			do_fork = 1;
		else if (!strcmp(a, "--pc"))
			pc_cubin = v, i++;
		else {
			fprintf(stderr, "cuda_app: unknown option %s\n", a);
			exit(2);
		}
	}
	if (threads < 1 || threads > MAX_THREADS || launches < 0) {
		fprintf(stderr, "cuda_app: bad --threads or --launches\n");
		exit(2);
	}
	if (!nkernels)
		add_kernel("gpuprof_k_a:20000");
	return lib;
}

static void report(void)
{
	uint64_t n = 0;

	for (int t = 0; t < threads; t++)
		n += (uint64_t)done_iters[t];

	for (int t = 0; t < threads; t++)
		printf("tid %d\n", (int)tids[t]);
	for (int k = 0; k < nkernels; k++)
		printf("kernel %s launches %llu total_ns %llu\n", kernels[k].name,
		       (unsigned long long)n, (unsigned long long)(n * kernels[k].ns));
	printf("memcpy count %llu bytes %llu total_ns %llu\n",
	       (unsigned long long)(do_memcpy ? 2 * n : 0),
	       (unsigned long long)(do_memcpy ? 2 * n * memcpy_bytes : 0),
	       (unsigned long long)(do_memcpy ? 2 * n * memcpy_ns : 0));
	printf("memset count %llu bytes %llu total_ns %llu\n",
	       (unsigned long long)(do_memset ? n : 0),
	       (unsigned long long)(do_memset ? n * memset_bytes : 0),
	       (unsigned long long)(do_memset ? n * memset_ns : 0));
	printf("graph count %llu total_ns %llu\n", (unsigned long long)(do_graph ? n : 0),
	       (unsigned long long)(do_graph ? n * graph_ns : 0));
	printf("sync count %llu\n", (unsigned long long)(do_sync ? n : 0));
	printf("nvtx ranges %llu marks %d\n", (unsigned long long)(nvtx ? n : 0),
	       nvtx ? threads : 0);
	uint64_t cpu = 0;

	for (int t = 0; t < threads; t++)
		cpu += cpu_ns[t];
	if (pc_cubin)
		printf("pc samples %llu\n", (unsigned long long)pc_samples);
	printf("cpu_ns_per_iteration %.1f\n", n ? (double)cpu / (double)n : 0.0);
	printf("done\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	char line[16];

	load(parse(argc, argv));
	if (first_subscriber)
		subscribe_first(first_subscriber);
	if (cu.init(0)) {
		fprintf(stderr, "cuda_app: cuInit failed\n");
		return 1;
	}
	for (int k = 0; k < nkernels; k++)
		cu.getfn(&kernels[k].fn, NULL, kernels[k].name);
	if (pc_cubin)
		pc_open();
	if (wait_stdin) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	for (int t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	if (until_eof) {
		while (fgets(line, sizeof(line), stdin))
			;
		stop = 1;
	}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	if (pc_cubin)
		pc_close();
	report();
	if (do_fork) {
		pid_t pid = fork();

		if (pid == 0) {
			/* the child inherits no working sender: this must not hang or crash */
			cu.launch(kernels[0].fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	if (sleep_ms)
		usleep((useconds_t)sleep_ms * 1000);
	return 0;
}
