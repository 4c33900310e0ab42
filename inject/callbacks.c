// SPDX-License-Identifier: MIT
/*
 * The API callbacks, on the application's threads: only the calls that
 * put work on the GPU (launches, copies, memsets, graph launches) and the
 * runtime's event and synchronization calls (the CPU ends of the
 * dependencies critical path follows: a cudaEventRecord, the
 * cudaStreamWaitEvent or cudaEventSynchronize that waits on it, a stream
 * or device synchronize), ENTER and EXIT. ENTER keeps its time in CUPTI's per-call correlationData;
 * EXIT pushes one record into the thread's ring. No lock, no allocation
 * (after the thread's first record), no system call: clock_gettime is
 * the vDSO's.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "cuptilib.h"
#include "pcsamp.h"

/* the cbids enabled (cupti_driver_cbid.h, cupti_runtime_cbid.h of 13.0) */
#define D(n) CUPTI_DRIVER_TRACE_CBID_##n
#define R(n) CUPTI_RUNTIME_TRACE_CBID_##n
static const CUpti_CallbackId driver_cbids[] = {
	D(cuGraphLaunch),
	D(cuGraphLaunch_ptsz),
	D(cuLaunch),
	D(cuLaunchCooperativeKernel),
	D(cuLaunchCooperativeKernelMultiDevice),
	D(cuLaunchCooperativeKernel_ptsz),
	D(cuLaunchGrid),
	D(cuLaunchGridAsync),
	D(cuLaunchKernel),
	D(cuLaunchKernelEx),
	D(cuLaunchKernelEx_ptsz),
	D(cuLaunchKernel_ptsz),
	D(cuMemcpy),
	D(cuMemcpy2D),
	D(cuMemcpy2DAsync),
	D(cuMemcpy2DAsync_v2),
	D(cuMemcpy2DAsync_v2_ptsz),
	D(cuMemcpy2DUnaligned),
	D(cuMemcpy2DUnaligned_v2),
	D(cuMemcpy2DUnaligned_v2_ptds),
	D(cuMemcpy2D_v2),
	D(cuMemcpy2D_v2_ptds),
	D(cuMemcpy3D),
	D(cuMemcpy3DAsync),
	D(cuMemcpy3DAsync_v2),
	D(cuMemcpy3DAsync_v2_ptsz),
	D(cuMemcpy3DBatchAsync),
	D(cuMemcpy3DBatchAsync_ptsz),
	D(cuMemcpy3DBatchAsync_v2),
	D(cuMemcpy3DBatchAsync_v2_ptsz),
	D(cuMemcpy3DPeer),
	D(cuMemcpy3DPeerAsync),
	D(cuMemcpy3DPeerAsync_ptsz),
	D(cuMemcpy3DPeer_ptds),
	D(cuMemcpy3D_v2),
	D(cuMemcpy3D_v2_ptds),
	D(cuMemcpyAsync),
	D(cuMemcpyAsync_ptsz),
	D(cuMemcpyAtoA),
	D(cuMemcpyAtoA_v2),
	D(cuMemcpyAtoA_v2_ptds),
	D(cuMemcpyAtoD),
	D(cuMemcpyAtoD_v2),
	D(cuMemcpyAtoD_v2_ptds),
	D(cuMemcpyAtoH),
	D(cuMemcpyAtoHAsync),
	D(cuMemcpyAtoHAsync_v2),
	D(cuMemcpyAtoHAsync_v2_ptsz),
	D(cuMemcpyAtoH_v2),
	D(cuMemcpyAtoH_v2_ptds),
	D(cuMemcpyBatchAsync),
	D(cuMemcpyBatchAsync_ptsz),
	D(cuMemcpyBatchAsync_v2),
	D(cuMemcpyBatchAsync_v2_ptsz),
	D(cuMemcpyDtoA),
	D(cuMemcpyDtoA_v2),
	D(cuMemcpyDtoA_v2_ptds),
	D(cuMemcpyDtoD),
	D(cuMemcpyDtoDAsync),
	D(cuMemcpyDtoDAsync_v2),
	D(cuMemcpyDtoDAsync_v2_ptsz),
	D(cuMemcpyDtoD_v2),
	D(cuMemcpyDtoD_v2_ptds),
	D(cuMemcpyDtoH),
	D(cuMemcpyDtoHAsync),
	D(cuMemcpyDtoHAsync_v2),
	D(cuMemcpyDtoHAsync_v2_ptsz),
	D(cuMemcpyDtoH_v2),
	D(cuMemcpyDtoH_v2_ptds),
	D(cuMemcpyHtoA),
	D(cuMemcpyHtoAAsync),
	D(cuMemcpyHtoAAsync_v2),
	D(cuMemcpyHtoAAsync_v2_ptsz),
	D(cuMemcpyHtoA_v2),
	D(cuMemcpyHtoA_v2_ptds),
	D(cuMemcpyHtoD),
	D(cuMemcpyHtoDAsync),
	D(cuMemcpyHtoDAsync_v2),
	D(cuMemcpyHtoDAsync_v2_ptsz),
	D(cuMemcpyHtoD_v2),
	D(cuMemcpyHtoD_v2_ptds),
	D(cuMemcpyPeer),
	D(cuMemcpyPeerAsync),
	D(cuMemcpyPeerAsync_ptsz),
	D(cuMemcpyPeer_ptds),
	D(cuMemcpy_ptds),
	D(cuMemcpy_v2),
	D(cuMemsetD16),
	D(cuMemsetD16Async),
	D(cuMemsetD16Async_ptsz),
	D(cuMemsetD16_v2),
	D(cuMemsetD16_v2_ptds),
	D(cuMemsetD2D16),
	D(cuMemsetD2D16Async),
	D(cuMemsetD2D16Async_ptsz),
	D(cuMemsetD2D16_v2),
	D(cuMemsetD2D16_v2_ptds),
	D(cuMemsetD2D32),
	D(cuMemsetD2D32Async),
	D(cuMemsetD2D32Async_ptsz),
	D(cuMemsetD2D32_v2),
	D(cuMemsetD2D32_v2_ptds),
	D(cuMemsetD2D8),
	D(cuMemsetD2D8Async),
	D(cuMemsetD2D8Async_ptsz),
	D(cuMemsetD2D8_v2),
	D(cuMemsetD2D8_v2_ptds),
	D(cuMemsetD32),
	D(cuMemsetD32Async),
	D(cuMemsetD32Async_ptsz),
	D(cuMemsetD32_v2),
	D(cuMemsetD32_v2_ptds),
	D(cuMemsetD8),
	D(cuMemsetD8Async),
	D(cuMemsetD8Async_ptsz),
	D(cuMemsetD8_v2),
	D(cuMemsetD8_v2_ptds),
};
static const CUpti_CallbackId runtime_cbids[] = {
	R(cudaGraphLaunch_ptsz_v10000),
	R(cudaGraphLaunch_v10000),
	R(cudaLaunchCooperativeKernelMultiDevice_v9000),
	R(cudaLaunchCooperativeKernel_ptsz_v9000),
	R(cudaLaunchCooperativeKernel_v9000),
	R(cudaLaunchKernelExC_ptsz_v11060),
	R(cudaLaunchKernelExC_v11060),
	R(cudaLaunchKernel_ptsz_v7000),
	R(cudaLaunchKernel_v7000),
	R(cudaLaunch_ptsz_v7000),
	R(cudaLaunch_v3020),
	R(cudaMemcpy2DArrayToArray_ptds_v7000),
	R(cudaMemcpy2DArrayToArray_v3020),
	R(cudaMemcpy2DAsync_ptsz_v7000),
	R(cudaMemcpy2DAsync_v3020),
	R(cudaMemcpy2DFromArrayAsync_ptsz_v7000),
	R(cudaMemcpy2DFromArrayAsync_v3020),
	R(cudaMemcpy2DFromArray_ptds_v7000),
	R(cudaMemcpy2DFromArray_v3020),
	R(cudaMemcpy2DToArrayAsync_ptsz_v7000),
	R(cudaMemcpy2DToArrayAsync_v3020),
	R(cudaMemcpy2DToArray_ptds_v7000),
	R(cudaMemcpy2DToArray_v3020),
	R(cudaMemcpy2D_ptds_v7000),
	R(cudaMemcpy2D_v3020),
	R(cudaMemcpy3DAsync_ptsz_v7000),
	R(cudaMemcpy3DAsync_v3020),
	R(cudaMemcpy3DBatchAsync_ptsz_v12080),
	R(cudaMemcpy3DBatchAsync_ptsz_v13000),
	R(cudaMemcpy3DBatchAsync_v12080),
	R(cudaMemcpy3DBatchAsync_v13000),
	R(cudaMemcpy3DPeerAsync_ptsz_v7000),
	R(cudaMemcpy3DPeerAsync_v4000),
	R(cudaMemcpy3DPeer_ptds_v7000),
	R(cudaMemcpy3DPeer_v4000),
	R(cudaMemcpy3D_ptds_v7000),
	R(cudaMemcpy3D_v3020),
	R(cudaMemcpyArrayToArray_ptds_v7000),
	R(cudaMemcpyArrayToArray_v3020),
	R(cudaMemcpyAsync_ptsz_v7000),
	R(cudaMemcpyAsync_v3020),
	R(cudaMemcpyBatchAsync_ptsz_v12080),
	R(cudaMemcpyBatchAsync_ptsz_v13000),
	R(cudaMemcpyBatchAsync_v12080),
	R(cudaMemcpyBatchAsync_v13000),
	R(cudaMemcpyFromArrayAsync_ptsz_v7000),
	R(cudaMemcpyFromArrayAsync_v3020),
	R(cudaMemcpyFromArray_ptds_v7000),
	R(cudaMemcpyFromArray_v3020),
	R(cudaMemcpyFromSymbolAsync_ptsz_v7000),
	R(cudaMemcpyFromSymbolAsync_v3020),
	R(cudaMemcpyFromSymbol_ptds_v7000),
	R(cudaMemcpyFromSymbol_v3020),
	R(cudaMemcpyPeerAsync_v4000),
	R(cudaMemcpyPeer_v4000),
	R(cudaMemcpyToArrayAsync_ptsz_v7000),
	R(cudaMemcpyToArrayAsync_v3020),
	R(cudaMemcpyToArray_ptds_v7000),
	R(cudaMemcpyToArray_v3020),
	R(cudaMemcpyToSymbolAsync_ptsz_v7000),
	R(cudaMemcpyToSymbolAsync_v3020),
	R(cudaMemcpyToSymbol_ptds_v7000),
	R(cudaMemcpyToSymbol_v3020),
	R(cudaMemcpy_ptds_v7000),
	R(cudaMemcpy_v3020),
	R(cudaMemset2DAsync_ptsz_v7000),
	R(cudaMemset2DAsync_v3020),
	R(cudaMemset2D_ptds_v7000),
	R(cudaMemset2D_v3020),
	R(cudaMemset3DAsync_ptsz_v7000),
	R(cudaMemset3DAsync_v3020),
	R(cudaMemset3D_ptds_v7000),
	R(cudaMemset3D_v3020),
	R(cudaMemsetAsync_ptsz_v7000),
	R(cudaMemsetAsync_v3020),
	R(cudaMemset_ptds_v7000),
	R(cudaMemset_v3020),
	/* events and synchronization */
	R(cudaEventRecord_v3020),
	R(cudaEventRecord_ptsz_v7000),
	R(cudaEventRecordWithFlags_v11010),
	R(cudaEventRecordWithFlags_ptsz_v11010),
	R(cudaStreamWaitEvent_v3020),
	R(cudaStreamWaitEvent_ptsz_v7000),
	R(cudaEventSynchronize_v3020),
	R(cudaStreamSynchronize_v3020),
	R(cudaStreamSynchronize_ptsz_v7000),
	R(cudaDeviceSynchronize_v3020),
};
#undef D
#undef R

static __thread uint32_t my_tid;

static uint32_t tid(void)
{
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid); /* once per thread */
	return my_tid;
}

static int failed(CUpti_CallbackDomain dom, const CUpti_CallbackData *cd)
{
	/* CUresult and cudaError_t are both int-sized enums, 0 = success */
	return cd->functionReturnValue && *(const int *)cd->functionReturnValue != 0;
}

static void api_cb(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cd = data;
	struct api_ev ev;

	if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
		pcsamp_resource(cbid, data);
		return;
	}
	if ((dom != CUPTI_CB_DOMAIN_DRIVER_API && dom != CUPTI_CB_DOMAIN_RUNTIME_API) || !cd)
		return;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API && cd->callbackSite == CUPTI_API_ENTER)
		pcsamp_launch(cd->context); /* a duty cycle's window opens or closes */
	if (!(atomic_load_explicit(&gpi.on, memory_order_relaxed) & GPI_F_API))
		return;
	if (cd->callbackSite == CUPTI_API_ENTER) {
		if (cd->correlationData)
			*cd->correlationData = gpi_now();
		return;
	}
	ev.exit = gpi_now();
	/* 0: the call's ENTER came before our callbacks were on (a duty
	 * window opening mid-call), so its start is unknown. The exit stands
	 * in: the daemon gives a call the latest launch probe before its
	 * start, and this call's probe fired before its exit too. Zeroed after
	 * use, so storage CUPTI reuses for a later call reads as unknown,
	 * never as an old call's start. */
	ev.enter = ev.exit;
	if (cd->correlationData) {
		if (*cd->correlationData)
			ev.enter = *cd->correlationData;
		*cd->correlationData = 0;
	}
	ev.name = cd->functionName;
	ev.corr = cd->correlationId;
	ev.tid = tid();
	ev.cbid = (uint16_t)cbid;
	ev.domain = dom == CUPTI_CB_DOMAIN_DRIVER_API ? GPI_API_DRIVER : GPI_API_RUNTIME;
	ev.failed = (uint8_t)failed(dom, cd);
	apiring_push(&ev);
}

void CUPTIAPI gpi_api_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			 const void *data)
{
	if (dom == CUPTI_CB_DOMAIN_STATE && cbid == CUPTI_CBID_STATE_FATAL_ERROR && data) {
		/* atomics only, and CUPTI is gone with it: no need to count */
		gpi_cupti_fatal(((const CUpti_StateData *)data)->notification.result);
		return;
	}
	/* counted in, then the release checked, both sequentially
	 * consistent: the other half of the rule in gpi_cupti_release_poll
	 * (cupti.c), which lets the subscription go only while no callback
	 * of ours is past this check */
	atomic_fetch_add(&gpi_cb_inflight, 1);
	if (!atomic_load(&gpi_release_pending))
		api_cb(dom, cbid, data);
	atomic_fetch_sub_explicit(&gpi_cb_inflight, 1, memory_order_release);
}

static int enable_list(CUpti_SubscriberHandle sub, uint32_t on, CUpti_CallbackDomain dom,
		       const CUpti_CallbackId *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		CUptiResult r = cl->cuptiEnableCallback(on, sub, dom, ids[i]);

		if (r != CUPTI_SUCCESS)
			return r;
	}
	return 0;
}

int callbacks_set(CUpti_SubscriberHandle sub, int on)
{
	/* cbid by cbid both ways: the domain-wide switch would turn on every
	 * call of the domain, and off the resource callbacks' neighbours */
	int r = enable_list(sub, !!on, CUPTI_CB_DOMAIN_DRIVER_API, driver_cbids,
			    sizeof(driver_cbids) / sizeof(driver_cbids[0]));

	if (!r)
		r = enable_list(sub, !!on, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_cbids,
				sizeof(runtime_cbids) / sizeof(runtime_cbids[0]));
	return r;
}

int callbacks_enable(CUpti_SubscriberHandle sub)
{
	return callbacks_set(sub, 1);
}
