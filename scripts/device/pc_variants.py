#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the pc step of scripts/device/gpu_checks.sh measured of PC
sampling's variants, per round: each variant's throughput against the off
run of the same round (paired: the rounds share the machine's state), the
GEMM batches' median rate (the loop's speed outside the windows) and the
share of slow batches, and the library's PC counters of each run (windows,
samples, oom, period, Enable calls, the time the window switching took);
then the split of the default's cost into the hypotheses the variants
tell apart (docs/collectors.md, "What PC sampling costs"). Every line is
INFO: shown, not judged (gpu_compare.py ratio judges the default).

  pc_variants.py --results R --file PC_RATE.out --libs PC_RATE.lib.jsonl
                 --base off --labels off pc ... [--stand-in]

PC_RATE.out: lines "LABEL METRIC X" of each run, then "LABEL pid PID
ROUND" (gpu_checks.sh's pc_rate_run); PC_RATE.lib.jsonl: one JSON object
per run, {"label", "round", "pid", "lib": status's pc_library}."""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_compare import add  # noqa: E402

WHAT = {
    "pc": "the default: enabled per context, Start/Stop per window",
    "pc-idle": "enabled and configured, never started",
    "pc-window": "enabled only while a window is open",
}


def what(label):
    if label in WHAT:
        return WHAT[label]
    if label.startswith("pc") and label[2:].isdigit():
        return "the default at a sampling period of 2^%s cycles" % label[2:]
    return label


def read_runs(path):
    """{(label, round): {metric: value}} from PC_RATE.out."""
    runs, pending = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 4 and w[1] == "pid":
                try:
                    runs[(w[0], int(w[3]))] = pending.pop(w[0], {})
                except ValueError:
                    pass
            elif len(w) == 3:
                try:
                    pending.setdefault(w[0], {})[w[1]] = float(w[2])
                except ValueError:
                    pass
    return runs


def read_libs(path):
    libs = {}
    try:
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    e = json.loads(line)
                    libs[(e["label"], int(e["round"]))] = e["lib"]
                except (ValueError, KeyError, TypeError):
                    pass
    except OSError:
        pass
    return libs


def slowdowns(runs, base, label, metric):
    """{round: % slower than that round's base run}"""
    out = {}
    for (lab, r), m in runs.items():
        b = runs.get((base, r), {}).get(metric)
        if lab == label and b and m.get(metric) is not None:
            out[r] = 100.0 * (1 - m[metric] / b)
    return out


def per_round(values, fmt):
    """values in round order, one when all are the same"""
    vs = [fmt(v) for v in values]
    return vs[0] if len(set(vs)) == 1 else "/".join(vs)


def big(n):
    if not isinstance(n, (int, float)):
        return str(n)
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return "%.3g%s" % (n / div, unit)
    return "%.0f" % n


def lib_summary(libs):
    """libs in round order: the counters that say what a variant did"""
    if not libs:
        return "no PC counters (pc not asked for, or status lost them)"
    parts = []
    for key in ("enable_mode", "windows", "enables", "samples", "oom", "period_log2", "errors"):
        parts.append("%s %s" % (key, per_round([lib.get(key, "-") for lib in libs], big)))
    for key in ("launch_ns", "getdata_ns"):
        parts.append("%s %s ms" % (key[:-3], per_round([lib.get(key, 0) / 1e6 for lib in libs],
                                                        lambda v: "%.1f" % v)))
    return " ".join(parts)


def report(a):
    runs = read_runs(a.file)
    libs = read_libs(a.libs)
    pre = "(stand-in: not a measurement) " if a.stand_in else ""
    med = {}
    for label in a.labels:
        if label == a.base:
            continue
        sl = slowdowns(runs, a.base, label, "gemm_per_s")
        rounds = sorted(sl)
        if not rounds:
            add(a.results, "PC sampling variant %s (%s): per-round slowdown" % (label, what(label)),
                pre + "no %s/%s pairs" % (a.base, label), "shown", "INFO")
            continue
        med[label] = statistics.median(sl[r] for r in rounds)
        value = "%s%% slower per round (median %.2f%%, %d pairs)" % (
            "/".join("%.2f" % sl[r] for r in rounds), med[label], len(rounds))
        steady = slowdowns(runs, a.base, label, "gemm_batch_median_per_s")
        if steady:
            slow = [runs[(label, r)].get("gemm_batch_slow_pct") for r in rounds]
            base_slow = [runs[(a.base, r)].get("gemm_batch_slow_pct") for r in rounds]
            value += "; batches' median rate %.2f%% slower; slow batches %s%% (%s %s%%)" % (
                statistics.median(steady.values()),
                per_round([s for s in slow if s is not None], lambda v: "%.0f" % v),
                a.base, per_round([s for s in base_slow if s is not None], lambda v: "%.0f" % v))
        value += "; library: " + lib_summary([libs[(label, r)] for r in rounds
                                              if (label, r) in libs])
        add(a.results, "PC sampling variant %s (%s): per-round slowdown" % (label, what(label)),
            pre + value, "shown", "INFO")
    periods = sorted((int(lab[2:]) for lab in med if lab.startswith("pc") and lab[2:].isdigit()))
    if "pc" in med and "pc-idle" in med:
        idle, pc = med["pc-idle"], med["pc"]
        parts = ["default %.2f%%" % pc,
                 "enabled but never started (H1) %.2f%%" % idle]
        if periods:
            few = med["pc%d" % periods[-1]]
            parts.append("window switching at few samples, 2^%d (H3) %.2f%%" % (periods[-1],
                                                                                  few - idle))
            parts.append("the samples' volume at CUPTI's period (H2) %.2f%%" % (pc - few))
        if "pc-window" in med:
            parts.append("enabled per window %.2f%%" % med["pc-window"])
        add(a.results, "PC sampling cost split (medians of per-round slowdowns)",
            pre + "; ".join(parts), "shown", "INFO")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--libs", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--labels", nargs="+", required=True)
    ap.add_argument("--stand-in", action="store_true")
    report(ap.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
