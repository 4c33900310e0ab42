# SPDX-License-Identifier: MIT
"""tests/cupti/cuda_app, the CUDA program the CUPTI tests run without a GPU:
where it and the libraries it loads are built, the environment that makes
it load libgpuprof-cupti.so over the stand-in libcupti, and what it says
it did."""

import os
import subprocess
import tempfile
import time

from cupti_wire import Receiver
from gpd import BUILD, eq, expect

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


def run_received(env_for, args, prefix="gpcupti."):
    """cuda_app ARGS with the library sending to a receiver of its own,
    no daemon: (its result, the one connection it made). env_for(sock)
    gives the environment."""
    with tempfile.TemporaryDirectory(prefix=prefix) as d:
        sock = os.path.join(d, "cupti.sock")
        rx = Receiver(sock)
        try:
            p = subprocess.run([APP, "--cuda", FAKE_CUDA] + args, env=env_for(sock),
                               capture_output=True, text=True, timeout=60)
            eq(p.returncode, 0, "app exit: " + p.stderr)
            time.sleep(0.3)  # the library's last batch
        finally:
            rx.stop()
        conns = rx.decoded()
    eq(len(conns), 1, "connections")
    return p, conns[0]


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
