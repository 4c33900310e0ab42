# SPDX-License-Identifier: MIT
"""A short PyTorch CUDA workload for scripts/device/cuda_check.sh: matmuls
(cuBLAS) and elementwise ops (PyTorch's own kernels) for a few seconds.
Usage: torch_loop.py DONE_FILE"""
import sys
import time

import torch


def step(a, b):
    c = a @ b
    return torch.relu(c) + 1.0


def main():
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    time.sleep(2)  # the daemon's probes attach after libcuda is mapped
    t0, n = time.time(), 0
    while time.time() - t0 < 3:
        step(a, b)
        n += 1
    torch.cuda.synchronize()
    print("steps", n, "torch", torch.__version__, flush=True)
    open(sys.argv[1], "w").close()
    time.sleep(20)


main()
