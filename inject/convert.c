// SPDX-License-Identifier: MIT
/*
 * CUPTI activity records -> wire records, on the sender thread. Records
 * are walked with cuptiActivityGetNextRecord only (their sizes differ by
 * kind and CUPTI version); kinds we do not know are skipped. Field
 * layouts are those of CUPTI 13 (cuptilib.c refuses other majors).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuptilib.h"

#define MARKS_N 1024u /* open NVTX ranges remembered (START without END yet) */

static int64_t time_off; /* CLOCK_MONOTONIC - CUPTI's clock, when not ours */

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

/* CUPTI's default clock is CLOCK_REALTIME: the offset is measured per
 * buffer so that a clock step moves at most one buffer's worth. */
static void measure_offset(void)
{
	struct timespec r, m;

	if (gpi.mono)
		return;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	time_off = (int64_t)(ts_ns(&m) - ts_ns(&r));
}

static uint64_t to_mono(uint64_t ns)
{
	return ns && !gpi.mono ? (uint64_t)((int64_t)ns + time_off) : ns;
}

static void kernel(const CUpti_ActivityKernel10 *k)
{
	uint32_t name;
	struct gpi_kernel *g;

	/* no timestamp: device memory was short, or a forced flush */
	if (!k->start && !k->end)
		return;
	name = emit_const_string(k->name); /* shared by CUPTI, constant */
	if (!(g = emit(GPI_KERNEL, sizeof(*g))))
		return;
	g->start = to_mono(k->start);
	g->end = to_mono(k->end);
	g->corr = k->correlationId;
	g->name = name;
	g->device = k->deviceId;
	g->context = k->contextId;
	g->stream = k->streamId;
	g->grid[0] = (uint32_t)k->gridX, g->grid[1] = (uint32_t)k->gridY;
	g->grid[2] = (uint32_t)k->gridZ;
	g->block[0] = (uint32_t)k->blockX, g->block[1] = (uint32_t)k->blockY;
	g->block[2] = (uint32_t)k->blockZ;
	g->static_smem = (uint32_t)k->staticSharedMemory;
	g->dynamic_smem = (uint32_t)k->dynamicSharedMemory;
	g->local_mem = k->localMemoryPerThread;
	g->regs = k->registersPerThread;
	g->flags = k->isDeviceLaunched ? GPI_KF_DEVICE_LAUNCHED : 0;
	g->graph_id = k->graphId;
	g->graph_node = k->graphNodeId;
}

static void memcpy_rec(const CUpti_ActivityMemcpy6 *m)
{
	struct gpi_memcpy *g = emit(GPI_MEMCPY, sizeof(*g));

	if (!g)
		return;
	g->start = to_mono(m->start);
	g->end = to_mono(m->end);
	g->bytes = m->bytes;
	g->corr = m->correlationId;
	g->device = g->src_device = g->dst_device = m->deviceId;
	g->context = m->contextId;
	g->stream = m->streamId;
	g->copy_kind = m->copyKind;
	g->src_kind = m->srcKind;
	g->dst_kind = m->dstKind;
	g->flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? GPI_MF_ASYNC : 0;
	g->graph_id = m->graphId;
}

static void memcpy_p2p(const CUpti_ActivityMemcpyPtoP4 *m)
{
	struct gpi_memcpy *g = emit(GPI_MEMCPY, sizeof(*g));

	if (!g)
		return;
	g->start = to_mono(m->start);
	g->end = to_mono(m->end);
	g->bytes = m->bytes;
	g->corr = m->correlationId;
	g->device = m->deviceId;
	g->src_device = m->srcDeviceId;
	g->dst_device = m->dstDeviceId;
	g->context = m->contextId;
	g->stream = m->streamId;
	g->copy_kind = m->copyKind;
	g->src_kind = m->srcKind;
	g->dst_kind = m->dstKind;
	g->flags = GPI_MF_P2P | ((m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? GPI_MF_ASYNC : 0);
	g->graph_id = m->graphId;
}

static void memset_rec(const CUpti_ActivityMemset4 *m)
{
	struct gpi_memset *g = emit(GPI_MEMSET, sizeof(*g));

	if (!g)
		return;
	g->start = to_mono(m->start);
	g->end = to_mono(m->end);
	g->bytes = m->bytes;
	g->corr = m->correlationId;
	g->device = m->deviceId;
	g->context = m->contextId;
	g->stream = m->streamId;
	g->value = m->value;
	g->mem_kind = (uint8_t)m->memoryKind;
	g->flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? GPI_MF_ASYNC : 0;
	g->graph_id = m->graphId;
}

static void sync_rec(const CUpti_ActivitySynchronization2 *s)
{
	struct gpi_sync *g = emit(GPI_SYNC, sizeof(*g));

	if (!g)
		return;
	g->start = to_mono(s->start);
	g->end = to_mono(s->end);
	g->corr = s->correlationId;
	g->type = s->type;
	g->context = s->contextId;
	g->stream = s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? GPI_NO_STREAM
								       : s->streamId;
	g->event = s->cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->cudaEventId;
}

/* The entry times of the latest cudaEventRecord calls by correlation id
 * (direct-mapped: a slot reused by a newer call loses the older one). The
 * call's callback comes before CUPTI hands over the record it made, and
 * the sender drains the API records before the buffers. */
#define RECORD_CALLS 1024u
static struct {
	uint32_t corr;
	uint64_t enter;
} record_calls[RECORD_CALLS];

static int is_event_record(const struct api_ev *ev)
{
	if (ev->domain != GPI_API_RUNTIME)
		return 0;
	switch (ev->cbid) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010:
	case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010:
		return 1;
	}
	return 0;
}

void convert_api_seen(const struct api_ev *ev)
{
	if (ev->corr && is_event_record(ev)) {
		record_calls[ev->corr % RECORD_CALLS].corr = ev->corr;
		record_calls[ev->corr % RECORD_CALLS].enter = ev->enter;
	}
}

static void cuda_event(const CUpti_ActivityCudaEvent2 *e)
{
	uint32_t slot = e->correlationId % RECORD_CALLS;
	struct gpi_cuda_event *g = emit(GPI_CUDA_EVENT, sizeof(*g));

	if (!g)
		return;
	/* CUPTI times the record only on the device, and only when asked */
	g->time = e->correlationId && record_calls[slot].corr == e->correlationId
			  ? record_calls[slot].enter
			  : gpi_now();
	g->corr = e->correlationId;
	g->event = e->eventId;
	g->device = e->deviceId;
	g->context = e->contextId;
	g->stream = e->streamId;
}

static void graph_rec(const CUpti_ActivityGraphTrace2 *t)
{
	struct gpi_graph *g = emit(GPI_GRAPH, sizeof(*g));

	if (!g)
		return;
	g->start = to_mono(t->start);
	g->end = to_mono(t->end);
	g->corr = t->correlationId;
	g->device = t->deviceId;
	g->context = t->contextId;
	g->stream = t->streamId;
	g->graph_id = t->graphId;
}

/* NVTX: START records carry the name, END records only the id; a range
 * becomes one gpi_marker when its END arrives. The texts are copied at
 * START (the record's pointers are CUPTI's) and interned at END, which
 * may be on another connection than the START. */
static struct mark {
	uint32_t id; /* 0 free */
	uint32_t tid;
	uint64_t start;
	char *name, *domain;
} marks[MARKS_N];

static uint32_t marker_tid(const CUpti_ActivityMarker2 *m)
{
	return m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;
}

static void marker_out(uint64_t start, uint64_t end, uint32_t tid, const char *name,
		       const char *domain, uint32_t flags)
{
	uint32_t dom_id = emit_string_first_of_two(domain), name_id = emit_string(name);
	struct gpi_marker *g = emit(GPI_MARKER, sizeof(*g));

	if (!g)
		return;
	g->start = start;
	g->end = end;
	g->tid = tid;
	g->name = name_id;
	g->domain = dom_id;
	g->flags = flags;
}

static void mark_clear(struct mark *s)
{
	free(s->name);
	free(s->domain);
	memset(s, 0, sizeof(*s));
}

static char *copy_text(const char *t)
{
	return t ? strndup(t, GPI_STRING_MAX) : NULL;
}

static void marker(const CUpti_ActivityMarker2 *m)
{
	struct mark *s = &marks[m->id & (MARKS_N - 1)];
	uint64_t t = to_mono(m->timestamp);

	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
		marker_out(t, t, marker_tid(m), m->name, m->domain, GPI_MK_INSTANT);
	} else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		mark_clear(s); /* an older range never ended, or a collision */
		s->id = m->id;
		s->tid = marker_tid(m);
		s->start = t;
		s->name = copy_text(m->name);
		s->domain = copy_text(m->domain);
	} else if ((m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) && m->id && s->id == m->id) {
		marker_out(s->start, t, s->tid, s->name, s->domain, GPI_MK_RANGE);
		mark_clear(s);
	}
}

static void one(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		kernel((const CUpti_ActivityKernel10 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		memcpy_rec((const CUpti_ActivityMemcpy6 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		memcpy_p2p((const CUpti_ActivityMemcpyPtoP4 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		memset_rec((const CUpti_ActivityMemset4 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		sync_rec((const CUpti_ActivitySynchronization2 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
		cuda_event((const CUpti_ActivityCudaEvent2 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
		graph_rec((const CUpti_ActivityGraphTrace2 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_MARKER:
		marker((const CUpti_ActivityMarker2 *)r);
		break;
	default:
		break;
	}
}

void convert_buffer(uint8_t *buf, size_t valid)
{
	CUpti_Activity *r = NULL;
	size_t dropped = 0;
	CUptiResult res;

	measure_offset();
	while ((res = cl->cuptiActivityGetNextRecord(buf, valid, &r)) == CUPTI_SUCCESS) {
		atomic_fetch_add_explicit(&gpi.n.records, 1, memory_order_relaxed);
		one(r);
	}
	/* MAX_LIMIT_REACHED: the end; INVALID_KIND: an incomplete record
	 * (a forced flush) ends the buffer too */
	if (res != CUPTI_ERROR_MAX_LIMIT_REACHED && res != CUPTI_ERROR_INVALID_KIND)
		gpi_fail(0, res);
	if (cl->cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped)
		atomic_fetch_add_explicit(&gpi.n.cupti_dropped, dropped, memory_order_relaxed);
}
