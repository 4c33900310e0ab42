// SPDX-License-Identifier: MIT
/*
 * A fake Level Zero loader: the real exported entry points with their real
 * signatures (ze_api.h), doing no GPU work. Built as libze_loader.so.1 so
 * the daemon's library watcher finds it like the real one. With
 * -DFAKE_ZE_WITH_NEO, launches go on to a fake NEO (libze_intel_gpu.so.1,
 * fake_neo.c) that fires the level_zero:launch_kernel USDT like iaprof's
 * patched compute-runtime.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int ze_result_t;
typedef struct _ze_command_list_handle_t *ze_command_list_handle_t;
typedef struct _ze_module_handle_t *ze_module_handle_t;
typedef struct _ze_event_handle_t *ze_event_handle_t;
typedef struct fake_kernel *ze_kernel_handle_t;

typedef struct {
	uint32_t stype;
	const void *pNext;
	uint32_t flags;
	const char *pKernelName;
} ze_kernel_desc_t;

typedef struct {
	uint32_t groupCountX, groupCountY, groupCountZ;
} ze_group_count_t;

typedef struct {
	uint32_t groupSizeX, groupSizeY, groupSizeZ;
} ze_group_size_t;

struct fake_kernel {
	char name[128];
	uint32_t gs[3];
};

#define API __attribute__((visibility("default"), noinline))

/* Work the optimizer cannot drop: every entry point is a real function
 * with its own frame, as in the real loader. */
volatile uint64_t fake_ze_launches;

#ifdef FAKE_ZE_WITH_NEO
void fake_neo_append_launch(const char *name, uint64_t gpu_addr, uint64_t size);
#endif

static void launch(ze_kernel_handle_t k)
{
	fake_ze_launches++;
#ifdef FAKE_ZE_WITH_NEO
	fake_neo_append_launch(k->name, 0xff0000000000ull + ((uintptr_t)k & 0xffffff), 4096);
#else
	(void)k;
#endif
}

API ze_result_t zeKernelCreate(ze_module_handle_t hModule, const ze_kernel_desc_t *desc,
			       ze_kernel_handle_t *phKernel)
{
	struct fake_kernel *k;

	(void)hModule;
	if (!desc || !desc->pKernelName || !phKernel)
		return 0x78000004; /* ZE_RESULT_ERROR_INVALID_NULL_POINTER */
	k = calloc(1, sizeof(*k));
	if (!k)
		return 0x70000002; /* ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY */
	strncpy(k->name, desc->pKernelName, sizeof(k->name) - 1);
	*phKernel = k;
	return 0;
}

API ze_result_t zeKernelSetGroupSize(ze_kernel_handle_t hKernel, uint32_t x, uint32_t y,
				     uint32_t z)
{
	hKernel->gs[0] = x;
	hKernel->gs[1] = y;
	hKernel->gs[2] = z;
	return 0;
}

API ze_result_t zeKernelDestroy(ze_kernel_handle_t hKernel)
{
	free(hKernel);
	return 0;
}

API ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t hCommandList,
						ze_kernel_handle_t hKernel,
						const ze_group_count_t *pLaunchFuncArgs,
						ze_event_handle_t hSignalEvent,
						uint32_t numWaitEvents,
						ze_event_handle_t *phWaitEvents)
{
	(void)hCommandList, (void)pLaunchFuncArgs, (void)hSignalEvent, (void)numWaitEvents,
		(void)phWaitEvents;
	launch(hKernel);
	return 0;
}

API ze_result_t zeCommandListAppendLaunchCooperativeKernel(
	ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	const ze_group_count_t *pLaunchFuncArgs, ze_event_handle_t hSignalEvent,
	uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents)
{
	(void)hCommandList, (void)pLaunchFuncArgs, (void)hSignalEvent, (void)numWaitEvents,
		(void)phWaitEvents;
	launch(hKernel);
	return 0;
}

API ze_result_t zeCommandListAppendLaunchKernelIndirect(
	ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	const ze_group_count_t *pLaunchArgumentsBuffer, ze_event_handle_t hSignalEvent,
	uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents)
{
	(void)hCommandList, (void)pLaunchArgumentsBuffer, (void)hSignalEvent,
		(void)numWaitEvents, (void)phWaitEvents;
	launch(hKernel);
	return 0;
}

API ze_result_t zeCommandListAppendLaunchKernelWithArguments(
	ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel,
	const ze_group_count_t groupCounts, const ze_group_size_t groupSizes, void **pArguments,
	const void *pNext, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
	ze_event_handle_t *phWaitEvents)
{
	(void)hCommandList, (void)groupCounts, (void)groupSizes, (void)pArguments, (void)pNext,
		(void)hSignalEvent, (void)numWaitEvents, (void)phWaitEvents;
	launch(hKernel);
	return 0;
}
