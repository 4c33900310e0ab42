# SPDX-License-Identifier: MIT
"""A deterministic PyTorch training loop for scripts/device/gpu_checks.sh's
Kineto parity check, in one process and two phases of STEPS steps each:
phase A runs while libgpuprof-cupti.so collects (gpuprofd captures that
window live), phase B, after the daemon has made the library give CUPTI up
(gpuprofctl cupti release), runs under torch.profiler, which writes a Kineto
trace. One CUPTI subscriber per process: the two windows are consecutive
phases of the same loop, not the same kernels.

Each step: a host-to-device copy of a pinned buffer on a second stream and
a kernel there that scales it, joined to the default stream (wait_stream:
an event recorded on the second stream that the default one waits on, a
cross-stream sync edge on the critical path); forward through two Blocks (Linear + ReLU +
residual; cuBLAS GEMMs and PyTorch's elementwise kernels), LayerNorm, loss;
backward; SGD; a synchronize (so the GPU waits for the host once a step).

Handshake through files in DIR (the shell polls for them):
  DIR/ready     written once CUDA is initialized (its content: the pid)
  DIR/go_a      waited for (the daemon's launch probes are in), then ten
                warm-up steps, a 2 s pause and phase A; DIR/a_done gets "T0 T1", the
                CLOCK_MONOTONIC seconds of phase A (written 0.6 s after its
                end, so the library's last flush has gone out)
  DIR/go_b      waited for, then phase B; the trace goes to DIR/kineto.json
                and DIR/b_done is written
Usage: torch_parity.py DIR [STEPS]"""
import os
import sys
import time

import torch

DIR = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 60


def sync_events_config():
    """Kineto records CUDA synchronization rows only when asked; the library
    records them by default: ask Kineto where this PyTorch can, else leave
    them out of the library's features, so both sides see the same rows.
    Set before CUDA starts (the library reads its environment then)."""
    try:
        from torch._C._profiler import _ExperimentalConfig
        cfg = _ExperimentalConfig(enable_cuda_sync_events=True)
        return cfg, 1
    except (ImportError, TypeError, AttributeError):
        os.environ["GPUPROF_CUPTI_FEATURES"] = "kernel,memcpy,memset,api,nvtx"
        return None, 0


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = torch.nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.lin(x)) + x


def train_step(model, opt, x, host, staged, side):
    with torch.cuda.stream(side):  # the copy and a kernel on a second stream
        staged.copy_(host, non_blocking=True)
        staged.mul_(0.5)
    torch.cuda.current_stream().wait_stream(side)
    loss = model(x + staged).square().mean()
    opt.zero_grad(set_to_none=False)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()


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


def main():
    cfg, kineto_sync = sync_events_config()
    torch.manual_seed(0)
    n, batch = 4096, 2048  # kernels of tens of us to ms: the import rounds to whole us
    model = torch.nn.Sequential(Block(n), Block(n), torch.nn.LayerNorm(n)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(batch, n, device="cuda")
    host = torch.randn(batch, n).pin_memory()
    staged = torch.empty(batch, n, device="cuda")
    side = torch.cuda.Stream()

    def run(steps):
        for _ in range(steps):
            train_step(model, opt, x, host, staged, side)

    torch.cuda.synchronize()
    write("ready", "%d\n" % os.getpid())
    wait_for("go_a")
    # warm-up (cuBLAS handles, workspaces, the allocator), after go_a: with
    # CUDA's lazy loading the step's kernels are loaded at their first
    # launch, which the daemon's probes must see to name them
    run(10)
    time.sleep(2.0)  # a quiet gap: the live window starts inside it
    t0 = time.monotonic()
    run(STEPS)
    t1 = time.monotonic()
    # phase B's window ends with torch.profiler's own synchronize when the
    # profile stops (one more cudaDeviceSynchronize than steps on an H200,
    # 5 ms after the last step): phase A ends the same way, so that both
    # windows hold the same sync-dependency edges
    torch.cuda.synchronize()
    time.sleep(0.6)
    write("a_done", "%.6f %.6f\n" % (t0, t1))
    wait_for("go_b")
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    kw = {"experimental_config": cfg} if cfg is not None else {}
    with profile(activities=acts, **kw):  # Kineto's start-up, not measured
        run(2)
    t2 = time.monotonic()
    with profile(activities=acts, **kw) as prof:
        run(STEPS)
    t3 = time.monotonic()
    prof.export_chrome_trace(os.path.join(DIR, "kineto.json"))
    write("b_done", "%.6f %.6f\n" % (t2, t3))
    print("steps", STEPS, "torch", torch.__version__, "cuda", torch.version.cuda,
          "kineto_sync", kineto_sync, "phase_a_s %.3f phase_b_s %.3f" % (t1 - t0, t3 - t2),
          flush=True)


main()
