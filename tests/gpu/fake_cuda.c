// SPDX-License-Identifier: MIT
/*
 * A fake CUDA driver (libcuda.so.1): the real exported entry points with
 * their real signatures (cuda.h), doing no GPU work.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef struct CUmod_st *CUmodule;
typedef struct CUlib_st *CUlibrary;
typedef struct fake_fn *CUfunction;
typedef struct fake_fn *CUkernel;
typedef struct CUstream_st *CUstream;

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

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, CUstream s)
{
	if (!f)
		return 400; /* CUDA_ERROR_INVALID_HANDLE */
	fake_cu_launches++;
	fake_cu_sum += (uint64_t)gx * gy * gz * bx * by * bz + (uintptr_t)s;
	return 0;
}

API CUresult cuLaunchKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY,
			    unsigned gridDimZ, unsigned blockDimX, unsigned blockDimY,
			    unsigned blockDimZ, unsigned sharedMemBytes, CUstream hStream,
			    void **kernelParams, void **extra)
{
	(void)sharedMemBytes, (void)kernelParams, (void)extra;
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

API CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gridDimX, unsigned gridDimY,
				 unsigned gridDimZ, unsigned blockDimX, unsigned blockDimY,
				 unsigned blockDimZ, unsigned sharedMemBytes, CUstream hStream,
				 void **kernelParams, void **extra)
{
	(void)sharedMemBytes, (void)kernelParams, (void)extra;
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

API CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gridDimX, unsigned gridDimY,
				       unsigned gridDimZ, unsigned blockDimX, unsigned blockDimY,
				       unsigned blockDimZ, unsigned sharedMemBytes,
				       CUstream hStream, void **kernelParams)
{
	(void)sharedMemBytes, (void)kernelParams;
	return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream);
}

API CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
			      void **extra)
{
	(void)kernelParams, (void)extra;
	if (!config)
		return 1;
	return launch(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
		      config->blockDimY, config->blockDimZ, config->hStream);
}
