#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python module (python/gpuprof) against a real daemon, with Debian's
python3: the CLI's verbs as methods, HTA-shaped DataFrames equal to HTA's
reference numbers and to `gpuprofctl --json`, a live CPU capture's folded
stacks, errors carrying the JSON-RPC code, and the module without pandas."""

import datetime
import glob
import json
import math
import os
import re
import subprocess
import sys
import time

from gpd import BUILD, SOURCE, SHARED, Daemon, eq, expect, main, need_sampler, Skip, test

LIB = os.path.join(BUILD, "libclient", "libgpuprof-client.so.0")
DEBIAN_PYTHON = "/usr/bin/python3"


def _sanitizer_runtimes():
    """libasan / libubsan the build's library needs loaded first (a
    sanitizer build): python3 itself is not instrumented."""
    out = subprocess.run(["ldd", LIB], capture_output=True, text=True).stdout
    return [m.group(1) for m in re.finditer(r"lib(?:a|ub)san\.so\S*\s+=>\s+(\S+)", out)]


# Run as Debian's python3 with the build's library; in a sanitizer build
# with ASan and UBSan preloaded (leak checks off: the interpreter's own
# allocations are not ours). Children (daemon, CLI) get the original
# environment back.
if os.environ.get("GPUPROF_PY_TEST") != "1":
    env = dict(os.environ, GPUPROF_PY_TEST="1", GPUPROF_CLIENT_LIB=LIB,
               GPUPROF_SAVED_ENV=json.dumps({k: os.environ.get(k) for k in
                                             ("LD_PRELOAD", "ASAN_OPTIONS")}))
    pre = _sanitizer_runtimes()
    if pre:
        env["LD_PRELOAD"] = " ".join(pre + [os.environ.get("LD_PRELOAD", "")]).strip()
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1"
    exe = DEBIAN_PYTHON if os.path.exists(DEBIAN_PYTHON) else sys.executable
    os.execve(exe, [exe] + sys.argv, env)
for k, v in json.loads(os.environ.pop("GPUPROF_SAVED_ENV", "{}")).items():
    if v is None:
        os.environ.pop(k, None)
    else:
        os.environ[k] = v

sys.path.insert(0, os.path.join(SOURCE, "python"))
import gpuprof  # noqa: E402
from gpuprof import frames  # noqa: E402  (needs pandas: python3-pandas)
import gpuprof.hta  # noqa: E402
import pandas as pd  # noqa: E402

TRACES = os.path.join(SHARED, "reference", "hta", "traces")
OUTPUTS = os.path.join(SHARED, "reference", "hta", "outputs")
WORKLOAD = os.path.join(BUILD, "tests", "workloads", "demo_workload")
ALEXNET_STEP = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"


def trace_files(name):
    return sorted(glob.glob(os.path.join(TRACES, name, "*")))


def hta(name, analysis):
    with open(os.path.join(OUTPUTS, name, analysis + ".json")) as f:
        return json.load(f)


def same_value(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def frame_matches_hta(df, ref, what, tol=0.0):
    """df has HTA's columns and rows; numbers within tol."""
    eq(list(df.columns), ref["columns"], what + ": HTA's columns")
    eq(len(df), ref["n_rows"], what + ": HTA's row count")
    for i, (row, want) in enumerate(zip(df.to_dict("records"), ref["records"])):
        for col in ref["columns"]:
            got, exp = row[col], want[col]
            if exp is None:
                expect(got is None or (isinstance(got, float) and math.isnan(got)),
                       "%s row %d %s: %r, HTA NaN" % (what, i, col, got))
            elif isinstance(exp, (int, float)) and not isinstance(exp, bool):
                expect(abs(got - exp) <= tol, "%s row %d %s: %r vs HTA %r" % (what, i, col, got, exp))
            else:
                eq(got, exp, "%s row %d %s" % (what, i, col))


@test
def verbs_return_what_the_cli_prints():
    d = Daemon().start()
    try:
        with gpuprof.Client(d.sock) as c:
            eq(c.version(), d.ctl_json("version"), "version as the CLI's --json")
            st = c.status()
            eq(st["pid"], d.proc.pid, "status names the daemon")
            expect(isinstance(st["collectors"], list), "collectors listed")
            info = c.import_(trace_files("alexnet"), name="alex")
            eq((info["kind"], info["state"], info["name"]), ("import", "ready", "alex"), "import info")
            eq(c.info(info["id"]), d.ctl_json("info", str(info["id"])), "info as the CLI's --json")
            eq(c.list(), d.ctl_json("list")["captures"], "list as the CLI's --json")
            # a file object works as well as a path; ranks per file
            with open(trace_files("alexnet")[0], "rb") as f:
                two = c.import_(f, rank=3)
            eq(two["import"]["ranks"], d.ctl_json("info", str(two["id"]))["import"]["ranks"], "ranks")
            names = [a["name"] for a in c.analyses()]
            expect("temporal" in names and "idle" in names, "analyze.list: %r" % names)
            for a in ("temporal", "idle", "overlap", "kernels"):
                eq(c.analyze(a, info["id"]), d.ctl_json("analyze", a, str(info["id"])),
                   a + ": the CLI's --json result")
            ours = c.analyze("critical-path", info["id"], annotation=ALEXNET_STEP, instance=1)
            cli = d.ctl_json("analyze", "critical-path", str(info["id"]), "--annotation",
                             ALEXNET_STEP, "--instance", "1")
            expect(cli.pop("graph_cached"), "the CLI's call found the graph ours built")
            ours.pop("graph_cached")
            expect(ours == cli, "critical path as the CLI's")
            # outputs into a path, replaced only on success
            out = os.path.join(d.tmp, "trace.json")
            c.export(info["id"], out, format="chrome")
            with open(out) as f:
                expect("traceEvents" in json.load(f), "chrome export written")
            eq(c.delete(two["id"]), {"id": two["id"], "deleted": True}, "delete")
            eq([x["id"] for x in c.list()], [info["id"]], "deleted capture gone")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def dataframes_match_hta_and_the_cli():
    d = Daemon().start()
    try:
        with gpuprof.Client(d.sock) as c:
            for name in ("alexnet", "trace_filter", "nccl_parser_config"):
                cid = c.import_(trace_files(name))["id"]
                # temporal: HTA's frame, its numbers (µs exact, % to HTA's 2 decimals)
                df = c.temporal_breakdown(cid)
                frame_matches_hta(df, hta(name, "temporal_breakdown")["result"], name + " temporal")
                cli = frames.temporal_breakdown(d.ctl_json("analyze", "temporal", str(cid)))
                expect(df.equals(cli), name + ": temporal frame = the CLI's --json result")
                # idle, HTA's default (rank 0) and with interval statistics
                ref = hta(name, "idle_time_breakdown")
                idle, stats = c.idle_time_breakdown(cid, ranks=[0])
                eq(stats, None, "no stats unless asked")
                frame_matches_hta(idle, ref["default"]["idle_time_df"], name + " idle", tol=0.01)
                idle, stats = c.idle_time_breakdown(cid, ranks=[0], show_idle_interval_stats=True)
                sref = ref["show_idle_interval_stats"]["interval_stats_df"]
                eq(list(stats.index), sref["index"], name + ": stats index = categories")
                eq(stats.index.name, sref["index_names"][0], name + ": index name")
                frame_matches_hta(stats, sref, name + " idle stats", tol=0.011)
                cli = d.ctl_json("analyze", "idle", str(cid), "--rank", "0")
                eq([r["idle_time"] for r in idle.to_dict("records")],
                   [round(cat["idle_time_us"], 2) for r in cli["ranks"] for s in r["streams"]
                    for cat in s["categories"]], name + ": idle times = the CLI's")
                # communication/computation overlap
                ov = c.comm_comp_overlap(cid)
                frame_matches_hta(ov, hta(name, "comm_comp_overlap")["result"], name + " overlap",
                                  tol=0.01)
            # the critical path of alexnet's forward pass
            cid = c.import_(trace_files("alexnet"))["id"]
            ref = hta("alexnet", "critical_path_env_default")
            cp = c.critical_path(cid, rank=0, annotation=ALEXNET_STEP, instance_id=1)
            s = cp.summary()
            for bound, pctg in ref["summary"].items():
                if bound:
                    expect(abs(s[bound] - pctg) < 1e-9, "summary %s: %r vs HTA %r" % (bound, s[bound], pctg))
            eq(abs(sum(s) - 100) < 1e-6, True, "summary sums to 100: %r" % list(s))
            bd = cp.get_critical_path_breakdown()
            bref = ref["critical_path_breakdown"]
            eq(list(bd.columns), bref["columns"], "breakdown: HTA's columns")
            eq(len(bd), bref["n_rows"], "breakdown: one row per critical edge")
            eq(bd["duration"].sum(), float(ref["critical_path_length_sum_of_edge_weights"]),
               "breakdown durations sum to the path length")
            by_type = bd.groupby("type")["duration"].sum().to_dict()
            for t, w in ref["critical_path_edge_weight_by_type"].items():
                eq(by_type.get(t, 0.0), float(w), "weight of %s edges" % t)
            eq(sorted(bd["event_idx"].dropna().astype(int).unique()),
               sorted({int(r["event_idx"]) for r in bref["records"] if r["event_idx"] is not None}),
               "attributed events are HTA's")
            cli = d.ctl_json("analyze", "critical-path", str(cid), "--annotation", ALEXNET_STEP,
                             "--instance", "1")
            eq(cp.result["summary"], cli["summary"], "summary as the CLI's")
            # comm: one row per (rank, iteration), the CLI's numbers
            cid = c.import_(trace_files("nccl_parser_config"))["id"]
            cm = c.comm(cid)
            cli = d.ctl_json("analyze", "comm", str(cid))
            eq(len(cm), sum(len(r["iteration_list"]) for r in cli["ranks"]), "comm rows")
            eq(cm["comm_DP_us"].sum(), sum(it["breakdown"]["comm_us"]["DP"] for r in cli["ranks"]
                                           for it in r["iteration_list"]), "comm DP time")
            expect(abs(cm["comm_DP_us"].sum() - 46876.493) < 1e-6, "3 iterations' DP time")
            expect(frames.comm(cli).equals(cm), "comm frame = the CLI's --json result")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def an_hta_notebook_with_its_import_line_changed():
    """The calls of HTA's own examples, on gpuprof.hta.TraceAnalysis."""
    d = Daemon().start()
    try:
        analyzer = gpuprof.hta.TraceAnalysis(trace_dir=os.path.join(TRACES, "trace_filter"),
                                             socket=d.sock)
        frame_matches_hta(analyzer.get_temporal_breakdown(visualize=False),
                          hta("trace_filter", "temporal_breakdown")["result"], "temporal")
        idle, stats = analyzer.get_idle_time_breakdown(visualize=False)
        frame_matches_hta(idle, hta("trace_filter", "idle_time_breakdown")["default"]["idle_time_df"],
                          "idle (HTA's default: rank 0)", tol=0.01)
        eq(stats, None, "interval stats only on request")
        frame_matches_hta(analyzer.get_comm_comp_overlap(visualize=False),
                          hta("trace_filter", "comm_comp_overlap")["result"], "overlap", tol=0.01)
        alex = gpuprof.hta.TraceAnalysis(trace_dir=os.path.join(TRACES, "alexnet"),
                                         client=analyzer.client)
        cp_graph, success = alex.critical_path_analysis(rank=0, annotation=ALEXNET_STEP,
                                                        instance_id=1)
        expect(success, "critical path found")
        expect(isinstance(cp_graph.summary(), pd.Series), "summary() is a Series")
        eq(len(cp_graph.get_critical_path_breakdown()), 148, "alexnet: HTA's 148 critical edges")
        alex.delete()
        eq([x["id"] for x in analyzer.client.list()], [analyzer.capture_id], "delete()")
        analyzer.client.close()
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def live_capture_of_a_cpu_burner():
    d = Daemon("sampling.cpu_frequency = 499\n").start()
    w = None
    try:
        need_sampler(d)
        w = subprocess.Popen([WORKLOAD, "0"])
        with gpuprof.Client(d.sock) as c:
            info = c.capture(pids=[w.pid], duration="1500ms", name="burn")
            eq((info["state"], info["name"], info["pids"]), ("ready", "burn", [w.pid]), "ready")
            f = c.folded(info["id"])
            counts = f.counts()
            total = sum(counts.values())
            eq(total, info["by_type"]["cpu_sample"], "folded counts sum to the samples")
            eq(f.meta["samples"], total, "the reply counts them too")
            expect(total > 100, "enough samples at 499 Hz over 1.5 s: %d" % total)
            hot = sum(n for k, n in counts.items() if "main;run_epoch;matmul_tile" in k)
            expect(hot > total * 0.3, "matmul_tile under main;run_epoch: %d of %d" % (hot, total))
            eq(f.text, d.ctl("folded", str(info["id"]), check=0).stdout.decode(),
               "the same text as gpuprofctl folded")
            nk = c.folded(info["id"], kernel=False, pid_frames=True).counts()
            expect(all(";-;" not in k and k.startswith("demo_workload-%d;" % w.pid) for k in nk),
                   "kernel=False, pid_frames=True")
            eq(sum(nk.values()), total, "same total")
            # --last from the store, and a forward capture stopped early
            last = c.capture(pids=w.pid, last="1s")
            expect(last["by_type"].get("cpu_sample", 0) > 0, "last 1 s has samples: %r" % last)
            # that window again, absolute: monotonic ns, then aware datetimes
            s, e = last["window"]["start_ns"], last["window"]["end_ns"]
            again = c.capture(pids=w.pid, since=s, until=e)
            eq((again["window"]["start_ns"], again["window"]["end_ns"]), (s, e), "since, until")
            expect(again["records"] >= last["records"], "its records: %r" % again)
            off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(
                time.CLOCK_MONOTONIC)
            utc = datetime.timezone.utc
            wall = c.capture(pids=w.pid, since=datetime.datetime.fromtimestamp((s + off) / 1e9, utc),
                             until=datetime.datetime.fromtimestamp((e + off) / 1e9, utc))
            expect(abs(wall["window"]["start_ns"] - s) < 5 * 10**6 and
                   abs(wall["window"]["end_ns"] - e) < 5 * 10**6, "datetimes: %r" % wall["window"])
            rec = c.capture(pids=[w.pid], duration=60, wait=False)
            eq(rec["state"], "recording", "no wait: recording")
            stopped = c.stop(rec["id"])
            expect(stopped["state"] in ("recording", "ready"), "stopped: %r" % stopped["state"])
        eq(d.stop(), 0, "clean stop")
    finally:
        if w:
            w.kill()
            w.wait()
        d.cleanup()


@test
def errors_carry_the_json_rpc_code():
    d = Daemon().start()
    try:
        with gpuprof.Client(d.sock) as c:
            with open("/proc/sys/kernel/pid_max") as f:
                free_pid = int(f.read()) - 1
            while os.path.exists("/proc/%d" % free_pid):
                free_pid -= 1
            cases = [
                (lambda: c.capture(pids=[free_pid], last="1s"), gpuprof.ERR_NOT_FOUND, "no process"),
                (lambda: c.capture(pids=[-5], last="1s"), gpuprof.ERR_INVALID_PARAMS, "pids"),
                (lambda: c.info(424242), gpuprof.ERR_NOT_FOUND, "no capture"),
                (lambda: c.call("no.such.method"), gpuprof.ERR_METHOD_NOT_FOUND, ""),
                (lambda: c.analyze("temporal", 424242), gpuprof.ERR_NOT_FOUND, ""),
            ]
            cid = c.import_(trace_files("alexnet"))["id"]
            cases += [
                (lambda: c.analyze("temporal", cid, treshold=3), gpuprof.ERR_INVALID_PARAMS, "treshold"),
                (lambda: c.analyze("temporal", cid, rank=7), gpuprof.ERR_INVALID_PARAMS, "rank 7"),
                (lambda: c.analyze("nope", cid), gpuprof.ERR_METHOD_NOT_FOUND, ""),
            ]
            for i, (fn, code, text) in enumerate(cases):
                try:
                    fn()
                except gpuprof.GpuprofError as e:
                    eq(e.code, code, "case %d: %s" % (i, e))
                    expect(text in e.message, "case %d: %r in %r" % (i, text, e.message))
                    expect(str(code) in str(e), "the code in str(): %s" % e)
                else:
                    raise AssertionError("case %d raised nothing" % i)
            # a file that is no trace: bad input, with the byte offset in data
            bad = os.path.join(d.tmp, "bad.json")
            with open(bad, "w") as f:
                f.write('{"traceEvents": [{"ph": "X", "ts": oops}]}')
            try:
                c.import_(bad)
                raise AssertionError("garbage imported")
            except gpuprof.GpuprofError as e:
                eq(e.code, gpuprof.ERR_BAD_INPUT, str(e))
                expect(isinstance(e.data, dict) and "offset" in e.data, "data: %r" % e.data)
            # local mistakes never reach the daemon
            now = datetime.datetime.now(datetime.timezone.utc)
            for fn in (lambda: c.capture(pids=[1]), lambda: c.capture(duration="1s", last="1s"),
                       lambda: c.capture(duration="soon"),
                       lambda: c.capture(pids=[1], last="1s", since=5),
                       lambda: c.capture(pids=[1], duration="1s", until=5),
                       lambda: c.capture(pids=[1], since=5, until=now),
                       lambda: c.capture(pids=[1], since=now.replace(tzinfo=None)),
                       lambda: c.capture(pids=[1], since=-1)):
                try:
                    fn()
                    raise AssertionError("accepted")
                except ValueError:
                    pass
            eq(c.version()["protocol"], 1, "the connection still works")
        # no daemon: OSError with the errno
        try:
            gpuprof.Client(os.path.join(d.tmp, "absent.sock"))
            raise AssertionError("connected to nothing")
        except OSError as e:
            expect(e.errno in (2, 111), "ENOENT or ECONNREFUSED: %r" % e)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def without_pandas():
    """pandas blocked: the module imports without it, every verb works, and
    a DataFrame method says what to install."""
    d = Daemon().start()
    try:
        script = r"""
import sys
sys.modules["pandas"] = None        # import pandas -> ImportError
sys.path.insert(0, sys.argv[1])
import gpuprof, gpuprof.hta
c = gpuprof.Client(sys.argv[2])
cid = c.import_(sys.argv[3])["id"]
t = c.analyze("temporal", cid)
assert t["ranks"][0]["kernel_time_us"] == 12996011, t
assert len(c.list()) == 1
try:
    c.temporal_breakdown(cid)
    raise SystemExit("DataFrame without pandas")
except ImportError as e:
    assert "python3-pandas" in str(e), e
assert "pandas" not in sys.modules or sys.modules["pandas"] is None
print("OK", len(c.status()["collectors"]))
"""
        p = subprocess.run([sys.executable, "-c", script, os.path.join(SOURCE, "python"), d.sock,
                            trace_files("alexnet")[0]],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, GPUPROF_CLIENT_LIB=LIB,
                                    LD_PRELOAD=" ".join(_sanitizer_runtimes()),
                                    ASAN_OPTIONS="detect_leaks=0"))
        eq(p.returncode, 0, "without pandas:\n" + p.stdout + p.stderr)
        expect(p.stdout.startswith("OK"), p.stdout)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def meson_installs_every_module_file():
    out = subprocess.run(["meson", "introspect", BUILD, "--installed"], capture_output=True,
                         text=True, check=True).stdout
    installed = json.loads(out)
    src = sorted(glob.glob(os.path.join(SOURCE, "python", "gpuprof", "*.py")))
    expect(len(src) >= 5, "module files: %r" % src)
    for f in src:
        dest = installed.get(os.path.realpath(f)) or installed.get(f)
        expect(dest, "%s is installed: %r" % (f, sorted(installed)[:5]))
        expect(dest.endswith("/gpuprof/" + os.path.basename(f)) and "python3" in dest, dest)


if __name__ == "__main__":
    main()
