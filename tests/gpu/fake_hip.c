// SPDX-License-Identifier: MIT
/*
 * A fake HIP runtime (libamdhip64.so): the real exported entry points with
 * their real signatures (hip_runtime_api.h, hip/amd_detail), doing no GPU
 * work. __hipRegisterFunction is what hipcc's generated constructors call
 * to tell the runtime each host stub's device function name.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct fake_fn *hipFunction_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;

typedef struct {
	uint32_t x, y, z;
} dim3;

struct fake_fn {
	char name[128];
};

#define API __attribute__((visibility("default"), noinline))

volatile uint64_t fake_hip_launches, fake_hip_sum;

API void __hipRegisterFunction(void **modules, const void *hostFunction, char *deviceFunction,
			       const char *deviceName, unsigned int threadLimit, void *tid,
			       void *bid, dim3 *blockDim, dim3 *gridDim, int *wSize)
{
	(void)modules, (void)threadLimit, (void)tid, (void)bid, (void)blockDim, (void)gridDim,
		(void)wSize;
	/* The real runtime keeps a copy of the name: it reads it. */
	fake_hip_sum += (uintptr_t)hostFunction + strlen(deviceName ? deviceName : deviceFunction);
}

API hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module,
				    const char *kname)
{
	struct fake_fn *f;

	(void)module;
	if (!function || !kname)
		return 1; /* hipErrorInvalidValue */
	f = calloc(1, sizeof(*f));
	if (!f)
		return 2;
	strncpy(f->name, kname, sizeof(f->name) - 1);
	*function = f;
	return 0;
}

API hipError_t hipLaunchKernel(const void *function_address, dim3 numBlocks, dim3 dimBlocks,
			       void **args, size_t sharedMemBytes, hipStream_t stream)
{
	(void)args, (void)sharedMemBytes;
	fake_hip_launches++;
	fake_hip_sum += (uintptr_t)function_address + numBlocks.x * dimBlocks.x + (uintptr_t)stream;
	return 0;
}

API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gridDimX,
				     unsigned int gridDimY, unsigned int gridDimZ,
				     unsigned int blockDimX, unsigned int blockDimY,
				     unsigned int blockDimZ, unsigned int sharedMemBytes,
				     hipStream_t stream, void **kernelParams, void **extra)
{
	(void)sharedMemBytes, (void)kernelParams, (void)extra;
	if (!f)
		return 400;
	fake_hip_launches++;
	fake_hip_sum += (uint64_t)gridDimX * gridDimY * gridDimZ * blockDimX * blockDimY *
			blockDimZ + (uintptr_t)stream;
	return 0;
}
