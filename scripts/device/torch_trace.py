# SPDX-License-Identifier: MIT
"""Write a real PyTorch profiler (Kineto) trace of a small CUDA training
loop, for checking gpuprofd's importer and analyses on what a current
PyTorch writes. Usage: torch_trace.py OUT.json.gz [STEPS]"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule


def main():
    out = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 1024), torch.nn.LayerNorm(1024)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 1024, device="cuda")
    side = torch.cuda.Stream()
    sched = schedule(wait=1, warmup=1, active=steps)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], schedule=sched,
                 record_shapes=True) as prof:
        for _ in range(steps + 2):
            host = torch.randn(256, 1024, pin_memory=True)
            with torch.cuda.stream(side):  # a copy on a second stream
                staged = host.to("cuda", non_blocking=True)
            torch.cuda.current_stream().wait_stream(side)
            loss = model(x + staged).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            prof.step()
    prof.export_chrome_trace(out)
    print("wrote", out, "torch", torch.__version__)


main()
