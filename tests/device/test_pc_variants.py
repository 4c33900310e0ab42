#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/device/pc_variants.py, the pc step's per-round report of PC
sampling's variants, on a synthetic pc_rate.out and counters: ratios
paired by round (a round without its off run gives no pair), the
batches' figures, each run's counters, and the cost split."""

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "device"))
import pc_variants  # noqa: E402
from gpd import eq, expect, main, test  # noqa: E402

RATES = """\
off gemm_per_s 500
off gemm_batch_median_per_s 510
off gemm_batch_slow_pct 1
off pid 10 1
pc gemm_per_s 400
pc gemm_batch_median_per_s 505
pc gemm_batch_slow_pct 12
pc pid 11 1
pc-idle gemm_per_s 495
pc-idle pid 12 1
pc24 gemm_per_s 490
pc24 pid 13 1
pc-window gemm_per_s 450
pc-window pid 14 1
pc gemm_per_s 300
pc pid 21 2
off gemm_per_s 400
off pid 20 2
pc-window gemm_per_s 396
pc-window pid 24 2
pc-idle gemm_per_s 380
pc-idle pid 22 3
pc_exit 134 double free
"""


def lib(**kw):
    d = dict(enable_mode="context", windows=2, enables=1, samples=0, oom=0, period_log2=20,
             errors=0, launch_ns=0, getdata_ns=0)
    d.update(kw)
    return d


def run(rates, libs):
    d = tempfile.mkdtemp(prefix="pcvar-")
    try:
        paths = {n: os.path.join(d, n) for n in ("rates", "libs", "results")}
        with open(paths["rates"], "w") as f:
            f.write(rates)
        with open(paths["libs"], "w") as f:
            for (label, rnd, pid), pl in libs.items():
                f.write(json.dumps({"label": label, "round": rnd, "pid": pid, "lib": pl}) + "\n")
            f.write("not json\n")
        with contextlib.redirect_stdout(io.StringIO()):
            pc_variants.main(["--results", paths["results"], "--file", paths["rates"],
                              "--libs", paths["libs"], "--base", "off", "--labels", "off", "pc",
                              "pc-idle", "pc-window", "pc24"])
        rows = {}
        with open(paths["results"]) as f:
            for line in f:
                name, value, target, verdict = line.rstrip("\n").split("\t")
                eq(verdict, "INFO", "every line shown: " + name)
                rows[name.split(" (")[0]] = value
        return rows
    finally:
        shutil.rmtree(d, ignore_errors=True)


@test
def per_round_pairs_and_counters():
    rows = run(RATES, {("pc", 1, 11): lib(samples=12_300_000, launch_ns=2_500_000),
                       ("pc", 2, 21): lib(windows=3, samples=20_000_000, oom=1,
                                          launch_ns=2_500_000),
                       ("pc-window", 1, 14): lib(enable_mode="window", enables=2)})
    pc = rows["PC sampling variant pc"]
    # round 1: 400 / 500, round 2: 300 / 400, each against its own off
    expect(pc.startswith("20.00/25.00% slower per round (median 22.50%, 2 pairs)"), pc)
    expect("batches' median rate 0.98% slower; slow batches 12% (off 1%)" in pc, pc)
    expect("library: enable_mode context windows 2/3 enables 1 samples 12.3M/20M oom 0/1 "
           "period_log2 20 errors 0 launch 2.5 ms getdata 0.0 ms" in pc, pc)
    # round 3 has no off run: no pair
    idle = rows["PC sampling variant pc-idle"]
    expect(idle.startswith("1.00% slower per round (median 1.00%, 1 pairs)") and
           "no PC counters" in idle, idle)
    expect("enable_mode window windows 2 enables 2 " in rows["PC sampling variant pc-window"],
           rows["PC sampling variant pc-window"])
    split = rows["PC sampling cost split"]
    eq(split, "default 22.50%; enabled but never started (H1) 1.00%; window switching at few "
       "samples, 2^24 (H3) 1.00%; the samples' volume at CUPTI's period (H2) 20.50%; "
       "enabled per window 5.50%", "cost split")


@test
def no_pairs_no_split():
    rows = run("pc gemm_per_s 400\npc pid 11 1\n", {})
    eq(rows["PC sampling variant pc"], "no off/pc pairs", "no off run")
    expect("PC sampling cost split" not in rows, "no split without pairs: %r", rows)


if __name__ == "__main__":
    main()
