# SPDX-License-Identifier: MIT
"""A launch-heavy PyTorch inference loop: eight small Linear + ReLU layers
(batch 64, width 256) under inference_mode, so each step is 16 short
kernels and the host's launch path sets the pace. Runs SECONDS (default 3)
after a warm-up and prints "steps_per_s X", for the throughput with and
without libgpuprof-cupti.so (scripts/device/gpu_checks.sh, cupti_check.sh).
Usage: torch_rate.py [SECONDS]"""
import sys
import time

import torch


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda().eval()
    x = torch.randn(64, 256, device="cuda")
    with torch.inference_mode():
        for _ in range(200):
            model(x)
        torch.cuda.synchronize()
        t0, n = time.time(), 0
        while time.time() - t0 < seconds:
            for _ in range(10):
                model(x)
            n += 10
        torch.cuda.synchronize()
    print("steps_per_s %.1f" % (n / (time.time() - t0)), flush=True)


main()
