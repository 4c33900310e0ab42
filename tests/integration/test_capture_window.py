#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""capture --since / --until: an absolute window, through the real CLI and
daemon. The window a capture reports names the same records again, in the
daemon's monotonic clock or in wall-clock forms (converted with the
daemon's offset), whenever the request arrives; windows that are
reversed, in the future, longer than a day or older than the ring are
refused with the daemon's reason, and nothing is listed for them."""

import datetime
import os
import subprocess
import time

from gpd import BUILD, Daemon, eq, expect, main, need_sampler, test

WORKLOAD = os.path.join(BUILD, "tests", "workloads", "demo_workload")
CONFIG = "sampling.cpu_frequency = 499\n"


def clock_offset_ns():
    """CLOCK_REALTIME - CLOCK_MONOTONIC here (the daemon's too: same
    host, same time namespace), the tightest of a few reads."""
    best = None
    for _ in range(20):
        a = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or b - a < best[0]:
            best = (b - a, r - (a + b) // 2)
    return best[1]


def epoch_arg(ns):
    return "@%d.%09d" % (ns // 10**9, ns % 10**9)


def iso_arg(ns):
    """ISO 8601 with a +01:00 zone (the same instant), to the ns."""
    tz = datetime.timezone(datetime.timedelta(hours=1))
    t = datetime.datetime.fromtimestamp(ns // 10**9, tz)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%09d+01:00" % (ns % 10**9)


def window(info):
    return info["window"]["start_ns"], info["window"]["end_ns"]


def exited_workload(d):
    """A process that ran 1.2 s and exited: its samples stay in the ring."""
    need_sampler(d)
    w = subprocess.Popen([WORKLOAD, "1.2"])
    w.wait()
    return w.pid


@test
def the_same_window_again_in_either_clock():
    d = Daemon(CONFIG).start()
    try:
        pid = exited_workload(d)
        first = d.ctl_json("capture", "--pid", str(pid), "--last", "5s")
        expect(first["records"] > 50, "the exited process's samples: %r" % first)
        s, e = window(first)
        time.sleep(0.5)  # a later request names the same window
        again = d.ctl_json("capture", "--pid", str(pid), "--since", str(s), "--until", str(e))
        eq(window(again), (s, e), "the window as given")
        eq(again["records"], first["records"], "the same records")
        eq(again["window"]["duration_ns"], e - s, "duration")
        # --last before --until: the second before the window's end
        tail = d.ctl_json("capture", "--pid", str(pid), "--last", "1s", "--until", str(e))
        eq(window(tail), (e - 10**9, e), "--last 1s --until")
        expect(tail["records"] <= first["records"], "a part of the records")
        # --since alone: up to now
        since = d.ctl_json("capture", "--pid", str(pid), "--since", str(s))
        eq(since["window"]["start_ns"], s, "start")
        expect(since["window"]["end_ns"] > e, "ends now, after the first window")
        eq(since["records"], first["records"], "nothing of the process since it exited")
        # wall-clock forms, the daemon's offset: the same window to within
        # the offset's reading here and a JSON number's precision
        off = clock_offset_ns()
        for start, end in ((epoch_arg(s + off), epoch_arg(e + off)),
                           (iso_arg(s + off), iso_arg(e + off))):
            wall = d.ctl_json("capture", "--pid", str(pid), "--since", start, "--until", end)
            ws, we = window(wall)
            expect(abs(ws - s) < 2 * 10**6 and abs(we - e) < 2 * 10**6,
                   "%s .. %s: window %d..%d, want %d..%d" % (start, end, ws, we, s, e))
            eq(wall["records"], first["records"], "the same records (%s)" % start)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def refused(d, code, pattern, *args):
    """capture ARGS fails with the daemon's pattern, and JSON-RPC code over
    the socket for the same params."""
    p = d.ctl("capture", "--pid", str(os.getpid()), *args)
    eq(p.returncode, 1, "capture %s: exit status (%r)" % (" ".join(args), p.stderr))
    expect(pattern.encode() in p.stderr, "capture %s: %r lacks %r" % (args, p.stderr, pattern))
    return code


@test
def windows_the_daemon_refuses():
    d = Daemon("sampling.cpu = false\n").start()
    try:
        me = str(os.getpid())
        info = d.ctl_json("capture", "--pid", me, "--last", "1s")
        s, e = window(info)
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        off = clock_offset_ns()
        cases = [
            # (JSON-RPC params, code, message, CLI args)
            ({"start_ns": e, "end_ns": s}, -32602, "after it ends",
             ("--since", str(e), "--until", str(s))),
            ({"start_ns": s, "end_ns": now + 3600 * 10**9}, -32602, "after now",
             ("--since", str(s), "--until", str(now + 3600 * 10**9))),
            ({"start_ns": 0, "end_ns": 25 * 3600 * 10**9}, -32602, "more than a capture may cover",
             ("--since", "@0", "--until", "@90000")),
            ({"start_ns": 1, "end_ns": 2}, -32010, "before the oldest record the ring holds",
             ("--since", "1", "--until", "2")),
            ({"start_ns": 10**9, "end_ns": 2 * 10**9, "clock": "realtime"}, -32010,
             "before the boot", ("--since", "@1", "--until", "@2")),
            ({"last_ms": 1000, "end_ns": 1}, -32010, "before the oldest record",
             ("--last", "1s", "--until", "1")),
        ]
        for params, code, msg, args in cases:
            refused(d, code, msg, *args)
            with d.connect() as c:
                r = c.call("capture.start", dict(params, pids=[os.getpid()]))
            eq(r.get("error", {}).get("code"), code, "%s: %r" % (params, r))
            expect(msg in r["error"]["message"], "%s: %r" % (params, r))
        # the daemon checks what the CLI would not send
        for params in ({"start_ns": s, "duration_ms": 1000}, {"end_ns": e, "duration_ms": 1000},
                       {"end_ns": e}, {"start_ns": s, "clock": "tai"},
                       {"last_ms": 1000, "clock": "realtime"}, {"start_ns": -1},
                       {"start_ns": 2**63}):
            with d.connect() as c:
                r = c.call("capture.start", dict(params, pids=[os.getpid()]))
            eq(r.get("error", {}).get("code"), -32602, "%s: %r" % (params, r))
        # the wall-clock window of 'now' in ISO form, just in the past: fine
        end = time.clock_gettime_ns(time.CLOCK_REALTIME) - 10**8
        ok = d.ctl_json("capture", "--pid", me, "--since", iso_arg(end - 10**9), "--until",
                        iso_arg(end))
        expect(abs(ok["window"]["duration_ns"] - 10**9) < 10**6, "a second: %r" % ok["window"])
        expect(abs(ok["window"]["end_ns"] + off - end) < 2 * 10**6, "ends as asked")
        eq([c["id"] for c in d.ctl_json("list")["captures"]], [info["id"], ok["id"]],
           "nothing listed for the refused windows")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
