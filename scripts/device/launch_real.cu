// SPDX-License-Identifier: MIT
// A real CUDA program for scripts/device/cuda_check.sh: launches two kernels
// a known number of times from distinctive call sites, through the runtime
// API (<<<>>>: cudaLaunchKernel inside the static cudart) and through the
// driver API (cuLaunchKernel), so gpuprofd's launch probes on the real
// libcuda.so.1 can be checked for exact counts and kernel names.
// Usage: launch_real N DONE_FILE
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern "C" __global__ void gpuprof_real_saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// C++ linkage on purpose: its symbol is mangled (_Z17gpuprof_real_scalePfi)
__global__ void gpuprof_real_scale(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= 1.0001f;
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CKD(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
    fprintf(stderr, "%s: error %d\n", #x, (int)r_); exit(1); } } while (0)

enum { LEN = 1 << 16, TPB = 256 };

__attribute__((noinline)) static void rt_call_site_one(int n, float *x, float *y)
{
    for (int i = 0; i < n; i++)
        gpuprof_real_saxpy<<<LEN / TPB, TPB>>>(2.0f, x, y, LEN);
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) static void rt_call_site_two(int n, float *x)
{
    for (int i = 0; i < n; i++)
        gpuprof_real_scale<<<LEN / TPB, TPB>>>(x, LEN);
    asm volatile("" ::: "memory");
}

__attribute__((noinline)) static void drv_call_site_three(int n, CUfunction f, float *x)
{
    int len = LEN;
    void *args[] = { &x, &len };
    for (int i = 0; i < n; i++)
        CKD(cuLaunchKernel(f, LEN / TPB, 1, 1, TPB, 1, 1, 0, 0, args, 0));
    asm volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s N DONE_FILE\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    float *x, *y;
    CK(cudaFree(0)); // maps libcuda.so.1 and creates the context
    CK(cudaMalloc(&x, LEN * sizeof(float)));
    CK(cudaMalloc(&y, LEN * sizeof(float)));
    CK(cudaMemset(x, 0, LEN * sizeof(float)));
    CK(cudaMemset(y, 0, LEN * sizeof(float)));
    cudaFunction_t fn;
    CK(cudaGetFuncBySymbol(&fn, (const void *)gpuprof_real_scale));
    CK(cudaDeviceSynchronize());
    sleep(2); // the daemon's probes attach a few tens of ms after the mmap
    printf("pid %d launching\n", (int)getpid());
    fflush(stdout);
    rt_call_site_one(n, x, y);
    rt_call_site_two(2 * n, x);
    drv_call_site_three(3 * n, (CUfunction)fn, x);
    CK(cudaDeviceSynchronize());
    printf("launched saxpy %d scale %d (runtime) scale %d (driver)\n", n, 2 * n, 3 * n);
    fflush(stdout);
    FILE *f = fopen(argv[2], "w");
    if (f)
        fclose(f);
    sleep(20); // the script captures, then kills us
    return 0;
}
