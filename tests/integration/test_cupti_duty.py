#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The CUPTI library's duty cycle (GPUPROF_CUPTI_DUTY, _WINDOW_MS), without
a GPU: cuda_app over the stand-in libcupti, first with a receiver decoding
the wire (inject/cupti_abi.h), then with a real gpuprofd. Checked: the
activity kinds and the API callbacks switched on and off per window (the
stand-in counts every switch), records only from inside windows, each
kernel's activity record with its API record, the windows sent; the
default applied when the variables are unset, empty or invalid; 100 =
never switched; the daemon's status, capture info and analyses saying
which share of the time was covered."""

import os
import re
import subprocess
import time

from cupti_wire import API, KERNEL, WINDOW
from cuda_app import APP, FAKE_CUDA, FAKE_CUPTI, LIB, inject_env, run_received
from gpd import Daemon, Skip, eq, expect, main, test

# the defaults of inject/inject.h
DUTY_DEFAULT, WINDOW_MS_DEFAULT = 2, 10
# the paced work: a launch every ~1 ms for ~0.4 s, so many windows open
# and close while it runs
PACED = ["--launches", "400", "--pause-ms", "1", "--kernel", "gpuprof_k_duty:20000"]
# launch callbacks switched per window (inject/callbacks.c's two lists)
REPORT = re.compile(r"fakecupti duty: kind_enable (\d+) kind_disable (\d+) cb_on (\d+) "
                    r"cb_off (\d+) kernels (\d+) kernels_off (\d+)")


def need_build():
    for p in (LIB, FAKE_CUPTI, FAKE_CUDA, APP):
        if not os.path.exists(p):
            raise Skip("not built (no CUPTI headers?): %s" % p)


def env_with(sock, duty):
    """inject_env() with GPUPROF_CUPTI_DUTY set to duty (a dict of extra
    variables), or removed where duty says None for a name."""
    e = inject_env(sock, {"FAKE_CUPTI_DUTY_REPORT": "1"})
    for k, v in duty.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def run(duty, args=PACED):
    """cuda_app under a receiver: (its result, the one connection, the
    stand-in's switch report)."""
    need_build()
    p, conn = run_received(lambda sock: env_with(sock, duty), args, "gpduty.")
    m = REPORT.search(p.stderr)
    expect(m, "no stand-in report: %r", p.stderr)
    rep = dict(zip("kind_enable kind_disable cb_on cb_off kernels kernels_off".split(),
                   map(int, m.groups())))
    return p, conn, rep


def within(t, windows, slack_ns):
    return any(w["start"] - slack_ns <= t <= w["end"] + slack_ns for w in windows)


@test
def windows_switch_kinds_and_callbacks():
    p, c, rep = run({"GPUPROF_CUPTI_DUTY": "20", "GPUPROF_CUPTI_WINDOW_MS": "20"})
    wins = c.of(WINDOW)
    expect(len(wins) >= 3, "windows: %d (%r)", len(wins), rep)
    for w in wins:
        eq((w["duty"], w["period_ms"]), (20, 100), "window's duty and period")
        # a window closes at the first sender wake-up past its end
        expect(15e6 <= w["end"] - w["start"] <= 60e6, "window of %d ns", w["end"] - w["start"])
    for a, b in zip(wins, wins[1:]):
        expect(b["start"] - a["end"] >= 40e6, "off-time %d ns", b["start"] - a["end"])
    # the stand-in saw the switching: the default kinds (kernel, memcpy,
    # memset, sync, CUDA event, NVTX: 6 on the stand-in, MEMCPY2 refused)
    # enabled once per window, disabled at each close, and the launch
    # callbacks with them
    nkinds = rep["kind_enable"] // len(wins)
    eq(rep["kind_enable"], nkinds * len(wins), "kind enables per window: %r" % rep)
    expect(nkinds >= 5, "kinds switched: %r", rep)
    expect(rep["kind_disable"] >= nkinds * (len(wins) - 1), "kind disables: %r", rep)
    ncb = rep["cb_on"] // len(wins)
    expect(ncb > 100 and rep["cb_on"] == ncb * len(wins), "callback enables: %r", rep)
    expect(rep["cb_off"] >= ncb * (len(wins) - 1), "callback disables: %r", rep)
    # records only from the windows, all that were made arrive
    kernels = c.of(KERNEL)
    expect(0 < rep["kernels_off"] < rep["kernels"] == 400, "kernels off: %r", rep)
    eq(len(kernels), rep["kernels"] - rep["kernels_off"], "kernels recorded arrive")
    api = {a["corr"]: a for a in c.of(API)}
    for k in kernels:
        a = api.get(k["corr"])
        expect(a is not None, "kernel corr %d without its API record", k["corr"])
    # callbacks go on just before a window's start is read, off just after
    # its end: a call in flight may straddle either, by as long as the
    # sender thread is preempted between the switch and the clock read (a
    # few ms on a loaded machine). 20 ms still leaves the middle 40 ms of
    # every 80 ms off-time where no call may be recorded.
    for a in api.values():
        # a call whose ENTER came before the callbacks were on has its
        # exit for a start, never 0 (which would put it first in its
        # thread and take it away from its launch probe)
        expect(0 < a["enter"] <= a["exit"], "API call's enter %d, exit %d", a["enter"], a["exit"])
        expect(within(a["enter"], wins, 20e6) or within(a["exit"], wins, 20e6),
               "API call at %d outside every window", a["enter"])
    expect(len(api) < 400, "API records: %d of 400 launches", len(api))


@test
def default_when_unset_or_invalid():
    for val in (None, "", "0", "101", "5x"):
        p, c, rep = run({"GPUPROF_CUPTI_DUTY": val, "GPUPROF_CUPTI_WINDOW_MS": None})
        wins = c.of(WINDOW)
        expect(wins, "no window with GPUPROF_CUPTI_DUTY=%r", val)
        eq({(w["duty"], w["period_ms"]) for w in wins},
           {(DUTY_DEFAULT, WINDOW_MS_DEFAULT * 100 // DUTY_DEFAULT)}, "default duty (%r)" % val)
        expect(rep["kernels_off"] > 0, "collection paused: %r", rep)
    # an invalid window length falls back to its own default
    p, c, rep = run({"GPUPROF_CUPTI_DUTY": "50", "GPUPROF_CUPTI_WINDOW_MS": "0"})
    eq({w["period_ms"] for w in c.of(WINDOW)}, {WINDOW_MS_DEFAULT * 2}, "period at 50 %")


@test
def full_duty_never_switches():
    p, c, rep = run({"GPUPROF_CUPTI_DUTY": "100"})
    eq(c.of(WINDOW), [], "windows at 100 %")
    eq((rep["kind_disable"] > 0, rep["cb_off"], rep["kernels_off"]), (True, 0, 0),
       "only the exit handler's disables: %r" % rep)
    eq(len(c.of(KERNEL)), 400, "every kernel")


def daemon():
    d = Daemon("sampling.cpu = false\n")
    d.cupti = os.path.join(d.tmp, "cupti.sock")
    d.start()
    return d


def wait_windows(d, pid, n, step):
    """The pid's peer in status once it has sent n duty windows (20 s)."""
    deadline = time.time() + 20
    peer = None
    while time.time() < deadline:
        peers = d.ctl_json("status")["cupti"].get("peer_list", [])
        peer = next((x for x in peers if x["pid"] == pid), None)
        if peer and peer["duty"]["windows"] >= n:
            break
        time.sleep(step)
    expect(peer and peer["duty"]["windows"] >= n, "status duty: %r", peer)
    return peer


@test
def daemon_reports_coverage():
    need_build()
    d = daemon()
    try:
        e = env_with(d.cupti, {"GPUPROF_CUPTI_DUTY": "20", "GPUPROF_CUPTI_WINDOW_MS": "20"})
        p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--sleep-ms", "1500"] + PACED, env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peer = wait_windows(d, p.pid, 4, 0.1)
        eq((peer["duty"]["percent"], peer["duty"]["period_ms"]), (20, 100), "status duty")
        expect(0.1 <= peer["duty"]["covered_fraction"] <= 0.45, "status covered fraction %r",
               peer["duty"])
        time.sleep(0.2)
        cap = d.ctl_json("capture", "--pid", str(p.pid), "--last", "1s")
        p.communicate(timeout=30)
        cid = str(cap["id"])
        info = d.ctl_json("info", cid)
        g = info.get("gpu_coverage")
        expect(g, "capture info without gpu_coverage: %r", info)
        eq((g["duty_percent"], g["period_ms"], g["pids"]), (20, 100, 1), "coverage")
        expect(0.1 <= g["covered_fraction"] <= 0.45 and g["windows"] >= 4, "coverage %r", g)
        expect(info["by_type"].get("gpu_window", 0) == g["windows"], "by_type %r",
               info["by_type"])
        human = d.ctl("info", cid, check=0).stdout.decode()
        expect(re.search(r"^gpu coverage: +\d+\.\d % \(CUPTI duty 20 %", human, re.M),
               "info's coverage line: %s", human)
        for an in ("idle", "temporal"):
            try:
                r = d.ctl_json("analyze", an, cid)
            except AssertionError as e:
                raise AssertionError("%s\ndaemon log: %s" % (e, d.read_log()[-4000:]))
            eq(r.get("gpu_coverage"), g, "analyze %s's coverage" % an)
    finally:
        d.cleanup()


@test
def forward_capture_gets_full_collection():
    """A --duration capture naming the pid: the daemon asks the library
    to collect all the time while it records (GPI_CTL_FULL), so the
    capture is covered nearly whole, not at the duty's 20 %."""
    need_build()
    d = daemon()
    try:
        e = env_with(d.cupti, {"GPUPROF_CUPTI_DUTY": "20", "GPUPROF_CUPTI_WINDOW_MS": "20"})
        p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "3000", "--pause-ms", "1",
                              "--kernel", "gpuprof_k_duty:20000"], env=e,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_windows(d, p.pid, 2, 0.05)
        cap = d.ctl_json("capture", "--pid", str(p.pid), "--duration", "800ms")
        g = d.ctl_json("info", str(cap["id"])).get("gpu_coverage")
        expect(g and g["covered_fraction"] >= 0.7, "coverage of the forward capture: %r", g)
        # and the cycle resumes afterwards: by the end of the run the share
        # since the first window is well below all of it
        p.communicate(timeout=60)
        eq(p.returncode, 0, "app exit")
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
        d.cleanup()


if __name__ == "__main__":
    main()
