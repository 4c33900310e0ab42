/* SPDX-License-Identifier: MIT */
/*
 * The control interface of the stand-in libcupti.so.13 (fake_cupti.c),
 * through which the fake CUDA driver (tests/gpu/fake_cuda.c) plays what
 * the real driver does to CUPTI: API callbacks on the calling thread and
 * activity records for the work it "runs". Plain C, no CUDA types, so
 * that the fake driver builds without a CUDA toolkit.
 *
 * Test modes (environment of the process, read by the stand-in):
 *   FAKE_CUPTI_SUBSCRIBER=NAME  another tool named NAME already holds
 *                               CUPTI: cuptiSubscribe* return 39 and
 *                               cuptiSubscribe_v2 reports NAME
 *   FAKE_CUPTI_FAIL_KIND=K[,K]  cuptiActivityEnable(K) returns 35
 *                               (INSUFFICIENT_PRIVILEGES); K are
 *                               CUpti_ActivityKind numbers (10 kernel,
 *                               1 memcpy, 2 memset, 38 sync, 36 CUDA
 *                               event, 51 graph, 12 marker)
 *   FAKE_CUPTI_NO_TIMESTAMP_CB=1  cuptiActivityRegisterTimestampCallback
 *                               fails: timestamps stay CLOCK_REALTIME
 *   FAKE_CUPTI_DROPPED=N        cuptiActivityGetNumDroppedRecords reports
 *                               N once (then 0), on top of real drops
 *                               (a record is dropped when the client
 *                               declines a buffer)
 * Every 7th kernel record (from the first) is preceded by an OVERHEAD
 * record, a kind the client did not ask for and must skip.
 *   FAKE_CUPTI_DEVICE=N         kernels, copies, sets and graph launches
 *                               ran on CUDA device N (default 0)
 *   FAKE_CUPTI_BUFFER_MS=MS     the stand-in's worker hands back the
 *                               current buffer every MS ms (default 50)
 *   FAKE_CUPTI_RECORDS_PER_BUFFER=N  a buffer is handed back after N
 *                               records (so buffers run out quickly)
 *   FAKE_CUPTI_PC_FAIL=R        cuptiPCSamplingEnable returns R (e.g. 35)
 *   FAKE_CUPTI_PC_OOM_AT=N      the Nth cuptiPCSamplingGetData (from 1)
 *                               with samples to hand out finds the hardware buffer full: OOM,
 *                               hardwareBufferFull, the samples lost, and
 *                               the context wedged until disabled and
 *                               enabled again
 *   FAKE_CUPTI_PC_PER_CALL=N    GetData hands out at most N PCs per call
 *   FAKE_CUPTI_PC_REPORT=1      at exit, on stderr: "fakecupti pc: enable
 *                               E disable D start S stop T getdata G
 *                               samples N"
 *   FAKE_CUPTI_DUTY_REPORT=1    at exit, on stderr: "fakecupti duty:
 *                               kind_enable E kind_disable D cb_on A
 *                               cb_off B kernels K kernels_off O" (driver
 *                               and runtime callback switches; kernels
 *                               made while their kind was off)
 *                               "subscribes S unsubscribes U
 *                               calls_unsubscribed C" (subscriptions
 *                               taken and let go by any subscriber; API
 *                               calls entered while none was held)
 *   FAKE_CUPTI_FATAL_AT=N       before the Nth kernel record (from 0):
 *                               the STATE domain's FATAL_ERROR callback,
 *                               then CUPTI is finalized (no more callbacks
 *                               or records)
 */
#ifndef GPUPROF_TESTS_FAKECUPTI_H
#define GPUPROF_TESTS_FAKECUPTI_H

#include <stddef.h>
#include <stdint.h>

/* callback ids the fake driver reports (checked against cupti_driver_cbid.h
 * in fake_cupti.c) */
#define FAKE_CBID_cuCtxSynchronize 17
#define FAKE_CBID_cuStreamSynchronize 126
#define FAKE_CBID_cuMemsetD8_v2 249
#define FAKE_CBID_cuMemsetD32_v2 251
#define FAKE_CBID_cuMemcpyHtoD_v2 276
#define FAKE_CBID_cuMemcpyHtoDAsync_v2 277
#define FAKE_CBID_cuMemcpyDtoH_v2 278
#define FAKE_CBID_cuMemcpyDtoD_v2 280
#define FAKE_CBID_cuLaunchKernel 307
#define FAKE_CBID_cuLaunchKernel_ptsz 442
#define FAKE_CBID_cuLaunchCooperativeKernel 477
#define FAKE_CBID_cuGraphLaunch 514
#define FAKE_CBID_cuLaunchKernelEx 652
#define FAKE_CBID_cuEventRecord 119
#define FAKE_CBID_cuEventSynchronize 121
#define FAKE_CBID_cuStreamWaitEvent 295
/* runtime callback ids (cupti_runtime_cbid.h) of the runtime calls the
 * fake driver plays */
#define FAKE_RT_CBID_cudaEventRecord_v3020 135
#define FAKE_RT_CBID_cudaEventSynchronize_v3020 137
#define FAKE_RT_CBID_cudaStreamWaitEvent_v3020 147
#define FAKE_DOMAIN_RUNTIME 2 /* CUPTI_CB_DOMAIN_RUNTIME_API */

/* One driver (or runtime) call in flight: the fake driver keeps it on its
 * stack from ENTER to EXIT (corr_data is CUPTI's correlationData for the
 * call). */
struct fakecupti_call {
	uint32_t cbid;
	uint32_t domain; /* 0: the driver's; FAKE_DOMAIN_RUNTIME: a runtime call */
	uint32_t corr;	 /* set by fakecupti_api_enter: a fresh correlation id,
			  * unless already set (a driver call made by a runtime
			  * call shares the runtime call's) */
	const char *name;
	int32_t result; /* the call's CUresult, set before EXIT */
	uint64_t corr_data;
};

/* ENTER / EXIT callbacks (driver domain), when a subscriber enabled the cbid */
void fakecupti_api_enter(struct fakecupti_call *c);
void fakecupti_api_exit(struct fakecupti_call *c);
/* Activity records, queued "now" on the stream (a stream runs its work in
 * order: a record starts when the stream's previous one ended) */
void fakecupti_kernel(uint32_t corr, const char *name, uint64_t dur_ns, const uint32_t grid[3],
		      const uint32_t block[3], uint32_t stream);
void fakecupti_memcpy(uint32_t corr, uint8_t copy_kind, uint64_t bytes, uint64_t dur_ns,
		      uint32_t stream, int async);
void fakecupti_memset(uint32_t corr, uint32_t value, uint64_t bytes, uint64_t dur_ns,
		      uint32_t stream);
void fakecupti_sync(uint32_t corr, uint32_t type, uint32_t stream, uint64_t dur_ns);
void fakecupti_graph(uint32_t corr, uint32_t graph_id, uint32_t stream, uint64_t dur_ns);
/* A CUDA event recorded on stream (a CUDA_EVENT record): it completes when
 * the stream's work queued so far does. */
void fakecupti_cuda_event(uint32_t corr, uint32_t event, uint32_t stream);
/* A sync on a CUDA event (type 1 event synchronize, 2 stream wait event),
 * called inside the sync's call: a stream wait holds stream's later work
 * until the event completes; an event synchronize lasts until it completes
 * (and returns only then). */
void fakecupti_sync_event(uint32_t corr, uint32_t type, uint32_t event, uint32_t stream,
			  uint64_t dur_ns);
/* NVTX as CUPTI records it (Route A): flags 1 instant, 2 start, 4 end */
void fakecupti_marker(uint32_t flags, uint32_t id, const char *name, const char *domain,
		      uint32_t tid);

/* Resources (RESOURCE domain callbacks, when enabled): a context created
 * (it becomes the API callbacks' context) or about to go; a module (a real
 * cubin: its FUNC symbols are the functions PC samples name) loaded or
 * about to unload. */
void fakecupti_context(void *ctx, int create);
void fakecupti_module(void *ctx, uint32_t id, const void *cubin, size_t size, int load);
/* PC sampling of one launch of function fn (fixed distribution: see
 * fake_cupti.c): the number of samples the "hardware" took, 0 when not
 * sampling. */
uint32_t fakecupti_pc_kernel(void *ctx, const char *fn);

typedef void (*fakecupti_call_fn)(struct fakecupti_call *);

#endif
