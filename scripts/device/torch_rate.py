# SPDX-License-Identifier: MIT
"""A launch-heavy PyTorch inference loop: eight small Linear + ReLU layers
(batch 64, width 256) under inference_mode, so each step is 16 short
kernels and the host's launch path sets the pace. For the throughput with
and without libgpuprof-cupti.so (scripts/device/gpu_checks.sh,
cupti_check.sh).

A whole-run average was too noisy to judge a 2 % target (one process
gave 2126, the next 1767 steps/s): the first steps pay for lazy set-up
(cuBLAS handles, the caching allocator, the library's first collection
window) and a single stall of the host (another process, a page fault
storm) lands in the one figure. So after a warm-up of WARMUP seconds in
the process, SECONDS are measured as PARTS sub-intervals, each ended by a
synchronize, and the median of their rates is the figure. Sub-intervals
of 0.5 s (the default: 2 * SECONDS parts) each span one period of the
library's default duty cycle (a 10 ms window every 500 ms), so each holds
the same share of collection and the median does not drop it.
Prints "intervals_steps_per_s R1 R2 ..." and "steps_per_s MEDIAN".
Usage: torch_rate.py [SECONDS [PARTS [WARMUP]]]   (3, 2 * SECONDS, 0.5)"""
import statistics
import sys
import time

import torch


def steps_for(model, x, seconds):
    """Steps run for about seconds, ended by a synchronize: (steps, s)."""
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            model(x)
        n += 10
    torch.cuda.synchronize()
    return n, time.perf_counter() - t0


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    parts = int(sys.argv[2]) if len(sys.argv) > 2 else max(1, round(seconds * 2))
    warmup = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda().eval()
    x = torch.randn(64, 256, device="cuda")
    rates = []
    with torch.inference_mode():
        for _ in range(200):
            model(x)
        torch.cuda.synchronize()
        steps_for(model, x, warmup)
        for _ in range(parts):
            n, dt = steps_for(model, x, seconds / parts)
            rates.append(n / dt)
    print("intervals_steps_per_s " + " ".join("%.1f" % r for r in rates), flush=True)
    print("steps_per_s %.1f" % statistics.median(rates), flush=True)


main()
