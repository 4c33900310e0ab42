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
 *            [--events NAME:NS]
 *            [--nvtx] [--pause-ms MS] [--sleep-ms MS] [--wait] [--name-early]
 *            [--until-eof]
 *            [--fork] [--subscribe-first NAME] [--pc CUBIN] [--pc-keep] [--load LIB[@N]]
 *            [--kineto-after N] [--kineto-kernels K] [--kineto-teardown]
 *            [--probe-subscribe] [--probe-on-line] [--kineto-on-line]
 *
 * Each of T threads (default 1) runs N iterations (default 10); one
 * iteration launches every --kernel once (default gpuprof_k_a:20000) on
 * the thread's own stream, with the duration given (fake_cuda_set_duration),
 * then one HtoD copy and one DtoH copy of BYTES (--memcpy), one memset of
 * BYTES (--memset), one graph launch (--graph), one cuStreamSynchronize
 * (--sync); with --events, one event recorded on the thread's stream
 * (cudaEventRecord) that a second stream of the thread waits on
 * (cudaStreamWaitEvent) before kernel NAME (NS long) runs there, then an
 * event recorded after it on that second stream and waited for
 * (cudaEventSynchronize), all through the fake driver's runtime calls
 * (so NAME starts when the first stream's kernels end); with --nvtx the iteration is an NVTX range "iteration" in
 * domain "gpuprof_test" and each thread makes one mark "thread_start".
 * --pause-ms sleeps between iterations, --sleep-ms before exiting, --wait
 * prints "ready PID" and waits for a line on stdin before the work (the
 * kernels are named after that line, once probes had time to attach;
 * with --name-early they are named before "ready", the way a process that
 * got its function handles before a daemon attached did),
 * --until-eof stops the threads after their current iteration once stdin
 * reaches its end (N stays the most), --fork forks a child after the work
 * that launches once and exits. --subscribe-first subscribes to CUPTI
 * (GPUPROF_CUPTI_LIB, else libcupti.so.13) as NAME before cuInit, the way
 * a profiler that started first holds it. --pc plays a context that loads
 * the module CUBIN (a real cubin) after cuInit, and PC sampling of every
 * launch of a --kernel NAME that the cubin defines (the stand-in's fixed
 * sample distribution, fakecupti_pc_kernel); the module unloads and the
 * context goes after the work (with --pc-keep they stay until the process
 * exits, as in a program that never destroys its context). The counts printed are of the iterations
 * actually run.
 *
 * A profiler that starts later, the way PyTorch's (Kineto) does, for tests
 * of two CUPTI users in one process: --load dlopens LIB (RTLD_GLOBAL)
 * before cuInit, or with @N before thread 0's Nth iteration ("import
 * torch"). --kineto-after N: before thread 0's Nth iteration, Kineto's
 * calls in Kineto's order: cuptiSubscribe once (its callback API; a
 * failure is only remembered), cuptiActivityRegisterTimestampCallback
 * with its own clock (Kineto's approximate TSC clock on CUDA >= 11.6),
 * cuptiActivityRegisterCallbacks with its own
 * buffer functions, cuptiActivityEnable(CONCURRENT_KERNEL), then K
 * launches of kernel "kineto_k" (--kineto-kernels, default 10),
 * cuptiActivityFlushAll(FORCED), cuptiActivityDisable(CONCURRENT_KERNEL);
 * with --kineto-teardown (Kineto's TEARDOWN_CUPTI=1) it then subscribes
 * again if it had failed, enables the driver domain and, at the exit
 * callback of the next driver call, unsubscribes and calls cuptiFinalize
 * (skipped, like Kineto, when that subscription fails too). Like Kineto
 * its buffer-complete function ignores a buffer it did not allocate.
 * --probe-subscribe: after the work, tries cuptiSubscribe once (and lets
 * go again) to show whether CUPTI is free. --probe-on-line: after the
 * work and its report, prints "idle" and then, for each line read on
 * stdin, makes no CUDA call but tries cuptiSubscribe (as a profiler
 * started in an idle process would) and prints "probe subscribe R",
 * until stdin ends. --kineto-on-line: while the threads work, each line
 * read on stdin starts Kineto's calls (as --kineto-after) from the main
 * thread, but only once its cuptiSubscribe succeeds (a profiler started
 * while the subscription is free, e.g. between the duty windows of
 * GPUPROF_CUPTI_IDLE=unsubscribe); a line whose subscribe fails prints
 * "kineto try R" and changes nothing; the threads stop after their
 * current iteration once stdin ends.
 *
 * Prints, once all threads are done:
 *   tid TID                                  one per worker thread
 *   kernel NAME launches C total_ns S        one per --kernel
 *   memcpy count C bytes B total_ns S
 *   memset count C bytes B total_ns S
 *   graph count C total_ns S
 *   sync count C
 *   events records R waits W synchronizes S    with --events (NAME is
 *                                            one more "kernel" line)
 *   nvtx ranges R marks M
 *   pc samples S                             with --pc: what the stand-in sampled
 *   cpu_ns_per_iteration X                   the workers' own CPU time
 *   kineto subscribe R timestamp S kernels K other_kernels O unknown_buffers U teardown T
 *                                            with --kineto-after: R its
 *                                            cuptiSubscribe's result, S its
 *                                            timestamp callback's, K / O
 *                                            kernel records named kineto_k /
 *                                            other in its own buffers, T
 *                                            none, done or skipped
 *   probe subscribe R                        with --probe-subscribe
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
typedef int (*evcreate_fn)(void **);
typedef int (*evrecord_fn)(void *, void *);
typedef int (*waitev_fn)(void *, void *, unsigned);
typedef int (*evsync_fn)(void *);

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
	evcreate_fn ev_create;
	evrecord_fn ev_record;
	waitev_fn wait_event;
	evsync_fn ev_sync;
} cu;

static struct {
	const char *name;
	uint64_t ns;
	void *fn;
} kernels[MAX_KERNELS];
static int nkernels;
static int threads = 1, launches = 10, do_sync, nvtx, pause_ms, sleep_ms, wait_stdin, do_fork;
static int name_early;
static uint64_t memcpy_bytes, memcpy_ns, memset_bytes, memset_ns, graph_ns;
static int do_memcpy, do_memset, do_graph;
static int until_eof;
/* --events: the kernel on each thread's second stream, the events */
static int ev_kernel = -1;
static void *ev_main[MAX_THREADS], *ev_side[MAX_THREADS];
static const char *first_subscriber;
static const char *pc_cubin;
static int pc_keep;
static atomic_ullong pc_samples;
/* the stand-in's context and module hooks (fakecupti.h) */
static void (*fk_context)(void *, int);
static void (*fk_module)(void *, uint32_t, const void *, size_t, int);
static uint32_t (*fk_pc_kernel)(void *, const char *);
static void *cubin_bytes;
static size_t cubin_size;
#define PC_CTX ((void *)(uintptr_t)0xc0de)
static const char *load_lib;
static int load_at = -1, kineto_after = -1, kineto_kernels = 10, kineto_teardown, probe;
static int kineto_on_line;
static int probe_on_line;
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
	if (ev_kernel >= 0) {
		cu.ev_create = (evcreate_fn)need(lib, "cudaEventCreate");
		cu.ev_record = (evrecord_fn)need(lib, "cudaEventRecord");
		cu.wait_event = (waitev_fn)need(lib, "cudaStreamWaitEvent");
		cu.ev_sync = (evsync_fn)need(lib, "cudaEventSynchronize");
	}
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

/* ------------------------------------------------------------ a later profiler */

static struct {
	__typeof__(cuptiSubscribe) *subscribe;
	__typeof__(cuptiUnsubscribe) *unsubscribe;
	__typeof__(cuptiEnableDomain) *enable_domain;
	__typeof__(cuptiActivityRegisterCallbacks) *reg;
	__typeof__(cuptiActivityRegisterTimestampCallback) *reg_ts;
	__typeof__(cuptiActivityEnable) *enable;
	__typeof__(cuptiActivityDisable) *disable;
	__typeof__(cuptiActivityFlushAll) *flush;
	__typeof__(cuptiActivityGetNextRecord) *next;
	__typeof__(cuptiFinalize) *finalize;
} kc;

#define KBUF_N 64
#define KBUF_SIZE (64 * 1024)
static pthread_mutex_t kmu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *kbufs[KBUF_N];
static int k_sub_result = -1, k_ts_result = -1, k_kernels, k_other, k_unknown;
static const char *k_teardown = "none";
static CUpti_SubscriberHandle k_sub;
static atomic_int k_finalize_now;

static void *cupti_lib(void)
{
	const char *path = getenv("GPUPROF_CUPTI_LIB");
	void *lib = dlopen(path && *path ? path : "libcupti.so.13", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "cuda_app: %s\n", dlerror());
		exit(1);
	}
	return lib;
}

static void CUPTIAPI k_request(uint8_t **buf, size_t *size, size_t *max)
{
	/* Kineto's buffers are zero-initialized vectors */
	uint8_t *b = aligned_alloc(8, KBUF_SIZE);

	if (b)
		memset(b, 0, KBUF_SIZE);

	pthread_mutex_lock(&kmu);
	for (int i = 0; b && i < KBUF_N; i++) {
		if (!kbufs[i]) {
			kbufs[i] = b;
			pthread_mutex_unlock(&kmu);
			*buf = b;
			*size = KBUF_SIZE;
			*max = 0;
			return;
		}
	}
	pthread_mutex_unlock(&kmu);
	free(b);
	*buf = NULL;
	*size = 0;
	*max = 0;
}

static void CUPTIAPI k_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				size_t valid)
{
	CUpti_Activity *rec = NULL;
	int i;

	pthread_mutex_lock(&kmu);
	for (i = 0; i < KBUF_N && kbufs[i] != buf; i++)
		;
	if (!buf || i == KBUF_N) {
		k_unknown++; /* Kineto logs "unknown buffer" and returns */
		pthread_mutex_unlock(&kmu);
		return;
	}
	kbufs[i] = NULL;
	while (kc.next(buf, valid, &rec) == CUPTI_SUCCESS) {
		const CUpti_ActivityKernel10 *k = (const void *)rec;

		if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
			continue;
		if (k->name && !strcmp(k->name, "kineto_k"))
			k_kernels++;
		else
			k_other++;
	}
	pthread_mutex_unlock(&kmu);
	free(buf);
}

static void CUPTIAPI k_callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
				const void *data)
{
	const CUpti_CallbackData *cd = data;

	/* Kineto's teardown: detach at an exit site, as CUPTI requires */
	if (d == CUPTI_CB_DOMAIN_DRIVER_API && cd && cd->callbackSite == CUPTI_API_EXIT &&
	    atomic_exchange(&k_finalize_now, 0)) {
		kc.unsubscribe(k_sub);
		kc.finalize();
		k_teardown = "done";
	}
}

static uint64_t CUPTIAPI k_clock(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* only_if_subscribed: give up (nothing else touched) when its
 * cuptiSubscribe fails; returns its result */
static int kineto_like(int only_if_subscribed)
{
	void *lib = cupti_lib();
	static void *fn;

	kc.subscribe = (__typeof__(kc.subscribe))need(lib, "cuptiSubscribe");
	kc.unsubscribe = (__typeof__(kc.unsubscribe))need(lib, "cuptiUnsubscribe");
	kc.enable_domain = (__typeof__(kc.enable_domain))need(lib, "cuptiEnableDomain");
	kc.reg = (__typeof__(kc.reg))need(lib, "cuptiActivityRegisterCallbacks");
	kc.reg_ts = (__typeof__(kc.reg_ts))need(lib, "cuptiActivityRegisterTimestampCallback");
	kc.enable = (__typeof__(kc.enable))need(lib, "cuptiActivityEnable");
	kc.disable = (__typeof__(kc.disable))need(lib, "cuptiActivityDisable");
	kc.flush = (__typeof__(kc.flush))need(lib, "cuptiActivityFlushAll");
	kc.next = (__typeof__(kc.next))need(lib, "cuptiActivityGetNextRecord");
	kc.finalize = (__typeof__(kc.finalize))need(lib, "cuptiFinalize");
	/* its callback API: subscribed once, never retried (until teardown) */
	k_sub_result = (int)kc.subscribe(&k_sub, k_callback, NULL);
	if (only_if_subscribed && k_sub_result != CUPTI_SUCCESS)
		return k_sub_result;
	/* trace start */
	k_ts_result = (int)kc.reg_ts(k_clock);
	kc.reg(k_request, k_complete);
	kc.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (!fn)
		cu.getfn(&fn, NULL, "kineto_k");
	for (int i = 0; i < kineto_kernels; i++) {
		cu.dur(5000);
		cu.launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
	}
	/* trace stop */
	kc.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	kc.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (!kineto_teardown)
		return k_sub_result;
	if (k_sub_result != CUPTI_SUCCESS) {
		k_sub_result = (int)kc.subscribe(&k_sub, k_callback, NULL);
		if (k_sub_result != CUPTI_SUCCESS) {
			k_teardown = "skipped";
			return k_sub_result;
		}
	}
	kc.enable_domain(1, k_sub, CUPTI_CB_DOMAIN_DRIVER_API);
	kc.flush(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	atomic_store(&k_finalize_now, 1);
	cu.ssync(NULL); /* the next driver call's exit callback finalizes */
	return k_sub_result;
}

static int probe_subscribe(void)
{
	__typeof__(cuptiSubscribe) *sub = (__typeof__(sub))need(cupti_lib(), "cuptiSubscribe");
	__typeof__(cuptiUnsubscribe) *unsub =
		(__typeof__(unsub))need(cupti_lib(), "cuptiUnsubscribe");
	CUpti_SubscriberHandle h;
	CUptiResult r = sub(&h, other_tool_cb, NULL);

	if (r == CUPTI_SUCCESS)
		unsub(h);
	return (int)r;
}

static void load_now(void)
{
	if (!dlopen(load_lib, RTLD_NOW | RTLD_GLOBAL)) {
		fprintf(stderr, "cuda_app: %s\n", dlerror());
		exit(1);
	}
}

static void iteration(int t, int i)
{
	void *stream = (void *)(uintptr_t)(t + 1);
	static char host[64];

	if (nvtx)
		cu.push("gpuprof_test", "iteration");
	for (int k = 0; k < nkernels; k++) {
		if (k == ev_kernel)
			continue; /* on the second stream, below */
		cu.dur(kernels[k].ns);
		cu.launch(kernels[k].fn, (unsigned)(i % 4) + 1, 1, 1, 128, 1, 1, 0, stream, NULL,
			  NULL);
		if (pc_cubin)
			pc_samples += fk_pc_kernel(PC_CTX, kernels[k].name);
	}
	if (ev_kernel >= 0) {
		void *side = (void *)(uintptr_t)(100 + t);

		cu.dur(1000);
		cu.ev_record(ev_main[t], stream);
		cu.wait_event(side, ev_main[t], 0);
		cu.dur(kernels[ev_kernel].ns);
		cu.launch(kernels[ev_kernel].fn, 1, 1, 1, 128, 1, 1, 0, side, NULL, NULL);
		cu.dur(1000);
		cu.ev_record(ev_side[t], side);
		cu.ev_sync(ev_side[t]);
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
		if (t == 0 && load_lib && i == load_at)
			load_now();
		if (t == 0 && i == kineto_after)
			kineto_like(0);
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
		else if (!strcmp(a, "--name-early"))
			name_early = 1;
		else if (!strcmp(a, "--subscribe-first"))
			first_subscriber = v, i++;
		else if (!strcmp(a, "--load"))
			load_lib = v, i++;
		else if (!strcmp(a, "--kineto-after"))
			kineto_after = atoi(v), i++;
		else if (!strcmp(a, "--kineto-kernels"))
			kineto_kernels = atoi(v), i++;
		else if (!strcmp(a, "--kineto-teardown"))
			kineto_teardown = 1;
		else if (!strcmp(a, "--probe-subscribe"))
			probe = 1;
		else if (!strcmp(a, "--probe-on-line"))
			probe_on_line = 1;
		else if (!strcmp(a, "--kineto-on-line"))
			kineto_on_line = 1;
		else if (!strcmp(a, "--until-eof"))
			until_eof = 1;
		else if (!strcmp(a, "--fork"))
			do_fork = 1;
		else if (!strcmp(a, "--pc"))
			pc_cubin = v, i++;
		else if (!strcmp(a, "--pc-keep"))
			pc_keep = 1;
		else if (!strcmp(a, "--events"))
			add_kernel(v), ev_kernel = nkernels - 1, i++;
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
	if (load_lib && strchr(load_lib, '@')) {
		char *at = strrchr(load_lib, '@');

		load_at = atoi(at + 1);
		load_lib = strndup(load_lib, (size_t)(at - load_lib));
	}
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
	if (ev_kernel >= 0)
		printf("events records %llu waits %llu synchronizes %llu\n",
		       (unsigned long long)(2 * n), (unsigned long long)n, (unsigned long long)n);
	printf("nvtx ranges %llu marks %d\n", (unsigned long long)(nvtx ? n : 0),
	       nvtx ? threads : 0);
	uint64_t cpu = 0;

	for (int t = 0; t < threads; t++)
		cpu += cpu_ns[t];
	if (pc_cubin)
		printf("pc samples %llu\n", (unsigned long long)pc_samples);
	printf("cpu_ns_per_iteration %.1f\n", n ? (double)cpu / (double)n : 0.0);
	if (kineto_after >= 0 || kineto_on_line) {
		pthread_mutex_lock(&kmu);
		printf("kineto subscribe %d timestamp %d kernels %d other_kernels %d unknown_buffers %d "
		       "teardown %s\n",
		       k_sub_result, k_ts_result, k_kernels, k_other, k_unknown, k_teardown);
		pthread_mutex_unlock(&kmu);
	}
	if (probe)
		printf("probe subscribe %d\n", probe_subscribe());
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
	if (load_lib && load_at < 0)
		load_now();
	if (cu.init(0)) {
		fprintf(stderr, "cuda_app: cuInit failed\n");
		return 1;
	}
	for (int t = 0; ev_kernel >= 0 && t < threads; t++)
		if (cu.ev_create(&ev_main[t]) || cu.ev_create(&ev_side[t])) {
			fprintf(stderr, "cuda_app: cudaEventCreate failed\n");
			return 1;
		}
	if (pc_cubin)
		pc_open();
	for (int k = 0; name_early && k < nkernels; k++)
		cu.getfn(&kernels[k].fn, NULL, kernels[k].name);
	if (wait_stdin) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	/* named after the go line: a daemon's launch probes, attached while
	 * the program waited, see the names */
	for (int k = 0; !name_early && k < nkernels; k++)
		cu.getfn(&kernels[k].fn, NULL, kernels[k].name);
	for (int t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
	if (until_eof || kineto_on_line) {
		int held = 0;

		while (fgets(line, sizeof(line), stdin)) {
			if (!kineto_on_line || held)
				continue;
			held = kineto_like(1) == CUPTI_SUCCESS;
			printf("kineto try %d\n", k_sub_result);
			fflush(stdout);
		}
		stop = 1;
	}
	for (int t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	if (pc_cubin && !pc_keep)
		pc_close();
	report();
	if (probe_on_line) {
		printf("idle\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			printf("probe subscribe %d\n", probe_subscribe());
			fflush(stdout);
		}
	}
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
