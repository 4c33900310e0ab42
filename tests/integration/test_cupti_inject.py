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
reads; another CUPTI subscriber; a kind CUPTI refuses; no timestamp
callback; no libcupti; fork; PC sampling (stall names, exact sample sums,
cubins whole, a full hardware buffer, a refused feature, the duty cycle)."""

import os
import re
import subprocess
import tempfile
import time
import zlib

from cupti_wire import (API, F_API, F_GRAPH, F_KERNEL, F_MEMCPY, F_MEMSET, F_MONO, F_NVTX,
                        F_PC, F_SYNC, GRAPH, HELLO, KERNEL, MARKER, MEMCPY, MEMSET, MK_INSTANT,
                        MK_RANGE, PC, PC_STATS, ST_ACTIVE, ST_CONFLICT, ST_DISABLED, STALL_NAME,
                        STATS, SYNC, Receiver)
from gpd import BUILD, Skip, eq, expect, main, test

LIB = os.path.join(BUILD, "inject", "libgpuprof-cupti.so")
FAKE_CUPTI = os.path.join(BUILD, "tests", "cupti", "libcupti.so.13")
FAKE_CUDA = os.path.join(BUILD, "tests", "gpu", "cuda", "libcuda.so.1")
APP = os.path.join(BUILD, "tests", "cupti", "cuda_app")
CUBIN = os.path.join(BUILD, "tests", "cupti", "pc_kernel.cubin")
PC_KERNEL = "gpuprof_pc_kernel"


def run_app(sock, args, env=None, timeout=60, **kw):
    e = dict(os.environ, CUDA_INJECTION64_PATH=LIB, GPUPROF_CUPTI_LIB=FAKE_CUPTI,
             GPUPROF_CUPTI_SOCKET=sock, GPUPROF_CUPTI_FLUSH_MS="50")
    e.update(env or {})
    return subprocess.run([APP, "--cuda", FAKE_CUDA] + args, env=e, capture_output=True,
                          text=True, timeout=timeout, **kw)


def totals(out):
    """What cuda_app says it asked for."""
    t = {"tids": [], "kernels": {}}
    for line in out.splitlines():
        w = line.split()
        if w[0] == "tid":
            t["tids"].append(int(w[1]))
        elif w[0] == "kernel":
            t["kernels"][w[1]] = (int(w[3]), int(w[5]))
        elif w[0] in ("memcpy", "memset"):
            t[w[0]] = (int(w[2]), int(w[4]), int(w[6]))
        elif w[0] == "graph":
            t["graph"] = (int(w[2]), int(w[4]))
        elif w[0] == "sync":
            t["sync"] = int(w[2])
        elif w[0] == "nvtx":
            t["nvtx"] = (int(w[2]), int(w[4]))
    expect(out.rstrip().endswith("done"), "app did not finish: %r", out)
    return t


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
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--threads", "3", "--launches", "40", "--kernel", "gpuprof_k_a:20000",
                           "--kernel", "_Z8gpuprof_k_bPfi:5000", "--memcpy", "4096:3000",
                           "--memset", "1024:2000", "--graph", "7000", "--sync", "--nvtx"],
                    env={"GPUPROF_CUPTI_FEATURES": "all"})
        eq(p.returncode, 0, "app exit: " + p.stderr)
        t = totals(p.stdout)
        time.sleep(0.3)
    finally:
        rx.stop()
    conns = rx.decoded()
    eq(len(conns), 1, "connections")
    c = conns[0]
    check_hello_first(c)
    hello = c.recs[0]
    eq(hello["features"], F_KERNEL | F_MEMCPY | F_MEMSET | F_SYNC | F_GRAPH | F_API | F_NVTX | F_MONO,
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
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "5", "--graph", "1000", "--sync"])
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(0.2)
    finally:
        rx.stop()
    c = rx.decoded()[0]
    eq(c.recs[0]["features"], F_KERNEL | F_MEMCPY | F_MEMSET | F_SYNC | F_API | F_NVTX | F_MONO,
       "default features")
    eq(len(c.of(KERNEL)), 5, "kernels")
    eq(len(c.of(SYNC)), 5, "syncs")
    eq(len(c.of(GRAPH)), 0, "graph records (graph is not a default)")
    # the graph launch's API record is there: cuGraphLaunch is a launch
    eq(len([a for a in c.of(API) if a["name"] == "cuGraphLaunch"]), 5, "cuGraphLaunch API")


@test
@with_receiver
def daemon_late_and_restarted(sock):
    e = dict(os.environ, CUDA_INJECTION64_PATH=LIB, GPUPROF_CUPTI_LIB=FAKE_CUPTI,
             GPUPROF_CUPTI_SOCKET=sock, GPUPROF_CUPTI_FLUSH_MS="50")
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
        e = dict(os.environ, CUDA_INJECTION64_PATH=LIB, GPUPROF_CUPTI_LIB=FAKE_CUPTI,
                 GPUPROF_CUPTI_SOCKET=sock, GPUPROF_CUPTI_FLUSH_MS="50")
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
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "20", "--nvtx"],
                    env={"FAKE_CUPTI_SUBSCRIBER": "Nsight Systems"})
        eq(p.returncode, 0, "app exit: " + p.stderr)
        totals(p.stdout)
        time.sleep(0.2)
    finally:
        rx.stop()
    c = rx.decoded()[0]
    check_hello_first(c)
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"], s["last_error"]),
       (ST_CONFLICT, "Nsight Systems", 0, 39), "stats")
    eq([r["rtype"] for r in c.recs if r["rtype"] not in (HELLO, STATS)], [], "records in conflict")


@test
@with_receiver
def conflict_with_a_profiler_that_came_first(sock):
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "20", "--subscribe-first", "kineto"])
        eq(p.returncode, 0, "app exit: " + p.stderr)
        totals(p.stdout)
        time.sleep(0.2)
    finally:
        rx.stop()
    c = rx.decoded()[0]
    s = last_stats(c)
    eq((s["state"], s["conflict"], s["on"]), (ST_CONFLICT, "CUPTI for kineto", 0), "stats")
    eq(len(c.of(KERNEL)) + len(c.of(API)), 0, "records in conflict")


@test
@with_receiver
def kind_refused(sock):
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "10", "--memcpy", "100:100", "--memset", "10:10"],
                    env={"FAKE_CUPTI_FAIL_KIND": "1"})   # MEMCPY
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(0.2)
    finally:
        rx.stop()
    c = rx.decoded()[0]
    s = last_stats(c)
    eq((s["state"], s["failed"], s["last_error"]), (ST_ACTIVE, F_MEMCPY, 35), "stats")
    eq(s["on"] & F_MEMCPY, 0, "memcpy still on")
    eq((len(c.of(KERNEL)), len(c.of(MEMCPY)), len(c.of(MEMSET))), (10, 0, 10), "records")


@test
@with_receiver
def realtime_clock_converted(sock):
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "20"], env={"FAKE_CUPTI_NO_TIMESTAMP_CB": "1"})
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(0.2)
    finally:
        rx.stop()
    c = rx.decoded()[0]
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
    rx = Receiver(sock)
    n = 20000
    try:
        p = run_app(sock, ["--launches", str(n), "--kernel", "k:100", "--sleep-ms", "1500"],
                    env={"FAKE_CUPTI_RECORDS_PER_BUFFER": "1", "GPUPROF_CUPTI_FEATURES": "kernel"})
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(0.2)
    finally:
        rx.stop()
    c = rx.decoded()[0]
    # the last stats that arrived (the final one may have found the socket full)
    s = max(c.of(STATS), key=lambda s: s["records"] + s["cupti_dropped"])
    overhead = (n + 6) // 7  # the stand-in's OVERHEAD records (fakecupti.h)
    eq(s["records"] + s["cupti_dropped"], n + overhead, "records read + dropped")
    eq(s["cupti_dropped"], s["buffers_refused"], "one record dropped per refused buffer")
    expect(s["buffers_refused"] > 0, "the pool never ran dry: %r", s)


@test
@with_receiver
def cupti_fatal_error(sock):
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "50", "--memset", "8:100"],
                    env={"FAKE_CUPTI_FATAL_AT": "10"})
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(0.2)
    finally:
        rx.stop()
    c = rx.decoded()[0]
    s = last_stats(c)
    eq((s["state"], s["on"] & ~F_MONO, s["last_error"]), (ST_DISABLED, 0, 999), "stats")
    eq(s["failed"], F_KERNEL | F_MEMCPY | F_MEMSET | F_SYNC | F_API | F_NVTX, "failed")
    eq(len(c.of(KERNEL)), 10, "kernels before the error")
    eq(len(c.of(MEMSET)), 10, "memsets before the error")


@test
@with_receiver
def fork_child_idle(sock):
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--launches", "5", "--fork"], timeout=30)
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(0.2)
    finally:
        rx.stop()
    conns = rx.decoded()
    eq(len(conns), 1, "the child made no connection of its own")
    eq(len(conns[0].of(KERNEL)), 5, "kernels of the parent")


# ------------------------------------------------------------ PC sampling

# the stand-in's CUPTI stall reasons (fake_cupti.c): index -> name
STALL = {0: "barrier", 2: "long_scoreboard", 5: "math_pipe_throttle", 7: "wait",
         11: "not_selected", 13: "selected"}


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
    rx = Receiver(sock)
    try:
        p = run_app(sock, ["--kernel", PC_KERNEL + ":20000", "--pc", CUBIN] + list(args), env=env)
        eq(p.returncode, 0, "app exit: " + p.stderr)
        time.sleep(0.3)
    finally:
        rx.stop()
    m = re.search(r"fakecupti pc: enable (\d+) disable (\d+) start (\d+) stop (\d+) "
                  r"getdata (\d+) samples (\d+)", p.stderr)
    expect(m, "no stand-in report: %r", p.stderr)
    rep = dict(zip("enable disable start stop getdata samples".split(), map(int, m.groups())))
    produced = int(re.search(r"^pc samples (\d+)$", p.stdout, re.M).group(1))
    eq(produced, rep["samples"], "samples the app saw taken")
    conns = rx.decoded()
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
    s = last_stats(c)
    expect(s["on"] & F_PC and not s["failed"] & F_PC, "PC sampling on: %r", s)
    eq(c.recs[0]["features"] & F_PC, F_PC, "hello asks for pc")


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


if __name__ == "__main__":
    main()
