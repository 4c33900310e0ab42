# SPDX-License-Identifier: MIT
"""A PyTorch workload for scripts/device/stacks_check.sh: a small MLP trained
on the GPU (kernel launches from deep in libtorch) with Python-side work
between steps (CPU samples in the interpreter, libtorch and libc), for a few
seconds. Usage: torch_cpu.py DONE_FILE"""
import sys
import time

import torch


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = torch.nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


def python_work(n):
    return sum(i * i for i in range(n))


def train_step(model, opt, x):
    opt.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    return loss


def main():
    model = torch.nn.Sequential(*[Block(512) for _ in range(6)]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512, device="cuda")
    cpu = torch.randn(256, 256)
    torch.cuda.synchronize()
    time.sleep(2)  # the daemon's probes attach after libcuda is mapped
    t0, n = time.time(), 0
    while time.time() - t0 < 8:
        train_step(model, opt, x)
        python_work(20000)
        cpu = torch.tanh(cpu @ cpu.T / 256)  # CPU matmul in libtorch_cpu / BLAS
        n += 1
    torch.cuda.synchronize()
    print("steps", n, "torch", torch.__version__, flush=True)
    open(sys.argv[1], "w").close()
    time.sleep(30)


main()
