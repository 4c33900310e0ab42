#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/device/gpu_checks.sh --stand-in on this build: the device
checks' whole flow (a daemon from the build, the CUDA program with known
kernels, the training process's live phase A, the release, the parity
against the import of a trace with its sync edges, the CUDA event records
and the waits linked to them, Python frames above the GEMM launches, PC
sampling, the cost lines) on the fake driver, the stand-in libcupti,
cuda_app and tests/device/fake_parity.py. Checked: its exit status, every
target line the stand-in can judge PASS in results.tsv, the timings and
the PyTorch-only lines SKIP, and the SUMMARY block on stdout."""

import importlib.util
import json
import os
import shutil
import subprocess
import tempfile

from gpd import BUILD, SOURCE, Skip, eq, expect, main, test

SCRIPT = os.path.join(SOURCE, "scripts", "device", "gpu_checks.sh")
NEEDED = [os.path.join(BUILD, p) for p in (
    "inject/libgpuprof-cupti.so", "tests/cupti/libcupti.so.13", "tests/gpu/cuda/libcuda.so.1",
    "tests/cupti/cuda_app", "daemon/gpuprofd", "cli/gpuprofctl")]

PASS = ["CUDA program: kernel counts", "CUDA program: folded gpu-time per kernel",
        "CUDA program: kernel GPU time on launching stacks", "CUDA program: analyses on the live capture",
        "CUDA events: event records", "CUDA events: waits linked to their cudaEventRecord",
        "CUDA events: sync-dependency edges in the critical-path graph",
        "cupti release (stand-in process", "stand-in training window: kernel counts",
        "stand-in training window: folded gpu-time per kernel",
        "stand-in training window: kernel GPU time on launching stacks",
        "Kineto parity (stand-in: phase A's own Chrome export): kernel counts per step",
        "Kineto parity (stand-in: phase A's own Chrome export): per-kernel mean GPU time",
        "Kineto parity (stand-in: phase A's own Chrome export): temporal",
        "Kineto parity (stand-in: phase A's own Chrome export): idle per stream and category",
        "Kineto parity (stand-in: phase A's own Chrome export): sync-dependency edges per step",
        "Python frames (stand-in): Python frames above fake GEMM launches"]
PC = ["PC sampling: PC samples through the daemon",
      "PC sampling: pcOffset relative to the function (SASS found)"]
SKIP = ["PC sampling slowdown of a GEMM loop (default duty)", "PyTorch inference loop throughput",
        "PC sampling at GPUPROF_CUPTI_PC_PERIOD=20 ", "PC sampling at GPUPROF_CUPTI_PC_PERIOD=24 ",
        "PC sampling enabled but never started (diagnostic", "PC sampling enabled per window (",
        "launch cost: cudaEventRecord + cudaStreamWaitEvent with the library (default) vs off",
        "launch cost: cudaEventRecord + cudaStreamWaitEvent with the library (duty 100) vs off"]


def load_compare():
    spec = importlib.util.spec_from_file_location(
        "gpu_compare", os.path.join(SOURCE, "scripts", "device", "gpu_compare.py"))
    gc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gc)
    return gc


# a cost line (a stand-in's timing: SKIP) for each configuration of the
# variants list the cost step runs
SKIP += ["launch cost beyond the probes, %s, drv" % what
         for _, steps, what, _ in load_compare().variants() if "cost" in steps]


@test
def stand_in_run_passes_its_targets():
    for p in NEEDED:
        if not os.path.exists(p):
            raise Skip("not built (no CUPTI headers?): %s" % p)
    if os.geteuid() != 0:
        raise Skip("the launch probes need root")
    out = tempfile.mkdtemp(prefix="gpuchecks-")
    try:
        env = dict(os.environ, OUT=out, GPU_CHECKS_BUDGET_S="900")
        p = subprocess.run([SCRIPT, "--stand-in", BUILD], cwd=SOURCE, env=env,
                           capture_output=True, text=True, timeout=560)
        log = "stdout:\n%s\nstderr:\n%s" % (p.stdout, p.stderr[-3000:])
        rows = {}
        with open(os.path.join(out, "results.tsv")) as f:
            for line in f:
                name, value, target, verdict = line.rstrip("\n").split("\t")
                expect(name not in rows, "one line per target: %r twice" % name)
                rows[name] = (verdict, value)

        def verdict(prefix):
            hits = [v for n, v in rows.items() if n.startswith(prefix)]
            eq(len(hits), 1, "results named %r\n%s" % (prefix, log))
            return hits[0][0]
        for name in PASS:
            eq(verdict(name), "PASS", name + "\n" + log)
        pc = "PASS" if os.path.exists(os.path.join(BUILD, "tests", "cupti", "pc_kernel.cubin")) else "SKIP"
        for name in PC:
            eq(verdict(name), pc, name + "\n" + log)
        for name in SKIP:
            eq(verdict(name), "SKIP", name + "\n" + log)
        if pc == "PASS":
            # the library's PC counters of the run, saved and summed up
            v, val = rows["PC sampling: the library's counters"]
            eq(v, "INFO", "counters line\n" + log)
            expect("errors=0 " in val and "names_held=1 " in val and "contexts_ever=1 " in val,
                   "the library's counters: %r", val)
            with open(os.path.join(out, "res", "pc.library.json")) as f:
                pl = json.load(f)
            expect(pl["getdata_calls"] > 0 and pl["pcs"] > 0, "pc.library.json: %r", pl)
            # the variants' per-round lines carry each run's counters: the
            # diagnostic never opens a window, window mode Enables per window
            v, val = rows["PC sampling variant pc-idle (enabled and configured, never started): "
                          "per-round slowdown"]
            expect(v == "INFO" and "enable_mode context windows 0 enables 1 samples 0 " in val,
                   "pc-idle: %r", val)
            v, val = rows["PC sampling variant pc-window (enabled only while a window is open): "
                          "per-round slowdown"]
            expect(v == "INFO" and "enable_mode window windows " in val and " pairs)" in val,
                   "pc-window: %r", val)
            w = val.split(" windows ")[1].split()[0].split("/")
            e = val.split(" enables ")[1].split()[0].split("/")
            expect(all(int(x) >= 1 for x in w) and w == e, "a window per Enable: %r", val)
            expect(rows["PC sampling cost split (medians of per-round slowdowns)"][0] == "INFO", log)
        # behaviours observed, not judged
        expect(rows["CUDA graph (all features): GRAPH_TRACE vs per-node records"][0] == "INFO", log)
        eq([n for n, (v, _) in rows.items() if v == "FAIL"], [], "no target failed\n" + log)
        eq(p.returncode, 0, "exit status\n" + log)
        tail = p.stdout[p.stdout.index("\nSUMMARY\n"):]
        expect("%d PASS, 0 FAIL, %d SKIP" % (len(PASS) + (2 if pc == "PASS" else 0),
                                            len(SKIP) + (2 if pc == "SKIP" else 0)) in tail, log)
        with open(os.path.join(out, "summary.txt")) as f:
            eq(f.read().strip(), p.stdout[p.stdout.index("CUPTI BEHAVIOURS"):p.stdout.index("wall ")].strip(),
               "summary.txt holds what stdout showed")
    finally:
        shutil.rmtree(out, ignore_errors=True)


@test
def pc_fail_line_says_why():
    # gpu_compare.py's reason when a run got no PC samples, from the
    # library's counters (what the next device run reports)
    why = load_compare().pc_why_none
    expect("never connected" in why(None), why(None))
    r = why({"contexts_ever": 0, "errors": 1, "last_error": 27,
             "last_error_call": "cuptiPCSamplingEnable", "contexts_refused": 0})
    expect("no CUDA context" in r and "27 (NOT_SUPPORTED) from cuptiPCSamplingEnable" in r, r)
    r = why({"contexts_ever": 1, "getdata_calls": 0, "drains": 0})
    expect("GetData never called" in r, r)
    r = why({"contexts_ever": 1, "getdata_calls": 9, "pcs": 0, "cupti_total_samples": 0,
             "errors": 8, "last_error": 7, "last_error_call": "cuptiPCSamplingGetData",
             "contexts_off": 1})
    expect("CUPTI handed no PC in 9 GetData calls (its totalSamples 0" in r and
           "last 7 (INVALID_OPERATION) from cuptiPCSamplingGetData" in r, r)
    r = why({"contexts_ever": 1, "getdata_calls": 9, "pcs": 4, "samples": 40, "sent": 0})
    expect("read 40 samples in 4 PCs and sent 0" in r, r)


if __name__ == "__main__":
    main()
