/* SPDX-License-Identifier: MIT */
/* The CUPTI functions the library calls, resolved with dlsym (cuptilib.c). */
#ifndef GPUPROF_INJECT_CUPTILIB_H
#define GPUPROF_INJECT_CUPTILIB_H

#include <cupti.h>

#include "inject.h"

#define CL_FN(name) __typeof__(name) *name
struct cuptilib {
	void *handle;
	/* required */
	CL_FN(cuptiGetVersion);
	CL_FN(cuptiSubscribe);
	CL_FN(cuptiUnsubscribe);
	CL_FN(cuptiEnableCallback);
	CL_FN(cuptiActivityRegisterCallbacks);
	CL_FN(cuptiActivityEnable);
	CL_FN(cuptiActivityDisable);
	CL_FN(cuptiActivityFlushAll);
	CL_FN(cuptiActivityGetNextRecord);
	CL_FN(cuptiActivityGetNumDroppedRecords);
	/* optional (NULL when absent) */
	CL_FN(cuptiSubscribe_v2);
	CL_FN(cuptiActivitySetAttribute);
	CL_FN(cuptiActivityRegisterTimestampCallback);
};
#undef CL_FN

/* callbacks.c: the API callback and enabling its cbids (a CUptiResult) */
void CUPTIAPI gpi_api_cb(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			 const void *data);
int callbacks_enable(CUpti_SubscriberHandle sub);
/* the same cbids on (1) or off (0): a CUptiResult */
int callbacks_set(CUpti_SubscriberHandle sub, int on);
/* cupti.c: CUPTI reported a fatal error and finalized itself */
void gpi_cupti_fatal(CUptiResult r);
/* cupti.c: set when the subscription is to go: our callbacks then do
 * nothing; gpi_cb_inflight counts the callbacks of ours running now
 * (the rule between the two: gpi_cupti_release_poll) */
extern _Atomic int gpi_release_pending;
extern _Atomic int gpi_cb_inflight;
#endif
