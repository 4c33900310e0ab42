#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/device/torch_rate.py --plan on a stand-in torch (stub_torch/):
rounds rotated one place each, every configuration's environment reaching
its own run and no other (fork and spawn), a failed run said, the rounds
bounded by the time limit, and gpu_compare.py ratio pairing the output."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "device", "torch_rate.py")
COMPARE = os.path.join(HERE, "..", "..", "scripts", "device", "gpu_compare.py")
from gpd import eq, expect, main, test  # noqa: E402

PLAN = "without\nslow\tSTUB_SLOW=1\tX=a=b\nfails\tSTUB_FAIL=1\nafter\n"


def run_plan(*args, plan=PLAN, env=None):
    with tempfile.TemporaryDirectory(prefix="torchrate-") as d:
        path = os.path.join(d, "plan")
        with open(path, "w") as f:
            f.write(plan)
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "stub_torch"), **(env or {}))
        env.pop("STUB_SLOW", None)
        p = subprocess.run([sys.executable, SCRIPT, "--plan", path, "--seconds", "0.2",
                            "--warmup", "0.05"] + list(args), env=env, capture_output=True,
                           text=True, timeout=120)
        out = os.path.join(d, "rate.out")
        with open(out, "w") as f:
            f.write(p.stdout)
        r = subprocess.run([sys.executable, COMPARE, "ratio", "--results", os.path.join(d, "res"),
                            "--file", out, "--metric", "steps_per_s", "--base", "without",
                            "--test", "slow", "--floor", "after", "--min-pct", "1", "--name", "x"],
                           capture_output=True, text=True, timeout=60)
        with open(os.path.join(d, "res")) as f:
            value = f.read().split("\t")[1]
        return p, value + "\n" + r.stdout


def check_rounds(p, want_rounds):
    log = "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr)
    eq(p.returncode, 0, log)
    lines = p.stdout.splitlines()
    orders = [x.split()[3:] for x in lines if x.startswith("round ")]
    eq(len(orders), want_rounds, log)
    labels = ["without", "slow", "fails", "after"]
    for i, o in enumerate(orders):
        eq(o, labels[i % 4:] + labels[:i % 4], "round %d rotated one place\n%s" % (i + 1, log))
    runs = {}
    for x in lines:
        w = x.split()
        if len(w) == 3 and w[1] == "steps_per_s":
            runs.setdefault(w[0], []).append(float(w[2]))
    eq(sorted(runs), ["after", "slow", "without"], log)
    for k in runs:
        eq(len(runs[k]), want_rounds, "%s: a run per round\n%s" % (k, log))
    eq(sum(1 for x in lines if x == "fails_exit 1"), want_rounds, "the failed runs said\n" + log)
    expect("CUDA error: no device (stub)" in p.stderr, log)
    return log


@test
def forked_runs_in_rotated_rounds():
    p, value = run_plan("--rounds", "3", "3")
    log = check_rounds(p, 3)
    # the slow run's environment reached it, and not the run after it
    pct = float(value.split("%")[0])
    expect(35 < pct < 70, "slow / without %s\n%s" % (value, log))
    floor = float(value.split("noise floor (after / without) ")[1].split("%")[0])
    expect(85 < floor < 115, "after / without %s\n%s" % (value, log))


@test
def spawned_runs_the_same():
    p, value = run_plan("--rounds", "2", "2", "--spawn")
    check_rounds(p, 2)
    expect(35 < float(value.split("%")[0]) < 70, value)


@test
def runs_spawned_where_forking_fails():
    p, value = run_plan("--rounds", "2", "2", env={"STUB_NO_FORK": "1"})
    expect("without_exit 1 forked: one process a run from here" in p.stdout, p.stdout)
    # the failed fork is said; then every run has its figure, spawned
    lines = [x for x in p.stdout.splitlines() if not x.startswith("without_exit 1 forked")]
    p.stdout = "\n".join(lines) + "\n"
    check_rounds(p, 2)
    expect(35 < float(value.split("%")[0]) < 70, value)


@test
def rounds_bounded_by_the_limit():
    # a round takes about 1 s: past MIN only while the next should end
    # within LIMIT; HARD stops even the first MIN
    p, _ = run_plan("--rounds", "1", "9", "--limit", "1.5")
    orders = [x for x in p.stdout.splitlines() if x.startswith("round ")]
    expect(1 <= len(orders) <= 2, p.stdout)
    p, _ = run_plan("--rounds", "5", "9", "--hard", "0.8")
    lines = p.stdout.splitlines()
    eq(len([x for x in lines if x.startswith("round ")]), 1, "hard limit\n" + p.stdout)
    # nor a run past it (each takes over 0.3 s): the round ends there
    expect(len([x for x in lines if " steps_per_s " in x]) <= 2, p.stdout)
    expect(lines[-1].endswith("_exit not run: past 0.8 s") or lines[-1].endswith("_exit timeout"),
           p.stdout)
    p, _ = run_plan("--rounds", "1", "1", "--run-timeout", "0.1")
    expect(len([x for x in p.stdout.splitlines() if x.endswith("_exit timeout")]) >= 3,
           "runs past --run-timeout killed\n" + p.stdout)

if __name__ == "__main__":
    main()
