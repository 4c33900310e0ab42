// SPDX-License-Identifier: MIT
/*
 * A fake CUDA driver (libcuda.so.1): the real exported entry points with
 * their real signatures (cuda.h), doing no GPU work.
 *
 * Like the real driver, cuInit loads the library named by
 * CUDA_INJECTION64_PATH once and calls its InitializeInjection. When the
 * process then has the stand-in libcupti (tests/cupti/fake_cupti.c)
 * loaded, every call below plays to it what the real driver plays to
 * CUPTI: ENTER and EXIT callbacks on the calling thread with a fresh
 * correlation id, then an activity record for the work, whose duration
 * the test chooses with fake_cuda_set_duration() (this thread's next
 * operations; 1000 ns by default). Without injection nothing changes.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../cupti/fakecupti.h"

typedef int CUresult;
typedef struct CUmod_st *CUmodule;
typedef struct CUlib_st *CUlibrary;
typedef struct fake_fn *CUfunction;
typedef struct fake_fn *CUkernel;
typedef struct CUstream_st *CUstream;
typedef struct CUgraphExec_st *CUgraphExec;
typedef unsigned long long CUdeviceptr;

typedef struct {
	unsigned gridDimX, gridDimY, gridDimZ;
	unsigned blockDimX, blockDimY, blockDimZ;
	unsigned sharedMemBytes;
	CUstream hStream;
	void *attrs;
	unsigned numAttrs;
} CUlaunchConfig;

struct fake_fn {
	char name[128];
};

#define API __attribute__((visibility("default"), noinline))

volatile uint64_t fake_cu_launches, fake_cu_sum;

/* ---------------------------------------------------------------- injection */

static struct {
	fakecupti_call_fn enter, exit;
	__typeof__(fakecupti_kernel) *kernel;
	__typeof__(fakecupti_memcpy) *memcpy;
	__typeof__(fakecupti_memset) *memset;
	__typeof__(fakecupti_sync) *sync;
	__typeof__(fakecupti_graph) *graph;
	__typeof__(fakecupti_marker) *marker;
	__typeof__(fakecupti_cuda_event) *cuda_event; /* optional: an older stand-in */
	__typeof__(fakecupti_sync_event) *sync_event;
} cupti;
static int cupti_on;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread uint64_t next_dur = 1000;

static void find_cupti(void)
{
	const char *env = getenv("GPUPROF_CUPTI_LIB");
	void *h = dlopen("libcupti.so.13", RTLD_NOLOAD | RTLD_NOW);

	if (!h && env)
		h = dlopen(env, RTLD_NOLOAD | RTLD_NOW);
	if (!h)
		return;
	cupti.enter = (fakecupti_call_fn)dlsym(h, "fakecupti_api_enter");
	cupti.exit = (fakecupti_call_fn)dlsym(h, "fakecupti_api_exit");
	cupti.kernel = (__typeof__(cupti.kernel))dlsym(h, "fakecupti_kernel");
	cupti.memcpy = (__typeof__(cupti.memcpy))dlsym(h, "fakecupti_memcpy");
	cupti.memset = (__typeof__(cupti.memset))dlsym(h, "fakecupti_memset");
	cupti.sync = (__typeof__(cupti.sync))dlsym(h, "fakecupti_sync");
	cupti.graph = (__typeof__(cupti.graph))dlsym(h, "fakecupti_graph");
	cupti.marker = (__typeof__(cupti.marker))dlsym(h, "fakecupti_marker");
	cupti.cuda_event = (__typeof__(cupti.cuda_event))dlsym(h, "fakecupti_cuda_event");
	cupti.sync_event = (__typeof__(cupti.sync_event))dlsym(h, "fakecupti_sync_event");
	/* the real libcupti has none of these: then the driver plays nothing */
	cupti_on = cupti.enter && cupti.exit && cupti.kernel && cupti.memcpy && cupti.memset &&
		   cupti.sync && cupti.graph && cupti.marker;
	dlclose(h); /* NOLOAD took a reference: the library stays loaded */
}

static void inject(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	int (*init)(void);
	void *h;

	if (!path || !*path)
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "fake libcuda: %s\n", dlerror());
		return;
	}
	init = (int (*)(void))dlsym(h, "InitializeInjection");
	if (init)
		init();
	find_cupti();
}

API CUresult cuInit(unsigned flags)
{
	(void)flags;
	pthread_once(&init_once, inject);
	return 0;
}

API CUresult cuDriverGetVersion(int *v)
{
	if (!v)
		return 1;
	*v = 13000;
	return 0;
}

API void fake_cuda_set_duration(uint64_t ns)
{
	next_dur = ns;
}

static void call_enter(struct fakecupti_call *c, uint32_t cbid, const char *name)
{
	c->cbid = cbid;
	c->domain = 0;
	c->name = name;
	c->corr = 0;
	c->result = 0;
	if (cupti_on)
		cupti.enter(c);
}

static void call_exit(struct fakecupti_call *c, CUresult r)
{
	c->result = r;
	if (cupti_on)
		cupti.exit(c);
}

static uint32_t stream_id(CUstream s)
{
	return s ? (uint32_t)((uintptr_t)s & 0xffff) : 7; /* 7: CUPTI's legacy default stream */
}

static CUresult new_fn(struct fake_fn **out, const char *name)
{
	struct fake_fn *f;

	if (!out || !name)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	f = calloc(1, sizeof(*f));
	if (!f)
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	strncpy(f->name, name, sizeof(f->name) - 1);
	*out = f;
	return 0;
}

API CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	(void)hmod;
	return new_fn(hfunc, name);
}

API CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	(void)library;
	return new_fn(pKernel, name);
}

API CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	if (!kernel)
		return 1;
	return new_fn(pFunc, kernel->name);
}

static CUresult launch_work(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, CUstream s)
{
	if (!f)
		return 400; /* CUDA_ERROR_INVALID_HANDLE */
	/* atomic: the CUPTI tests launch from several threads */
	__atomic_fetch_add(&fake_cu_launches, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&fake_cu_sum, (uint64_t)gx * gy * gz * bx * by * bz + (uintptr_t)s,
			   __ATOMIC_RELAXED);
	return 0;
}

static CUresult launch_as(uint32_t cbid, const char *api, CUfunction f, unsigned gx, unsigned gy,
			  unsigned gz, unsigned bx, unsigned by, unsigned bz, CUstream s)
{
	struct fakecupti_call c;
	CUresult r;

	if (!cupti_on)
		return launch_work(f, gx, gy, gz, bx, by, bz, s);
	call_enter(&c, cbid, api);
	r = launch_work(f, gx, gy, gz, bx, by, bz, s);
	call_exit(&c, r);
	if (!r) {
		uint32_t grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};

		cupti.kernel(c.corr, f->name, next_dur, grid, block, stream_id(s));
	}
	return r;
}

API CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY,
			    unsigned gridDimZ, unsigned blockDimX, unsigned blockDimY,
			    unsigned blockDimZ, unsigned sharedMemBytes, CUstream hStream,
			    void **kernelParams, void **extra)
{
	(void)sharedMemBytes, (void)kernelParams, (void)extra;
	return launch_as(FAKE_CBID_cuLaunchKernel, __func__, f, gridDimX, gridDimY, gridDimZ,
			 blockDimX, blockDimY, blockDimZ, hStream);
}

API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gridDimX, unsigned gridDimY,
				 unsigned gridDimZ, unsigned blockDimX, unsigned blockDimY,
				 unsigned blockDimZ, unsigned sharedMemBytes, CUstream hStream,
				 void **kernelParams, void **extra)
{
	(void)sharedMemBytes, (void)kernelParams, (void)extra;
	return launch_as(FAKE_CBID_cuLaunchKernel_ptsz, __func__, f, gridDimX, gridDimY, gridDimZ,
			 blockDimX, blockDimY, blockDimZ, hStream);
}

API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY,
				       unsigned gridDimZ, unsigned blockDimX, unsigned blockDimY,
				       unsigned blockDimZ, unsigned sharedMemBytes,
				       CUstream hStream, void **kernelParams)
{
	(void)sharedMemBytes, (void)kernelParams;
	return launch_as(FAKE_CBID_cuLaunchCooperativeKernel, __func__, f, gridDimX, gridDimY,
			 gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			      void **extra)
{
	(void)kernelParams, (void)extra;
	if (!config)
		return 1;
	return launch_as(FAKE_CBID_cuLaunchKernelEx, __func__, f, config->gridDimX, config->gridDimY,
			 config->gridDimZ, config->blockDimX, config->blockDimY, config->blockDimZ,
			 config->hStream);
}

/* ---------------------------------------------------------------- copies, sync, graphs */

static CUresult copy(uint32_t cbid, const char *api, uint8_t kind, size_t n, CUstream s, int async)
{
	struct fakecupti_call c;

	call_enter(&c, cbid, api);
	call_exit(&c, 0);
	if (cupti_on)
		cupti.memcpy(c.corr, kind, n, next_dur, stream_id(s), async);
	return 0;
}

/* copy kinds: CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD) */
API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	(void)dst, (void)src;
	return copy(FAKE_CBID_cuMemcpyHtoD_v2, __func__, 1, n, NULL, 0);
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	(void)dst, (void)src;
	return copy(FAKE_CBID_cuMemcpyHtoDAsync_v2, __func__, 1, n, s, 1);
}

API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	(void)dst, (void)src;
	return copy(FAKE_CBID_cuMemcpyDtoH_v2, __func__, 2, n, NULL, 0);
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	(void)dst, (void)src;
	return copy(FAKE_CBID_cuMemcpyDtoD_v2, __func__, 8, n, NULL, 0);
}

static CUresult set(uint32_t cbid, const char *api, uint32_t value, size_t bytes)
{
	struct fakecupti_call c;

	call_enter(&c, cbid, api);
	call_exit(&c, 0);
	if (cupti_on)
		cupti.memset(c.corr, value, bytes, next_dur, stream_id(NULL));
	return 0;
}

API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n)
{
	(void)dst;
	return set(FAKE_CBID_cuMemsetD8_v2, __func__, uc, n);
}

API CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int ui, size_t n)
{
	(void)dst;
	return set(FAKE_CBID_cuMemsetD32_v2, __func__, ui, n * 4);
}

/* sync types: CUpti_ActivitySynchronizationType (3 stream, 4 context) */
static CUresult sync_call(uint32_t cbid, const char *api, uint32_t type, CUstream s)
{
	struct fakecupti_call c;

	call_enter(&c, cbid, api);
	call_exit(&c, 0);
	if (cupti_on)
		cupti.sync(c.corr, type, stream_id(s), next_dur);
	return 0;
}

API CUresult cuStreamSynchronize(CUstream s)
{
	return sync_call(FAKE_CBID_cuStreamSynchronize, __func__, 3, s);
}

API CUresult cuCtxSynchronize(void)
{
	return sync_call(FAKE_CBID_cuCtxSynchronize, __func__, 4, NULL);
}

API CUresult cuGraphLaunch(CUgraphExec g, CUstream s)
{
	struct fakecupti_call c;

	if (!g)
		return 400;
	call_enter(&c, FAKE_CBID_cuGraphLaunch, __func__);
	call_exit(&c, 0);
	if (cupti_on)
		cupti.graph(c.corr, (uint32_t)((uintptr_t)g & 0xffffffff), stream_id(s), next_dur);
	return 0;
}

/* ---------------------------------------------------------------- events */

/*
 * CUDA events through the runtime's calls, played as libcudart makes them:
 * the runtime call's callbacks (RUNTIME domain) around the driver call it
 * makes, both with one correlation id, and the activity CUPTI records for
 * it (a CUDA_EVENT record per cudaEventRecord, a SYNCHRONIZATION record
 * per wait on an event). Events are numbered from 1 in creation order.
 */
typedef struct fake_event *cudaEvent_t;
struct fake_event {
	uint32_t id;
};
static uint32_t next_event = 1;

API int cudaEventCreate(cudaEvent_t *ev)
{
	if (!ev || !(*ev = calloc(1, sizeof(**ev))))
		return 1; /* cudaErrorInvalidValue */
	(*ev)->id = __atomic_fetch_add(&next_event, 1, __ATOMIC_RELAXED);
	return 0;
}

/* A runtime call rt around the driver call drv it makes: ENTER of both
 * (one correlation id) ... */
static void runtime_enter(struct fakecupti_call *rt, uint32_t rt_cbid, const char *rt_name,
			  struct fakecupti_call *drv, uint32_t cbid, const char *name)
{
	*rt = (struct fakecupti_call){.cbid = rt_cbid,
				      .domain = FAKE_DOMAIN_RUNTIME,
				      .name = rt_name};
	*drv = (struct fakecupti_call){.cbid = cbid, .name = name};
	if (cupti_on)
		cupti.enter(rt);
	drv->corr = rt->corr; /* 0 without CUPTI: nothing is recorded then */
	if (cupti_on)
		cupti.enter(drv);
}

/* ... and EXIT of both, innermost first. */
static void runtime_exit(struct fakecupti_call *rt, struct fakecupti_call *drv)
{
	call_exit(drv, 0);
	call_exit(rt, 0);
}

API int cudaEventRecord(cudaEvent_t ev, CUstream s)
{
	struct fakecupti_call rt, drv;

	if (!ev)
		return 400; /* cudaErrorInvalidResourceHandle */
	runtime_enter(&rt, FAKE_RT_CBID_cudaEventRecord_v3020, "cudaEventRecord", &drv,
		      FAKE_CBID_cuEventRecord, "cuEventRecord");
	runtime_exit(&rt, &drv);
	if (cupti_on && cupti.cuda_event)
		cupti.cuda_event(rt.corr, ev->id, stream_id(s));
	return 0;
}

/* The sync record is made inside the call: an event synchronize returns
 * only once the event completed (the stand-in waits for it). */
static int event_wait(uint32_t rt_cbid, const char *rt_name, uint32_t cbid, const char *name,
		      uint32_t type, cudaEvent_t ev, CUstream s)
{
	struct fakecupti_call rt, drv;

	if (!ev)
		return 400;
	runtime_enter(&rt, rt_cbid, rt_name, &drv, cbid, name);
	if (cupti_on && cupti.sync_event)
		cupti.sync_event(rt.corr, type, ev->id, stream_id(s), next_dur);
	runtime_exit(&rt, &drv);
	return 0;
}

/* sync types: CUpti_ActivitySynchronizationType (1 event, 2 stream wait) */
API int cudaStreamWaitEvent(CUstream s, cudaEvent_t ev, unsigned flags)
{
	(void)flags;
	return event_wait(FAKE_RT_CBID_cudaStreamWaitEvent_v3020, "cudaStreamWaitEvent",
			  FAKE_CBID_cuStreamWaitEvent, "cuStreamWaitEvent", 2, ev, s);
}

API int cudaEventSynchronize(cudaEvent_t ev)
{
	return event_wait(FAKE_RT_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize",
			  FAKE_CBID_cuEventSynchronize, "cuEventSynchronize", 1, ev, NULL);
}

/* ---------------------------------------------------------------- NVTX */

/*
 * NVTX is not the driver's, but a test program needs ranges that reach
 * CUPTI the way NVTX_INJECTION64_PATH=libcupti routes them (MARKER
 * records): push/pop per thread, nested, and instant marks.
 */
static uint32_t next_marker = 1;
static __thread uint32_t range_stack[64];
static __thread unsigned range_depth;

static uint32_t gettid_u32(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

API int fake_nvtx_range_push(const char *domain, const char *name)
{
	uint32_t id = __atomic_fetch_add(&next_marker, 1, __ATOMIC_RELAXED);

	if (range_depth < 64)
		range_stack[range_depth] = id;
	range_depth++;
	if (cupti_on)
		cupti.marker(2, id, name, domain, gettid_u32());
	return (int)range_depth - 1;
}

API int fake_nvtx_range_pop(const char *domain)
{
	if (!range_depth)
		return -1;
	range_depth--;
	if (cupti_on && range_depth < 64)
		cupti.marker(4, range_stack[range_depth], NULL, domain, gettid_u32());
	return (int)range_depth;
}

API void fake_nvtx_mark(const char *domain, const char *name)
{
	uint32_t id = __atomic_fetch_add(&next_marker, 1, __ATOMIC_RELAXED);

	if (cupti_on)
		cupti.marker(1, id, name, domain, gettid_u32());
}
