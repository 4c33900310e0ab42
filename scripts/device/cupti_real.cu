// SPDX-License-Identifier: MIT
// A real CUDA program for scripts/device/cupti_check.sh: kernels of known
// names and roughly known durations (spinning on the SM clock), copies,
// a memset, stream syncs and NVTX ranges, in known numbers, so that the
// records libgpuprof-cupti.so sends can be checked against what was done.
// Usage: cupti_real N             N iterations; prints what it did
//        cupti_real N --bench     times N launches of an empty kernel,
//                                 256 at a time with a sync between
//                                 batches (not timed): "ns_per_launch X"
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" __global__ void gpuprof_cupti_spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}

// C++ linkage on purpose: a mangled name (_Z19gpuprof_cupti_saxpyfPKfPfi)
__global__ void gpuprof_cupti_saxpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void gpuprof_cupti_empty(void)
{
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int bench(int n)
{
    double t = 0;
    gpuprof_cupti_empty<<<1, 1>>>();
    cudaDeviceSynchronize();
    for (int done = 0; done < n; done += 256) {
        double t0 = now_ns();
        for (int i = 0; i < 256; i++)
            gpuprof_cupti_empty<<<1, 1>>>();
        t += now_ns() - t0;
        cudaDeviceSynchronize();
    }
    printf("ns_per_launch %.1f\n", t / ((n + 255) / 256 * 256));
    return 0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    const int elems = 1 << 20;
    float *x, *y, *h;
    cudaStream_t s;

    if (argc > 2 && !strcmp(argv[2], "--bench"))
        return bench(n);
    h = (float *)calloc(elems, sizeof(float));
    cudaMalloc(&x, elems * sizeof(float));
    cudaMalloc(&y, elems * sizeof(float));
    cudaStreamCreate(&s);
    nvtxMarkA("cupti_real_start");
    for (int i = 0; i < n; i++) {
        nvtxRangePushA("cupti_real_iteration");
        gpuprof_cupti_spin<<<1, 32, 0, s>>>(20000);
        gpuprof_cupti_saxpy<<<elems / 256, 256, 0, s>>>(2.0f, x, y, elems);
        if (i % 10 == 0) {
            cudaMemcpyAsync(x, h, elems * sizeof(float), cudaMemcpyHostToDevice, s);
            cudaMemcpyAsync(h, y, elems * sizeof(float), cudaMemcpyDeviceToHost, s);
            cudaMemsetAsync(y, 0, elems * sizeof(float), s);
            cudaStreamSynchronize(s);
        }
        nvtxRangePop();
    }
    cudaStreamSynchronize(s);
    int copies = (n + 9) / 10;
    printf("kernel gpuprof_cupti_spin launches %d\n", n);
    printf("kernel _Z19gpuprof_cupti_saxpyfPKfPfi launches %d\n", n);
    printf("memcpy count %d bytes %lld\n", 2 * copies, 2LL * copies * elems * 4);
    printf("memset count %d bytes %lld\n", copies, (long long)copies * elems * 4);
    printf("sync count %d\n", copies + 1);
    printf("nvtx ranges %d marks 1\n", n);
    printf("error %s\n", cudaGetErrorString(cudaGetLastError()));
    printf("done\n");
    return 0;
}
