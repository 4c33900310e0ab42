// SPDX-License-Identifier: MIT
/*
 * Table-driven classification of Kineto events: category → kind, runtime
 * call name → flags, cuda_sync name → sync kind. The HTA name sets are
 * copied exactly (its launch, queue and critical-path sets); the vendor-neutral TL_EV_LAUNCH_ANY
 * set also covers Intel XPU (Level Zero "ze*", Unified Runtime "ur*", old
 * SYCL PI "pi*") which HTA does not recognise. Add rows here, not code.
 */
#include <string.h>

#include "timeline_int.h"

struct cat_row {
	const char *cat;
	uint8_t kind;
};

static const struct cat_row cats[] = {
	{"cpu_op", TL_K_CPU_OP},
	{"user_annotation", TL_K_USER_ANNOTATION},
	{"gpu_user_annotation", TL_K_GPU_USER_ANNOTATION},
	{"python_function", TL_K_PYTHON_FUNCTION},
	{"cuda_runtime", TL_K_RUNTIME}, /* ROCm Kineto reuses it for hip* calls */
	{"xpu_runtime", TL_K_RUNTIME},
	{"hip_runtime", TL_K_RUNTIME},
	{"mtia_runtime", TL_K_RUNTIME},
	{"privateuse1_runtime", TL_K_RUNTIME},
	{"cuda_driver", TL_K_DRIVER},
	{"xpu_driver", TL_K_DRIVER},
	{"privateuse1_driver", TL_K_DRIVER},
	{"kernel", TL_K_KERNEL},
	{"Kernel", TL_K_KERNEL},
	{"gpu_memcpy", TL_K_MEMCPY},
	{"Memcpy", TL_K_MEMCPY},
	{"gpu_memset", TL_K_MEMSET},
	{"Memset", TL_K_MEMSET},
	{"cuda_sync", TL_K_SYNC},
	{"cuda_profiler_range", TL_K_PROFILER_RANGE},
};

struct name_row {
	const char *name;
	uint32_t flags;
};

#define LS TL_EV_LAUNCH_STATS
#define MA TL_EV_MEM_ASYNC
#define LQ TL_EV_LAUNCH_QUEUE
#define BL TL_EV_BLOCKING
#define RL TL_EV_RUNTIME_LOCK
#define LA TL_EV_LAUNCH_ANY

static const struct name_row names[] = {
	/* CUDA runtime / driver */
	{"cudaLaunchKernel", LS | LQ | RL | LA},
	{"cudaLaunchKernelExC", LS | LQ | LA},
	{"cuLaunchKernel", LQ | LA},
	{"cuLaunchKernelEx", LQ | LA},
	{"cudaMemcpyAsync", MA | LQ | BL | RL | LA},
	{"cudaMemsetAsync", MA | LQ | LA},
	{"cudaMemcpy", BL},
	{"cudaHostAlloc", RL},
	{"cudaDeviceSynchronize", BL | TL_EV_DEVICE_SYNC_CALL},
	{"cudaStreamSynchronize", BL | TL_EV_STREAM_SYNC_CALL},
	{"cudaEventQuery", BL},
	{"cudaEventSynchronize", BL | TL_EV_EVENT_SYNC_CALL},
	{"cudaEventRecord", TL_EV_EVENT_RECORD},
	{"cudaEventRecordWithFlags", 0},
	{"cudaStreamWaitEvent", TL_EV_STREAM_WAIT_EVENT},
	{"runFunction - job_prep_and_submit_for_execution", LS | LQ | LA},
	/* ROCm (HIP) */
	{"hipLaunchKernel", LQ | LA},
	{"hipExtModuleLaunchKernel", LQ | LA},
	{"hipModuleLaunchKernel", LA},
	{"hipMemsetAsync", LQ | LA},
	{"hipMemcpyAsync", LQ | LA},
	{"hipMemcpyWithStream", LQ | LA},
	/* Intel XPU: Unified Runtime, Level Zero, SYCL PI */
	{"urEnqueueKernelLaunch", LA},
	{"urEnqueueKernelLaunchExp", LA},
	{"urEnqueueKernelLaunchCustomExp", LA},
	{"urEnqueueUSMMemcpy", LA},
	{"urEnqueueUSMMemcpy2D", LA},
	{"urEnqueueUSMFill", LA},
	{"urEnqueueUSMFill2D", LA},
	{"urEnqueueMemBufferCopy", LA},
	{"urEnqueueMemBufferFill", LA},
	{"zeCommandListAppendLaunchKernel", LA},
	{"zeCommandListAppendLaunchCooperativeKernel", LA},
	{"zeCommandListAppendMemoryCopy", LA},
	{"zeCommandListAppendMemoryFill", LA},
	{"piEnqueueKernelLaunch", LA},
	{"piextUSMEnqueueMemcpy", LA},
	{"piextUSMEnqueueMemset", LA},
};

#undef LS
#undef MA
#undef LQ
#undef BL
#undef RL
#undef LA

static bool eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

uint8_t tl_kind_from_cat(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
		if (eq(s, n, cats[i].cat))
			return cats[i].kind;
	return TL_K_OTHER;
}

uint32_t tl_flags_from_name(const char *s, size_t n)
{
	uint32_t f = 0;

	/* re.match("^ProfilerStep#(\d+)"): prefix then at least one digit. */
	if (n > 13 && !memcmp(s, "ProfilerStep#", 13) && s[13] >= '0' && s[13] <= '9')
		f |= TL_EV_PROFILER_STEP;
	if (n < 6 || n > 64)
		return f;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (eq(s, n, names[i].name))
			return f | names[i].flags;
	return f;
}

uint8_t tl_sync_from_name(const char *s, size_t n)
{
	if (eq(s, n, "Stream Sync"))
		return TL_SYNC_STREAM;
	if (eq(s, n, "Event Sync"))
		return TL_SYNC_EVENT;
	if (eq(s, n, "Context Sync"))
		return TL_SYNC_CONTEXT;
	if (eq(s, n, "Stream Wait Event"))
		return TL_SYNC_STREAM_WAIT;
	return TL_SYNC_NONE;
}
