#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""GPUPROF_CUPTI_IDLE=unsubscribe, without a GPU: the CUPTI library lets
the process's one CUPTI subscription go at each duty window's close and
subscribes again at the next window's open. cuda_app over the stand-in
libcupti (which delivers no callback while nobody is subscribed and counts
every subscribe and unsubscribe), first under a receiver decoding the
wire, then with a real gpuprofd. Checked: windows arrive with their
coverage, every kernel recorded has its API record and its launching
stack, none is recorded outside the windows, the subscribe and
unsubscribe counts match the windows (in the stand-in and in the
library's stats), PC sampling keeps the subscription (and says so), a
profiler that subscribes between two windows makes the library step aside
for good with the reason in status while the application runs on, and
`gpuprofctl cupti release` and a forward capture arriving while the
library is unsubscribed."""

import os
import re
import subprocess
import tempfile
import time

from cupti_wire import (API, KERNEL, SF_IDLE_APPLIES, SF_IDLE_OUT, SF_IDLE_UNSUB,
                        SF_SUBSCRIBED, ST_ACTIVE, ST_CONFLICT, STATS, WINDOW, Receiver)
from cuda_app import APP, FAKE_CUDA, FAKE_CUPTI, LIB, inject_env, run_received
from gpd import Daemon, Skip, eq, expect, main, test

UNSUB = {"GPUPROF_CUPTI_IDLE": "unsubscribe", "FAKE_CUPTI_DUTY_REPORT": "1"}
# a window of 20 ms every 100 ms
FAST = dict(UNSUB, GPUPROF_CUPTI_DUTY="20", GPUPROF_CUPTI_WINDOW_MS="20")
# a window of 10 ms every 500 ms (the defaults): long idle times, in which
# a test can act while the library is unsubscribed
SLOW = dict(UNSUB, GPUPROF_CUPTI_DUTY="2", GPUPROF_CUPTI_WINDOW_MS="10")
PACED = ["--launches", "400", "--pause-ms", "1", "--kernel", "gpuprof_k_idle:20000"]
REPORT = re.compile(r"fakecupti duty: kind_enable (\d+) kind_disable (\d+) cb_on (\d+) "
                    r"cb_off (\d+) kernels (\d+) kernels_off (\d+) subscribes (\d+) "
                    r"unsubscribes (\d+) calls_unsubscribed (\d+)")
REPORT_KEYS = ("kind_enable kind_disable cb_on cb_off kernels kernels_off subscribes "
               "unsubscribes calls_unsubscribed").split()


def need_build():
    for p in (LIB, FAKE_CUPTI, FAKE_CUDA, APP):
        if not os.path.exists(p):
            raise Skip("not built (no CUPTI headers?): %s" % p)


def report(stderr):
    m = REPORT.search(stderr)
    expect(m, "no stand-in report: %r", stderr)
    return dict(zip(REPORT_KEYS, map(int, m.groups())))


def run(env, args=PACED):
    """cuda_app under a receiver: (its result, the one connection, the
    stand-in's report)."""
    need_build()
    p, conn = run_received(lambda sock: inject_env(sock, env), args, "gpidle.")
    return p, conn, report(p.stderr)


def within(t, windows, slack_ns):
    return any(w["start"] - slack_ns <= t <= w["end"] + slack_ns for w in windows)


@test
def windows_let_the_subscription_go():
    p, c, rep = run(FAST, PACED + ["--fork"])
    wins = c.of(WINDOW)
    expect(len(wins) >= 3, "windows: %d (%r)", len(wins), rep)
    for w in wins:
        eq((w["duty"], w["period_ms"]), (20, 100), "window's duty and period")
    # a window closes at the first sender wake-up past its end; the last
    # one may be cut short by the exit
    for w in wins[:-1]:
        expect(15e6 <= w["end"] - w["start"] <= 60e6, "window of %d ns", w["end"] - w["start"])
    for a, b in zip(wins, wins[1:]):
        expect(b["start"] - a["end"] >= 40e6, "off-time %d ns", b["start"] - a["end"])
    # one subscription at setup and one per later window; each close let
    # it go (the last window may still be open at exit); the fork's child
    # subscribes nothing
    eq(rep["subscribes"], len(wins), "subscribes per window: %r" % rep)
    expect(rep["unsubscribes"] in (len(wins) - 1, len(wins)), "unsubscribes %r for %d windows",
           rep, len(wins))
    # the launch callbacks are enabled with each subscription, never
    # switched off one by one (they go with it); the kinds as before
    ncb = rep["cb_on"] // len(wins)
    expect(ncb > 100 and rep["cb_on"] == ncb * len(wins), "callback enables: %r", rep)
    eq(rep["cb_off"], 0, "callbacks switched off")
    nkinds = rep["kind_enable"] // len(wins)
    expect(nkinds >= 5 and rep["kind_enable"] == nkinds * len(wins), "kind enables: %r", rep)
    # the application's calls between windows found nobody subscribed
    expect(rep["calls_unsubscribed"] >= 150, "calls while unsubscribed: %r", rep)
    # the library's own counts, in its last stats
    st = c.of(STATS)[-1]
    eq((st["idle_unsubs"], st["idle_subs"], st["idle_sub_failed"]),
       (rep["unsubscribes"], rep["subscribes"] - 1, 0), "library's idle counts (%r)" % rep)
    eq(st["flags"] & (SF_IDLE_UNSUB | SF_IDLE_APPLIES), SF_IDLE_UNSUB | SF_IDLE_APPLIES, "flags")
    # records only from the windows, each kernel with its API record
    kernels = c.of(KERNEL)
    expect(0 < rep["kernels_off"] < rep["kernels"], "kernels off: %r", rep)
    # the fork's child launches once more, unrecorded
    expect(rep["kernels"] - rep["kernels_off"] - len(kernels) in (0, 1),
           "kernels recorded arrive: %d of %r", len(kernels), rep)
    api = {a["corr"]: a for a in c.of(API)}
    for k in kernels:
        expect(k["corr"] in api, "kernel corr %d without its API record", k["corr"])
    # the callbacks come back just before a window's start is read, go
    # just after its end: 20 ms of slack (the sender thread preempted
    # between the switch and its clock read on a loaded machine) against
    # 80 ms off-times
    for a in api.values():
        expect(within(a["enter"], wins, 20e6) or within(a["exit"], wins, 20e6),
               "API call at %d outside every window", a["enter"])
    expect(len(api) < 400, "API records: %d of 400 launches", len(api))


@test
def subscribed_stays_the_default():
    for val in (None, "", "subscribed", "unsubscribed"):
        env = dict(FAST, GPUPROF_CUPTI_IDLE=val) if val is not None else \
            {k: v for k, v in FAST.items() if k != "GPUPROF_CUPTI_IDLE"}
        p, c, rep = run(env, ["--launches", "150", "--pause-ms", "1"])
        wins = c.of(WINDOW)
        expect(len(wins) >= 2, "windows (%r): %r", val, rep)
        eq((rep["subscribes"], rep["unsubscribes"]), (1, 0), "subscription kept (%r)" % val)
        expect(rep["cb_off"] > 0, "callbacks switched per window (%r): %r", val, rep)
        st = c.of(STATS)[-1]
        eq(st["flags"] & (SF_IDLE_UNSUB | SF_IDLE_APPLIES | SF_IDLE_OUT), 0, "flags (%r)" % val)
        eq(st["idle_unsubs"] + st["idle_subs"], 0, "counts (%r)" % val)


@test
def pc_sampling_and_full_duty_keep_the_subscription():
    p, c, rep = run(dict(FAST, GPUPROF_CUPTI_FEATURES="default,pc"),
                    ["--launches", "150", "--pause-ms", "1"])
    expect(len(c.of(WINDOW)) >= 2, "windows: %r", rep)
    eq((rep["subscribes"], rep["unsubscribes"]), (1, 0), "subscription kept")
    st = c.of(STATS)[-1]
    eq(st["flags"] & (SF_IDLE_UNSUB | SF_IDLE_APPLIES | SF_IDLE_OUT), SF_IDLE_UNSUB,
       "asked for, does not apply")
    eq(st["idle_unsubs"], 0, "idle unsubscribes")
    # the calls PC sampling's launch callbacks see between windows are no
    # sign of a takeover: the cycle goes on, the library stays active
    eq(st["state"], ST_ACTIVE, "state")
    # nor without a duty cycle: no window ever closes
    p, c, rep = run(dict(FAST, GPUPROF_CUPTI_DUTY="100"), ["--launches", "50"])
    eq((rep["subscribes"], rep["unsubscribes"], c.of(WINDOW)), (1, 0, []), "duty 100")
    eq(c.of(STATS)[-1]["flags"] & (SF_IDLE_UNSUB | SF_IDLE_APPLIES | SF_IDLE_OUT), SF_IDLE_UNSUB,
       "asked for, does not apply at 100")


def wait_stats(rx, pred, what, timeout=10):
    """The last stats of the receiver's one connection once pred holds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        conns = rx.decoded()
        st = conns[0].of(STATS) if conns else []
        if st and pred(st[-1]):
            return st[-1]
        time.sleep(0.005)
    raise AssertionError("timed out waiting for stats: " + what)


@test
def profiler_between_windows_takes_cupti():
    """A profiler (the stand-in's Kineto: subscribe, its own buffers,
    CONCURRENT_KERNEL on, 10 kernels, flush, off) starts while the library
    is unsubscribed between windows: its subscribe succeeds, its trace is
    whole, our next window's subscribe fails and the library steps aside
    for good (state conflict, the reason, one failure), never touching the
    kinds again; the application runs to its end."""
    need_build()
    with tempfile.TemporaryDirectory(prefix="gpidle.") as d:
        sock = os.path.join(d, "cupti.sock")
        rx = Receiver(sock)
        app = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "3000", "--pause-ms", "1",
                                "--kineto-on-line"], env=inject_env(sock, SLOW),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, bufsize=1)
        try:
            tries = []
            for _ in range(5):
                wait_stats(rx, lambda s: s["flags"] & SF_IDLE_OUT, "unsubscribed between windows")
                app.stdin.write("go\n")
                app.stdin.flush()
                line = app.stdout.readline().split()
                expect(line[:2] == ["kineto", "try"], "kineto line %r", line)
                tries.append(int(line[2]))
                if tries[-1] == 0:
                    break
                time.sleep(0.6)  # a window took it back meanwhile: the next idle time
            eq(tries[-1], 0, "the profiler subscribed between windows (tries %r)" % tries)
            st = wait_stats(rx, lambda s: s["state"] == ST_CONFLICT, "stepped aside")
            expect("subscribed between windows" in (st["conflict"] or ""), "reason %r",
                   st["conflict"])
            eq((st["idle_sub_failed"], st["flags"] & (SF_SUBSCRIBED | SF_IDLE_OUT)), (1, 0),
               "one failure, nothing held")
            time.sleep(0.3)
            out, err = app.communicate(timeout=60)  # stdin closed: the threads stop
            eq(app.returncode, 0, "app exit: " + err)
            time.sleep(0.3)
        finally:
            if app.poll() is None:
                app.kill()
                app.communicate()
            rx.stop()
    c = rx.decoded()[0]
    m = re.search(r"kineto subscribe (-?\d+) timestamp (-?\d+) kernels (\d+) other_kernels (\d+) "
                  r"unknown_buffers (\d+)", out)
    expect(m, "no kineto line: %r", out)
    eq((int(m.group(1)), int(m.group(3))), (0, 10), "the profiler's subscription and trace")
    n = int(re.search(r"kernel gpuprof_k_a launches (\d+)", out).group(1))
    expect(n > 100, "the application ran on: %d iterations", n)
    rep = report(err)
    # the library tried once more, failed, and never again
    st = c.of(STATS)[-1]
    eq((st["state"], st["idle_sub_failed"]), (ST_CONFLICT, 1), "final stats")
    eq(rep["subscribes"], st["idle_subs"] + 2, "ours and the profiler's subscriptions: %r" % rep)
    # no window after the step aside, and no kernel of ours recorded after it
    wins = c.of(WINDOW)
    ours = [k for k in c.of(KERNEL) if k["name"] == "gpuprof_k_a"]
    expect(ours and wins, "kernels %d windows %d", len(ours), len(wins))
    expect(max(k["start"] for k in ours) <= wins[-1]["end"] + 5e6, "a kernel after the last window")
    expect(not [k for k in c.of(KERNEL) if k["name"] == "kineto_k"],
           "the profiler's kernels came to us")


def daemon():
    d = Daemon("sampling.cpu = false\n")
    d.cupti = os.path.join(d.tmp, "cupti.sock")
    d.start()
    return d


def wait_peer(d, pid, pred, what, timeout=20, step=0.02):
    deadline = time.time() + timeout
    peer = None
    while time.time() < deadline:
        peers = d.ctl_json("status")["cupti"].get("peer_list", [])
        peer = next((x for x in peers if x["pid"] == pid), None)
        if peer and pred(peer):
            return peer
        time.sleep(step)
    raise AssertionError("timed out waiting for %s: %r" % (what, peer))


def wait_until(cond, what, timeout=15.0):
    deadline = time.time() + timeout
    while not cond():
        expect(time.time() < deadline, "timed out waiting for " + what)
        time.sleep(0.05)


def probed(d):
    """The daemon's launch probes sit on the fake driver of a process."""
    g = [c for c in d.ctl_json("status")["collectors"] if c["name"] == "gpu"][0]
    expect(g["state"] == "attached", "gpu collector: %r" % g)
    return any(os.path.samefile(lib["path"], FAKE_CUDA) and lib["processes"] >= 1
               and lib["probes"] >= 1 for lib in g["libraries"]) and \
        not any(lib.get("attaching") for lib in g["libraries"])


@test
def kernels_in_windows_join_their_stacks():
    """Through the daemon: every kernel recorded in a window (the rest
    were launched while the library was unsubscribed) has its launch call
    and the launch probe's stack, its GPU time summed exactly there."""
    need_build()
    if os.geteuid() != 0:
        raise Skip("the launch probes need root")
    d = daemon()
    app = None
    try:
        app = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--wait"] + PACED,
                               env=inject_env(d.cupti, FAST), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = app.stdout.readline().split()
        expect(line[:1] == ["ready"], "cuda_app started: %r" % line)
        wait_until(lambda: probed(d), "probes on the fake driver")
        out, err = app.communicate("go\n", timeout=120)
        eq(app.returncode, 0, "app exit: " + err)
        rep = report(err)
        n = rep["kernels"] - rep["kernels_off"]
        expect(0 < n < rep["kernels"] and rep["unsubscribes"] >= 2, "windows: %r", rep)
        wait_until(lambda: d.ctl_json("status")["cupti"]["records"]["kernel"] >= n,
                   "the library's last batch")
        cid = str(d.ctl_json("capture", "--pid", line[1], "--last", "60s")["id"])
        got = 0
        for row in d.ctl("folded", cid, "--weight", "gpu-time").stdout.decode().splitlines():
            frames, _, w = row.rpartition(" ")
            if frames.endswith(";gpuprof_k_idle_[G]"):
                expect(";worker;" in frames, "a kernel on its launching stack: %r" % row)
                got += int(w)
        eq(got, n * 20000, "gpu-time of the %d kernels recorded (%r), ns" % (n, rep))
        info = d.ctl_json("folded", cid, "--weight", "gpu-time", "--out", "/dev/null")
        eq(info["cupti"], {"intervals": n, "no_call": 0, "no_launch": 0}, "the join")
        # the process is gone: the daemon's totals still say it let the
        # subscription go (its last stats, summed at close)
        wait_until(lambda: d.ctl_json("status")["cupti"]["peers"] == 0, "the peer closed")
        eq(d.ctl_json("status")["cupti"]["library_idle"],
           {"unsubscribes": rep["unsubscribes"], "resubscribes": rep["subscribes"] - 1,
            "resubscribe_failures": 0}, "library_idle totals (%r)" % rep)
    finally:
        if app and app.poll() is None:
            app.kill()
            app.wait()
        d.cleanup()


@test
def release_while_unsubscribed():
    """gpuprofctl cupti release while the library is out between windows:
    the CLI does not take "subscribed": false for the release (the next
    window would take CUPTI back) but waits for the library to step aside;
    afterwards no window subscribes again, so a profiler gets CUPTI."""
    need_build()
    d = daemon()
    app = None
    try:
        app = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "20", "--probe-on-line"],
                               env=inject_env(d.cupti, SLOW), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               bufsize=1)
        while app.stdout.readline().strip() != "idle":
            expect(app.poll() is None, "the app ended before idling")
        peer = wait_peer(d, app.pid, lambda x: x["idle"]["unsubscribed_now"], "unsubscribed")
        eq((peer["subscribed"], peer["idle"]["mode"], peer["idle"]["applies"]),
           (False, "unsubscribe", True), "status while out")
        human = d.ctl("status", check=0).stdout.decode()
        expect(re.search(r"^cupti idle: pid %d unsubscribes between windows: [1-9]\d* let go, "
                         r"\d+ taken back, 0 failed" % app.pid, human, re.M),
               "human status: %s", human)
        p = d.ctl("cupti", "release", str(app.pid))
        out = p.stdout.decode()
        eq(p.returncode, 0, "release: " + p.stderr.decode())
        expect("released CUPTI (state conflict)" in out, "confirmation: %r" % out)
        peer = wait_peer(d, app.pid, lambda x: True, "peer")
        eq((peer["state"], peer["conflict"], peer["subscribed"], peer["idle"]["unsubscribed_now"]),
           ("conflict", "released on request", False, False), "status after")
        # two periods later: no window took it back
        time.sleep(1.2)
        app.stdin.write("probe\n")
        app.stdin.flush()
        eq(app.stdout.readline().strip(), "probe subscribe 0", "a profiler gets CUPTI")
        out, err = app.communicate(timeout=30)
        eq(app.returncode, 0, "app exit: " + err)
        # every subscription, ours and the probe's, was let go
        rep = report(err)
        eq(rep["unsubscribes"], rep["subscribes"], "subscriptions let go: %r" % rep)
    finally:
        if app and app.poll() is None:
            app.kill()
            app.wait()
        d.cleanup()


@test
def forward_capture_while_unsubscribed():
    """A --duration capture naming the pid (GPI_CTL_FULL) reaching the
    library between windows: it subscribes again at once and holds the
    window open, the capture is covered nearly whole, and its kernels
    have their launch calls; the cycle (and the letting go) resumes."""
    need_build()
    d = daemon()
    p = None
    try:
        p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--launches", "3000", "--pause-ms", "1",
                              "--kernel", "gpuprof_k_idle:20000"], env=inject_env(d.cupti, FAST),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_peer(d, p.pid, lambda x: x["idle"]["unsubscribed_now"], "unsubscribed")
        cap = d.ctl_json("capture", "--pid", str(p.pid), "--duration", "800ms")
        g = d.ctl_json("info", str(cap["id"])).get("gpu_coverage")
        expect(g and g["covered_fraction"] >= 0.7, "coverage of the forward capture: %r", g)
        peer = wait_peer(d, p.pid, lambda x: x["idle"]["unsubscribes"] >= 1, "peer")
        before = peer["idle"]["unsubscribes"]
        peer = wait_peer(d, p.pid, lambda x: x["idle"]["unsubscribes"] > before + 1,
                         "the cycle resuming")
        eq((peer["state"], peer["idle"]["resubscribe_failures"]), ("active", 0), "status")
        out, err = p.communicate(timeout=60)
        eq(p.returncode, 0, "app exit: " + err)
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        d.cleanup()


if __name__ == "__main__":
    main()
