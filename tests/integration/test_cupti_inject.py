#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""libgpuprof-cupti.so end to end without a GPU: a CUDA program
(tests/cupti/cuda_app) loads the fake driver, which loads the library
through CUDA_INJECTION64_PATH and plays the stand-in libcupti
(tests/cupti/fake_cupti.c); a receiver written here from inject/cupti_abi.h
listens where the daemon would and decodes every message. Checked: HELLO
first, every kernel with its name, duration and correlation id, API records
of the launching threads, NVTX ranges, copies, memsets, syncs, graphs,
counters; a daemon that appears late or restarts; a receiver that never
reads; another CUPTI subscriber; a profiler that starts after the library
(PyTorch's Kineto, played by cuda_app) under each GPUPROF_CUPTI_YIELD
policy; a kind CUPTI refuses; no timestamp callback; no libcupti; fork;
PC sampling (stall names, exact sample sums, cubins whole, a full
hardware buffer, a refused feature, the duty cycle)."""

import os
import re
import subprocess
import tempfile
import time
import zlib

from cupti_wire import (API, CTL_RELEASE, CUDA_EVENT, F_API, F_EVENT, F_GRAPH, F_KERNEL, F_MEMCPY,
                        F_MEMSET, F_MONO, F_NVTX, F_PC, F_SYNC, GRAPH, HELLO, KERNEL, MARKER, MEMCPY, MEMSET, MK_INSTANT,
                        MK_RANGE, PC, PC_STATS, SF_SUB_KNOWN, SF_SUBSCRIBED, ST_ACTIVE, ST_CONFLICT,
                        ST_DISABLED, STALL_NAME, STATS, SYNC, Receiver, control)
from cuda_app import APP, FAKE_CUDA, FAKE_CUPTI, LIB, inject_env, totals
from gpd import BUILD, GPUPROFCTL, Daemon, Skip, as_attacker, eq, expect, main, open_to_group, test

FAKE_TORCH = os.path.join(BUILD, "tests", "cupti", "libtorch_cuda.so")
CUBIN = os.path.join(BUILD, "tests", "cupti", "pc_kernel.cubin")
PC_KERNEL = "gpuprof_pc_kernel"


def run_app(sock, args, env=None, timeout=60, **kw):
    return subprocess.run([APP, "--cuda", FAKE_CUDA] + args, env=inject_env(sock, env),
                          capture_output=True, text=True, timeout=timeout, **kw)


def app_with_receiver(sock, args, env=None, settle=0.2, **kw):
    """run_app() while a Receiver listens on sock, the app's exit checked;
    settle: seconds for the last messages to arrive. Returns the app's
    result and the connections received, decoded."""
    rx = Receiver(sock)
    try:
        p = run_app(sock, args, env=env, **kw)
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(settle)
    finally:
        rx.stop()
    return p, rx.decoded()


def need_build():
    for p in (LIB, FAKE_CUPTI, FAKE_CUDA, APP):
        if not os.path.exists(p):
            raise Skip("not built (no CUPTI headers?): %s" % p)


def with_receiver(fn):
    def wrapped():
        need_build()
        with tempfile.TemporaryDirectory(prefix="gpcupti.") as d:
            fn(os.path.join(d, "cupti.sock"))
    wrapped.__name__ = fn.__name__
    return wrapped


def last_stats(conn):
    s = conn.of(STATS)
    expect(s, "no stats record")
    return s[-1]


def check_hello_first(conn):
    expect(conn.recs and conn.recs[0]["rtype"] == HELLO, "first record is not HELLO")
    eq(conn.seqs[0], 0, "first seq")
    eq(conn.seqs, list(range(len(conn.seqs))), "seqs without gaps")
    eq(len(conn.of(HELLO)), 1, "HELLOs")


@test
def exports_only_the_entry_point():
    need_build()
    p = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                       check=True)
    eq([line.split()[-1] for line in p.stdout.splitlines()], ["InitializeInjection"], "exports")


@test
@with_receiver
def end_to_end(sock):
    p, conns = app_with_receiver(
        sock, ["--threads", "3", "--launches", "40", "--kernel", "gpuprof_k_a:20000",
               "--kernel", "_Z8gpuprof_k_bPfi:5000", "--memcpy", "4096:3000",
               "--memset", "1024:2000", "--graph", "7000", "--sync", "--nvtx"],
        env={"GPUPROF_CUPTI_FEATURES": "all"}, settle=0.3)
    t = totals(p.stdout)
    eq(len(conns), 1, "connections")
    c = conns[0]
    check_hello_first(c)
    hello = c.recs[0]
    eq(hello["features"],
       F_KERNEL | F_MEMCPY | F_MEMSET | F_SYNC | F_EVENT | F_GRAPH | F_API | F_NVTX | F_MONO,
       "hello features")
    eq(hello["lib_version"], 1, "lib version")
    eq(hello["cupti_version"], 130001, "cupti version")
    eq(hello["driver_version"], 13000, "driver version")

    api = {a["corr"]: a for a in c.of(API)}
    now = time.monotonic_ns()
    kernels = c.of(KERNEL)
    for name, (n, total) in t["kernels"].items():
        ks = [k for k in kernels if k["name"] == name]
        eq(len(ks), n, "launches of " + name)
        eq(sum(k["end"] - k["start"] for k in ks), total, "GPU ns of " + name)
    eq(len(kernels), sum(n for n, _ in t["kernels"].values()), "kernels")
    for k in kernels:
        a = api.get(k["corr"])
        expect(a is not None, "kernel corr %d has no API record", k["corr"])
        eq(a["name"], "cuLaunchKernel", "API name")
        eq(a["domain"], 1, "API domain")
        eq(a["failed"], 0, "API failed")
        # cuda_app's thread t launches on stream t + 1
        eq(a["tid"], t["tids"][k["stream"] - 1], "tid of the launch on stream %d" % k["stream"])
        expect(0 < a["enter"] < a["exit"] <= k["start"] < k["end"],
               "enter %d exit %d start %d end %d", a["enter"], a["exit"], k["start"], k["end"])
        expect(now - 120e9 < k["start"] < now, "kernel start %d not CLOCK_MONOTONIC", k["start"])
        eq((k["bx"], k["by"], k["bz"]), (128, 1, 1), "block")
        expect(1 <= k["gx"] <= 4, "grid %d", k["gx"])
    eq(len({k["corr"] for k in kernels}), len(kernels), "distinct corr")

    mc = c.of(MEMCPY)
    eq((len(mc), sum(m["bytes"] for m in mc), sum(m["end"] - m["start"] for m in mc)),
       t["memcpy"], "memcpy count, bytes, ns")
    eq(sorted({m["copy_kind"] for m in mc}), [1, 2], "copy kinds")
    ms = c.of(MEMSET)
    eq((len(ms), sum(m["bytes"] for m in ms), sum(m["end"] - m["start"] for m in ms)),
       t["memset"], "memset count, bytes, ns")
    gr = c.of(GRAPH)
    eq((len(gr), sum(g["end"] - g["start"] for g in gr)), t["graph"], "graph count, ns")
    for r in mc + ms + gr:
        expect(r["corr"] in api, "record %r without API record", r)
    sy = c.of(SYNC)
    eq(len(sy), t["sync"], "syncs")
    expect(all(s["type"] == 3 for s in sy), "sync types")

    marks = c.of(MARKER)
    ranges = [m for m in marks if m["flags"] == MK_RANGE]
    instants = [m for m in marks if m["flags"] == MK_INSTANT]
    eq((len(ranges), len(instants)), t["nvtx"], "NVTX ranges, marks")
    for m in ranges:
        eq((m["name"], m["domain"]), ("iteration", "gpuprof_test"), "range name")
        expect(m["start"] < m["end"] and m["tid"] in t["tids"], "range %r", m)
    eq({m["name"] for m in instants}, {"thread_start"}, "mark names")

    s = last_stats(c)
    eq(s["state"], ST_ACTIVE, "state")
    eq(s["on"], hello["features"], "features on")
    eq((s["failed"], s["last_error"], s["conflict"]), (0, 0, None), "failures")
    eq((s["api_dropped"], s["batches_dropped"], s["buffers_refused"]), (0, 0, 0), "drops")
    # every activity record, plus the stand-in's OVERHEAD records skipped
    expect(s["records"] >= len(kernels) + len(mc) + len(ms) + len(gr) + len(sy) + len(marks),
           "records %d", s["records"])
    # sent so far when the final stats were written: all but HELLO and their own batch
    eq(s["batches_sent"] + 2, len(c.seqs), "batches sent")


@test
@with_receiver
def default_features(sock):
    _, conns = app_with_receiver(sock, ["--launches", "5", "--graph", "1000", "--sync"])
    c = conns[0]
    eq(c.recs[0]["features"],
       F_KERNEL | F_MEMCPY | F_MEMSET | F_SYNC | F_EVENT | F_API | F_NVTX | F_MONO,
       "default features")
    eq(len(c.of(KERNEL)), 5, "kernels")
    eq(len(c.of(SYNC)), 5, "syncs")
    eq(len(c.of(GRAPH)), 0, "graph records (graph is not a default)")
    # the graph launch's API record is there: cuGraphLaunch is a launch
    eq(len([a for a in c.of(API) if a["name"] == "cuGraphLaunch"]), 5, "cuGraphLaunch API")


@test
@with_receiver
def daemon_late_and_restarted(sock):
    e = inject_env(sock)
    # launches every 10 ms until its stdin closes (at most 3000)
    p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "3000", "--pause-ms", "10",
                          "--kernel", "gpuprof_k_late:1000", "--until-eof"],
                         env=e, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    rx1 = rx2 = None
    try:
        time.sleep(0.5)            # no daemon: batches are dropped
        rx1 = Receiver(sock)
        expect(rx1.wait_for(KERNEL), "no kernel reached the first daemon")
        rx1.stop()                 # the daemon goes away ...
        time.sleep(0.3)
        rx2 = Receiver(sock)       # ... and comes back
        expect(rx2.wait_for(KERNEL), "no kernel reached the second daemon")
        out, err = p.communicate("", timeout=60)
        eq(p.returncode, 0, "app exit: " + err)
        n = totals(out)["kernels"]["gpuprof_k_late"][0]
        time.sleep(0.2)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for r in (rx1, rx2):
            if r:
                r.stop()
    c1, c2 = rx1.decoded(), rx2.decoded()
    eq((len(c1), len(c2)), (1, 1), "connections")
    for c in c1 + c2:
        check_hello_first(c)
    k1, k2 = c1[0].of(KERNEL), c2[0].of(KERNEL)
    # names are defined again on the new connection (checked by decode)
    eq({k["name"] for k in k2}, {"gpuprof_k_late"}, "names on the second connection")
    expect(len(k1) + len(k2) < n, "all %d kernels arrived though no daemon listened at first", n)
    s = last_stats(c2[0])
    expect(s["batches_dropped"] > 0 and s["records_dropped"] > 0, "drops not counted: %r", s)
    eq(s["reconnects"], 1, "reconnects")


@test
@with_receiver
def socket_full(sock):
    rx = Receiver(sock, read=False)
    try:
        e = inject_env(sock)
        t0 = time.monotonic()
        p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--threads", "2", "--launches", "20000",
                              "--sleep-ms", "2500"],
                             env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = ""
        while not line.startswith("done"):
            line = p.stdout.readline()
            expect(line, "app ended early: %s", p.stderr.read() if p.poll() is not None else "")
        work = time.monotonic() - t0
        rx.resume()                # the daemon reads again: later stats arrive
        p.communicate(timeout=60)
        eq(p.returncode, 0, "app exit")
        time.sleep(0.2)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        rx.stop()
    # 40000 launches take well under a second here; a blocked sender would
    # hold the app until the receiver read
    expect(work < 20, "the app took %.1f s with a full socket", work)
    c = rx.decoded()[0]
    s = last_stats(c)
    expect(s["batches_dropped"] > 0, "no batch dropped: %r", s)
    expect(c.seqs[-1] + 1 > len(c.seqs), "no gap in seq for the dropped batches")


@test
@with_receiver
def conflict(sock):
    p, conns = app_with_receiver(sock, ["--launches", "20", "--nvtx", "--sleep-ms", "300"],
                                 env={"FAKE_CUPTI_SUBSCRIBER": "Nsight Systems"})
    totals(p.stdout)
    c = conns[0]
    check_hello_first(c)
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"], s["last_error"]),
       (ST_CONFLICT, "Nsight Systems", 0, 39), "stats")
    eq([r["rtype"] for r in c.recs if r["rtype"] not in (HELLO, STATS)], [], "records in conflict")


@test
@with_receiver
def conflict_with_a_profiler_that_came_first(sock):
    # --sleep-ms: time for the sender's first connect on a loaded host
    p, conns = app_with_receiver(sock, ["--launches", "20", "--subscribe-first", "kineto",
                                        "--sleep-ms", "300"])
    totals(p.stdout)
    c = conns[0]
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"]), (ST_CONFLICT, "CUPTI for kineto", 0), "stats")
    eq(len(c.of(KERNEL)) + len(c.of(API)), 0, "records in conflict")


@test
@with_receiver
def kind_refused(sock):
    _, conns = app_with_receiver(sock, ["--launches", "10", "--memcpy", "100:100",
                                        "--memset", "10:10"],
                                 env={"FAKE_CUPTI_FAIL_KIND": "1"})   # MEMCPY
    c = conns[0]
    s = last_stats(c)
    eq((s["state"], s["failed"], s["last_error"]), (ST_ACTIVE, F_MEMCPY, 35), "stats")
    eq(s["on"] & F_MEMCPY, 0, "memcpy still on")
    eq((len(c.of(KERNEL)), len(c.of(MEMCPY)), len(c.of(MEMSET))), (10, 0, 10), "records")


@test
@with_receiver
def cuda_events(sock):
    """Each cudaEventRecord's CUDA_EVENT record: its call's correlation id
    and entry time, the event id the waits name, the stream; the syncs on
    events carry that id. A refused CUDA_EVENT kind turns only itself off."""
    p, conns = app_with_receiver(sock, ["--threads", "2", "--launches", "20",
                                        "--kernel", "gpuprof_k_a:20000",
                                        "--events", "gpuprof_k_c:3000"])
    t = totals(p.stdout)
    c = conns[0]
    n = 2 * 20
    eq(t["events"], (2 * n, n, n), "what the program did")
    api = {a["corr"]: a for a in c.of(API) if a["domain"] == 2}
    eq(sorted({a["name"] for a in api.values()}),
       ["cudaEventRecord", "cudaEventSynchronize", "cudaStreamWaitEvent"], "runtime calls")
    ev = c.of(CUDA_EVENT)
    eq(len(ev), 2 * n, "event records")
    for e in ev:
        a = api.get(e["corr"])
        expect(a is not None and a["name"] == "cudaEventRecord", "event %r: its call %r", e, a)
        eq(e["time"], a["enter"], "an event record's time is its call's entry")
        eq((e["device"], e["context"], e["rsv"]), (0, 1, 0), "device, context")
        # thread t records on its stream t + 1, then on its second stream 100 + t
        th = t["tids"].index(a["tid"])
        expect(e["stream"] in (th + 1, 100 + th), "stream %d of thread %d", e["stream"], th)
    # cuda_app creates each thread's two events first, numbered from 1
    eq(sorted({e["event"] for e in ev}), [1, 2, 3, 4], "event ids")
    sy = c.of(SYNC)
    waits = [s for s in sy if s["type"] == 2]
    esyncs = [s for s in sy if s["type"] == 1]
    eq((len(waits), len(esyncs)), (n, n), "stream waits, event syncs")
    for s in waits + esyncs:
        eq(api[s["corr"]]["name"], "cudaStreamWaitEvent" if s["type"] == 2 else
           "cudaEventSynchronize", "the sync's call")
        # the latest record of that event before the wait: on the stream the
        # thread recorded it on
        before = [e for e in ev if e["event"] == s["event"] and e["corr"] < s["corr"]]
        expect(before, "sync %r waits on an event never recorded before it", s)
        rec = max(before, key=lambda e: e["corr"])
        eq(rec["stream"] < 100, s["type"] == 2, "a wait waits on the first stream's record")
    s = last_stats(c)
    expect(s["on"] & F_EVENT and not s["failed"], "CUDA_EVENT on: %r" % s)

    # CUDA_EVENT refused: only it goes
    p, conns = app_with_receiver(sock, ["--launches", "5", "--events", "gpuprof_k_c:3000"],
                                 env={"FAKE_CUPTI_FAIL_KIND": "36"})
    c = conns[0]
    s = last_stats(c)
    eq((s["state"], s["failed"], s["last_error"]), (ST_ACTIVE, F_EVENT, 35), "stats")
    eq(s["on"] & (F_EVENT | F_SYNC), F_SYNC, "sync stays on")
    eq((len(c.of(CUDA_EVENT)), len(c.of(SYNC)), len(c.of(KERNEL))), (0, 10, 5), "records")


@test
@with_receiver
def realtime_clock_converted(sock):
    _, conns = app_with_receiver(sock, ["--launches", "20"],
                                 env={"FAKE_CUPTI_NO_TIMESTAMP_CB": "1"})
    c = conns[0]
    eq(c.recs[0]["features"] & F_MONO, 0, "MONO without the callback")
    api = {a["corr"]: a for a in c.of(API)}
    ks = c.of(KERNEL)
    eq(len(ks), 20, "kernels")
    for k in ks:
        a = api[k["corr"]]
        # converted from CLOCK_REALTIME with an offset measured per buffer
        expect(abs(k["start"] - a["exit"]) < 50e6, "start %d vs exit %d", k["start"], a["exit"])


@test
@with_receiver
def cupti_dropped_and_disabled(sock):
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "10"], env={"FAKE_CUPTI_DROPPED": "5"})
        eq(p.returncode, 0, "app exit: " + p.stderr)
        p = run_app(sock, ["--launches", "10"], env={"GPUPROF_CUPTI_LIB": "/nonexistent/libcupti.so.13"})
        eq(p.returncode, 0, "app exit without libcupti: " + p.stderr)
        p = run_app(sock, ["--launches", "10"], env={"GPUPROF_CUPTI": "0"})
        eq(p.returncode, 0, "app exit, library off: " + p.stderr)
        p = run_app(sock, ["--launches", "10"], env={"GPUPROF_CUPTI_FEATURES": "none"})
        eq(p.returncode, 0, "app exit, no features: " + p.stderr)
        p = run_app(sock, ["--launches", "10"], env={"GPUPROF_CUPTI_FEATURES": "kernel,pc"})
        eq(p.returncode, 0, "app exit, pc asked for: " + p.stderr)
        time.sleep(0.2)
    finally:
        rx.stop()
    conns = rx.decoded()
    eq(len(conns), 4, "connections (GPUPROF_CUPTI=0 makes none)")
    # no features: CUPTI is not even opened (its subscription stays free)
    s = last_stats(conns[2])
    eq((s["state"], s["on"], s["last_error"], conns[2].recs[0]["cupti_version"]),
       (ST_DISABLED, 0, 0, 0), "features none")
    # PC sampling asked for beside kernels: on (no context made: no samples)
    s = last_stats(conns[3])
    eq((s["state"], s["on"] & ~F_MONO, s["failed"], s["last_error"]),
       (ST_ACTIVE, F_KERNEL | F_PC, 0, 0), "kernel,pc")
    eq(len(conns[3].of(PC)), 0, "no PC records without a context")
    eq(len(conns[3].of(KERNEL)), 10, "kernels with pc asked for")
    eq(last_stats(conns[0])["cupti_dropped"], 5, "cupti_dropped")
    s = last_stats(conns[1])
    eq((s["state"], s["last_error"], s["on"]), (ST_DISABLED, -2, 0), "without libcupti")
    eq(conns[1].recs[0]["cupti_version"], 0, "no CUPTI version")


@test
@with_receiver
def buffers_run_out(sock):
    """A buffer per record: the pool of 64 runs dry, CUPTI is refused
    buffers and drops; every record is either read or counted dropped."""
    n = 20000
    _, conns = app_with_receiver(sock, ["--launches", str(n), "--kernel", "k:100",
                                        "--sleep-ms", "1500"],
                                 env={"FAKE_CUPTI_RECORDS_PER_BUFFER": "1",
                                      "GPUPROF_CUPTI_FEATURES": "kernel"})
    c = conns[0]
    # the last stats that arrived (the final one may have found the socket full)
    s = max(c.of(STATS), key=lambda s: s["records"] + s["cupti_dropped"])
    overhead = (n + 6) // 7  # the stand-in's OVERHEAD records (fakecupti.h)
    eq(s["records"] + s["cupti_dropped"], n + overhead, "records read + dropped")
    eq(s["cupti_dropped"], s["buffers_refused"], "one record dropped per refused buffer")
    expect(s["buffers_refused"] > 0, "the pool never ran dry: %r", s)


@test
@with_receiver
def cupti_fatal_error(sock):
    _, conns = app_with_receiver(sock, ["--launches", "50", "--memset", "8:100"],
                                 env={"FAKE_CUPTI_FATAL_AT": "10"})
    c = conns[0]
    s = last_stats(c)
    eq((s["state"], s["on"] & ~F_MONO, s["last_error"]), (ST_DISABLED, 0, 999), "stats")
    eq(s["failed"], F_KERNEL | F_MEMCPY | F_MEMSET | F_SYNC | F_EVENT | F_API | F_NVTX, "failed")
    eq(len(c.of(KERNEL)), 10, "kernels before the error")
    eq(len(c.of(MEMSET)), 10, "memsets before the error")


@test
@with_receiver
def fork_child_idle(sock):
    _, conns = app_with_receiver(sock, ["--launches", "5", "--fork"], timeout=30)
    eq(len(conns), 1, "the child made no connection of its own")
    eq(len(conns[0].of(KERNEL)), 5, "kernels of the parent")


def later_profiler(sock, args, env):
    """cuda_app with a Kineto-like profiler starting inside it; returns
    (its 'kineto' line as a dict, the probe's subscribe result, the
    connection)."""
    e = {"GPUPROF_CUPTI_YIELD_QUIET_MS": "300"}
    e.update(env)
    p, conns = app_with_receiver(sock, args + ["--probe-subscribe"], env=e, settle=0.3)
    totals(p.stdout)
    kin, probe = None, None
    for line in p.stdout.splitlines():
        w = line.split()
        if w[0] == "kineto":
            kin = {w[i]: w[i + 1] for i in range(1, len(w) - 1, 2)}
        elif w[0] == "probe":
            probe = int(w[2])
    eq(len(conns), 1, "connections")
    return kin, probe, conns[0]


def our_kernels(c):
    ks = c.of(KERNEL)
    eq({k["name"] for k in ks} - {"gpuprof_k_a"}, set(), "the other tool's kernels reached us")
    return ks


@test
@with_receiver
def later_profiler_takes_over(sock):
    """The common PyTorch order: CUDA (and we) first, the profiler later.
    Its subscription fails (one subscriber), its trace still gets every
    kernel of its window; we notice our callbacks were replaced, step
    aside and let the subscription go, so CUPTI is free afterwards."""
    kin, probe, c = later_profiler(
        sock, ["--launches", "120", "--pause-ms", "10", "--kineto-after", "20",
               "--kineto-teardown"], {})
    eq((kin["subscribe"], kin["kernels"], kin["other_kernels"]), ("39", "10", "0"),
       "the profiler's subscription and trace")
    # its own clock comes after our kinds: refused, it keeps CUPTI's default
    expect(kin["timestamp"] != "0", "the profiler's timestamp callback: %r", kin)
    # its teardown retries the subscription at trace stop, before we noticed
    eq(kin["teardown"], "skipped", "teardown")
    eq(probe, 0, "CUPTI free once we stepped aside")
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"] & ~F_MONO), (ST_CONFLICT, "activity callbacks replaced", 0),
       "stats")
    ks = our_kernels(c)
    expect(0 < len(ks) <= 20, "our kernels %d: only those before the takeover", len(ks))
    api = c.of(API)
    expect(len(api) < 130, "API records %d: they stop once we let go", len(api))


@test
@with_receiver
def later_profiler_policy_never(sock):
    """GPUPROF_CUPTI_YIELD=never: the takeover is reported, the
    subscription (and with it every API record) kept."""
    kin, probe, c = later_profiler(
        sock, ["--launches", "120", "--pause-ms", "5", "--kineto-after", "20"],
        {"GPUPROF_CUPTI_YIELD": "never"})
    eq((kin["subscribe"], kin["kernels"], kin["other_kernels"]), ("39", "10", "0"), "profiler")
    eq(probe, 39, "we kept the subscription")
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"] & ~F_MONO),
       (ST_CONFLICT, "activity callbacks replaced", F_API), "stats")
    expect(0 < len(our_kernels(c)) <= 20, "our kernels: only those before the takeover")
    launches = [a for a in c.of(API) if a["name"] == "cuLaunchKernel"]
    eq(len(launches), 130, "every launch's API record, the profiler's included")


@test
@with_receiver
def torch_loaded_later_policy_torch(sock):
    """GPUPROF_CUPTI_YIELD=torch: PyTorch's CUDA library appears, we give
    CUPTI back whole (our kinds off, our buffers flushed back), and the
    profiler that starts later subscribes, traces and finalizes."""
    kin, probe, c = later_profiler(
        sock, ["--launches", "200", "--pause-ms", "10", "--load", FAKE_TORCH + "@5",
               "--kineto-after", "150", "--kineto-teardown"],
        {"GPUPROF_CUPTI_YIELD": "torch"})
    del kin["timestamp"]  # whether CUPTI takes a clock after kinds were on and off: unknown
    eq(kin, {"subscribe": "0", "kernels": "10", "other_kernels": "0", "unknown_buffers": "0",
             "teardown": "done"}, "profiler")
    eq(probe, 0, "CUPTI free after its cuptiFinalize")
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"] & ~F_MONO),
       (ST_CONFLICT, "libtorch_cuda loaded (yield=torch)", 0), "stats")
    ks = our_kernels(c)
    launches = [a for a in c.of(API) if a["name"] == "cuLaunchKernel"]
    expect(len(ks) >= 5, "our kernels before the library appeared: %d", len(ks))
    # every kernel we launched while collecting came back to us; a launch
    # may slip between switching the kinds off and letting go
    expect(0 <= len(launches) - len(ks) <= 1, "launches %d, kernels %d", len(launches), len(ks))
    eq(s["cupti_dropped"], 0, "dropped")


@test
@with_receiver
def torch_loaded_later_api_only(sock):
    """yield=torch also gives up a subscription that only serves the API
    callbacks (no activity kinds of ours)."""
    kin, probe, c = later_profiler(
        sock, ["--launches", "200", "--pause-ms", "10", "--load", FAKE_TORCH + "@5",
               "--kineto-after", "150"],
        {"GPUPROF_CUPTI_YIELD": "torch", "GPUPROF_CUPTI_FEATURES": "api"})
    eq((kin["subscribe"], kin["kernels"]), ("0", "10"), "profiler")
    eq(probe, 39, "the profiler holds CUPTI (it did not tear down)")
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"] & ~F_MONO),
       (ST_CONFLICT, "libtorch_cuda loaded (yield=torch)", 0), "stats")
    n = len(c.of(API))
    expect(5 <= n < 150, "API records %d: those before the library appeared", n)


@test
@with_receiver
def torch_loaded_first_policy_torch(sock):
    """GPUPROF_CUPTI_YIELD=torch with PyTorch loaded before CUDA starts:
    we never subscribe."""
    kin, probe, c = later_profiler(
        sock, ["--launches", "30", "--load", FAKE_TORCH, "--kineto-after", "5"],
        {"GPUPROF_CUPTI_YIELD": "torch"})
    eq((kin["subscribe"], kin["timestamp"], kin["kernels"], kin["unknown_buffers"]),
       ("0", "0", "10", "0"), "profiler: all of CUPTI its own")
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"]), (ST_CONFLICT, "libtorch_cuda loaded (yield=torch)", 0),
       "stats")
    eq(len(c.of(KERNEL)) + len(c.of(API)), 0, "records")


@test
@with_receiver
def no_takeover_no_step_aside(sock):
    """The takeover test's timing without a second tool: steady work for
    several quiet times, two threads, copies and syncs: the library stays
    active and every kernel arrives (no false alarm)."""
    p, conns = app_with_receiver(
        sock, ["--threads", "2", "--launches", "120", "--pause-ms", "10",
               "--memcpy", "64:1000", "--memset", "64:1000", "--sync", "--probe-subscribe"],
        env={"GPUPROF_CUPTI_YIELD_QUIET_MS": "300", "GPUPROF_CUPTI_YIELD": "torch"}, settle=0.3)
    t = totals(p.stdout)
    expect("probe subscribe 39" in p.stdout, "we let go: %r", p.stdout)
    c = conns[0]
    s = last_stats(c)
    eq((s["state"], s["conflict"]), (ST_ACTIVE, None), "stats")
    eq(len(c.of(KERNEL)), t["kernels"]["gpuprof_k_a"][0], "kernels")


@test
@with_receiver
def release_on_request(sock):
    """The daemon's GPI_CTL_RELEASE: malformed or unknown requests are
    ignored; a release turns our kinds off, flushes what we collected,
    lets the subscription go, and a profiler started afterwards gets all
    of CUPTI (its subscription, clock and teardown)."""
    rx = Receiver(sock)
    e = inject_env(sock)
    app = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "150", "--pause-ms", "10",
                            "--kineto-after", "100", "--kineto-teardown", "--probe-subscribe"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, text=True)
    try:
        deadline = time.time() + 10
        while not rx.socks and time.time() < deadline:
            time.sleep(0.02)
        expect(rx.socks, "the library never connected")
        s = rx.socks[0]
        s.send(control(99))                    # unknown op
        s.send(control(CTL_RELEASE, typ=31))   # unknown type
        s.send(control(CTL_RELEASE, magic=1))  # bad magic
        s.send(control(CTL_RELEASE)[:20])      # short
        time.sleep(0.3)
        s.send(control(CTL_RELEASE))
        out, err = app.communicate(timeout=60)
        eq(app.returncode, 0, "app exit: " + err)
        time.sleep(0.3)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        rx.stop()
    kin = {}
    for line in out.splitlines():
        w = line.split()
        if w[0] == "kineto":
            kin = {w[i]: w[i + 1] for i in range(1, len(w) - 1, 2)}
    del kin["timestamp"]  # whether CUPTI takes a clock after kinds were on and off: unknown
    eq(kin, {"subscribe": "0", "kernels": "10", "other_kernels": "0", "unknown_buffers": "0",
             "teardown": "done"}, "profiler")
    expect("probe subscribe 0" in out, "CUPTI not free at the end: %r", out)
    c = rx.decoded()[0]
    st = c.of(STATS)
    expect(any(x["state"] == ST_ACTIVE for x in st), "never active before the release")
    eq((st[-1]["state"], st[-1]["conflict"]), (ST_CONFLICT, "released on request"), "stats")
    eq(st[0]["flags"], SF_SUB_KNOWN | SF_SUBSCRIBED, "subscribed before the release")
    eq(st[-1]["flags"], SF_SUB_KNOWN, "the subscription gone after it")
    ks = our_kernels(c)
    launches = [a for a in c.of(API) if a["name"] == "cuLaunchKernel"]
    # the bad requests came first and changed nothing: some 30 iterations ran
    expect(len(ks) >= 20, "kernels before the release: %d", len(ks))
    expect(0 <= len(launches) - len(ks) <= 1, "launches %d, kernels %d", len(launches), len(ks))


def idle_app(sock, env=None, args=()):
    """cuda_app that does its work, then idles (no CUDA call) and tries
    cuptiSubscribe for each line it reads (--probe-on-line)."""
    app = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "20", "--probe-on-line"]
                           + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=inject_env(sock, env), text=True, bufsize=1)
    line = ""
    while line.strip() != "idle":
        line = app.stdout.readline()
        if not line:
            raise AssertionError("the app ended before idling: %r" % app.stderr.read())
    return app


def probe(app):
    """The idle app's cuptiSubscribe now: its CUptiResult."""
    app.stdin.write("probe\n")
    app.stdin.flush()
    line = app.stdout.readline()
    expect(line.startswith("probe subscribe "), "probe line %r" % line)
    return int(line.split()[2])


@test
@with_receiver
def release_of_an_idle_process(sock):
    """A release while the process makes no CUDA call (an application
    between its phases, waiting to start its profiler): the library lets
    the subscription go at once, not at the next call, and its stats say
    so right away; a profiler subscribing next succeeds (CUPTI allows one
    subscriber: the stand-in answers 39 while we hold it)."""
    rx = Receiver(sock)
    app = None
    try:
        app = idle_app(sock)
        eq(probe(app), 39, "CUPTI held while we collect")
        deadline = time.time() + 10
        while not rx.socks and time.time() < deadline:
            time.sleep(0.02)
        expect(rx.socks, "the library never connected")
        t0 = time.time()
        rx.socks[0].send(control(CTL_RELEASE))
        released = None
        while released is None and time.time() < t0 + 5:
            st = rx.decoded()[0].of(STATS)
            if st and st[-1]["flags"] == SF_SUB_KNOWN:
                released = time.time() - t0
            time.sleep(0.01)
        expect(released is not None, "no stats saying the subscription is gone within 5 s")
        # the sender's tick is 20 ms; a second (the old wait for a CUDA
        # call, or the stats period) would fail this
        expect(released < 0.5, "confirmed after %.3f s" % released)
        eq(probe(app), 0, "the next subscriber gets CUPTI")
        eq(st[-1]["state"], ST_CONFLICT, "state")
        app.stdin.close()
        eq(app.wait(timeout=30), 0, "app exit")
    finally:
        if app and app.poll() is None:
            app.kill()
            app.wait()
        rx.stop()


@test
@with_receiver
def release_after_takeover_policy_never(sock):
    """GPUPROF_CUPTI_YIELD=never keeps the subscription after a takeover;
    an operator's release still lets it go."""
    rx = Receiver(sock)
    app = None
    try:
        app = idle_app(sock, {"GPUPROF_CUPTI_YIELD": "never", "GPUPROF_CUPTI_YIELD_QUIET_MS": "300"},
                       ["--launches", "120", "--pause-ms", "5", "--kineto-after", "20"])
        deadline = time.time() + 10
        st = []
        while time.time() < deadline:
            st = rx.decoded()[0].of(STATS) if rx.socks else []
            if st and st[-1]["state"] == ST_CONFLICT:
                break
            time.sleep(0.05)
        eq((st[-1]["state"], st[-1]["flags"]), (ST_CONFLICT, SF_SUB_KNOWN | SF_SUBSCRIBED),
           "stepped aside, subscription kept")
        eq(probe(app), 39, "kept")
        rx.socks[0].send(control(CTL_RELEASE))
        deadline = time.time() + 5
        while time.time() < deadline and rx.decoded()[0].of(STATS)[-1]["flags"] != SF_SUB_KNOWN:
            time.sleep(0.02)
        eq(rx.decoded()[0].of(STATS)[-1]["flags"], SF_SUB_KNOWN, "let go on request")
        eq(probe(app), 0, "the next subscriber gets CUPTI")
        app.stdin.close()
        eq(app.wait(timeout=30), 0, "app exit")
    finally:
        if app and app.poll() is None:
            app.kill()
            app.wait()
        rx.stop()


@test
def release_waits_for_the_subscription():
    """gpuprofctl cupti release waits until the library says it no longer
    holds the subscription (status: subscribed false), so a profiler
    started right after it subscribes, even in an idle process; --no-wait
    only sends; a library that cannot let go makes it fail after --wait."""
    need_build()
    d = Daemon()
    d.start()
    apps = []
    try:
        sock = os.path.join(d.tmp, "cupti.sock")
        app = idle_app(sock)
        apps.append(app)
        peer = wait_peer(d, app.pid, lambda x: x["subscribed"] is True, "never subscribed")
        eq(peer["state"], "active", "state")
        p = d.ctl("cupti", "release", str(app.pid))
        out = p.stdout.decode()
        eq(p.returncode, 0, "release: " + p.stderr.decode())
        expect("released CUPTI" in out, "confirmation: %r" % out)
        # no sleep, no status poll of ours: the command's return is the signal
        eq(probe(app), 0, "a profiler started right after the release subscribes")
        peer = wait_peer(d, app.pid, lambda x: True, "peer")
        eq((peer["state"], peer["subscribed"]), ("conflict", False), "status")
        # a process whose CUPTI another tool holds: never subscribed, the
        # release confirms at once
        other = idle_app(sock, {"FAKE_CUPTI_SUBSCRIBER": "nsys"})
        apps.append(other)
        wait_peer(d, other.pid, lambda x: x["subscribed"] is False, "not subscribed")
        eq(d.ctl("cupti", "release", str(other.pid)).returncode, 0, "release")
        # --no-wait: the reply only
        third = idle_app(sock)
        apps.append(third)
        wait_peer(d, third.pid, lambda x: x["subscribed"] is True, "never subscribed")
        r = d.ctl_json("cupti", "release", "--no-wait", str(third.pid))
        eq((r["state_before"], r["subscribed_before"], r["sent"]), ("active", True, True), "reply")
        wait_peer(d, third.pid, lambda x: x["subscribed"] is False, "released")
        # a library that cannot answer (stopped): the wait ends with exit 1
        fourth = idle_app(sock)
        apps.append(fourth)
        wait_peer(d, fourth.pid, lambda x: x["subscribed"] is True, "never subscribed")
        os.kill(fourth.pid, 19)  # SIGSTOP
        t0 = time.time()
        p = d.ctl("cupti", "release", "--wait", "500ms", str(fourth.pid))
        eq(p.returncode, 1, "timeout: " + p.stderr.decode())
        expect("still holds the CUPTI subscription after 500 ms" in p.stderr.decode(),
               "message: %r" % p.stderr)
        expect(time.time() - t0 < 10, "bounded")
        os.kill(fourth.pid, 18)  # SIGCONT
        eq(d.ctl("cupti", "release", "--wait", "0", "1").returncode, 2, "--wait 0: usage")
        for a in apps:
            a.stdin.close()
            eq(a.wait(timeout=30), 0, "app exit")
    finally:
        for a in apps:
            if a.poll() is None:
                a.kill()
                a.wait()
        d.cleanup()


@test
def takeover_in_daemon_status():
    """The step aside reaches gpuprofd: `status` shows the process in
    state conflict with the reason, while it keeps running."""
    need_build()
    d = Daemon()
    d.start()
    app = None
    try:
        e = inject_env(os.path.join(d.tmp, "cupti.sock"), {"GPUPROF_CUPTI_YIELD_QUIET_MS": "300"})
        app = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "100000", "--pause-ms", "5",
                                "--kineto-after", "20", "--until-eof"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=e, text=True)
        deadline, peer = time.time() + 20, None
        while time.time() < deadline:
            peers = d.ctl_json("status")["cupti"]["peer_list"]
            peer = next((x for x in peers if x["pid"] == app.pid), None)
            if peer and peer["state"] == "conflict":
                break
            time.sleep(0.1)
        expect(peer and peer["state"] == "conflict", "no conflict in status: %r", peer)
        eq(peer["conflict"], "activity callbacks replaced", "reason")
        txt = d.ctl("status", check=0).stdout.decode()
        expect("activity callbacks replaced" in txt, "not in gpuprofctl status:\n%s", txt)
        eq(app.poll(), None, "the application keeps running")
        out, err = app.communicate("", timeout=30)
        eq(app.returncode, 0, "app exit: " + err)
        expect(re.search(r"kineto subscribe 39 timestamp \d+ kernels 10 other_kernels 0", out), "profiler: %r", out)
    finally:
        if app and app.poll() is None:
            app.kill()
            app.wait()
        d.cleanup()


def wait_peer(d, pid, cond, what, timeout=20):
    deadline, peer = time.time() + timeout, None
    while time.time() < deadline:
        peers = d.ctl_json("status")["cupti"]["peer_list"]
        peer = next((x for x in peers if x["pid"] == pid), None)
        if peer and cond(peer):
            return peer
        time.sleep(0.1)
    raise AssertionError("%s: %r" % (what, peer))


@test
def release_through_the_daemon():
    """gpuprofctl cupti release PID: the owner of a process or root may,
    another user may not (and learns nothing: "not found")."""
    need_build()
    d = Daemon()
    d.start()
    open_to_group(d)
    apps = []
    try:
        e = inject_env(os.path.join(d.tmp, "cupti.sock"))
        argv = [APP, "--cuda", FAKE_CUDA, "--launches", "100000", "--pause-ms", "5", "--until-eof",
                "--probe-subscribe"]
        for wrap in (lambda a: a, as_attacker):
            apps.append(subprocess.Popen(wrap(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=e, text=True))
        root_app, user_app = apps
        # as_attacker runs the app through setpriv, which execs it: same pid
        for a in apps:
            wait_peer(d, a.pid, lambda x: x["state"] == "active", "never active")
        ctl = [GPUPROFCTL, "--socket", d.sock, "cupti", "release"]
        p = subprocess.run(as_attacker(ctl + [str(root_app.pid)]), capture_output=True, text=True,
                           timeout=30)
        eq(p.returncode, 1, "another user's release: " + p.stderr)
        expect("no CUPTI library of yours" in p.stderr, "error: %r", p.stderr)
        p = subprocess.run(as_attacker(ctl + [str(user_app.pid)]), capture_output=True, text=True,
                           timeout=30)
        eq(p.returncode, 0, "the owner's release: " + p.stderr)
        peer = wait_peer(d, user_app.pid, lambda x: x["state"] == "conflict", "owner's release")
        eq(peer["conflict"], "released on request", "reason")
        eq(d.ctl_json("status")["cupti"]["states"]["active"], 1, "the root app untouched")
        r = d.ctl_json("cupti", "release", str(root_app.pid))
        eq((r["pid"], r["state_before"], r["sent"]), (root_app.pid, "active", True), "reply")
        wait_peer(d, root_app.pid, lambda x: x["state"] == "conflict", "root's release")
        eq(d.ctl("cupti", "release", "0").returncode, 2, "pid 0: usage")
        for a in apps:
            out, err = a.communicate("", timeout=30)
            eq(a.returncode, 0, "app exit: " + err)
            expect("probe subscribe 0" in out, "CUPTI not free: %r", out)
    finally:
        for a in apps:
            if a.poll() is None:
                a.kill()
                a.wait()
        d.cleanup()


# ------------------------------------------------------------ PC sampling

# the stand-in's CUPTI stall reasons (fake_cupti.c): index -> name
STALL = {0: "barrier", 2: "long_scoreboard", 5: "math_pipe_throttle", 7: "wait",
         11: "not_selected", 13: "selected", 3: "long_scoreboard_not_issued"}


def pc_expected(launches):
    """fakecupti_pc_kernel's fixed distribution: (pc, reason) -> samples."""
    e = {}
    for i in range(8):
        key = (i * 0x40, (2, 5, 7, 0)[i % 4])
        e[key] = e.get(key, 0) + (i + 1) * launches
    e[(0, 11)] = 5 * launches
    return e


def pc_run(sock, extra_env, args=()):
    if not os.path.exists(CUBIN):
        raise Skip("no cubin (nvcc absent at build time)")
    env = {"GPUPROF_CUPTI_FEATURES": "default,pc", "FAKE_CUPTI_PC_REPORT": "1"}
    env.update(extra_env)
    p, conns = app_with_receiver(sock, ["--kernel", PC_KERNEL + ":20000", "--pc", CUBIN]
                                 + list(args), env=env, settle=0.3)
    m = re.search(r"fakecupti pc: enable (\d+) disable (\d+) start (\d+) stop (\d+) "
                  r"getdata (\d+) samples (\d+) fresh_names \d+ period (\d+)", p.stderr)
    expect(m, "no stand-in report: %r", p.stderr)
    rep = dict(zip("enable disable start stop getdata samples period".split(),
                   map(int, m.groups())))
    produced = int(re.search(r"^pc samples (\d+)$", p.stdout, re.M).group(1))
    eq(produced, rep["samples"], "samples the app saw taken")
    eq(len(conns), 1, "connections")
    return conns[0], rep, produced


def pc_sums(c):
    got = {}
    for r in c.of(PC):
        eq(r["function"], PC_KERNEL, "function name")
        eq(r["device"], 0, "device")
        key = (r["pc"], r["reason"])
        got[key] = got.get(key, 0) + r["samples"]
    return got


@test
@with_receiver
def pc_sampling(sock):
    # always on (duty 100), GetData handing out 3 PCs a call: the library loops
    c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_PC_DUTY": "100", "FAKE_CUPTI_PC_PER_CALL": "3"},
                              ["--threads", "2", "--launches", "15"])
    eq(produced, 41 * 30, "the stand-in sampled every launch")
    eq((rep["enable"], rep["disable"], rep["start"]), (1, 1, 0), "enable, disable, start")
    names = {(s["device"], s["index"]): s["name"] for s in c.of(STALL_NAME)}
    eq(names, {(0, i): "smsp__pcsamp_warps_issue_stalled_" + n for i, n in STALL.items()},
       "stall reason names")
    eq(pc_sums(c), pc_expected(30), "samples per (pc, reason)")
    cubin = open(CUBIN, "rb").read()
    crc = zlib.crc32(cubin)
    eq({r["cubin_crc"] for r in c.of(PC)}, {crc}, "PC records name the cubin's crc")
    eq(c.cubins(), {crc: cubin}, "cubin reassembled from its chunks")
    ps = c.of(PC_STATS)[-1]
    eq((ps["samples"], ps["sent"], ps["dropped"], ps["oom"], ps["windows"]),
       (41 * 30, 41 * 30, 0, 0, 0), "the library's PC counters")
    eq((ps["cubins"], ps["cubins_refused"], ps["cubin_bytes"]), (1, 0, len(cubin)), "cubins kept")
    # one function: one name pointer held (the stand-in hands the same one
    # in every record and call), freed once at exit (ASan checks that)
    eq((ps["names"], ps["names_untracked"], ps["errors"], ps["last_call"]), (1, 0, 0, 0),
       "names held, untracked, errors")
    eq((ps["contexts_ever"], ps["contexts_off"]), (1, 0), "contexts enabled, off")
    expect(ps["getdata_calls"] >= ps["drains"] > 0 and ps["pcs"] > 0, "GetData calls: %r", ps)
    # no GPUPROF_CUPTI_PC_PERIOD: no period set, CUPTI's own (the
    # stand-in's 20) read back and reported
    eq((rep["period"], ps["period"]), (0, 20), "period set, period reported")
    s = last_stats(c)
    expect(s["on"] & F_PC and not s["failed"] & F_PC, "PC sampling on: %r", s)
    eq(c.recs[0]["features"] & F_PC, F_PC, "hello asks for pc")


@test
@with_receiver
def pc_getdata_errors(sock):
    # a few GetData errors (as before a first kernel): counted with the
    # call, sampling goes on and every sample arrives
    c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_PC_DUTY": "100",
                                     "FAKE_CUPTI_PC_GETDATA_FAIL": "3"},
                              ["--launches", "12", "--pause-ms", "25"])
    ps = c.of(PC_STATS)[-1]
    eq((ps["errors"], ps["last_call"], ps["last_error"], ps["contexts_off"]), (3, 6, 7, 0),
       "errors, GetData, CUPTI_ERROR_INVALID_OPERATION, contexts off")
    eq(sum(pc_sums(c).values()), produced, "every sample arrives")
    s = last_stats(c)
    expect(s["on"] & F_PC and not s["failed"] & F_PC, "PC sampling stays on: %r", s)


@test
@with_receiver
def pc_getdata_always_fails(sock):
    # GetData never works: the context goes off after 8 errors in a row,
    # and what CUPTI left in the configured buffer at Disable still comes
    c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_PC_DUTY": "100",
                                     "FAKE_CUPTI_PC_GETDATA_FAIL": "1000000",
                                     "GPUPROF_CUPTI_FLUSH_MS": "20"},
                              ["--launches", "12", "--pause-ms", "40"])
    ps = c.of(PC_STATS)[-1]
    eq((ps["errors"], ps["last_call"], ps["contexts_off"], ps["contexts_on"]), (8, 6, 1, 0),
       "8 errors of GetData, the context off")
    expect(ps["cfgbuf_pcs"] > 0, "PCs from the configured buffer: %r", ps)
    got = sum(pc_sums(c).values())
    expect(0 < got <= produced, "samples %d of %d", got, produced)
    s = last_stats(c)
    expect(s["failed"] & F_PC, "PC sampling failed once no context samples: %r", s)
    eq(rep["disable"], 1, "disabled once")


@test
@with_receiver
def pc_off_by_default(sock):
    c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_FEATURES": ""}, ["--launches", "5"])
    eq((rep["enable"], produced), (0, 0), "PC sampling enabled, samples taken")
    eq((len(c.of(PC)), len(c.of(STALL_NAME))), (0, 0), "PC records")
    eq(len(c.of(KERNEL)), 5, "kernels still come")


@test
@with_receiver
def pc_hardware_buffer_full(sock):
    # the 2nd GetData finds the hardware buffer full: those samples are
    # lost, the context wedged until the library disables and re-enables it
    c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_PC_DUTY": "100", "FAKE_CUPTI_PC_OOM_AT": "2"},
                              ["--launches", "12", "--pause-ms", "25"])
    eq(rep["enable"], 2, "enabled again after the full buffer")
    got = sum(pc_sums(c).values())
    expect(0 < got < produced, "samples %d of %d: some lost, later ones kept", got, produced)
    expect(got % 41 == 0, "whole launches lost or kept: %d", got)
    eq(c.of(PC_STATS)[-1]["oom"], 1, "the full buffer counted")
    s = last_stats(c)
    expect(s["on"] & F_PC and not s["failed"] & F_PC, "PC sampling stays on: %r", s)


@test
@with_receiver
def pc_refused(sock):
    c, rep, produced = pc_run(sock, {"FAKE_CUPTI_PC_FAIL": "35"}, ["--launches", "5"])
    s = last_stats(c)
    expect(s["failed"] & F_PC and not s["on"] & F_PC, "PC sampling failed: %r", s)
    eq(s["last_error"], 35, "last error")
    eq(s["state"], ST_ACTIVE, "the rest goes on")
    eq((len(c.of(PC)), produced), (0, 0), "no PC samples")
    eq(len(c.of(KERNEL)), 5, "kernels")


@test
@with_receiver
def pc_duty_cycle(sock):
    # windows of 20 ms at 25 %: sampled only while a window is open, and
    # whatever was sampled arrives
    c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_PC_DUTY": "25", "GPUPROF_CUPTI_PC_WINDOW_MS": "20"},
                              ["--launches", "60", "--pause-ms", "4"])
    expect(rep["start"] >= 2 and rep["stop"] >= 1, "windows: %r", rep)
    eq(c.of(PC_STATS)[-1]["windows"], rep["start"], "windows counted")
    expect(0 < produced < 41 * 60, "sampled %d of %d", produced, 41 * 60)
    eq(sum(pc_sums(c).values()), produced, "every sample taken arrives")


@test
@with_receiver
def pc_period(sock):
    # GPUPROF_CUPTI_PC_PERIOD is handed to CUPTI as it is (log2 of cycles)
    # and the stats report the period in force
    c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_PC_DUTY": "100",
                                     "GPUPROF_CUPTI_PC_PERIOD": "24"}, ["--launches", "4"])
    eq((rep["period"], c.of(PC_STATS)[-1]["period"]), (24, 24), "period set, period reported")
    eq(sum(pc_sums(c).values()), produced, "every sample arrives")
    # out of CUPTI's 5 - 31 or not a number: none set (CUPTI's choice),
    # never an error that would turn sampling off
    for bad in ("4", "32", "20x"):
        c, rep, produced = pc_run(sock, {"GPUPROF_CUPTI_PC_DUTY": "100",
                                         "GPUPROF_CUPTI_PC_PERIOD": bad}, ["--launches", "2"])
        ps = c.of(PC_STATS)[-1]
        eq((rep["period"], ps["period"], ps["errors"]), (0, 20, 0),
           "%s: period set, period reported, errors" % bad)
        expect(produced > 0 and sum(pc_sums(c).values()) == produced, "%s: samples", bad)


if __name__ == "__main__":
    main()
