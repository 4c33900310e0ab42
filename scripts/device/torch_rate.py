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

Even so, processes differ by 10 % and more from one to the next, so the
library's cost is judged on rounds (--plan): each round runs one process
per configuration of PLAN (a line "LABEL<TAB>VAR=VALUE<TAB>..." each: the
environment the library reads at CUDA's start), rotated by one place per
round so that none always runs first or after the same neighbour, and
prints "round R order LABEL..." before its runs and "LABEL steps_per_s X"
per run (LABEL_exit RC for a run that failed); scripts/device/gpu_compare.py
ratio pairs the runs of a round. Python and torch are imported once and
each run is a fork of this process that sets its environment before its
first CUDA call (the driver reads CUDA_INJECTION64_PATH then, the library
its variables): a run costs CUDA's start and the measurement, not an
interpreter's start and torch's import. --spawn runs each in a process of
its own instead, as do all runs after the first ones if those fail
forked and work spawned. After MIN rounds, more (up to MAX) while the next one
should end within LIMIT s of the start; the first MIN stop short at
HARD s, and no run goes on past HARD s (a step's time limit must not
cut off the judgement).
Usage: torch_rate.py [SECONDS [PARTS [WARMUP]]]   (3, 2 * SECONDS, 0.5)
       torch_rate.py --plan PLAN [--rounds MIN MAX] [--limit S] [--hard S]
                     [--seconds S] [--run-timeout S] [--spawn]"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import time


def steps_for(torch, model, x, seconds):
    """Steps run for about seconds, ended by a synchronize: (steps, s)."""
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            model(x)
        n += 10
    torch.cuda.synchronize()
    return n, time.perf_counter() - t0


def measure(seconds, parts, warmup):
    """The rates of the PARTS sub-intervals after the warm-up."""
    import torch

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
        steps_for(torch, model, x, warmup)
        for _ in range(parts):
            n, dt = steps_for(torch, model, x, seconds / parts)
            rates.append(n / dt)
    return rates


def report(rates, prefix=""):
    print(prefix + "intervals_steps_per_s " + " ".join("%.1f" % r for r in rates), flush=True)
    print(prefix + "steps_per_s %.1f" % statistics.median(rates), flush=True)


def read_plan(path):
    """[(label, {var: value})] of a plan file."""
    plan = []
    with open(path) as f:
        for line in f:
            w = [x for x in line.rstrip("\n").split("\t") if x]
            if w and not w[0].startswith("#"):
                plan.append((w[0], dict(x.split("=", 1) for x in w[1:] if "=" in x)))
    return plan


# the run in progress (fork mode), ended with this process
child = None


def on_term(signum, frame):
    if child:
        os.kill(child, signal.SIGKILL)
    os._exit(128 + signum)


def wait_child(pid, timeout):
    """The child's exit code, or None once it ran past timeout (killed)."""
    global child
    child = pid
    deadline = time.monotonic() + timeout
    try:
        while True:
            p, status = os.waitpid(pid, os.WNOHANG)
            if p:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None
            time.sleep(0.02)
    finally:
        child = None


def run_forked(label, env, a, timeout):
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.environ.update(env)
            report(measure(a.seconds, a.parts, a.warmup), label + " ")
            code = 0
        except BaseException as e:  # noqa: B036 (the child must reach _exit)
            print("%s: %r" % (label, e), file=sys.stderr, flush=True)
        finally:
            # no interpreter shutdown in a fork: the parent's state is
            # not the child's to finalize
            os._exit(code)
    return wait_child(pid, timeout)


def run_spawned(label, env, a, timeout):
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), str(a.seconds), str(a.parts),
                            str(a.warmup)], env=dict(os.environ, **env), capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    for line in p.stdout.splitlines():
        print(label + " " + line, flush=True)
    sys.stderr.write(p.stderr)
    return p.returncode


def run_plan(a):
    plan = read_plan(a.plan)
    if not plan:
        print("empty plan %s" % a.plan, file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, on_term)
    if not a.spawn:
        import torch  # noqa: F401 (once, here: each fork has it; no CUDA call before the fork)
    one = run_spawned if a.spawn else run_forked
    ran = False  # a run gave its figure
    t0, last, r = time.monotonic(), 0.0, 0
    while r < a.rounds[1]:
        used = time.monotonic() - t0
        if r and used + last > (a.hard if r < a.rounds[0] else a.limit):
            break
        r += 1
        ts = time.monotonic()
        k = (r - 1) % len(plan)
        order = plan[k:] + plan[:k]
        print("round %d order %s" % (r, " ".join(label for label, _ in order)), flush=True)
        for label, env in order:
            # no run past HARD: a round that hangs leaves the rounds
            # before it to be judged
            left = t0 + a.hard - time.monotonic()
            if left < 1:
                print("%s_exit not run: past %g s" % (label, a.hard), flush=True)
                return 0
            rc = one(label, env, a, min(a.run_timeout, left))
            if rc != 0 and not ran and one is run_forked:
                # the first runs failing forked: once more in a process
                # of its own, and if that works, every run so from here
                print("%s_exit %s forked: one process a run from here" % (
                    label, "timeout" if rc is None else rc), flush=True)
                left = t0 + a.hard - time.monotonic()
                if left >= 1 and run_spawned(label, env, a, min(a.run_timeout, left)) == 0:
                    one, rc = run_spawned, 0
            ran |= rc == 0
            if rc != 0:
                print("%s_exit %s" % (label, "timeout" if rc is None else rc), flush=True)
        last = time.monotonic() - ts
    return 0


def main(argv):
    if not argv or argv[0] != "--plan":
        seconds = float(argv[0]) if argv else 3.0
        parts = int(argv[1]) if len(argv) > 1 else max(1, round(seconds * 2))
        warmup = float(argv[2]) if len(argv) > 2 else 0.5
        report(measure(seconds, parts, warmup))
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("--plan", required=True)
    p.add_argument("--rounds", type=int, nargs=2, default=(3, 3), metavar=("MIN", "MAX"))
    p.add_argument("--limit", type=float, default=0.0)
    p.add_argument("--hard", type=float, default=float("inf"))
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--parts", type=int)
    p.add_argument("--warmup", type=float, default=0.5)
    p.add_argument("--run-timeout", type=float, default=20.0)
    p.add_argument("--spawn", action="store_true")
    a = p.parse_args(argv)
    if a.parts is None:
        a.parts = max(1, round(a.seconds * 2))
    return run_plan(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
