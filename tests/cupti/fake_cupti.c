// SPDX-License-Identifier: MIT
/*
 * A stand-in libcupti.so.13 for GPU-free tests, built on the real CUPTI
 * 13 header types: the entry points libgpuprof-cupti.so calls, with the
 * behaviour the CUPTI headers document (one subscriber, client-owned
 * buffers handed back from another thread, variable-size 8-aligned
 * records walked with cuptiActivityGetNextRecord, dropped-record counts,
 * the timestamp callback). The fake CUDA driver drives it through
 * fakecupti.h. Test modes: see fakecupti.h.
 */
#include <cupti.h>
#include <cupti_pcsampling.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakecupti.h"

#define API __attribute__((visibility("default")))

_Static_assert(FAKE_CBID_cuLaunchKernel == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cbid");
_Static_assert(FAKE_CBID_cuLaunchKernel_ptsz == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	       "cbid");
_Static_assert(FAKE_CBID_cuLaunchKernelEx == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, "cbid");
_Static_assert(FAKE_CBID_cuLaunchCooperativeKernel ==
		       CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	       "cbid");
_Static_assert(FAKE_CBID_cuMemcpyHtoD_v2 == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "cbid");
_Static_assert(FAKE_CBID_cuMemcpyHtoDAsync_v2 == CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
	       "cbid");
_Static_assert(FAKE_CBID_cuMemcpyDtoH_v2 == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, "cbid");
_Static_assert(FAKE_CBID_cuMemcpyDtoD_v2 == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, "cbid");
_Static_assert(FAKE_CBID_cuMemsetD8_v2 == CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, "cbid");
_Static_assert(FAKE_CBID_cuMemsetD32_v2 == CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, "cbid");
_Static_assert(FAKE_CBID_cuStreamSynchronize == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
	       "cbid");
_Static_assert(FAKE_CBID_cuCtxSynchronize == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cbid");
_Static_assert(FAKE_CBID_cuGraphLaunch == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cbid");
_Static_assert(FAKE_CBID_cuEventRecord == CUPTI_DRIVER_TRACE_CBID_cuEventRecord, "cbid");
_Static_assert(FAKE_CBID_cuEventSynchronize == CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cbid");
_Static_assert(FAKE_CBID_cuStreamWaitEvent == CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, "cbid");
_Static_assert(FAKE_RT_CBID_cudaEventRecord_v3020 == CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020,
	       "cbid");
_Static_assert(FAKE_RT_CBID_cudaEventSynchronize_v3020 ==
		       CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
	       "cbid");
_Static_assert(FAKE_RT_CBID_cudaStreamWaitEvent_v3020 ==
		       CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020,
	       "cbid");
_Static_assert(FAKE_DOMAIN_RUNTIME == CUPTI_CB_DOMAIN_RUNTIME_API, "domain");

#define MAX_CBID 1024
#define NSTREAMS 64

/* ------------------------------------------------------------ subscriber */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int used;
	CUpti_CallbackFunc cb;
	void *ud;
	char name[CUPTI_SUBSCRIBER_NAME_MAX_LEN + 16];
	uint8_t on[CUPTI_CB_DOMAIN_SIZE][MAX_CBID];
} subscriber;
static uint32_t next_corr = 1;
/* what a client switched, and the kernels that ran while their kind was
 * off (FAKE_CUPTI_DUTY_REPORT) */
static struct {
	uint64_t kind_enable, kind_disable, cb_on, cb_off, kernels, kernels_off;
	/* subscriptions taken and let go (any subscriber), API calls made
	 * while nobody was subscribed (no callback could run) */
	uint64_t subs, unsubs, calls_unsub;
} duty;
static void *cur_ctx; /* the context fakecupti_context made, the calls' context */

static int kind_fails(CUpti_ActivityKind k)
{
	const char *s = getenv("FAKE_CUPTI_FAIL_KIND");

	while (s && *s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s)
			break;
		if (v == (long)k)
			return 1;
		s = *end ? end + 1 : end;
	}
	return 0;
}

static CUptiResult subscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud,
			     CUpti_SubscriberParams *p)
{
	const char *other = getenv("FAKE_CUPTI_SUBSCRIBER");
	const char *holder = NULL;
	CUptiResult r = CUPTI_SUCCESS;

	if (!h)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&mu);
	if (other && *other)
		holder = other;
	else if (subscriber.used)
		holder = subscriber.name;
	if (holder) {
		r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
		if (p && p->oldSubscriberName && p->oldSubscriberSize)
			snprintf(p->oldSubscriberName, p->oldSubscriberSize, "%s", holder);
	} else {
		subscriber.used = 1;
		subscriber.cb = cb;
		subscriber.ud = ud;
		snprintf(subscriber.name, sizeof(subscriber.name), "CUPTI for %s",
			 p && p->subscriberName ? p->subscriberName : "unnamed");
		memset(subscriber.on, 0, sizeof(subscriber.on));
		*h = (CUpti_SubscriberHandle)&subscriber;
		duty.subs++;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud)
{
	return subscribe(h, cb, ud, NULL);
}

API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud,
				  CUpti_SubscriberParams *p)
{
	if (p && p->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return subscribe(h, cb, ud, p);
}

API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
	if (h != (CUpti_SubscriberHandle)&subscriber || !subscriber.used)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&mu);
	subscriber.used = 0;
	duty.unsubs++;
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle h,
				    CUpti_CallbackDomain dom, CUpti_CallbackId cbid)
{
	if (h != (CUpti_SubscriberHandle)&subscriber || !subscriber.used || dom <= 0 ||
	    dom >= CUPTI_CB_DOMAIN_SIZE || cbid >= MAX_CBID)
		return CUPTI_ERROR_INVALID_PARAMETER;
	subscriber.on[dom][cbid] = !!enable;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API || dom == CUPTI_CB_DOMAIN_RUNTIME_API)
		__atomic_fetch_add(enable ? &duty.cb_on : &duty.cb_off, 1, __ATOMIC_RELAXED);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle h,
				  CUpti_CallbackDomain dom)
{
	if (h != (CUpti_SubscriberHandle)&subscriber || dom <= 0 || dom >= CUPTI_CB_DOMAIN_SIZE)
		return CUPTI_ERROR_INVALID_PARAMETER;
	memset(subscriber.on[dom], !!enable, MAX_CBID);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetVersion(uint32_t *version)
{
	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*version = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetResultString(CUptiResult r, const char **str)
{
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*str = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR (stand-in)";
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiGetLastError(void)
{
	return CUPTI_SUCCESS;
}

static void finalize(void);

/* Detaches CUPTI from the process: the buffer in use goes back, then no
 * subscriber, no kind, no buffer or timestamp callback is left, and the
 * next subscriber succeeds. */
API CUptiResult cuptiFinalize(void)
{
	finalize();
	return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ timestamps */

static CUpti_TimestampCallbackFunc ts_cb;
static int any_enabled;

static uint64_t now_ns(void)
{
	struct timespec t;

	if (ts_cb)
		return ts_cb();
	clock_gettime(CLOCK_REALTIME, &t); /* CUPTI's default clock on Linux */
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

API CUptiResult cuptiGetTimestamp(uint64_t *ts)
{
	if (!ts)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*ts = now_ns();
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	const char *s = getenv("FAKE_CUPTI_NO_TIMESTAMP_CB");

	if (s && *s && strcmp(s, "0"))
		return CUPTI_ERROR_NOT_SUPPORTED;
	/* the header: register before enabling any kind */
	if (any_enabled)
		return CUPTI_ERROR_INVALID_OPERATION;
	ts_cb = fn;
	return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ callbacks */

static void fire(struct fakecupti_call *c, CUpti_ApiCallbackSite site)
{
	CUpti_CallbackDomain dom = c->domain == FAKE_DOMAIN_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
								    : CUPTI_CB_DOMAIN_DRIVER_API;
	CUpti_CallbackData cd;
	CUpti_CallbackFunc cb;
	void *ud;

	if (!subscriber.used || c->cbid >= MAX_CBID || !subscriber.on[dom][c->cbid])
		return;
	cb = subscriber.cb;
	ud = subscriber.ud;
	memset(&cd, 0, sizeof(cd));
	cd.callbackSite = site;
	cd.functionName = c->name;
	cd.correlationId = c->corr;
	cd.correlationData = &c->corr_data;
	cd.context = (CUcontext)cur_ctx;
	cd.functionReturnValue = site == CUPTI_API_EXIT ? &c->result : NULL;
	cb(ud, dom, c->cbid, &cd);
}

API void fakecupti_api_enter(struct fakecupti_call *c)
{
	if (!c->corr) /* else a driver call made by a runtime call: its id */
		c->corr = __atomic_fetch_add(&next_corr, 1, __ATOMIC_RELAXED);
	c->corr_data = 0;
	if (!__atomic_load_n(&subscriber.used, __ATOMIC_RELAXED))
		__atomic_fetch_add(&duty.calls_unsub, 1, __ATOMIC_RELAXED);
	fire(c, CUPTI_API_ENTER);
}

API void fakecupti_api_exit(struct fakecupti_call *c)
{
	fire(c, CUPTI_API_EXIT);
}

/* ------------------------------------------------------------ activity */

static CUpti_BuffersCallbackRequestFunc req_cb;
static CUpti_BuffersCallbackCompleteFunc done_cb;
static uint8_t kind_on[CUPTI_ACTIVITY_KIND_COUNT];
static int zeroed_attr;
static uint8_t *cur;
static size_t cur_size, cur_used;
static uint64_t dropped, stream_free[NSTREAMS];
static int extra_dropped_given;
static pthread_t worker;
static int worker_on;
static uint64_t nkernels;
static unsigned records_per_buffer, cur_records;
static uint32_t device_id; /* FAKE_CUPTI_DEVICE: the device every record names */
static int64_t fatal_at = -1; /* FAKE_CUPTI_FATAL_AT, -1: never */

static size_t rec_size(CUpti_ActivityKind k)
{
	size_t n;

	switch (k) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		n = sizeof(CUpti_ActivityKernel10);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		n = sizeof(CUpti_ActivityMemcpy6);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		n = sizeof(CUpti_ActivityMemcpyPtoP4);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		n = sizeof(CUpti_ActivityMemset4);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		n = sizeof(CUpti_ActivitySynchronization2);
		break;
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
		n = sizeof(CUpti_ActivityCudaEvent2);
		break;
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
		n = sizeof(CUpti_ActivityGraphTrace2);
		break;
	case CUPTI_ACTIVITY_KIND_MARKER:
		n = sizeof(CUpti_ActivityMarker2);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		n = sizeof(CUpti_ActivityOverhead3);
		break;
	default:
		return 0;
	}
	return (n + 7) & ~(size_t)7;
}

/* Hands the current buffer back (called with mu held; drops it around the
 * client's callback, as CUPTI calls it without its locks). */
static void deliver_locked(void)
{
	uint8_t *b = cur;
	size_t size = cur_size, used = cur_used;

	if (!b || !used || !done_cb)
		return;
	cur = NULL;
	cur_used = cur_size = 0;
	pthread_mutex_unlock(&mu);
	done_cb(NULL, 0, b, size, used);
	pthread_mutex_lock(&mu);
}

static int all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

static void new_buffer_locked(void)
{
	size_t max = 0;

	req_cb(&cur, &cur_size, &max);
	cur_used = 0;
	if (cur && ((uintptr_t)cur & 7)) {
		fprintf(stderr, "fake libcupti: buffer not 8-aligned\n");
		abort();
	}
	if (cur && zeroed_attr && !all_zero(cur, cur_size)) {
		/* ZEROED_OUT_ACTIVITY_BUFFER promised zeroed buffers */
		fprintf(stderr, "fake libcupti: buffer not zeroed\n");
		abort();
	}
}

/* Appends one record of kind k; a record of a disabled kind is not made. */
static void append(const void *rec, CUpti_ActivityKind k)
{
	size_t n = rec_size(k);

	pthread_mutex_lock(&mu);
	if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
		duty.kernels++;
		duty.kernels_off += !kind_on[k];
	}
	if (!kind_on[k] || !req_cb) {
		pthread_mutex_unlock(&mu);
		return;
	}
	if (cur && cur_used + n > cur_size)
		deliver_locked();
	if (!cur)
		new_buffer_locked();
	if (!cur || n > cur_size) {
		dropped++; /* the client declined a buffer: CUPTI drops */
	} else {
		memcpy(cur + cur_used, rec, n);
		cur_used += n;
		if (records_per_buffer && ++cur_records >= records_per_buffer) {
			cur_records = 0;
			deliver_locked();
		}
	}
	pthread_mutex_unlock(&mu);
}

static void *worker_main(void *arg)
{
	const char *s = getenv("FAKE_CUPTI_BUFFER_MS");
	unsigned ms = s && atoi(s) > 0 ? (unsigned)atoi(s) : 50;

	for (;;) {
		usleep(ms * 1000);
		pthread_mutex_lock(&mu);
		deliver_locked();
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
					       CUpti_BuffersCallbackCompleteFunc done)
{
	const char *rpb = getenv("FAKE_CUPTI_RECORDS_PER_BUFFER");

	if (!req || !done)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&mu);
	records_per_buffer = rpb ? (unsigned)atoi(rpb) : 0;
	device_id = getenv("FAKE_CUPTI_DEVICE") ? (uint32_t)atoi(getenv("FAKE_CUPTI_DEVICE")) : 0;
	fatal_at = getenv("FAKE_CUPTI_FATAL_AT") ? atoll(getenv("FAKE_CUPTI_FATAL_AT")) : -1;
	req_cb = req;
	done_cb = done;
	/* The registration is process-global and belongs to no subscriber: a
	 * second client's replaces the first's. A buffer handed out before is
	 * completed through the callback registered when it completes, here
	 * at once (CUPTI's own order is undocumented): the new client gets
	 * a buffer it never allocated, its records go to its own buffers. */
	deliver_locked();
	if (!worker_on && !pthread_create(&worker, NULL, worker_main, NULL)) {
		pthread_detach(worker);
		worker_on = 1;
	}
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
	if (k <= 0 || k >= CUPTI_ACTIVITY_KIND_COUNT || !rec_size(k))
		return CUPTI_ERROR_NOT_SUPPORTED;
	if (kind_fails(k))
		return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
	/* kinds are process-global: any client's thread may switch them
	 * while the driver's threads record */
	pthread_mutex_lock(&mu);
	kind_on[k] = 1;
	any_enabled = 1;
	duty.kind_enable++;
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
	if (k <= 0 || k >= CUPTI_ACTIVITY_KIND_COUNT)
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&mu);
	kind_on[k] = 0;
	duty.kind_disable++;
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	pthread_mutex_lock(&mu);
	deliver_locked();
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *size, void *value)
{
	if (!size || !value)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER) {
		if (*size != sizeof(uint8_t))
			return CUPTI_ERROR_INVALID_PARAMETER;
		/* any thread may set it while another records */
		pthread_mutex_lock(&mu);
		zeroed_attr = *(uint8_t *)value != 0;
		pthread_mutex_unlock(&mu);
	}
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t *size, void *value)
{
	if (!size || !value)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (attr == CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER && *size >= 1) {
		pthread_mutex_lock(&mu);
		*(uint8_t *)value = (uint8_t)zeroed_attr;
		pthread_mutex_unlock(&mu);
	}
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **rec)
{
	uint8_t *p;

	if (!buffer || !rec)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (!*rec) {
		p = buffer;
	} else {
		size_t n = rec_size((*rec)->kind);

		if (!n)
			return CUPTI_ERROR_INVALID_KIND;
		p = (uint8_t *)*rec + n;
	}
	if (p >= buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	if (((CUpti_Activity *)p)->kind == CUPTI_ACTIVITY_KIND_INVALID)
		return CUPTI_ERROR_INVALID_KIND; /* an incomplete record */
	*rec = (CUpti_Activity *)p;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *n)
{
	const char *s = getenv("FAKE_CUPTI_DROPPED");

	if (!n)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&mu);
	*n = dropped; /* reset on read, as CUPTI does */
	dropped = 0;
	if (s && !extra_dropped_given && nkernels) {
		*n += strtoull(s, NULL, 10);
		extra_dropped_given = 1;
	}
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ records */

/* [start, end) of dur on stream: after the stream's previous work */
static void schedule(uint32_t stream, uint64_t dur, uint64_t *start, uint64_t *end)
{
	uint64_t t = now_ns();

	pthread_mutex_lock(&mu);
	if (stream_free[stream % NSTREAMS] > t)
		t = stream_free[stream % NSTREAMS];
	stream_free[stream % NSTREAMS] = t + dur;
	pthread_mutex_unlock(&mu);
	*start = t;
	*end = t + dur;
}

static void overhead(void)
{
	CUpti_ActivityOverhead3 o;

	/* a kind the client did not ask for would not come; OVERHEAD is
	 * always on here so that the client meets records it must skip */
	memset(&o, 0, sizeof(o));
	o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
	o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION;
	o.start = o.end = now_ns();
	pthread_mutex_lock(&mu);
	/* ... but only alongside the kernel records it accompanies: with
	 * every kind off, CUPTI asks nobody for a buffer */
	if (!kind_on[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
		pthread_mutex_unlock(&mu);
		return;
	}
	kind_on[CUPTI_ACTIVITY_KIND_OVERHEAD] = 1;
	pthread_mutex_unlock(&mu);
	append(&o, CUPTI_ACTIVITY_KIND_OVERHEAD);
}

/* A fatal error as CUPTI reports one: the STATE callback, then CUPTI
 * finalizes itself (nothing enabled, no subscriber; the buffer in use is
 * handed back). */
static void fatal(void)
{
	CUpti_StateData sd;

	memset(&sd, 0, sizeof(sd));
	sd.notification.result = CUPTI_ERROR_UNKNOWN;
	sd.notification.message = "stand-in fatal error";
	if (subscriber.used && subscriber.on[CUPTI_CB_DOMAIN_STATE][CUPTI_CBID_STATE_FATAL_ERROR])
		subscriber.cb(subscriber.ud, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR,
			      &sd);
	pthread_mutex_lock(&mu);
	memset(kind_on, 0, sizeof(kind_on));
	subscriber.used = 0;
	deliver_locked();
	pthread_mutex_unlock(&mu);
}

static void finalize(void)
{
	pthread_mutex_lock(&mu);
	deliver_locked();
	memset(kind_on, 0, sizeof(kind_on));
	req_cb = NULL;
	done_cb = NULL;
	subscriber.used = 0;
	ts_cb = NULL;
	any_enabled = 0;
	pthread_mutex_unlock(&mu);
}

API void fakecupti_kernel(uint32_t corr, const char *name, uint64_t dur_ns, const uint32_t grid[3],
			  const uint32_t block[3], uint32_t stream)
{
	uint64_t nth = __atomic_fetch_add(&nkernels, 1, __ATOMIC_RELAXED);
	CUpti_ActivityKernel10 k;

	if (fatal_at >= 0 && nth == (uint64_t)fatal_at)
		fatal();
	if (nth % 7 == 0)
		overhead();
	memset(&k, 0, sizeof(k));
	k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k.registersPerThread = 32;
	schedule(stream, dur_ns, &k.start, &k.end);
	k.completed = k.end;
	k.deviceId = device_id;
	k.contextId = 1;
	k.streamId = stream;
	k.gridX = (int32_t)grid[0], k.gridY = (int32_t)grid[1], k.gridZ = (int32_t)grid[2];
	k.blockX = (int32_t)block[0], k.blockY = (int32_t)block[1], k.blockZ = (int32_t)block[2];
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 0;
	k.localMemoryPerThread = 16;
	k.correlationId = corr;
	k.name = name;
	append(&k, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

API void fakecupti_memcpy(uint32_t corr, uint8_t copy_kind, uint64_t bytes, uint64_t dur_ns,
			  uint32_t stream, int async)
{
	CUpti_ActivityMemcpy6 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m.copyKind = copy_kind;
	m.srcKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD
			    ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
			    : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.dstKind = copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH
			    ? CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
			    : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	m.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
	m.bytes = bytes;
	schedule(stream, dur_ns, &m.start, &m.end);
	m.deviceId = device_id;
	m.contextId = 1;
	m.streamId = stream;
	m.correlationId = corr;
	append(&m, CUPTI_ACTIVITY_KIND_MEMCPY);
}

API void fakecupti_memset(uint32_t corr, uint32_t value, uint64_t bytes, uint64_t dur_ns,
			  uint32_t stream)
{
	CUpti_ActivityMemset4 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
	m.value = value;
	m.bytes = bytes;
	schedule(stream, dur_ns, &m.start, &m.end);
	m.deviceId = device_id;
	m.contextId = 1;
	m.streamId = stream;
	m.correlationId = corr;
	m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
	append(&m, CUPTI_ACTIVITY_KIND_MEMSET);
}

API void fakecupti_sync(uint32_t corr, uint32_t type, uint32_t stream, uint64_t dur_ns)
{
	CUpti_ActivitySynchronization2 s;

	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = (CUpti_ActivitySynchronizationType)type;
	s.start = now_ns();
	s.end = s.start + dur_ns;
	s.correlationId = corr;
	s.contextId = 1;
	s.streamId = type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
			     ? CUPTI_SYNCHRONIZATION_INVALID_VALUE
			     : stream;
	s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	append(&s, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
}

/* When each event's latest record completes (by event id), and the
 * cudaEventSyncId CUPTI gives the record and the syncs on it. */
#define NEVENTS 256
static uint64_t event_done[NEVENTS], event_sync_id[NEVENTS], next_sync_id = 1;

API void fakecupti_cuda_event(uint32_t corr, uint32_t event, uint32_t stream)
{
	CUpti_ActivityCudaEvent2 e;
	uint64_t t = now_ns();

	memset(&e, 0, sizeof(e));
	pthread_mutex_lock(&mu);
	if (stream_free[stream % NSTREAMS] > t)
		t = stream_free[stream % NSTREAMS];
	event_done[event % NEVENTS] = t;
	e.cudaEventSyncId = event_sync_id[event % NEVENTS] = next_sync_id++;
	pthread_mutex_unlock(&mu);
	e.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
	e.correlationId = corr;
	e.contextId = 1;
	e.streamId = stream;
	e.eventId = event;
	e.deviceId = device_id;
	append(&e, CUPTI_ACTIVITY_KIND_CUDA_EVENT);
}

API void fakecupti_sync_event(uint32_t corr, uint32_t type, uint32_t event, uint32_t stream,
			      uint64_t dur_ns)
{
	CUpti_ActivitySynchronization2 s;
	uint64_t done;

	memset(&s, 0, sizeof(s));
	s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	s.type = (CUpti_ActivitySynchronizationType)type;
	s.start = now_ns();
	s.end = s.start + dur_ns;
	s.correlationId = corr;
	s.contextId = 1;
	s.cudaEventId = event;
	pthread_mutex_lock(&mu);
	done = event_done[event % NEVENTS];
	s.cudaEventSyncId = event_sync_id[event % NEVENTS];
	if (type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT &&
	    stream_free[stream % NSTREAMS] < done)
		stream_free[stream % NSTREAMS] = done; /* the stream's later work waits */
	pthread_mutex_unlock(&mu);
	if (type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE && s.end < done)
		s.end = done;
	/* the caller returns once the event completed (and the sync ended) */
	while (type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE && now_ns() < s.end)
		usleep(1);
	s.streamId = type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT
			     ? stream
			     : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
	append(&s, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
}

API void fakecupti_graph(uint32_t corr, uint32_t graph_id, uint32_t stream, uint64_t dur_ns)
{
	CUpti_ActivityGraphTrace2 g;

	memset(&g, 0, sizeof(g));
	g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
	g.correlationId = corr;
	schedule(stream, dur_ns, &g.start, &g.end);
	g.graphId = graph_id;
	g.deviceId = device_id;
	g.contextId = 1;
	g.streamId = stream;
	append(&g, CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
}

API void fakecupti_marker(uint32_t flags, uint32_t id, const char *name, const char *domain,
			  uint32_t tid)
{
	CUpti_ActivityMarker2 m;

	memset(&m, 0, sizeof(m));
	m.kind = CUPTI_ACTIVITY_KIND_MARKER;
	m.flags = (CUpti_ActivityFlag)flags;
	m.timestamp = now_ns();
	m.id = id;
	m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
	m.objectId.pt.processId = (uint32_t)getpid();
	m.objectId.pt.threadId = tid;
	m.name = (flags & CUPTI_ACTIVITY_FLAG_MARKER_END) ? NULL : name;
	m.domain = domain;
	append(&m, CUPTI_ACTIVITY_KIND_MARKER);
}

/* ------------------------------------------------------------ resources */

static void fire_resource(CUpti_CallbackId cbid, void *ctx, void *desc)
{
	CUpti_ResourceData rd;

	if (!subscriber.used || !subscriber.on[CUPTI_CB_DOMAIN_RESOURCE][cbid])
		return;
	memset(&rd, 0, sizeof(rd));
	rd.context = (CUcontext)ctx;
	rd.resourceDescriptor = desc;
	subscriber.cb(subscriber.ud, CUPTI_CB_DOMAIN_RESOURCE, cbid, &rd);
}

API CUptiResult cuptiGetDeviceId(CUcontext ctx, uint32_t *dev)
{
	if (!dev)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*dev = 0;
	return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ PC sampling */

/* CUPTI's per-GPU stall reasons, with indices that are not 0..n-1 (the
 * client must use GetStallReasons' indices, never positions). As on the
 * real one (an H200, CUPTI 13.0), a reason's "_not_issued" twin counts
 * again the samples of that reason whose warp issued no instruction: a
 * subset, outside totalSamples (NOT_ISSUED below). */
#define NREASONS 7
#define NOT_ISSUED 3
static const uint32_t reason_idx[NREASONS] = {0, 2, 5, 7, 11, 13, NOT_ISSUED};
static const char *const reason_name[NREASONS] = {
	"smsp__pcsamp_warps_issue_stalled_barrier",
	"smsp__pcsamp_warps_issue_stalled_long_scoreboard",
	"smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
	"smsp__pcsamp_warps_issue_stalled_wait",
	"smsp__pcsamp_warps_issue_stalled_not_selected",
	"smsp__pcsamp_warps_issue_stalled_selected",
	"smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued",
};

#define MAX_PCCTX 4
#define MAX_MODULES 8
#define MAX_FUNCS 16
#define MAX_HW 256

struct fmodule {
	int used;
	void *ctx;
	uint32_t id;
	uint64_t crc;
	size_t nfuncs;
	struct {
		char name[128];
		uint32_t index; /* .symtab index */
		uint64_t size;
	} fn[MAX_FUNCS];
};

struct hwpc {
	uint32_t mod, fn;
	uint64_t pc;
	uint32_t samples[NREASONS];
};

static struct pcctx {
	void *ctx;
	int enabled, start_stop, started, wedged;
	uint32_t period;
	CUpti_PCSamplingData *cfg_buf;
	size_t nhw;
	struct hwpc hw[MAX_HW];
} pcctx[MAX_PCCTX];
static struct fmodule modules[MAX_MODULES];
static pthread_mutex_t pcmu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pc_getdata_calls;
static struct {
	uint64_t enable, disable, start, stop, getdata, samples;
	uint32_t period; /* the last SAMPLING_PERIOD a client set, 0 none */
} pcstat;

static uint32_t crc32_bytes(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

/* zlib's crc32 of the bytes: the tests compute it the same way */
API CUptiResult cuptiGetCubinCrc(CUpti_GetCubinCrcParams *p)
{
	if (!p || p->size < CUpti_GetCubinCrcParamsSize || !p->cubin || !p->cubinSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	p->cubinCrc = crc32_bytes(p->cubin, p->cubinSize);
	return CUPTI_SUCCESS;
}

static CUptiResult fill(struct pcctx *c, CUpti_PCSamplingData *d, size_t cap);

static struct pcctx *pc_find(void *ctx)
{
	for (size_t i = 0; i < MAX_PCCTX; i++)
		if (ctx && pcctx[i].ctx == ctx)
			return &pcctx[i];
	return NULL;
}

static int env_int(const char *name, int def)
{
	const char *s = getenv(name);

	return s && *s ? atoi(s) : def;
}

API CUptiResult cuptiPCSamplingEnable(CUpti_PCSamplingEnableParams *p)
{
	struct pcctx *c;
	int fail = env_int("FAKE_CUPTI_PC_FAIL", 0);

	if (!p || p->size < CUpti_PCSamplingEnableParamsSize || !p->ctx)
		return CUPTI_ERROR_INVALID_PARAMETER;
	if (fail)
		return (CUptiResult)fail;
	pthread_mutex_lock(&pcmu);
	c = pc_find(p->ctx);
	for (size_t i = 0; i < MAX_PCCTX && !c; i++)
		if (!pcctx[i].ctx)
			c = &pcctx[i];
	if (!c || c->enabled) {
		pthread_mutex_unlock(&pcmu);
		return CUPTI_ERROR_INVALID_OPERATION;
	}
	memset(c, 0, sizeof(*c));
	c->ctx = p->ctx;
	c->enabled = 1;
	pcstat.enable++;
	pthread_mutex_unlock(&pcmu);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPCSamplingDisable(CUpti_PCSamplingDisableParams *p)
{
	struct pcctx *c;

	if (!p || p->size < CUpti_PCSamplingDisableParamsSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&pcmu);
	c = pc_find(p->ctx);
	if (c) {
		/* as the real one does: what was not read goes into the
		 * configured buffer, as much as it holds; the rest is lost */
		if (c->cfg_buf && c->nhw)
			fill(c, c->cfg_buf, (size_t)-1);
		memset(c, 0, sizeof(*c));
		pcstat.disable++;
	}
	pthread_mutex_unlock(&pcmu);
	return c ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_OPERATION;
}

static CUptiResult start_stop(CUcontext ctx, int start)
{
	struct pcctx *c;
	CUptiResult r = CUPTI_SUCCESS;

	pthread_mutex_lock(&pcmu);
	c = pc_find(ctx);
	if (!c || !c->start_stop || c->started == start)
		r = CUPTI_ERROR_INVALID_OPERATION;
	else
		c->started = start;
	if (!r)
		start ? pcstat.start++ : pcstat.stop++;
	pthread_mutex_unlock(&pcmu);
	return r;
}

API CUptiResult cuptiPCSamplingStart(CUpti_PCSamplingStartParams *p)
{
	if (!p || p->size < CUpti_PCSamplingStartParamsSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return start_stop(p->ctx, 1);
}

API CUptiResult cuptiPCSamplingStop(CUpti_PCSamplingStopParams *p)
{
	if (!p || p->size < CUpti_PCSamplingStopParamsSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	return start_stop(p->ctx, 0);
}

static int known_reason(uint32_t idx)
{
	for (size_t i = 0; i < NREASONS; i++)
		if (reason_idx[i] == idx)
			return 1;
	return 0;
}

static CUptiResult set_attr(struct pcctx *c, CUpti_PCSamplingConfigurationInfo *a)
{
	switch (a->attributeType) {
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD:
		if (a->attributeData.samplingPeriodData.samplingPeriod < 5 ||
		    a->attributeData.samplingPeriodData.samplingPeriod > 31)
			return CUPTI_ERROR_INVALID_PARAMETER;
		c->period = a->attributeData.samplingPeriodData.samplingPeriod;
		pcstat.period = c->period;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON:
		for (size_t i = 0; i < a->attributeData.stallReasonData.stallReasonCount; i++)
			if (!known_reason(a->attributeData.stallReasonData.pStallReasonIndex[i]))
				return CUPTI_ERROR_INVALID_PARAMETER;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE:
		return a->attributeData.collectionModeData.collectionMode ==
					       CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS ||
				       a->attributeData.collectionModeData.collectionMode ==
					       CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED
			       ? CUPTI_SUCCESS
			       : CUPTI_ERROR_INVALID_PARAMETER;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL:
		c->start_stop = !!a->attributeData.enableStartStopControlData.enableStartStopControl;
		return CUPTI_SUCCESS;
	case CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER:
		c->cfg_buf = a->attributeData.samplingDataBufferData.samplingDataBuffer;
		return c->cfg_buf ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
	default:
		return CUPTI_SUCCESS; /* sizes, worker period, output format */
	}
}

API CUptiResult cuptiPCSamplingSetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p)
{
	CUptiResult r = CUPTI_SUCCESS;
	struct pcctx *c;

	if (!p || p->size < CUpti_PCSamplingConfigurationInfoParamsSize ||
	    (p->numAttributes && !p->pPCSamplingConfigurationInfo))
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&pcmu);
	c = pc_find(p->ctx);
	if (!c) {
		r = CUPTI_ERROR_INVALID_OPERATION; /* before Enable */
	} else {
		for (size_t i = 0; i < p->numAttributes; i++) {
			CUpti_PCSamplingConfigurationInfo *a = &p->pPCSamplingConfigurationInfo[i];

			a->attributeStatus = set_attr(c, a);
			if (a->attributeStatus)
				r = a->attributeStatus;
		}
	}
	pthread_mutex_unlock(&pcmu);
	return r;
}

API CUptiResult cuptiPCSamplingGetConfigurationAttribute(CUpti_PCSamplingConfigurationInfoParams *p)
{
	CUptiResult r = CUPTI_SUCCESS;
	struct pcctx *c;

	if (!p || p->size < CUpti_PCSamplingConfigurationInfoParamsSize)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&pcmu);
	c = pc_find(p->ctx);
	for (size_t i = 0; c && i < p->numAttributes; i++) {
		CUpti_PCSamplingConfigurationInfo *a = &p->pPCSamplingConfigurationInfo[i];

		a->attributeStatus = CUPTI_SUCCESS;
		if (a->attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
			a->attributeData.samplingPeriodData.samplingPeriod = c->period ? c->period : 20;
		else if (a->attributeType ==
			 CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL)
			a->attributeData.enableStartStopControlData.enableStartStopControl =
				(uint32_t)c->start_stop;
	}
	if (!c)
		r = CUPTI_ERROR_INVALID_OPERATION;
	pthread_mutex_unlock(&pcmu);
	return r;
}

API CUptiResult cuptiPCSamplingGetNumStallReasons(CUpti_PCSamplingGetNumStallReasonsParams *p)
{
	int ok;

	if (!p || p->size < CUpti_PCSamplingGetNumStallReasonsParamsSize || !p->numStallReasons)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&pcmu);
	ok = pc_find(p->ctx) != NULL;
	pthread_mutex_unlock(&pcmu);
	if (!ok)
		return CUPTI_ERROR_INVALID_OPERATION; /* "after cuptiPCSamplingEnable" */
	*p->numStallReasons = NREASONS;
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiPCSamplingGetStallReasons(CUpti_PCSamplingGetStallReasonsParams *p)
{
	int ok;

	if (!p || p->size < CUpti_PCSamplingGetStallReasonsParamsSize || !p->stallReasonIndex ||
	    !p->stallReasons || p->numStallReasons > NREASONS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&pcmu);
	ok = pc_find(p->ctx) != NULL;
	pthread_mutex_unlock(&pcmu);
	if (!ok)
		return CUPTI_ERROR_INVALID_OPERATION;
	for (size_t i = 0; i < p->numStallReasons; i++) {
		p->stallReasonIndex[i] = reason_idx[i];
		snprintf(p->stallReasons[i], CUPTI_STALL_REASON_STRING_SIZE, "%s", reason_name[i]);
	}
	return CUPTI_SUCCESS;
}

/* One name string per distinct function, for the whole process, handed
 * out in every PC record and every GetData call, as the real CUPTI's
 * header allows ("might be shared across all the records"): a client that
 * frees it once per record frees it twice, one that frees it while it can
 * still be handed out reads freed memory, and ASan sees both. The client
 * frees it (free()); the table only finds it again. */
#define MAX_SHARED_NAMES 256
static char *shared_names[MAX_SHARED_NAMES];
static uint64_t shared_fresh; /* past the table: a fresh copy each time */

static char *shared_name(const char *s) /* under pcmu */
{
	size_t i;

	for (i = 0; i < MAX_SHARED_NAMES && shared_names[i]; i++)
		if (!strcmp(shared_names[i], s))
			return shared_names[i];
	if (i == MAX_SHARED_NAMES) {
		shared_fresh++;
		return strdup(s);
	}
	return shared_names[i] = strdup(s);
}

/* Moves the oldest collected PCs (at most collectNumPcs and cap) into d;
 * under pcmu. CUPTI_ERROR_INVALID_PARAMETER: d cannot hold them. */
static CUptiResult fill(struct pcctx *c, CUpti_PCSamplingData *d, size_t cap)
{
	size_t n = c->nhw;

	d->totalNumPcs = d->remainingNumPcs = 0;
	d->totalSamples = d->droppedSamples = 0;
	d->hardwareBufferFull = 0;
	if (n > d->collectNumPcs)
		n = d->collectNumPcs;
	if (n > cap)
		n = cap;
	for (size_t i = 0; i < n; i++) {
		const struct hwpc *h = &c->hw[i];
		CUpti_PCSamplingPCData *o = &d->pPcData[i];
		size_t k = 0;

		if (o->size < sizeof(*o) || !o->stallReason || o->stallReasonCount < NREASONS)
			return CUPTI_ERROR_INVALID_PARAMETER;
		o->cubinCrc = modules[h->mod].crc;
		o->pcOffset = h->pc;
		o->functionIndex = modules[h->mod].fn[h->fn].index;
		o->functionName = shared_name(modules[h->mod].fn[h->fn].name);
		o->correlationId = 0;
		for (size_t j = 0; j < NREASONS; j++) {
			if (!h->samples[j])
				continue;
			o->stallReason[k].pcSamplingStallReasonIndex = reason_idx[j];
			o->stallReason[k++].samples = h->samples[j];
			if (reason_idx[j] != NOT_ISSUED)
				d->totalSamples += h->samples[j];
		}
		o->stallReasonCount = k;
	}
	memmove(c->hw, c->hw + n, (c->nhw - n) * sizeof(c->hw[0]));
	c->nhw -= n;
	d->totalNumPcs = n;
	d->remainingNumPcs = c->nhw;
	return CUPTI_SUCCESS;
}

/* Hands out the oldest collected PCs, at most collectNumPcs (and at most
 * FAKE_CUPTI_PC_PER_CALL), saying how many remain. FAKE_CUPTI_PC_OOM_AT=N:
 * the Nth call (from 1) with samples to hand out finds the hardware buffer full: the samples are
 * lost and the context collects nothing more until disabled and enabled.
 * FAKE_CUPTI_PC_GETDATA_FAIL=N: the first N calls fail with
 * CUPTI_ERROR_INVALID_OPERATION (what a client must survive: an error
 * before the first kernel, say). */
API CUptiResult cuptiPCSamplingGetData(CUpti_PCSamplingGetDataParams *p)
{
	CUpti_PCSamplingData *d;
	struct pcctx *c;
	size_t cap = (size_t)env_int("FAKE_CUPTI_PC_PER_CALL", 1 << 30);
	CUptiResult r = CUPTI_SUCCESS;

	if (!p || p->size < CUpti_PCSamplingGetDataParamsSize || !p->pcSamplingData)
		return CUPTI_ERROR_INVALID_PARAMETER;
	d = p->pcSamplingData;
	if (d->size < sizeof(*d) || !d->pPcData)
		return CUPTI_ERROR_INVALID_PARAMETER;
	pthread_mutex_lock(&pcmu);
	c = pc_find(p->ctx);
	if (!c || !c->cfg_buf || d == c->cfg_buf) {
		r = c ? CUPTI_ERROR_INVALID_PARAMETER : CUPTI_ERROR_INVALID_OPERATION;
		goto out;
	}
	pcstat.getdata++;
	if (pcstat.getdata <= (uint64_t)env_int("FAKE_CUPTI_PC_GETDATA_FAIL", 0)) {
		r = CUPTI_ERROR_INVALID_OPERATION;
		goto out;
	}
	if (c->nhw && ++pc_getdata_calls == (uint64_t)env_int("FAKE_CUPTI_PC_OOM_AT", 0)) {
		d->totalNumPcs = d->remainingNumPcs = 0;
		d->totalSamples = d->droppedSamples = 0;
		c->nhw = 0;
		c->wedged = 1;
		d->hardwareBufferFull = 1;
		r = CUPTI_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	r = fill(c, d, cap);
out:
	pthread_mutex_unlock(&pcmu);
	return r;
}

/* the FUNC symbols of an ELF64 cubin (bounds-checked: tests feed it ours) */
static void parse_cubin(struct fmodule *m, const uint8_t *b, size_t n)
{
	const Elf64_Ehdr *eh = (const void *)b;
	const Elf64_Shdr *sh;

	m->nfuncs = 0;
	if (n < sizeof(*eh) || memcmp(b, ELFMAG, SELFMAG) || eh->e_shoff > n ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum > (n - eh->e_shoff) / sizeof(*sh))
		return;
	sh = (const void *)(b + eh->e_shoff);
	for (size_t s = 0; s < eh->e_shnum; s++) {
		const Elf64_Shdr *st;

		if (sh[s].sh_type != SHT_SYMTAB || sh[s].sh_link >= eh->e_shnum)
			continue;
		st = &sh[sh[s].sh_link];
		if (sh[s].sh_offset > n || sh[s].sh_size > n - sh[s].sh_offset ||
		    st->sh_offset > n || st->sh_size > n - st->sh_offset)
			return;
		for (size_t i = 0; i < sh[s].sh_size / sizeof(Elf64_Sym) && m->nfuncs < MAX_FUNCS;
		     i++) {
			const Elf64_Sym *y = (const void *)(b + sh[s].sh_offset) + i * sizeof(*y);

			if (ELF64_ST_TYPE(y->st_info) != STT_FUNC || y->st_name >= st->sh_size ||
			    !y->st_size)
				continue;
			snprintf(m->fn[m->nfuncs].name, sizeof(m->fn[0].name), "%.*s",
				 (int)strnlen((const char *)b + st->sh_offset + y->st_name,
					      st->sh_size - y->st_name),
				 (const char *)b + st->sh_offset + y->st_name);
			m->fn[m->nfuncs].index = (uint32_t)i;
			m->fn[m->nfuncs++].size = y->st_size;
		}
	}
}

API void fakecupti_context(void *ctx, int create)
{
	cur_ctx = create ? ctx : NULL;
	fire_resource(create ? CUPTI_CBID_RESOURCE_CONTEXT_CREATED
			     : CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
		      ctx, NULL);
	if (!create) {
		pthread_mutex_lock(&pcmu);
		for (size_t i = 0; i < MAX_MODULES; i++)
			if (modules[i].ctx == ctx)
				modules[i].used = 0;
		pthread_mutex_unlock(&pcmu);
	}
}

API void fakecupti_module(void *ctx, uint32_t id, const void *cubin, size_t size, int load)
{
	CUpti_ModuleResourceData md = {.moduleId = id, .cubinSize = size, .pCubin = cubin};
	struct fmodule *m = NULL;

	if (load) {
		pthread_mutex_lock(&pcmu);
		for (size_t i = 0; i < MAX_MODULES && !m; i++)
			if (!modules[i].used)
				m = &modules[i];
		if (m) {
			m->used = 1;
			m->ctx = ctx;
			m->id = id;
			m->crc = crc32_bytes(cubin, size);
			parse_cubin(m, cubin, size);
		}
		pthread_mutex_unlock(&pcmu);
	}
	fire_resource(load ? CUPTI_CBID_RESOURCE_MODULE_LOADED
			   : CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
		      ctx, &md);
	if (!load) {
		pthread_mutex_lock(&pcmu);
		for (size_t i = 0; i < MAX_MODULES; i++)
			if (modules[i].used && modules[i].ctx == ctx && modules[i].id == id)
				modules[i].used = 0;
		pthread_mutex_unlock(&pcmu);
	}
}

static void hw_add(struct pcctx *c, uint32_t mod, uint32_t fn, uint64_t pc, uint32_t reason,
		   uint32_t samples)
{
	size_t r = 0, i;

	while (reason_idx[r] != reason)
		r++;
	for (i = 0; i < c->nhw; i++)
		if (c->hw[i].mod == mod && c->hw[i].fn == fn && c->hw[i].pc == pc)
			break;
	if (i == c->nhw) {
		if (c->nhw == MAX_HW)
			return;
		memset(&c->hw[i], 0, sizeof(c->hw[i]));
		c->hw[i].mod = mod;
		c->hw[i].fn = fn;
		c->hw[i].pc = pc;
		c->nhw++;
	}
	c->hw[i].samples[r] += samples;
	if (reason != NOT_ISSUED)
		pcstat.samples += samples;
}

/*
 * One launch of function fn of a loaded module on ctx, as PC sampling
 * sees it (when sampling is enabled, not wedged, and started if under
 * start/stop control). The distribution is fixed so tests can sum it:
 * PC i * 0x40 (i = 0..7, clipped into the function's code, 16-byte
 * aligned) gets i + 1 samples of reason {2, 5, 7, 0}[i % 4], and PC 0
 * also 5 samples of reason 11: 41 samples per launch. Those of reason 2
 * (long_scoreboard) are also counted, (i + 1) / 2 of them, under its
 * not-issued twin, which adds no sample. Returns the number of samples
 * collected.
 */
API uint32_t fakecupti_pc_kernel(void *ctx, const char *fn)
{
	static const uint32_t reasons[4] = {2, 5, 7, 0};
	struct pcctx *c;
	uint32_t added = 0;

	pthread_mutex_lock(&pcmu);
	c = pc_find(ctx);
	if (!c || !c->cfg_buf || c->wedged || (c->start_stop && !c->started))
		goto out;
	for (uint32_t m = 0; m < MAX_MODULES; m++) {
		if (!modules[m].used || modules[m].ctx != ctx)
			continue;
		for (uint32_t f = 0; f < modules[m].nfuncs; f++) {
			uint64_t size = modules[m].fn[f].size;

			if (strcmp(modules[m].fn[f].name, fn))
				continue;
			for (uint32_t i = 0; i < 8; i++) {
				uint64_t pc = ((uint64_t)i * 0x40 % size) & ~(uint64_t)0xf;

				hw_add(c, m, f, pc, reasons[i % 4], i + 1);
				if (reasons[i % 4] == 2 && (i + 1) / 2)
					hw_add(c, m, f, pc, NOT_ISSUED, (i + 1) / 2);
				added += i + 1;
			}
			hw_add(c, m, f, 0, 11, 5);
			added += 5;
			goto out;
		}
	}
out:
	pthread_mutex_unlock(&pcmu);
	return added;
}

/* FAKE_CUPTI_PC_REPORT=1: what the client did, on stderr at exit */
__attribute__((destructor)) static void pc_report(void)
{
	if (env_int("FAKE_CUPTI_PC_REPORT", 0))
		fprintf(stderr,
			"fakecupti pc: enable %llu disable %llu start %llu stop %llu getdata %llu "
			"samples %llu fresh_names %llu period %u\n",
			(unsigned long long)pcstat.enable, (unsigned long long)pcstat.disable,
			(unsigned long long)pcstat.start, (unsigned long long)pcstat.stop,
			(unsigned long long)pcstat.getdata, (unsigned long long)pcstat.samples,
			(unsigned long long)shared_fresh, pcstat.period);
}

/* FAKE_CUPTI_DUTY_REPORT=1: the switching a duty cycle did, on stderr at
 * exit; kernels: kernel records the driver made, kernels_off: those made
 * while the kernel kind was off (so never recorded) */
__attribute__((destructor)) static void duty_report(void)
{
	if (env_int("FAKE_CUPTI_DUTY_REPORT", 0))
		fprintf(stderr,
			"fakecupti duty: kind_enable %llu kind_disable %llu cb_on %llu cb_off %llu "
			"kernels %llu kernels_off %llu subscribes %llu unsubscribes %llu "
			"calls_unsubscribed %llu\n",
			(unsigned long long)duty.kind_enable, (unsigned long long)duty.kind_disable,
			(unsigned long long)duty.cb_on, (unsigned long long)duty.cb_off,
			(unsigned long long)duty.kernels, (unsigned long long)duty.kernels_off,
			(unsigned long long)duty.subs, (unsigned long long)duty.unsubs,
			(unsigned long long)duty.calls_unsub);
}
