// SPDX-License-Identifier: MIT
// A real CUDA program for scripts/device/cupti_check.sh and gpu_checks.sh:
// kernels of known names and roughly known durations (spinning on the SM
// clock), copies, a memset, stream syncs, NVTX ranges and a small CUDA
// graph, in known numbers, so that the records libgpuprof-cupti.so sends
// can be checked against what was done.
// Usage: cupti_real N [--wait]        N iterations; prints what it did
//        cupti_real N --bench         times N launches of an empty kernel,
//                                     256 at a time with a sync between
//                                     batches (not timed): "ns_per_launch X"
//        cupti_real MS --gemm [--wait]  a GEMM loop for MS ms: a tiled
//                                     shared-memory SGEMM of 2048 x 2048,
//                                     16 launches between syncs, after
//                                     250 ms untimed: "gemm_per_s X", and
//                                     the batches' median rate and share
//                                     of slow batches (gemm_batch_*)
//        cupti_real N --evbench       times N pairs of cudaEventRecord on one
//                                     stream + cudaStreamWaitEvent of another
//                                     (the event and sync callbacks' cost),
//                                     256 at a time with a sync between
//                                     batches: "ns_per_event_pair X"
// --wait: once CUDA is initialized, print "ready PID" and wait for a line
// on stdin, so that a daemon's launch probes are attached before the work.
// Every 10th iteration launches the graph (three launches of
// gpuprof_cupti_node captured from the stream) once: whether CUPTI's
// GRAPH_TRACE replaces the nodes' own kernel records is one of the things
// gpu_checks.sh looks at. Every 10th iteration also records an event on
// the main stream that a second stream waits on (cudaStreamWaitEvent)
// before gpuprof_cupti_waiter runs there, then records a second event
// after it and waits for that one (cudaEventSynchronize): two CUDA event
// records, one stream wait and one event synchronize, whose links to
// their records and whose sync edges on the critical path are checked.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

// on the second stream, after the main stream's event: long enough that
// the cudaEventSynchronize waiting for it is bound by the GPU
extern "C" __global__ void gpuprof_cupti_waiter(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}

// launched only as a node of the graph
extern "C" __global__ void gpuprof_cupti_node(float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] += 1.0f;
}

#define TILE 16
#define GEMM_BATCH 16        // launches between syncs
#define GEMM_WARMUP_MS 250
extern "C" __global__ void gpuprof_cupti_sgemm(const float *a, const float *b, float *c, int n)
{
    __shared__ float ta[TILE][TILE], tb[TILE][TILE];
    int r = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0;
    for (int k = 0; k < n; k += TILE) {
        ta[threadIdx.y][threadIdx.x] = a[r * n + k + threadIdx.x];
        tb[threadIdx.y][threadIdx.x] = b[(k + threadIdx.y) * n + col];
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            acc += ta[threadIdx.y][i] * tb[i][threadIdx.x];
        __syncthreads();
    }
    c[r * n + col] = acc;
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

static int evbench(int n)
{
    cudaStream_t a, b;
    cudaEvent_t e;
    double t = 0;

    cudaStreamCreate(&a);
    cudaStreamCreate(&b);
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaEventRecord(e, a);
    cudaStreamWaitEvent(b, e, 0);
    cudaDeviceSynchronize();
    for (int done = 0; done < n; done += 256) {
        double t0 = now_ns();
        for (int i = 0; i < 256; i++) {
            cudaEventRecord(e, a);
            cudaStreamWaitEvent(b, e, 0);
        }
        t += now_ns() - t0;
        cudaDeviceSynchronize();
    }
    printf("ns_per_event_pair %.1f\n", t / ((n + 255) / 256 * 256));
    printf("error %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// The batches' own rates: their median is the loop's speed outside PC
// sampling's windows (a cost that only windows have leaves it alone),
// and the share of batches slower than 90 % of it is about the share of
// the time a window slowed the GPU down.
static void gemm_batches(double *ns, long n)
{
    if (n < 1)
        return;
    qsort(ns, n, sizeof(*ns), cmp_double);
    double med = ns[n / 2];
    long slow = 0;
    for (long i = 0; i < n; i++)
        slow += ns[i] > med / 0.9;
    printf("gemm_batches %ld\n", n);
    printf("gemm_batch_median_per_s %.2f\n", GEMM_BATCH / (med / 1e9));
    printf("gemm_batch_slow_pct %.2f\n", 100.0 * slow / n);
}

// MS ms timed after GEMM_WARMUP_MS untimed: the clocks settle, and the
// timed part starts away from the first launch (where PC sampling's
// first window opens), so that with MS a multiple of the windows' period
// (1 s at the defaults) it holds the duty cycle's share of windows.
static int gemm(int ms)
{
    const int n = 2048;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a, *b, *c;
    dim3 grid(n / TILE, n / TILE), block(TILE, TILE);
    long done = 0, warm = 0, nb = 0, cap = 1 << 20;
    double t0, t, tb, *batch_ns = (double *)malloc(cap * sizeof(double));

    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    cudaMalloc(&c, bytes);
    cudaMemset(a, 0, bytes);
    cudaMemset(b, 0, bytes);
    cudaError_t e = cudaSuccess;
    t0 = now_ns();
    do {
        for (int i = 0; i < GEMM_BATCH; i++)
            gpuprof_cupti_sgemm<<<grid, block>>>(a, b, c, n);
        e = cudaDeviceSynchronize();
        warm += GEMM_BATCH;
    } while (now_ns() - t0 < GEMM_WARMUP_MS * 1e6 && e == cudaSuccess);
    t0 = now_ns();
    do {
        tb = now_ns();
        for (int i = 0; i < GEMM_BATCH && e == cudaSuccess; i++)
            gpuprof_cupti_sgemm<<<grid, block>>>(a, b, c, n);
        if (e == cudaSuccess)
            e = cudaDeviceSynchronize();
        done += GEMM_BATCH;
        t = now_ns();
        if (batch_ns && nb < cap)
            batch_ns[nb++] = t - tb;
        t -= t0;
    } while (t < ms * 1e6 && e == cudaSuccess);
    if (e == cudaSuccess)
        e = cudaGetLastError();
    printf("kernel gpuprof_cupti_sgemm launches %ld\n", done + warm);
    if (e == cudaSuccess) { // a rate only from GEMMs that ran
        printf("gemm_per_s %.2f\n", done / (t / 1e9));
        gemm_batches(batch_ns, nb);
    }
    free(batch_ns);
    printf("error %s\n", cudaGetErrorString(e));
    printf("done\n");
    return e != cudaSuccess;
}

static void wait_go(void)
{
    char line[64];
    cudaFree(0); // CUDA initialized: the library injected, libcuda mapped
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    if (!fgets(line, sizeof(line), stdin))
        line[0] = '\0';
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    const int elems = 1 << 20;
    float *x, *y, *h;
    cudaStream_t s, s2;
    cudaEvent_t ev_rec, ev_done;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    bool wait = false, do_gemm = false;

    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--bench"))
            return bench(n);
        if (!strcmp(argv[i], "--evbench"))
            return evbench(n);
        wait |= !strcmp(argv[i], "--wait");
        do_gemm |= !strcmp(argv[i], "--gemm");
    }
    if (wait)
        wait_go();
    if (do_gemm)
        return gemm(n);
    h = (float *)calloc(elems, sizeof(float));
    cudaMalloc(&x, elems * sizeof(float));
    cudaMalloc(&y, elems * sizeof(float));
    cudaStreamCreate(&s);
    cudaStreamCreate(&s2);
    cudaEventCreate(&ev_rec);
    cudaEventCreate(&ev_done);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < 3; i++)
        gpuprof_cupti_node<<<elems / 256, 256, 0, s>>>(y, elems);
    cudaStreamEndCapture(s, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    nvtxMarkA("cupti_real_start");
    for (int i = 0; i < n; i++) {
        nvtxRangePushA("cupti_real_iteration");
        gpuprof_cupti_spin<<<1, 32, 0, s>>>(20000);
        gpuprof_cupti_saxpy<<<elems / 256, 256, 0, s>>>(2.0f, x, y, elems);
        if (i % 10 == 0) {
            // s2 waits for s's kernels so far; the host waits for s2
            cudaEventRecord(ev_rec, s);
            cudaStreamWaitEvent(s2, ev_rec, 0);
            gpuprof_cupti_waiter<<<1, 32, 0, s2>>>(200000);
            cudaEventRecord(ev_done, s2);
            cudaEventSynchronize(ev_done);
            cudaMemcpyAsync(x, h, elems * sizeof(float), cudaMemcpyHostToDevice, s);
            cudaMemcpyAsync(h, y, elems * sizeof(float), cudaMemcpyDeviceToHost, s);
            cudaMemsetAsync(y, 0, elems * sizeof(float), s);
            cudaGraphLaunch(exec, s);
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
    printf("kernel gpuprof_cupti_waiter launches %d\n", copies);
    printf("graph count %d\n", copies);
    printf("graph_node_kernel gpuprof_cupti_node launches %d\n", 3 * copies);
    printf("sync count %d\n", copies + 1);
    printf("nvtx ranges %d marks 1\n", n);
    printf("events records %d waits %d synchronizes %d\n", 2 * copies, copies, copies);
    printf("error %s\n", cudaGetErrorString(cudaGetLastError()));
    printf("done\n");
    return 0;
}
