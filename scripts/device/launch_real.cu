// SPDX-License-Identifier: MIT
// A real CUDA program for scripts/device/cuda_check.sh: launches two kernels
// a known number of times from distinctive call sites, through the runtime
// API (<<<>>>: cudaLaunchKernel inside the static cudart) and through the
// driver API (cuLaunchKernel), so gpuprofd's launch probes on the real
// libcuda.so.1 can be checked for exact counts and kernel names.
// Usage: launch_real N DONE_FILE
//        launch_real N --bench: times N launches of an empty kernel through
//        each API, 256 at a time with a stream sync between batches (not
//        timed), so the GPU's queue never fills: prints "rt|drv ns_per_launch
//        X cpu_ns_per_launch Y" (wall clock and this thread's CPU time, where
//        a uprobe's trap and BPF program run)
//        launch_real N --bench SETTLE_MS: the same after SETTLE_MS (default
//        2000) instead of 2 s between CUDA's start and the timing: where
//        another process keeps libcuda mapped, the probes are attached
//        already (bench/gpu/real_cuda.sh)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

__global__ void gpuprof_real_empty(void)
{
}

static double ns_of(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void bench(int n, bool driver, bool quiet)
{
    CUfunction f;
    double wall = 0, cpu = 0;
    CK(cudaGetFuncBySymbol((cudaFunction_t *)&f, (const void *)gpuprof_real_empty));
    for (int done = 0; done < n;) {
        int k = n - done < 256 ? n - done : 256;
        double w0 = ns_of(CLOCK_MONOTONIC), c0 = ns_of(CLOCK_THREAD_CPUTIME_ID);
        for (int i = 0; i < k; i++) {
            if (driver)
                CKD(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, 0, NULL, 0));
            else
                gpuprof_real_empty<<<1, 32>>>();
        }
        cpu += ns_of(CLOCK_THREAD_CPUTIME_ID) - c0;
        wall += ns_of(CLOCK_MONOTONIC) - w0;
        CK(cudaDeviceSynchronize());
        done += k;
    }
    if (!quiet)
        printf("%s ns_per_launch %.0f cpu_ns_per_launch %.0f\n", driver ? "drv" : "rt", wall / n,
               cpu / n);
}

int main(int argc, char **argv)
{
    if ((argc == 3 || argc == 4) && !strcmp(argv[2], "--bench")) {
        int settle_ms = argc == 4 ? atoi(argv[3]) : 2000;
        CK(cudaFree(0));
        // the daemon's probes attach after libcuda is mapped
        if (settle_ms > 0) {
            struct timespec ts = { settle_ms / 1000, (long)(settle_ms % 1000) * 1000000L };
            nanosleep(&ts, NULL);
        }
        bench(1000, false, true); // warm-up
        bench(atoi(argv[1]), false, false);
        bench(atoi(argv[1]), true, false);
        return 0;
    }
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
