#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PC sampling enabled per window (GPUPROF_CUPTI_PC_ENABLE=window) and the
first window's delay (GPUPROF_CUPTI_PC_FIRST_MS), through the real
library over the stand-in libcupti (tests/cupti/fake_cupti.c, which
samples a launch only while sampling is enabled, and started under
start/stop control, and refuses GetData, Start and Stop on a context
that is not enabled): each window Enables and Disables, nothing is
enabled between windows, every sample taken arrives with its stall names
and cubin; a context destroyed mid-window, a process that exits
mid-window, a full hardware buffer, a refused Enable; and through the
daemon, the folded stalls and the library's counters in status."""

import os
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from gpd import eq, expect, main, test  # noqa: E402

# test_cupti_inject's and test_cupti_ingest's helpers, without running
# their tests here: what their @test registered is taken back
_n = len(gpd._tests)
from test_cupti_inject import (CUBIN, F_PC, KERNEL, PC, PC_KERNEL, PC_STATS, ST_ACTIVE,  # noqa: E402
                               STALL, STALL_NAME, last_stats, pc_expected, pc_run, pc_sums,
                               with_receiver)
from test_cupti_ingest import ctl_json, daemon, wait_status  # noqa: E402
from cuda_app import APP, FAKE_CUDA, FAKE_CUPTI, LIB  # noqa: E402
del gpd._tests[_n:]

WINDOW = {"GPUPROF_CUPTI_PC_ENABLE": "window"}


def check_subset(c, produced):
    """Every sample taken arrives, at the stand-in's (pc, reason) keys."""
    got = pc_sums(c)
    expect(set(got) <= set(pc_expected(1)), "unexpected (pc, reason) keys: %r", got)
    eq(sum(got.values()), produced, "every sample taken arrives")


@test
@with_receiver
def windows_enable_and_disable(sock):
    # windows of 20 ms at 25 %: each one Enables and Disables, no Start
    # or Stop, and launches between windows are not sampled
    env = dict(WINDOW, GPUPROF_CUPTI_PC_DUTY="25", GPUPROF_CUPTI_PC_WINDOW_MS="20")
    c, rep, produced = pc_run(sock, env, ["--launches", "60", "--pause-ms", "4"])
    ps = c.of(PC_STATS)[-1]
    expect(rep["enable"] >= 2, "windows: %r", rep)
    eq((rep["start"], rep["stop"]), (0, 0), "no start/stop control")
    eq(rep["disable"], rep["enable"], "each Enable has its Disable")
    eq((ps["windows"], ps["enables"], ps["enable_mode"]), (rep["enable"], rep["enable"], 1),
       "windows, enables, mode counted")
    expect(0 < produced < 41 * 60, "sampled %d of %d", produced, 41 * 60)
    check_subset(c, produced)
    # stall names read once, at the first window, and sent
    names = {(s["device"], s["index"]): s["name"] for s in c.of(STALL_NAME)}
    eq(names, {(0, i): "smsp__pcsamp_warps_issue_stalled_" + n for i, n in STALL.items()},
       "stall reason names")
    # the module loaded before any window: its cubin kept all the same
    cubin = open(CUBIN, "rb").read()
    eq(c.cubins(), {zlib.crc32(cubin): cubin}, "cubin")
    eq((ps["errors"], ps["contexts_ever"], ps["contexts_off"], ps["contexts_on"], ps["oom"]),
       (0, 1, 0, 0, 0), "errors, contexts ever / off / on, oom")
    eq((ps["names"], ps["names_untracked"]), (1, 0), "names held (freed once at exit)")
    expect(ps["launch_ns"] > 0 and ps["getdata_ns"] > 0, "times: %r", ps)
    s = last_stats(c)
    expect(s["on"] & F_PC and not s["failed"] & F_PC, "PC sampling on: %r", s)
    # the same run in context mode: one Enable, windows Start and Stop
    env["GPUPROF_CUPTI_PC_ENABLE"] = "context"
    c, rep, produced = pc_run(sock, env, ["--launches", "60", "--pause-ms", "4"])
    ps = c.of(PC_STATS)[-1]
    eq((rep["enable"], rep["disable"]), (1, 1), "context mode: enabled once")
    expect(rep["start"] >= 2 and ps["windows"] == rep["start"], "windows: %r %r", rep, ps)
    eq((ps["enables"], ps["enable_mode"]), (1, 0), "enables, mode")
    check_subset(c, produced)


@test
@with_receiver
def context_destroyed_mid_window(sock):
    # one long window, open when the app destroys its context: drained
    # and disabled there, every launch's samples arrive
    env = dict(WINDOW, GPUPROF_CUPTI_PC_DUTY="50", GPUPROF_CUPTI_PC_WINDOW_MS="60000",
               FAKE_CUPTI_PC_PER_CALL="3")
    c, rep, produced = pc_run(sock, env, ["--launches", "12", "--threads", "2"])
    eq(produced, 41 * 24, "every launch sampled")
    eq((rep["enable"], rep["disable"], rep["start"]), (1, 1, 0), "enable, disable, start")
    check_subset(c, produced)
    ps = c.of(PC_STATS)[-1]
    eq((ps["windows"], ps["contexts_on"], ps["errors"]), (1, 0, 0), "windows, contexts on, errors")


@test
@with_receiver
def exit_mid_window(sock):
    # the context is never destroyed (--pc-keep): the window open at exit
    # is drained and disabled then, and its samples still arrive; with
    # GetData always failing they come from the configured buffer
    env = dict(WINDOW, GPUPROF_CUPTI_PC_DUTY="50", GPUPROF_CUPTI_PC_WINDOW_MS="60000",
               GPUPROF_CUPTI_FLUSH_MS="20")
    c, rep, produced = pc_run(sock, env, ["--launches", "10", "--pc-keep"])
    eq((rep["enable"], rep["disable"]), (1, 1), "enable, disable")
    eq(produced, 41 * 10, "every launch sampled")
    check_subset(c, produced)
    env["FAKE_CUPTI_PC_GETDATA_FAIL"] = "1000000"
    c, rep, produced = pc_run(sock, env, ["--launches", "3", "--pc-keep"])
    ps = c.of(PC_STATS)[-1]
    expect(ps["cfgbuf_pcs"] > 0 and ps["errors"] > 0, "configured buffer read: %r", ps)
    eq(rep["disable"], 1, "disabled once")
    got = sum(pc_sums(c).values())
    expect(0 < got <= produced, "samples %d of %d", got, produced)


@test
@with_receiver
def hardware_buffer_full_in_a_window(sock):
    # the 2nd GetData with samples finds the buffer full: disabled, enabled
    # and configured again inside the window; later samples still come
    env = dict(WINDOW, GPUPROF_CUPTI_PC_DUTY="50", GPUPROF_CUPTI_PC_WINDOW_MS="30",
               FAKE_CUPTI_PC_OOM_AT="2")
    c, rep, produced = pc_run(sock, env, ["--launches", "40", "--pause-ms", "5"])
    ps = c.of(PC_STATS)[-1]
    eq(ps["oom"], 1, "the full buffer counted")
    eq(rep["enable"], ps["windows"] + 1, "one Enable per window and one to recover")
    eq(rep["disable"], rep["enable"], "each Enable has its Disable")
    got = sum(pc_sums(c).values())
    expect(0 < got < produced and got % 41 == 0, "samples %d of %d", got, produced)
    s = last_stats(c)
    expect(s["on"] & F_PC and not s["failed"] & F_PC, "PC sampling stays on: %r", s)


@test
@with_receiver
def enable_refused(sock):
    # Enable refused at the first window (no privileges): pc failed, the
    # rest goes on, and no window opens again
    env = dict(WINDOW, GPUPROF_CUPTI_PC_DUTY="50", GPUPROF_CUPTI_PC_WINDOW_MS="5",
               FAKE_CUPTI_PC_FAIL="35")
    c, rep, produced = pc_run(sock, env, ["--launches", "20", "--pause-ms", "2"])
    s = last_stats(c)
    expect(s["failed"] & F_PC and not s["on"] & F_PC, "PC sampling failed: %r", s)
    eq((s["last_error"], s["state"]), (35, ST_ACTIVE), "last error, state")
    ps = c.of(PC_STATS)[-1]
    eq((ps["errors"], ps["last_call"], ps["windows"], ps["contexts_ever"]), (1, 1, 0, 0),
       "one Enable error, no window")
    eq((len(c.of(PC)), produced), (0, 0), "no PC samples")
    eq(len(c.of(KERNEL)), 20, "kernels")


@test
@with_receiver
def first_window_delayed(sock):
    # GPUPROF_CUPTI_PC_FIRST_MS past the run: in context mode the context
    # is enabled and configured but never started (the cost of that alone)
    env = {"GPUPROF_CUPTI_PC_DUTY": "10", "GPUPROF_CUPTI_PC_FIRST_MS": "600000"}
    c, rep, produced = pc_run(sock, env, ["--launches", "20", "--pause-ms", "2"])
    eq((rep["enable"], rep["start"], rep["disable"], produced), (1, 0, 1, 0),
       "enabled, never started, disabled at the end; no samples")
    ps = c.of(PC_STATS)[-1]
    eq((ps["windows"], ps["contexts_ever"], ps["errors"]), (0, 1, 0), "windows, contexts, errors")
    # in window mode nothing is enabled at all
    c, rep, produced = pc_run(sock, dict(env, **WINDOW), ["--launches", "20", "--pause-ms", "2"])
    eq((rep["enable"], rep["disable"], produced), (0, 0, 0), "never enabled")
    # a short delay: the first window opens once it has passed
    env = dict(WINDOW, GPUPROF_CUPTI_PC_DUTY="50", GPUPROF_CUPTI_PC_WINDOW_MS="60000",
               GPUPROF_CUPTI_PC_FIRST_MS="30")
    c, rep, produced = pc_run(sock, env, ["--launches", "30", "--pause-ms", "3"])
    eq(rep["enable"], 1, "one window")
    expect(0 < produced < 41 * 30, "launches before the window not sampled: %d", produced)
    check_subset(c, produced)


@test
def through_the_daemon():
    """Window mode into gpuprofd: the folded stalls sum to what the
    stand-in sampled, and status shows the library's counters."""
    for p in (LIB, FAKE_CUPTI, FAKE_CUDA, APP, CUBIN):
        if not os.path.exists(p):
            raise gpd.Skip("not built: %s" % p)
    d = daemon()
    try:
        env = dict(os.environ, CUDA_INJECTION64_PATH=LIB, GPUPROF_CUPTI_LIB=FAKE_CUPTI,
                   GPUPROF_CUPTI_SOCKET=d.cupti, GPUPROF_CUPTI_FLUSH_MS="50",
                   GPUPROF_CUPTI_FEATURES="default,pc", GPUPROF_CUPTI_PC_DUTY="30",
                   GPUPROF_CUPTI_PC_WINDOW_MS="15", GPUPROF_CUPTI_PC_ENABLE="window",
                   GPUPROF_CUPTI_DUTY="100")
        p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--kernel", PC_KERNEL + ":20000", "--pc",
                              CUBIN, "--launches", "40", "--threads", "2", "--pause-ms", "3"],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        eq(p.returncode, 0, "app: " + err)
        produced = int([ln.split()[2] for ln in out.splitlines()
                        if ln.startswith("pc samples ")][0])
        expect(0 < produced < 41 * 80, "sampled %d of %d", produced, 41 * 80)
        st = wait_status(d, lambda st: st["pc_samples"] == produced and st["cubins"] == 1
                         and st["peers"] == 0 and st["pc_closed"], "the app's samples and cubin")
        pl = st["pc_closed"][0]["pc_library"]
        eq((pl["enable_mode"], pl["samples"], pl["sent"], pl["errors"]),
           ("window", produced, produced, 0), "the library's counters in status")
        expect(pl["windows"] >= 2 and pl["enables"] == pl["windows"], "windows: %r", pl)
        out = d.ctl("status", check=0).stdout.decode()
        expect("pc:         pid %d (gone): %d samples" % (p.pid, produced) in out and
               "; %d windows, enabled per window" % pl["windows"] in out,
               "gpuprofctl status: %r", out)
        cid = ctl_json(d, "capture", "--last", "30s", "--pid", str(p.pid))["id"]
        out = d.ctl("folded", str(cid), "--weight", "stalls", check=0).stdout.decode()
        total = 0
        for line in out.splitlines():
            frames, count = line.rsplit(" ", 1)
            f = frames.split(";")
            eq(f[-3], PC_KERNEL + "_[G]", "kernel frame of %r" % line)
            expect(f[-1][:-4] in STALL.values(), "stall frame of %r", line)
            total += int(count)
        eq(total, produced, "folded stall samples")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
