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
	CUpti_CallbackData cd;
	CUpti_CallbackFunc cb;
	void *ud;

	if (!subscriber.used || c->cbid >= MAX_CBID ||
	    !subscriber.on[CUPTI_CB_DOMAIN_DRIVER_API][c->cbid])
		return;
	cb = subscriber.cb;
	ud = subscriber.ud;
	memset(&cd, 0, sizeof(cd));
	cd.callbackSite = site;
	cd.functionName = c->name;
	cd.correlationId = c->corr;
	cd.correlationData = &c->corr_data;
	cd.functionReturnValue = site == CUPTI_API_EXIT ? &c->result : NULL;
	cb(ud, CUPTI_CB_DOMAIN_DRIVER_API, c->cbid, &cd);
}

API void fakecupti_api_enter(struct fakecupti_call *c)
{
	c->corr = __atomic_fetch_add(&next_corr, 1, __ATOMIC_RELAXED);
	c->corr_data = 0;
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
	pthread_mutex_unlock(&mu);
	return CUPTI_SUCCESS;
}

API CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
	if (k <= 0 || k >= CUPTI_ACTIVITY_KIND_COUNT)
		return CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&mu);
	kind_on[k] = 0;
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
	k.deviceId = 0;
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

API void fakecupti_graph(uint32_t corr, uint32_t graph_id, uint32_t stream, uint64_t dur_ns)
{
	CUpti_ActivityGraphTrace2 g;

	memset(&g, 0, sizeof(g));
	g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
	g.correlationId = corr;
	schedule(stream, dur_ns, &g.start, &g.end);
	g.graphId = graph_id;
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
