#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The figures behind docs/security.md: the attacks of
tests/integration/test_attack_*.py run at full size against the gpuprofd of
$GPUPROF_BUILD (run it against two builds to compare before and after), as
the real unprivileged user gpuprof-attacker. As root; not a test.

  GPUPROF_BUILD=build-rel python3 bench/security/attack_figures.py [--only NAME] [--tries N]

Prints, one line each:
  bomb     peak RSS of the daemon (VmHWM) over its start while a 3.7 MB gzip
           of 10 M Kineto events (1.46 GB of JSON) is imported with
           memory.capture_max = 256M, and the time to the answer;
  slots    seconds until root's import succeeds again after the attacker held
           every job slot with silent pipes and hung up (per-uid job limits
           lifted, so both builds face the same attack);
  race     in how many of N tries a connection whose pid exec'd a setuid-root
           program between connect() and accept was privileged;
  clients  how many connections the attacker holds, and root's status.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import gpd  # noqa: E402
import test_attack_limits as lim  # noqa: E402
import test_attack_priv as priv  # noqa: E402
import test_attack_res as res  # noqa: E402

MiB = 1 << 20


def start(config, fallback=""):
    """A daemon with config, or with fallback where this build lacks its keys."""
    try:
        return res.start(config)
    except RuntimeError:
        return res.start(fallback)


def bomb():
    d = res.start("memory.capture_max = 256M\n")
    try:
        path = os.path.join(d.tmp, "bomb.json.gz")
        json_bytes = res.gzip_bomb(path, 10_000_000)
        rss0 = res.proc_status(d, "VmRSS")
        [r] = res.attack(d, "capture.import", {"fd": 0}, "file:" + path, timeout=900)
        hwm = res.proc_status(d, "VmHWM")
        err = r["reply"].get("error", {})
        print("bomb: %.2f MB gzip, %d MB JSON: peak RSS %.0f MiB (+%.0f MiB over the start), "
              "answered in %.1f s: %s" % (os.path.getsize(path) / 1e6, json_bytes >> 20,
                                          hwm / MiB, (hwm - rss0) / MiB, r["secs"],
                                          err.get("message", r["reply"])), flush=True)
    finally:
        d.cleanup()


def slots():
    d = start("limits.user_jobs = 4\nlimits.reserved_jobs = 0\n")
    p = None
    try:
        p = subprocess.Popen(gpd.as_attacker([gpd.ATTACKER_PY, d.attack_py, "hang", d.sock, d.tmp,
                                              "4"]), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        p.stdout.readline()
        time.sleep(0.5)
        p.stdin.write(b"close\n")
        p.stdin.flush()
        p.stdout.readline()
        t0 = time.time()
        rep = {}
        while time.time() - t0 < 120:
            rep, _ = res.root_import(d, res.SMALL_TRACE)
            if "result" in rep:
                break
            time.sleep(0.1)
        ok = "result" in rep
        print("slots: root's import %s %.2f s after the attacker hung up" % (
            "succeeded" if ok else "still failing (%s)" % rep.get("error"), time.time() - t0),
            flush=True)
        t0 = time.time()
        try:
            rc = d.stop(timeout=20)
            print("slots: SIGTERM -> exit %s in %.2f s" % (rc, time.time() - t0), flush=True)
        except RuntimeError as e:
            print("slots: SIGTERM: %s" % e, flush=True)
    finally:
        if p:
            p.kill()
        d.cleanup()


def race(tries):
    gpd.attacker()
    d = gpd.Daemon().start()
    n = won = 0
    try:
        gpd.open_to_group(d)
        helper = priv.build(d.tmp, "suid_sleeper", priv.SLEEPER_C, setuid=True)
        rootcap = priv.root_capture(d)
        for _ in range(tries):
            lst, _, _ = priv.exec_race_once(d, helper, rootcap)
            n += 1
            won += rootcap in [c["id"] for c in lst.get("result", {}).get("captures", [])]
    finally:
        d.cleanup()
    print("race: privileged in %d of %d tries" % (won, n), flush=True)


def clients():
    d = gpd.Daemon().start()
    gpd.open_to_group(d)
    att = lim.Peer(d)
    try:
        r = att.do("hold", n=80)
        t0 = time.time()
        p = d.ctl("status")
        print("clients: attacker holds %d connections; root's status exit %d in %.3f s %s" % (
            r["held"], p.returncode, time.time() - t0, p.stderr.decode().strip()), flush=True)
        att.do("release")
    finally:
        att.close()
        d.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=["bomb", "slots", "race", "clients"])
    ap.add_argument("--tries", type=int, default=10)
    a = ap.parse_args()
    print("gpuprofd: %s" % gpd.GPUPROFD)
    for name, fn in [("bomb", bomb), ("slots", slots), ("race", lambda: race(a.tries)),
                     ("clients", clients)]:
        if a.only in (None, name):
            fn()


if __name__ == "__main__":
    main()
