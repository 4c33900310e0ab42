# SPDX-License-Identifier: MIT
"""tests/cupti/cuda_app, the CUDA program the CUPTI tests run without a GPU:
where it and the libraries it loads are built, the environment that makes
it load libgpuprof-cupti.so over the stand-in libcupti, and what it says
it did."""

import os

from gpd import BUILD, expect

LIB = os.path.join(BUILD, "inject", "libgpuprof-cupti.so")
FAKE_CUPTI = os.path.join(BUILD, "tests", "cupti", "libcupti.so.13")
FAKE_CUDA = os.path.join(BUILD, "tests", "gpu", "cuda", "libcuda.so.1")
APP = os.path.join(BUILD, "tests", "cupti", "cuda_app")


def inject_env(sock, extra=None):
    """os.environ with the library injected, sending to the socket sock
    every 50 ms; extra on top."""
    e = dict(os.environ, CUDA_INJECTION64_PATH=LIB, GPUPROF_CUPTI_LIB=FAKE_CUPTI,
             GPUPROF_CUPTI_SOCKET=sock, GPUPROF_CUPTI_FLUSH_MS="50",
             # the tests count exact totals: collect all the time (the
             # duty cycle has tests of its own, which set it over this)
             GPUPROF_CUPTI_DUTY="100")
    e.update(extra or {})
    return e


def totals(out):
    """What cuda_app says it asked for: its threads, and per kernel, copy,
    set, graph, sync, NVTX and event kind the counts (and bytes, ns) of its
    summary lines."""
    t = {"tids": [], "kernels": {}}
    for line in out.splitlines():
        w = line.split()
        if w[0] == "tid":
            t["tids"].append(int(w[1]))
        elif w[0] == "kernel":
            t["kernels"][w[1]] = (int(w[3]), int(w[5]))
        elif w[0] in ("memcpy", "memset"):
            t[w[0]] = (int(w[2]), int(w[4]), int(w[6]))
        elif w[0] == "graph":
            t["graph"] = (int(w[2]), int(w[4]))
        elif w[0] == "sync":
            t["sync"] = int(w[2])
        elif w[0] == "nvtx":
            t["nvtx"] = (int(w[2]), int(w[4]))
        elif w[0] == "events":
            t["events"] = (int(w[2]), int(w[4]), int(w[6]))
    expect(out.rstrip().endswith("done"), "cuda_app did not finish: %r", out)
    return t
