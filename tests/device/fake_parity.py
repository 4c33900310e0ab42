# SPDX-License-Identifier: MIT
"""The stand-in for scripts/device/torch_parity.py in
scripts/device/gpu_checks.sh --stand-in: the same handshake files and
phases, its CUDA work made through ctypes on the fake driver (tests/gpu),
which loads libgpuprof-cupti.so (CUDA_INJECTION64_PATH) and plays the
stand-in libcupti, from Python functions shaped like a model's
(train_step -> Block.forward -> launch), so that the Python frames above
the kernel frames can be checked too.

Each step: a host-to-device copy on a second stream (80 us) and a kernel
there (fake_side_scale 20 us), joined to the default stream as PyTorch's
wait_stream does (cudaEventRecord on the second stream, cudaStreamWaitEvent
of the default one, through the fake driver's runtime calls), forward
through two Blocks (fake_sgemm_kernel 400 us, elementwise_relu 50 us each),
backward (two fake_sgemm_kernel, one elementwise_grad 30 us), a stream
synchronize. Long enough that the importer's rounding to whole us (as
HTA's) moves temporal's shares by well under the 2 point tolerance.

Handshake as torch_parity.py's: DIR/ready (CUDA initialized), DIR/go_a
(waited for; then the kernels are named, three warm-up steps, a 2 s pause
and phase A, STEPS steps), DIR/a_done ("T0 T1", CLOCK_MONOTONIC seconds),
DIR/go_b (waited for; then, as Kineto does when torch.profiler starts,
cuptiSubscribe through ctypes on the stand-in libcupti (GPUPROF_CUPTI_LIB):
it fails with 39 while the library still holds the subscription (CUPTI's
one-subscriber rule, which the stand-in keeps), and then this exits
non-zero with the error, as a profiler without GPU activity must not pass
for one; then phase B, the same steps, and in place of a
profiler's trace DIR/kineto_src.json, which the shell wrote, is copied to
DIR/kineto.json with its CUDA calls made 2 us long where shorter: the fake
driver's calls last under the microsecond of HTA's time grid, which makes
them zero-length on import and leaves the critical path without its launch
edges; a real Kineto trace's calls last microseconds), DIR/b_done. Prints "kernel NAME launches C" for phase A.
Usage: fake_parity.py DIR STEPS LIBCUDA"""
import ctypes
import json
import os
import sys
import time

DIR = sys.argv[1]
STEPS = int(sys.argv[2])
cu = ctypes.CDLL(sys.argv[3])
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
cu.cuMemcpyHtoDAsync_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_void_p]
cu.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
cu.fake_cuda_set_duration.argtypes = [ctypes.c_uint64]
cu.cudaEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
cu.cudaStreamWaitEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
SIDE = ctypes.c_void_p(0x21)  # the copy's stream (the fake driver's id: 0x21)
HOST = ctypes.create_string_buffer(4096)
FN = {}
JOIN = ctypes.c_void_p()  # the event of the join (cudaEventCreate)


def launch(name, ns, stream=None):
    cu.fake_cuda_set_duration(ns)
    if cu.cuLaunchKernel(FN[name], 64, 1, 1, 256, 1, 1, 0, stream, None, None) != 0:
        sys.exit("cuLaunchKernel failed")


class Block:
    def forward(self):
        launch("fake_sgemm_kernel", 400000)
        launch("elementwise_relu", 50000)


def backward():
    launch("fake_sgemm_kernel", 400000)
    launch("fake_sgemm_kernel", 400000)
    launch("elementwise_grad", 30000)


def train_step(blocks):
    cu.fake_cuda_set_duration(80000)
    cu.cuMemcpyHtoDAsync_v2(0, HOST, 4096, SIDE)
    launch("fake_side_scale", 20000, SIDE)
    cu.fake_cuda_set_duration(1000)
    if cu.cudaEventRecord(JOIN, SIDE) or cu.cudaStreamWaitEvent(None, JOIN, 0):
        sys.exit("cudaEventRecord / cudaStreamWaitEvent failed")
    for b in blocks:
        b.forward()
    backward()
    cu.cuStreamSynchronize(None)


def wait_for(name, timeout=120):
    path = os.path.join(DIR, name)
    end = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > end:
            sys.exit("timed out waiting for " + path)
        time.sleep(0.02)


def write(name, text):
    with open(os.path.join(DIR, name + ".tmp"), "w") as f:
        f.write(text)
    os.rename(os.path.join(DIR, name + ".tmp"), os.path.join(DIR, name))


CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)


@CB
def kineto_cb(ud, domain, cbid, data):
    pass


def subscribe_like_kineto():
    """Kineto's CuptiCallbackApi: one cuptiSubscribe when the profiler
    starts, never retried; returns the handle (the profiler holds CUPTI
    to the end of phase B)."""
    cupti = ctypes.CDLL(os.environ["GPUPROF_CUPTI_LIB"])
    h = ctypes.c_void_p()
    r = cupti.cuptiSubscribe(ctypes.byref(h), kineto_cb, None)
    print("kineto_subscribe", r, flush=True)
    if r != 0:
        sys.exit("phase B: cuptiSubscribe failed with %d%s: the profiler would get no GPU "
                 "activity" % (r, " (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: "
                               "CUPTI still held)" if r == 39 else ""))
    return cupti, h


def main():
    cu.cuInit(0)
    blocks = [Block(), Block()]
    write("ready", "%d\n" % os.getpid())
    wait_for("go_a")
    if cu.cudaEventCreate(ctypes.byref(JOIN)) != 0:
        sys.exit("cudaEventCreate failed")
    for name in ("fake_sgemm_kernel", "elementwise_relu", "elementwise_grad", "fake_side_scale"):
        FN[name] = ctypes.c_void_p()
        if cu.cuModuleGetFunction(ctypes.byref(FN[name]), None, name.encode()) != 0:
            sys.exit("cuModuleGetFunction failed")
    for _ in range(3):
        train_step(blocks)
    time.sleep(2.0)
    t0 = time.monotonic()
    for _ in range(STEPS):
        train_step(blocks)
    t1 = time.monotonic()
    time.sleep(0.6)
    write("a_done", "%.6f %.6f\n" % (t0, t1))
    wait_for("go_b")
    cupti, sub = subscribe_like_kineto()
    for _ in range(STEPS):
        train_step(blocks)
    cupti.cuptiUnsubscribe(sub)
    with open(os.path.join(DIR, "kineto_src.json")) as f:
        trace = json.load(f)
    for e in trace["traceEvents"]:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("dur", 2.0) < 2.0:
            e["dur"] = 2.0
    with open(os.path.join(DIR, "kineto.json"), "w") as f:
        json.dump(trace, f)
    write("b_done", "%.6f %.6f\n" % (t1, time.monotonic()))
    for name, n in (("fake_sgemm_kernel", 4), ("elementwise_relu", 2), ("elementwise_grad", 1),
                    ("fake_side_scale", 1)):
        print("kernel %s launches %d" % (name, n * STEPS))
    print("steps", STEPS, "phase_a_s %.3f" % (t1 - t0), flush=True)


main()
