#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/device/gpu_compare.py, the judgements of gpu_checks.sh, on small
synthetic analyses, traces and folded files: each target passes where it
should and fails where it should."""

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
import gpu_compare  # noqa: E402
from gpd import eq, expect, main, test  # noqa: E402


class Dir:
    def __init__(self):
        self.d = tempfile.mkdtemp(prefix="gpucmp-")
        self.results = self.path("results.tsv")

    def path(self, name):
        return os.path.join(self.d, name)

    def write(self, name, obj):
        with open(self.path(name), "w") as f:
            if isinstance(obj, str):
                f.write(obj)
            else:
                json.dump(obj, f)
        return self.path(name)

    def run(self, *argv):
        """gpu_compare with --results; returns (exit code, stdout)."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = gpu_compare.main([argv[0], "--results", self.results] + list(argv[1:]))
        return rc, out.getvalue()

    def verdicts(self):
        """{name: (value, verdict)} of the results so far."""
        out = {}
        if os.path.exists(self.results):
            for line in open(self.results):
                n, v, _, verdict = line.rstrip("\n").split("\t")
                out[n] = (v, verdict)
        return out

    def verdict(self, prefix):
        hits = [v for n, v in self.verdicts().items() if n.startswith(prefix)]
        expect(len(hits) == 1, "one result named %r in %r" % (prefix, self.verdicts()))
        return hits[0][1]

    def cleanup(self):
        shutil.rmtree(self.d, ignore_errors=True)


@contextlib.contextmanager
def tmpdir():
    d = Dir()
    try:
        yield d
    finally:
        d.cleanup()


def kernels_json(rows):
    """rows: (name, count, sum_us)"""
    return {"analysis": "kernels", "kernels": [
        {"name": n, "count": c, "sum_us": s, "mean_us": s / c} for n, c, s in rows]}


def temporal_json(idle, compute, span=100000.0):
    return {"analysis": "temporal", "ranks": [
        {"rank": 1, "kernel_time_us": span, "idle_time_pctg": idle, "compute_time_pctg": compute,
         "non_compute_time_pctg": 100 - idle - compute}]}


def idle_json(streams, span=100000.0):
    """streams: {stream: {category: percent of span}}"""
    return {"analysis": "idle", "ranks": [{"rank": 1, "streams": [
        {"stream": s, "categories": [{"idle_category": c, "idle_time_us": p * span / 100,
                                      "idle_time_ratio": 0} for c, p in cats.items()]}
        for s, cats in streams.items()]}]}


def trace_json(rows):
    """rows: (cat, name, [durations us])"""
    ev, ts = [], 1000.0
    for cat, name, durs in rows:
        for d in durs:
            ev.append({"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": d, "pid": 0, "tid": 7})
            ts += d + 1
    ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1.0, "dur": 5.0})
    return {"traceEvents": ev}


GEMM = "void gemm_kernel<float, 128>(float const*, float*)"
RELU = "elementwise_relu"
COPY = "Memcpy HtoD (Pinned -> Device)"


def parity_files(d, live, imp, lt=(5.0, 90.0), it=(5.5, 89.6), li=None, ii=None, trace=None):
    args = ["parity", "--steps-live", "10", "--steps-import", "10",
            "--live-kernels", d.write("lk.json", kernels_json(live)),
            "--import-kernels", d.write("ik.json", kernels_json(imp)),
            "--live-temporal", d.write("lt.json", temporal_json(*lt)),
            "--import-temporal", d.write("it.json", temporal_json(*it)),
            "--live-idle", d.write("li.json", idle_json(li or {7: {"host_wait": 4.0, "kernel_wait": 1.0}})),
            "--import-idle", d.write("ii.json", idle_json(ii or {7: {"host_wait": 4.4, "kernel_wait": 1.1}}))]
    if trace is not None:
        args += ["--trace", d.write("trace.json", trace_json(trace))]
    return d.run(*args)


@test
def parity_passes_on_agreeing_windows():
    with tmpdir() as d:
        rc, out = parity_files(
            d, [(GEMM, 30, 30 * 200.0), (RELU, 20, 20 * 10.0), (COPY, 10, 10 * 50.0)],
            [(GEMM, 30, 30 * 201.0), (RELU, 20, 20 * 10.1), (COPY, 10, 10 * 49.5)])
        eq(rc, 0, "exit status")
        for t in ("kernel counts per step", "per-kernel mean GPU time", "temporal",
                  "idle per stream"):
            eq(d.verdict("parity: " + t), "PASS", t + "\n" + out)


@test
def unreadable_inputs_are_a_fail_line():
    """An empty kernels file (the analysis of an import with no GPU
    activity failed), a missing one, invalid JSON, an empty gzip: a FAIL
    line naming the file and why, exit 1, no traceback."""
    with tmpdir() as d:
        live = [(GEMM, 30, 30 * 200.0)]
        for name, content in (("empty", ""), ("invalid", "{\"kernels\": ["), ("missing", None),
                              ("blank", "  \n")):
            os.remove(d.results) if os.path.exists(d.results) else None
            args = ["parity", "--tag", "Kineto parity",
                    "--live-kernels", d.write("lk.json", kernels_json(live)),
                    "--live-temporal", d.write("lt.json", temporal_json(5.0, 90.0)),
                    "--live-idle", d.write("li.json", idle_json({7: {"host_wait": 4.0}})),
                    "--import-temporal", d.write("it.json", temporal_json(5.0, 90.0)),
                    "--import-idle", d.write("ii.json", idle_json({7: {"host_wait": 4.0}}))]
            ik = d.path("ik_%s.json" % name)
            if content is not None:
                d.write("ik_%s.json" % name, content)
            rc, out = d.run(*(args + ["--import-kernels", ik]))
            eq(rc, 1, name + " exit status\n" + out)
            v = d.verdicts()
            eq(list(v), ["Kineto parity: inputs"], name + ": the one line")
            value, verdict = v["Kineto parity: inputs"]
            eq(verdict, "FAIL", name)
            expect(ik in value, "%s: names the file: %r" % (name, value))
            expect({"empty": "is empty", "blank": "is empty", "invalid": "is not JSON",
                    "missing": "cannot read"}[name] in value, "%s: why: %r" % (name, value))
        # the same for a gzip'd trace that is not one, in another command
        os.remove(d.results)
        rc, out = d.run("events", "--tag", "CUDA events", "--program", d.write("p.out", "events records 2 waits 1 synchronizes 1\n"),
                        "--records", "0", "--chrome", d.write("c.json.gz", "not gzip"),
                        "--critpath", d.write("cp.json", "{}"))
        eq(rc, 1, "gzip\n" + out)
        eq(d.verdicts()["CUDA events: inputs"][1], "FAIL", "gzip")
        expect("cannot read" in d.verdicts()["CUDA events: inputs"][0], "gzip reason")


@test
def parity_fails_each_target():
    with tmpdir() as d:
        parity_files(
            d, [(GEMM, 30, 30 * 200.0), (RELU, 20, 20 * 10.0)],
            [(GEMM, 30, 30 * 210.0), (RELU, 21, 21 * 10.0)],  # 5 % slower, one kernel more
            lt=(5.0, 90.0), it=(8.5, 87.0), li={7: {"host_wait": 4.0}}, ii={7: {"host_wait": 7.0}})
        for t in ("kernel counts per step", "per-kernel mean GPU time", "temporal",
                  "idle per stream"):
            eq(d.verdict("parity: " + t), "FAIL", t)
    with tmpdir() as d:  # a kernel only one side has
        parity_files(d, [(GEMM, 30, 6000.0), (RELU, 20, 200.0)], [(GEMM, 30, 6000.0)])
        eq(d.verdict("parity: kernel counts per step"), "FAIL", "a kernel missing on one side")
    with tmpdir() as d:  # a stream only one side has: its idle against 0
        parity_files(d, [(GEMM, 30, 6000.0)], [(GEMM, 30, 6000.0)],
                     li={7: {"host_wait": 4.0}, 33: {"host_wait": 3.0}}, ii={7: {"host_wait": 4.0}})
        eq(d.verdict("parity: idle per stream"), "FAIL", "an idle stream only live")


@test
def parity_mean_time_from_the_trace_itself():
    """The import's analysis rounds to whole us (HTA): the trace's own
    durations decide; a kernel under 1 % of the GPU time is listed but not
    held to the tolerance."""
    with tmpdir() as d:
        live = [(GEMM, 3, 3 * 20.4), (RELU, 3, 3 * 0.2)]  # RELU: under 1 % of the time
        imp = [(GEMM, 3, 3 * 19.0), (RELU, 3, 3 * 0.0)]  # HTA's ceil/floor
        rc, out = parity_files(d, live, imp, trace=[("kernel", GEMM, [20.3, 20.4, 20.5]),
                                                    ("kernel", RELU, [0.3, 0.3, 0.3])])
        eq(d.verdicts()["parity: per-kernel mean GPU time"][1], "PASS", "means from the trace\n" + out)
        expect("all: max 33.33%" in out, "the minor kernel's deviation shown: " + out)
    with tmpdir() as d:
        parity_files(d, [(GEMM, 3, 3 * 20.4)], [(GEMM, 3, 3 * 20.4)],
                     trace=[("kernel", GEMM, [21.4, 21.4, 21.4])])
        eq(d.verdict("parity: per-kernel mean GPU time"), "FAIL", "the trace's 5 % longer kernels")


@test
def parity_pairs_names_the_demanglers_write_differently():
    with tmpdir() as d:
        rc, out = parity_files(d, [("gemm<(anonymous namespace)::T>(float*)", 30, 6000.0), (RELU, 20, 200.0)],
                               [("gemm<{anonymous}::T>(float*)", 30, 6000.0), (RELU, 20, 200.0)])
        eq(d.verdict("parity: kernel counts per step"), "PASS", out)
        expect("paired by base name" in out, out)
    with tmpdir() as d:  # whitespace alone never matters
        parity_files(d, [("void k<int, 2>(int*)", 30, 6000.0)], [("void k<int,2>(int *)", 30, 6000.0)])
        eq(d.verdict("parity: kernel counts per step"), "PASS", "whitespace")


@test
def parity_steps_scale_counts():
    with tmpdir() as d:
        d.run("parity", "--steps-live", "10", "--steps-import", "5",
              "--live-kernels", d.write("lk.json", kernels_json([(GEMM, 40, 8000.0)])),
              "--import-kernels", d.write("ik.json", kernels_json([(GEMM, 20, 4000.0)])),
              "--live-temporal", d.write("lt.json", temporal_json(5, 90)),
              "--import-temporal", d.write("it.json", temporal_json(5, 90)),
              "--live-idle", d.write("li.json", idle_json({7: {"host_wait": 5}})),
              "--import-idle", d.write("ii.json", idle_json({7: {"host_wait": 5}})))
        eq(d.verdict("parity: kernel counts per step"), "PASS", "4 per step on both sides")


PROGRAM = """kernel gpuprof_k_a launches 3 total_ns 60000
kernel _Z11gpuprof_k_bPfi launches 2 total_ns 10000
graph count 1 total_ns 7000
done
"""


def kernels_case(d, folded, rows, program=PROGRAM):
    return d.run("kernels", "--tag", "prog", "--program", d.write("prog.out", program),
                 "--kernels", d.write("k.json", kernels_json(rows)),
                 "--folded", d.write("g.folded", folded),
                 "--join", d.write("join.json", {"cupti": {"intervals": 6, "no_call": 0, "no_launch": 1}}))


@test
def kernels_against_the_program():
    if not shutil.which("c++filt"):
        print("(no c++filt: the mangled name stays mangled)")
    shown_b = "gpuprof_k_b(float*, int)" if shutil.which("c++filt") else "_Z11gpuprof_k_bPfi"
    rows = [("gpuprof_k_a", 3, 60.0), (shown_b, 2, 10.0), ("Graph Launch", 1, 7.0)]
    good = ("app;main;run;gpuprof_k_a_[G] 40000\napp;main;other;gpuprof_k_a_[G] 20000\n"
            "app;main;run;%s_[G] 10000\napp;Graph Launch_[G] 7000\n" % shown_b)
    with tmpdir() as d:
        rc, out = kernels_case(d, good, rows)
        for t in ("kernel counts", "folded gpu-time", "kernel GPU time on launching stacks"):
            eq(d.verdict("prog: " + t), "PASS", t + "\n" + out)
    with tmpdir() as d:  # one launch lost, gpu-time off, a kernel on no stack
        bad = "app;gpuprof_k_a_[G] 40000\napp;main;run;%s_[G] 10000\n" % shown_b
        kernels_case(d, bad, [("gpuprof_k_a", 2, 40.0), (shown_b, 2, 10.0)])
        for t in ("kernel counts", "folded gpu-time", "kernel GPU time on launching stacks"):
            eq(d.verdict("prog: " + t), "FAIL", t)
    with tmpdir() as d:  # the analysis and the folded file agree, the program does not
        kernels_case(d, good.replace("40000", "41000"), [("gpuprof_k_a", 3, 61.0), (shown_b, 2, 10.0)])
        eq(d.verdict("prog: folded gpu-time"), "FAIL", "against the program's own total")


@test
def kernels_without_cxxfilt():
    """No c++filt: a mangled name meets the capture's row of its identifier."""
    rows = [("gpuprof_k_a", 3, 60.0), ("gpuprof_k_b(float*, int)", 2, 10.0)]
    folded = "app;main;gpuprof_k_a_[G] 60000\napp;main;gpuprof_k_b(float*, int)_[G] 10000\n"
    saved = gpu_compare.shutil.which
    gpu_compare.shutil.which = lambda name: None
    try:
        with tmpdir() as d:
            rc, out = kernels_case(d, folded, rows)
            eq(d.verdicts()["prog: kernel counts"], ("3/3 2/2", "PASS"), out)
            eq(d.verdict("prog: folded gpu-time"), "PASS", out)
    finally:
        gpu_compare.shutil.which = saved


@test
def analyses_all_nine():
    with tmpdir() as d:
        os.mkdir(d.path("an"))
        for a in gpu_compare.ANALYSES:
            d.write("an/%s.rc" % a, "0\n")
            d.write("an/%s.err" % a, "")
        d.write("an/comm.rc", "1\n")
        d.write("an/comm.err", "gpuprofctl: analyze.comm: no communication kernels in this capture\n")
        d.run("analyses", "--tag", "x", "--dir", d.path("an"))
        eq(d.verdict("x: analyses"), "PASS", "comm's refusal of a capture without NCCL")
        d.write("an/queue.rc", "1\n")
        os.unlink(d.path("an/idle.rc"))
        d.run("analyses", "--tag", "y", "--dir", d.path("an"))
        v = d.verdicts()["y: analyses on the live capture"]
        eq(v, ("7/9 (failed: idle,queue)", "FAIL"), "a failed and a missing analysis")


FOLDED_LAUNCHES = """python3;train (t.py)_[p];Block.forward (t.py)_[p];libtorch.so:at::mm;sm90_xmma_gemm_f32_[G] 20
python3;train (t.py)_[p];Sequential.forward (torch/nn/container.py)_[p];cutlass_gemm_[G] 5
pt_autograd_0;start_thread;libtorch.so:backward;sm90_xmma_gemm_f32_[G] 40
python3;train (t.py)_[p];vectorized_elementwise_kernel_[G] 30
"""


@test
def pyframes_above_gemm_launches():
    with tmpdir() as d:
        f = d.write("l.folded", FOLDED_LAUNCHES)
        rc, out = d.run("pyframes", "--tag", "py", "--folded", f, "--kernel-regex", "(?i)gemm",
                        "--python-regex", r"forward \(t\.py", "--min", "20")
        eq(d.verdicts()["py: Python frames above GEMM launches"],
           ("25 of 65 launches under Python frames, 20 under /forward \\(t\\.py/", "PASS"), out)
        expect("Block.forward (t.py)_[p]" in out, "the heaviest stacks printed: " + out)
        d.run("pyframes", "--tag", "py2", "--folded", f, "--kernel-regex", "(?i)gemm",
              "--python-regex", r"forward \(t\.py", "--min", "21")
        eq(d.verdict("py2:"), "FAIL", "fewer than --min under the model's function")
        d.run("pyframes", "--tag", "py3", "--folded", f, "--kernel-regex", "nomatch")
        eq(d.verdict("py3:"), "FAIL", "no launch of the kernel at all")


STALLS = """app;main;k_[G];IMAD R1, R2, R3, R4_[g];long_scoreboard_[g] 90
app;main;k_[G];+0x1a0_[g];barrier_[g] 10
app;other_[G];+0x10_[g];wait_[g] 1000
"""


@test
def pc_samples_and_sass():
    with tmpdir() as d:
        f = d.write("s.folded", STALLS)
        d.run("pc", "--tag", "a", "--folded", f, "--kernel-regex", "^k_", "--program-samples", "100")
        eq(d.verdicts()["a: PC samples through the daemon"][1], "PASS", "100 samples of k")
        eq(d.verdict("a: pcOffset"), "FAIL", "90 % with SASS text")
        d.write("s.folded", STALLS.replace("+0x1a0", "BAR.SYNC 0x0"))
        d.run("pc", "--tag", "b", "--folded", f, "--kernel-regex", "^k_")
        eq(d.verdict("b: pcOffset"), "PASS", "all with SASS text")
        d.run("pc", "--tag", "c", "--folded", f, "--kernel-regex", "^k_", "--program-samples", "99")
        eq(d.verdict("c: PC samples"), "FAIL", "not the program's count")
        d.run("pc", "--tag", "e", "--folded", f, "--sass", "no")
        eq(d.verdict("e: pcOffset"), "SKIP", "no nvdisasm")


def real_cuda_out(rows, order=True):
    """rows: (mode, api, [wall ns per round]); cpu = wall - 100. order:
    "round R order ..." lines between the rounds, as real_cuda.sh writes"""
    lines = []
    rounds = max(len(w) for _, _, w in rows)
    for r in range(1, rounds + 1):
        if order:
            lines.append("round %d order %s" % (r, " ".join(sorted({m for m, _, _ in rows}))))
        for mode, api, walls in rows:
            if r <= len(walls) and walls[r - 1] is not None:
                lines.append("%s %d %s ns_per_launch %d cpu_ns_per_launch %d" % (
                    mode, r, api, walls[r - 1], walls[r - 1] - 100))
        lines.append("  gpu collector: events 1")
    return "\n".join(lines) + "\n"


@test
def launch_cost_paired_medians():
    with tmpdir() as d:
        # a drift over the rounds that medians of each configuration turn
        # into a cost: with 3000, 4000, 5000; the default 600 above it in
        # every round; off equal but for round 2; "without" 900 below
        f = d.write("rc.out", real_cuda_out([
            ("without", "rt", [2100, 3100, 4100]), ("with", "rt", [3000, 4000, 5000]),
            ("cupti-off", "rt", [3000, 4200, 5000]), ("cupti", "rt", [3600, 4500, 5700]),
            ("cupti-full", "rt", [4400, 5400, 6400]),
            ("cupti-kernel", "rt", [4200, 5200, 6200]),
            ("cupti-api", "rt", [3100, 4100, None]), ("cupti-new", "rt", [3050, 4050, 5050])]))
        rc, out = d.run("cost", "--file", f)
        v = d.verdicts()
        floor = "noise floor (library off - with) 0 ns, 0..200 over 3 rounds: clear of the noise"
        eq(v["launch cost beyond the probes, default, rt"],
           ("600 ns wall, 600 ns cpu (median of 3 rounds' differences to with, 500..700 ns; %s)" % floor,
            "PASS"), out)
        # the target is the defaults (the duty cycle): collecting all the
        # time is shown, over the target or not
        eq(v["launch cost beyond the probes, collecting all the time (duty 100), rt"],
           ("1400 ns wall, 1400 ns cpu (median of 3 rounds' differences to with, 1400..1400 ns; %s)" % floor,
            "INFO"), out)
        eq(v["launch cost beyond the probes, kernels only (duty 100), rt"][1], "INFO", "1200 ns")
        # within the floor's range: said so
        expect(v["launch cost beyond the probes, cupti-new, rt"][0].endswith(
            "0..200 over 3 rounds: within the noise)"), v)
        eq(v["launch cost beyond the probes, library off, rt"],
           ("0 ns wall, 0 ns cpu (median of 3 rounds' differences to with, 0..200 ns)", "INFO"),
           "the floor itself")
        # a variant of the list, named by what it isolates; one missing a
        # round: the rounds it ran; a label not in the list: its own name
        expect(v["launch cost beyond the probes, API callbacks only, no activity kind (default duty), rt"]
               [0].startswith("100 ns wall, 100 ns cpu (median of 2 rounds'"), v)
        eq(v["launch cost beyond the probes, cupti-new, rt"][1], "INFO", "a label not in the list")
        expect("the launch probes add 900 ns wall, 900 ns cpu per launch (median of 3 rounds, 900..900 ns)"
               in out, out)
        expect("rt cupti - with, per round: 600 500 700" in out, out)
    with tmpdir() as d:
        # run5's rt figures (an H200): medians 1170 ns, paired 1191
        f = d.write("rc.out", real_cuda_out([
            ("with", "rt", [4923, 4877, 5273]), ("cupti-off", "rt", [5375, 4715, 5699]),
            ("cupti", "rt", [5607, 6093, 6464])], order=False))
        d.run("cost", "--file", f, "--target-ns", "1000")
        eq(d.verdicts()["launch cost beyond the probes, default, rt"],
           ("1191 ns wall, 1191 ns cpu (median of 3 rounds' differences to with, 684..1216 ns; noise floor "
            "(library off - with) 426 ns, -162..452 over 3 rounds: clear of the noise)", "FAIL"),
           "files without order lines")
    with tmpdir() as d:
        d.run("cost", "--file", d.write("rc.out", real_cuda_out([("with", "rt", [1])]) + "garbage\n"))
        eq(d.verdict("launch cost"), "FAIL", "no runs with the library")
        d.run("cost", "--file", d.path("rc.out"), "--judge", "no")
        eq([x[1] for x in d.verdicts().values()], ["SKIP"], "not judged")
    with tmpdir() as d:
        # the unsubscribe variant says when its libraries never let go of
        # CUPTI (the rounds' "cupti idle" lines), and nothing when they did
        rows = [("with", "rt", [3000, 3000]), ("cupti-unsub", "rt", [3100, 3100])]
        name = ("launch cost beyond the probes, default, subscription let go between windows "
                "(GPUPROF_CUPTI_IDLE=unsubscribe), rt")
        f = d.write("rc.out", real_cuda_out(rows).replace(
            "  gpu collector: events 1\n",
            "  gpu collector: events 1\n  cupti idle: unsubscribes 0 resubscribes 0 failures 0\n"))
        d.run("cost", "--file", f)
        expect(d.verdicts()[name][0].endswith(
            "; the libraries never let the subscription go (no idle unsubscribe in any round)"),
            d.verdicts())
        f = d.write("rc.out", real_cuda_out(rows).replace(
            "  gpu collector: events 1\n",
            "  gpu collector: events 1\n  cupti idle: unsubscribes 40 resubscribes 39 failures 0\n"))
        d.run("cost", "--file", f)
        expect("never let" not in d.verdicts()[name][0], d.verdicts())
    with tmpdir() as d:
        # rounds that never meet are no figure
        f = d.write("rc.out", "with 1 rt ns_per_launch 10 cpu_ns_per_launch 10\n"
                    "cupti 2 rt ns_per_launch 20 cpu_ns_per_launch 20\n")
        d.run("cost", "--file", f)
        eq(d.verdict("launch cost"), "FAIL", "no paired round")


@test
def throughput_ratio_and_slowdown():
    with tmpdir() as d:
        f = d.write("r.out", "without steps_per_s 1000\nwith steps_per_s 990\nwithout steps_per_s 1010\n"
                    "with steps_per_s 985\nwithout steps_per_s 500\nwith steps_per_s 495\nnoise\n")
        d.run("ratio", "--file", f, "--metric", "steps_per_s", "--base", "without", "--test", "with",
              "--min-pct", "98", "--name", "tp")
        # rounds by each label's count of runs (older files): 99, 97.52, 99
        v = d.verdicts()["tp"]
        eq(v, ("99.00% (median of 3 rounds' ratios, 97.52%..99.00%; medians with 985.0 vs without 1000.0)",
               "PASS"), "paired by round")
        f = d.write("g.out", "off gemm_per_s 100\npc gemm_per_s 97\n")
        d.run("ratio", "--file", f, "--metric", "gemm_per_s", "--base", "off", "--test", "pc",
              "--min-pct", "98", "--as", "slowdown", "--name", "pc")
        eq(d.verdicts()["pc"], ("3.00% slower (median of 1 rounds' ratios, 97.00%..97.00%; medians pc 97.0 vs "
                                "off 100.0)", "FAIL"), "3 % slower")
        d.run("ratio", "--file", f, "--metric", "gemm_per_s", "--base", "off", "--test", "pc",
              "--min-pct", "98", "--judge", "info", "--name", "shown")
        eq(d.verdict("shown"), "INFO", "shown, not judged")
        d.run("ratio", "--file", f, "--metric", "steps_per_s", "--base", "off", "--test", "pc",
              "--min-pct", "98", "--name", "none")
        eq(d.verdict("none"), "FAIL", "no runs")
        # torch_rate.py's output: the sub-intervals' line beside each
        # run's median is not a run of steps_per_s
        f = d.write("t.out", "without intervals_steps_per_s 10 1000 1000 1000\nwithout steps_per_s 1000\n"
                    "with intervals_steps_per_s 5 990 990 990\nwith steps_per_s 990\n")
        d.run("ratio", "--file", f, "--metric", "steps_per_s", "--base", "without", "--test", "with",
              "--min-pct", "98", "--name", "medians")
        eq(d.verdicts()["medians"][0].split(" (")[0], "99.00%", "one figure per run")
        # pc_rate.out with longer periods: each label its own runs
        f = d.write("p.out", "off gemm_per_s 100\npc gemm_per_s 70\npc20 gemm_per_s 99\n"
                    "pc24 gemm_per_s 100\npc24_exit 134 double free\n")
        d.run("ratio", "--file", f, "--metric", "gemm_per_s", "--base", "off", "--test", "pc20",
              "--min-pct", "98", "--as", "slowdown", "--judge", "info", "--name", "p20")
        eq(d.verdicts()["p20"][0].split(" (")[0], "1.00% slower", "pc20 shown")
        d.run("ratio", "--file", f, "--metric", "gemm_per_s", "--base", "off", "--test", "pc28",
              "--min-pct", "98", "--judge", "info", "--name", "p28")
        eq(d.verdict("p28"), "INFO", "no runs of a line only shown: still INFO, not a FAIL")


@test
def throughput_paired_by_round_lines():
    with tmpdir() as d:
        # the machine twice as fast in round 2 and the order rotated: the
        # medians of each label (1500 vs 1000: 66.7 %) mislead, the rounds
        # agree on 90 %; a run missing from round 3 leaves that round out
        # of its label's ratios; the floor (off) within 1 %
        f = d.write("r.out", "round 1 order without cupti cupti-off\n"
                    "without steps_per_s 1000\ncupti steps_per_s 900\ncupti-off steps_per_s 1000\n"
                    "round 2 order cupti cupti-off without\n"
                    "cupti steps_per_s 1800\ncupti-off steps_per_s 1980\nwithout steps_per_s 2000\n"
                    "round 3 order cupti-off without cupti\n"
                    "cupti-off steps_per_s 1010\nwithout steps_per_s 1000\ncupti_exit 134 crash\n"
                    "round 4 order without cupti cupti-off\n"
                    "without steps_per_s 2000\ncupti steps_per_s 1820\ncupti-off steps_per_s 2000\n")
        rc, out = d.run("ratio", "--file", f, "--metric", "steps_per_s", "--base", "without",
                        "--test", "cupti", "--floor", "cupti-off", "--min-pct", "98", "--name", "tp")
        eq(d.verdicts()["tp"], ("90.00% (median of 3 rounds' ratios, 90.00%..91.00%; medians cupti 1800.0 "
                                "vs without 1500.0; noise floor (cupti-off / without) 100.00%, "
                                "99.00%..101.00%: clear of the noise)", "FAIL"), out)
        expect("steps_per_s: cupti / without per round: 90.00% 90.00% 91.00%" in out, out)
        d.run("ratio", "--file", f, "--metric", "steps_per_s", "--base", "without",
              "--test", "cupti-off", "--min-pct", "98", "--judge", "info", "--name", "{what}: tp")
        eq(d.verdict("library off: tp"), "INFO", "named by the variants list")
        d.run("ratio", "--file", f, "--metric", "steps_per_s", "--base", "without",
              "--test", "cupti", "--floor", "cupti-none", "--min-pct", "80", "--name", "nf")
        eq(d.verdicts()["nf"], ("90.00% (median of 3 rounds' ratios, 90.00%..91.00%; medians cupti 1800.0 "
                                "vs without 1500.0; no noise floor (no cupti-none runs))", "PASS"),
           "no floor runs: said")


def critpath_json(sync_graph, sync_path, length=1000.0):
    """an analyze critical_path answer with SYNC_GRAPH sync edges in the
    graph, SYNC_PATH of them among the critical edges"""
    edges = [{"type": "critical_path_sync_dependency"}] * sync_path + [
        {"type": "critical_path_kernel_launch"}] * 3
    return {"analysis": "critical_path", "graph": {"edges_by_type": {
        "critical_path_sync_dependency": sync_graph, "critical_path_kernel_launch": 9}},
        "path": {"length_us": length}, "critical_edges": edges, "critical_edges_truncated": False}


@test
def parity_sync_edges_per_step():
    with tmpdir() as d:
        rows = [(GEMM, 30, 30 * 200.0)]

        def run(live, imp, *extra):
            open(d.results, "w").close()
            parity_files(d, rows, rows)
            return d.run("parity", "--steps-live", "10", "--steps-import", "20",
                         "--live-kernels", d.path("lk.json"), "--import-kernels", d.path("ik.json"),
                         "--live-temporal", d.path("lt.json"), "--import-temporal", d.path("it.json"),
                         "--live-idle", d.path("li.json"), "--import-idle", d.path("ii.json"),
                         "--live-critpath", d.write("lc.json", critpath_json(*live)),
                         "--import-critpath", d.write("ic.json", critpath_json(*imp)), *extra)
        # 3 per step on both sides (10 and 20 steps)
        run((30, 4), (60, 5))
        eq(d.verdict("parity: sync-dependency edges per step"), "PASS", "equal per step")
        expect("live 3, import 3" in d.verdicts()["parity: sync-dependency edges per step"][0],
               d.verdicts())
        run((30, 4), (61, 5))
        eq(d.verdict("parity: sync-dependency edges per step"), "FAIL", "one edge more")
        run((0, 0), (0, 0))
        eq(d.verdict("parity: sync-dependency edges per step"), "FAIL", "none on either side")
        run((0, 0), (0, 0), "--sync-expected", "no")
        eq(d.verdict("parity: sync-dependency edges per step"), "SKIP", "no sync rows asked for")
        # an analysis that failed (an empty file): the line FAILs, the others stay
        open(d.results, "w").close()
        parity_files(d, rows, rows)
        d.run("parity", "--steps-live", "10", "--steps-import", "10",
              "--live-kernels", d.path("lk.json"), "--import-kernels", d.path("ik.json"),
              "--live-temporal", d.path("lt.json"), "--import-temporal", d.path("it.json"),
              "--live-idle", d.path("li.json"), "--import-idle", d.path("ii.json"),
              "--live-critpath", d.path("lc.json"), "--import-critpath", d.write("ic.json", ""))
        eq(d.verdict("parity: sync-dependency edges per step"), "FAIL", "no critical path")
        eq(d.verdict("parity: temporal"), "PASS", "the other lines")
        # without the critical-path files: no such line
        open(d.results, "w").close()
        parity_files(d, rows, rows)
        expect(not any("sync" in n for n in d.verdicts()), d.verdicts())


def chrome_events(waits, syncs, unlinked=0, wrong=0):
    """a Chrome export: cudaEventRecord rows (correlation 10, 11, ...),
    WAITS Stream Wait Event and SYNCS Event Sync rows linked to them,
    UNLINKED waits with -1 and WRONG ones naming no record"""
    ev, corr = [], 10
    for kind, n in (("Stream Wait Event", waits), ("Event Sync", syncs)):
        for _ in range(n):
            ev.append({"ph": "X", "name": "cudaEventRecord", "cat": "cuda_runtime", "ts": corr,
                       "dur": 1, "args": {"correlation": corr}})
            ev.append({"ph": "X", "name": kind, "cat": "cuda_sync", "ts": corr + 1, "dur": 1,
                       "args": {"wait_on_stream": 1, "wait_on_cuda_event_record_corr_id": corr}})
            corr += 1
    for _ in range(unlinked):
        ev.append({"ph": "X", "name": "Stream Wait Event", "cat": "cuda_sync", "ts": 1, "dur": 1,
                   "args": {"wait_on_cuda_event_record_corr_id": -1}})
    for _ in range(wrong):
        ev.append({"ph": "X", "name": "Event Sync", "cat": "cuda_sync", "ts": 1, "dur": 1,
                   "args": {"wait_on_cuda_event_record_corr_id": 9999}})
    ev.append({"ph": "X", "name": "Stream Sync", "cat": "cuda_sync", "ts": 2, "dur": 1,
               "args": {"wait_on_cuda_event_record_corr_id": -1}})
    return {"traceEvents": ev}


EVENTS_PROG = "kernel k launches 20\nevents records 20 waits 10 synchronizes 10\ndone\n"


def events_case(d, records, chrome, cp, program=EVENTS_PROG):
    open(d.results, "w").close()
    d.run("events", "--tag", "ev", "--program", d.write("p.out", program), "--records", str(records),
          "--chrome", d.write("c.json", chrome), "--critpath", d.write("cp.json", cp))
    return {n[4:]: v[1] for n, v in d.verdicts().items()}


@test
def events_records_links_and_sync_edges():
    with tmpdir() as d:
        ok = events_case(d, 20, chrome_events(10, 10), critpath_json(21, 3))
        eq(ok, {"event records": "PASS", "waits linked to their cudaEventRecord": "PASS",
                "sync-dependency edges in the critical-path graph": "PASS"}, "all there")
        # other waits of the runtime's own, unlinked, are shown, not judged
        eq(events_case(d, 20, chrome_events(10, 10, unlinked=2), critpath_json(20, 1))[
            "waits linked to their cudaEventRecord"], "PASS", "extra unlinked waits")
        bad = events_case(d, 19, chrome_events(10, 9, unlinked=1), critpath_json(19, 3))
        eq(bad, {"event records": "FAIL", "waits linked to their cudaEventRecord": "FAIL",
                 "sync-dependency edges in the critical-path graph": "FAIL"}, "a record, a link, an edge missing")
        eq(events_case(d, 20, chrome_events(10, 9, wrong=1), critpath_json(30, 0)),
           {"event records": "PASS", "waits linked to their cudaEventRecord": "FAIL",
            "sync-dependency edges in the critical-path graph": "PASS"},
           "a link to no record; whether the path crosses a wait is not judged")
        eq(events_case(d, 20, chrome_events(10, 10), "")["sync-dependency edges in the critical-path graph"],
           "FAIL", "no critical path (the analysis failed)")
        eq(set(events_case(d, 20, chrome_events(10, 10), critpath_json(21, 3),
                           program="kernel k launches 20\n").values()), {"FAIL"},
           "the program printed no events line")


@test
def added_cost_shown():
    with tmpdir() as d:
        f = d.write("e.out", "off ns_per_event_pair 2000\non ns_per_event_pair 2600\n"
                    "off ns_per_event_pair 2100\non ns_per_event_pair 2500\n"
                    "off ns_per_event_pair 1900\non ns_per_event_pair 9000\n")
        d.run("added", "--file", f, "--metric", "ns_per_event_pair", "--base", "off", "--test", "on",
              "--name", "ev")
        eq(d.verdicts()["ev"], ("+600 ns (median of 3 rounds' differences, +400..+7100; medians on 2600, "
                                "off 2000 ns_per_event_pair)", "INFO"), "paired, shown")
        d.run("added", "--file", f, "--metric", "ns_per_event_pair", "--base", "off", "--test", "on",
              "--name", "ev2", "--judge", "no")
        eq(d.verdict("ev2"), "SKIP", "a stand-in's timing")
        d.run("added", "--file", f, "--metric", "other", "--base", "off", "--test", "on", "--name", "ev3")
        eq(d.verdict("ev3"), "SKIP", "no runs")


@test
def graph_behaviour():
    prog = "graph count 4\ngraph_node_kernel gpuprof_cupti_node launches 12\n"
    for rows, word in (([("Graph Launch", 4, 40.0), ("gpuprof_cupti_node", 12, 24.0)], "does not replace"),
                       ([("Graph Launch", 4, 40.0)], "replaces them"),
                       ([("Graph Launch", 4, 40.0), ("gpuprof_cupti_node", 5, 24.0)], "5 of 12")):
        with tmpdir() as d:
            d.run("graph", "--tag", "g", "--program", d.write("p.out", prog),
                  "--kernels", d.write("k.json", kernels_json(rows)))
            v, verdict = d.verdicts()["g: GRAPH_TRACE vs per-node records"]
            eq(verdict, "INFO", "a behaviour, not a target")
            expect(word in v, "%r in %r" % (word, v))


@test
def summary_exit_status():
    with tmpdir() as d:
        with open(d.results, "w") as f:
            f.write("a\t1\t>=1\tPASS\nb\tseen\tobserved\tINFO\nc\tx\t-\tSKIP\n")
        rc, out = d.run("summary")
        eq(rc, 0, "no FAIL")
        expect(out.index("CUPTI BEHAVIOURS") < out.index("b: seen") < out.index("SUMMARY"), out)
        expect("1 PASS, 0 FAIL, 1 SKIP" in out, out)
        with open(d.results, "a") as f:
            f.write("d\t0\t>=1\tFAIL\n")
        rc, out = d.run("summary")
        eq(rc, 1, "a FAIL")
        expect("  FAIL d: 0 [target >=1]" in out, out)


if __name__ == "__main__":
    main()
