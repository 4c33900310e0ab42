#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The daemon's `cupti` collector against a sender written from
inject/cupti_abi.h (cupti_send.py): records land in the store as store.h
says, attributed to the connecting process; another user's records stay
its own; hostile input closes only the hostile connection; the bounds
(rate, peers, strings, hello timeout) and the pid-reuse guard hold; status
shows it all."""

import json
import os
import re
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from gpd import (GPUPROFCTL, Daemon, as_attacker, attacker, eq, expect, main, open_to_group,  # noqa: E402
                 test)
import cupti_send as W  # noqa: E402

WIRE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cupti_send.py")
ENGINE_CUPTI = 3
REC_INTERVAL, REC_MARK, REC_API = 3, 4, 6


def daemon(extra=""):
    d = Daemon()
    d.cupti = os.path.join(d.tmp, "cupti.sock")
    with open(d.conf, "w") as f:
        f.write("sampling.cpu = false\ncupti.socket = %s\n%s" % (d.cupti, extra))
    d.start()
    return d


def ctl_json(d, *args, user=None):
    """gpuprofctl --json ARGS as root, or as the attacker (its groups:
    gpuprof among them)."""
    if user is None:
        return d.ctl_json(*args)
    p = subprocess.run(as_attacker([GPUPROFCTL, "--socket", d.sock, "--json"] + list(args)),
                       capture_output=True, timeout=60)
    eq(p.returncode, 0, "gpuprofctl %s as the attacker: %s" % (args, p.stderr.decode(errors="replace")))
    return json.loads(p.stdout)


def status(d, user=None):
    return ctl_json(d, "status", user=user)["cupti"]


def wait_status(d, cond, what, timeout=5.0):
    deadline = time.time() + timeout
    while True:
        st = status(d)
        if cond(st):
            return st
        if time.time() > deadline:
            raise AssertionError("%s: %s" % (what, json.dumps(st, indent=1)))
        time.sleep(0.05)


def read_capture(d, cid):
    """(strings, records) of a saved capture, from its file
    (docs/capture-format.md)."""
    with open(os.path.join(d.state, "%d.gpc" % cid), "rb") as f:
        buf = f.read()
    eq(buf[:8], b"GPUPROFC", "magic")
    eq(struct.unpack_from("<I", buf, 8)[0], 3, "format version")
    nsec = struct.unpack_from("<I", buf, 12)[0]
    off, strs, recs = 20, [None], []
    for _ in range(nsec):
        stype, _, slen = struct.unpack_from("<IIQ", buf, off)
        p = off + 24
        if stype == 2:
            n = struct.unpack_from("<I", buf, p)[0]
            q = p + 4
            for _ in range(n):
                ln = struct.unpack_from("<I", buf, q)[0]
                strs.append(buf[q + 4:q + 4 + ln].decode())
                q += 4 + ln
        elif stype == 4:
            n = struct.unpack_from("<Q", buf, p)[0]
            for i in range(n):
                v = struct.unpack_from("<QQIIIIIIHHIQQ", buf, p + 8 + 64 * i)
                recs.append(dict(zip(("ts", "dur", "pid", "tid", "uid", "comm", "stack", "name",
                                      "type", "cpu", "aux32", "aux0", "aux1"), v)))
        off = p + slen
    for r in recs:
        r["name_s"] = strs[r["name"]] if r["name"] else None
        r["comm_s"] = strs[r["comm"]] if r["comm"] else None
        det = r["aux1"] >> 32 if r["type"] == REC_MARK or (
            r["type"] == REC_INTERVAL and r["cpu"] >> 8 == ENGINE_CUPTI) else 0
        r["detail_s"] = strs[det] if det else None
    return strs, recs


def capture(d, pids, user=None, last="30s", cid_out=None):
    args = ["capture", "--last", last]
    for pid in pids:
        args += ["--pid", str(pid)]
    cid = ctl_json(d, *args, user=user)["id"]
    if cid_out is not None:
        cid_out.append(cid)
    return read_capture(d, cid)[1]


def cupti_recs(recs):
    return [r for r in recs if r["type"] in (REC_API, REC_MARK)
            or (r["type"] == REC_INTERVAL and r["cpu"] >> 8 == ENGINE_CUPTI)]


@test
def records_attributed_to_the_connecting_process():
    d = daemon()
    try:
        s = W.connect(d.cupti)
        t = W.now()
        s.send(W.msg([W.hello(), W.string(1, "_Z6matmulPfS_"), W.string(2, "cudaLaunchKernel"),
                      W.string(3, "step 1"), W.string(4, "NCCL"), W.string(5, "cupti-conflict")]))
        # the records name other threads (and one claims tid 1): the pid
        # is the socket's
        s.send(W.msg([
            W.kernel(t - 900000, t - 800000, 1, corr=11, device=2, ctx=5, stream=13, grid=(64, 2, 1),
                     block=(128, 1, 1), smem=(48, 1024), regs=40, lmem=16),
            W.memcpy(t - 700000, t - 650000, 1 << 20, copy_kind=1, src=1, dst=3, corr=12),
            W.memcpy(t - 640000, t - 600000, 3 << 31, copy_kind=2, src=3, dst=2, corr=13,
                     flags=1),
            W.memset(t - 590000, t - 580000, 4096, kind=3, value=7, corr=14),
            W.sync(t - 570000, t - 560000, stype=3, corr=15),
            W.sync(t - 555000, t - 550000, stype=1, corr=16, event=9),
            W.graph(t - 540000, t - 500000, 77, corr=17),
            W.api(t - 950000, t - 940000, 2, tid=1, corr=11, cbid=211, domain=2),
            W.marker(t - 990000, t - 100000, 3, tid=424242, domain=4),
            W.stats(state=1),
        ], seq=1))
        st = wait_status(d, lambda st: st["records"]["marker"] >= 1, "records counted")
        cids = []
        recs = cupti_recs(capture(d, [os.getpid()], cid_out=cids))
        eq(len(recs), 9, "store records")
        # the outputs that read every record type take these (their rich
        # GPU timeline is the timeline's; here: nothing breaks)
        out = os.path.join(d.tmp, "trace.json")
        d.ctl("export", str(cids[0]), "--format", "chrome", "--out", out, check=0)
        with open(out) as f:
            ev = json.load(f)["traceEvents"]
        expect(any(e.get("name") == "matmul(float*, float*)" and e.get("pid") == os.getpid()
                   for e in ev), "the kernel in the Chrome export")
        d.ctl("folded", str(cids[0]), check=0)
        d.ctl("folded", str(cids[0]), "--weight", "gpu-time", check=None)
        for a in ("temporal", "kernels"):
            d.ctl("analyze", a, str(cids[0]), check=None)
        expect(d.proc.poll() is None, "daemon alive after the outputs")
        for r in recs:
            eq(r["pid"], os.getpid(), "pid")
            eq(r["uid"], 0, "owner (root)")
            expect(r["comm_s"], "comm from /proc")
        by = {}
        for r in recs:
            by.setdefault((r["type"], r["cpu"]), []).append(r)
        k = by[(REC_INTERVAL, ENGINE_CUPTI << 8 | 0)][0]
        eq(k["name_s"], "matmul(float*, float*)", "kernel name (demangled when the capture is saved)")
        eq(k["detail_s"], "grid [64,2,1] block [128,1,1] smem 48+1024 regs 40 lmem 16", "detail")
        eq(k["aux0"], 2 << 48 | 5 << 32 | 13, "device/context/stream")
        eq(k["aux1"] & 0xffffffff, 11, "correlation")
        eq(k["aux32"], 40, "registers")
        eq((k["ts"], k["dur"], k["tid"]), (t - 900000, 100000, 0), "kernel time")
        m = sorted(by[(REC_INTERVAL, ENGINE_CUPTI << 8 | 1)], key=lambda r: r["ts"])
        eq([r["name_s"] for r in m], ["Memcpy HtoD (Pageable -> Device)",
                                      "Memcpy DtoH (Device -> Pinned)"], "memcpy names")
        eq(m[0]["aux32"], 1 << 20, "bytes")
        eq(m[1]["aux32"], (3 << 31 >> 10) | 1 << 31, "bytes in KiB above 2 GiB")
        eq(m[1]["detail_s"], "bytes 6442450944 async", "memcpy detail")
        ms = by[(REC_INTERVAL, ENGINE_CUPTI << 8 | 2)][0]
        eq((ms["name_s"], ms["detail_s"]), ("Memset (Device)", "bytes 4096 value 7"), "memset")
        sy = sorted(by[(REC_INTERVAL, ENGINE_CUPTI << 8 | 3)], key=lambda r: r["ts"])
        eq([r["name_s"] for r in sy], ["Stream Sync", "Event Sync"], "sync names")
        eq((sy[1]["aux32"], sy[1]["detail_s"]), (9, "event 9"), "event sync")
        g = by[(REC_INTERVAL, ENGINE_CUPTI << 8 | 4)][0]
        eq((g["name_s"], g["detail_s"], g["aux32"]), ("Graph Launch", "graph 77", 77), "graph")
        a = by[(REC_API, 2)][0]
        eq((a["name_s"], a["tid"], a["aux32"], a["aux1"], a["dur"]),
           ("cudaLaunchKernel", 1, 211, 11, 10000), "api")
        mk = by[(REC_MARK, 1)][0]
        eq((mk["name_s"], mk["detail_s"], mk["tid"]), ("step 1", "NCCL", 424242), "marker")

        st = status(d)
        eq((st["peers"], st["peers_ever"], st["states"]["active"]), (1, 1, 1), "peers")
        eq(st["records"]["kernel"], 1, "kernel count")
        eq(st["records"]["memcpy"], 2, "memcpy count")
        eq(st["library_drops"]["cupti_dropped"], 3, "library drops")
        p = st["peer_list"][0]
        eq((p["pid"], p["uid"], p["owner"], p["state"]), (os.getpid(), 0, 0, "active"), "peer")
        eq(p["features"], ["kernel", "memcpy", "memset", "sync", "graph", "api", "nvtx"], "features")
        # flags 0: a library that does not report its subscription
        eq(p["subscribed"], None, "subscription not said")
        expect(0 <= p["hello_delay_ns"] < 5e9, "the same clock: %r", p["hello_delay_ns"])
        human = d.ctl("status", check=0).stdout.decode()
        expect("cupti:      1 connections (1 ever), 0 stepped aside, 9 records\n" in human and
               re.search(r"^\s*%d\s+\S+\s+0\s+active\s+9\b" % os.getpid(), human, re.M),
               "human status: %s" % human)
        # a conflict reported by the library shows in status
        s.send(W.msg([W.stats(state=2, conflict=5, on=0, flags=3)], seq=2))
        st = wait_status(d, lambda st: st["conflicts"] == 1, "conflict")
        eq(st["peer_list"][0]["conflict"], "cupti-conflict", "conflict name")
        eq(st["peer_list"][0]["subscribed"], True, "stepped aside, still subscribed")
        # GPI_SF_SUB_KNOWN without GPI_SF_SUBSCRIBED: the subscription gone
        s.send(W.msg([W.stats(state=2, conflict=5, on=0, flags=1)], seq=3))
        st = wait_status(d, lambda st: st["peer_list"][0]["subscribed"] is False, "released")
        # GPUPROF_CUPTI_IDLE: a library that predates it did what
        # "subscribed" does; a newer one's mode, flags and counts (a
        # shorter record after a longer one reads the counts as 0)
        eq(st["peer_list"][0]["idle"], {"mode": "subscribed", "applies": False,
                                        "unsubscribed_now": False, "unsubscribes": 0,
                                        "resubscribes": 0, "resubscribe_failures": 0}, "idle")
        s.send(W.msg([W.stats(flags=1 | 4 | 8 | 16, idle=(7, 6, 0))], seq=4))
        st = wait_status(d, lambda st: st["peer_list"][0]["idle"]["unsubscribes"] == 7, "idle")
        eq(st["peer_list"][0]["idle"], {"mode": "unsubscribe", "applies": True,
                                        "unsubscribed_now": True, "unsubscribes": 7,
                                        "resubscribes": 6, "resubscribe_failures": 0}, "idle")
        s.send(W.msg([W.stats(flags=1 | 4, idle=(0, 0, 0))], seq=5))
        st = wait_status(d, lambda st: st["peer_list"][0]["idle"]["unsubscribes"] == 0, "kept")
        # asked for, does not apply: the hello asked for no PC sampling,
        # so the library collects all the time
        eq((st["peer_list"][0]["idle"]["applies"], st["peer_list"][0]["idle"].get("kept_for")),
           (False, "no duty cycle"), "asked for, kept")
        s.send(W.msg([W.stats(flags=1 | 4 | 8, idle=(3, 2, 1))], seq=6))
        wait_status(d, lambda st: st["peer_list"][0]["idle"]["resubscribe_failures"] == 1, "fail")
        s.send(W.msg([W.stats(flags=1)], seq=7))
        st = wait_status(d, lambda st: st["peer_list"][0]["idle"]["unsubscribes"] == 0, "older")
        eq(st["peer_list"][0]["idle"]["mode"], "subscribed", "an older record again")
        s.close()
        wait_status(d, lambda st: st["peers"] == 0, "peer gone")
    finally:
        d.cleanup()


@test
def another_users_records_are_its_own():
    d = daemon()
    try:
        open_to_group(d)
        uid, _ = attacker()
        root = W.connect(d.cupti)
        t = W.now()
        root.send(W.msg([W.hello(), W.string(1, "rootkern"), W.kernel(t - 2000, t - 1000, 1)]))
        p = subprocess.Popen(as_attacker([sys.executable, WIRE, d.cupti, "kernels", "userkern", "3",
                                          "30"]), stdout=subprocess.PIPE)
        try:
            expect(p.stdout.readline().strip() == b"sent", "user sender ran")
            st = wait_status(d, lambda st: st["records"]["kernel"] == 4, "records")
            mine = [x for x in st["peer_list"] if x["uid"] == uid]
            eq((len(mine), mine[0]["owner"], mine[0]["pid"]), (1, uid, p.pid), "user peer")
            # the user sees only its own peer in status, and its records
            ust = status(d, user=uid)
            eq([x["pid"] for x in ust["peer_list"]], [p.pid], "user's status")
            names = [r["name_s"] for r in cupti_recs(capture(d, [p.pid], user=uid))]
            eq(names, ["userkern"] * 3, "user's capture")
            # root sees both senders' records, each with its owner
            both = [p.pid, os.getpid()]
            names = sorted(r["name_s"] for r in cupti_recs(capture(d, both)))
            eq(names, ["rootkern"] + ["userkern"] * 3, "root's capture")
            for r in cupti_recs(capture(d, both)):
                eq(r["uid"], uid if r["name_s"] == "userkern" else 0, "owners")
        finally:
            p.kill()
            p.wait()
        root.close()
    finally:
        d.cleanup()


def hostile_cases():
    t = W.now()
    k = W.kernel(t - 2000, t - 1000, 0)
    return {
        "bad magic": W.msg([W.hello()], magic=0x12345678),
        "wire version": W.msg([W.hello()], version=2),
        "library version": W.msg([W.hello(lib_version=9)]),
        "no hello first": W.msg([k]),
        "record past the end": W.msg([W.hello(), W.rec(W.KERNEL, b"\0" * 16, length=200)]),
        "record len 0": W.msg([W.hello(), W.rec(W.KERNEL, b"", length=0)]),
        "len not a multiple of 8": W.msg([W.hello(), W.rec(W.KERNEL, b"\0" * 88, length=95)]),
        "truncated kernel": W.msg([W.hello(), W.rec(W.KERNEL, b"\0" * 40)]),
        "huge nrec": W.msg([W.hello(), k], nrec=65535),
        "trailing garbage": W.msg([W.hello()]) + b"\xde\xad\xbe\xef" * 6,
        "string id 70000": W.msg([W.hello(), W.string(70000, "x")]),
        "string id 0": W.msg([W.hello(), W.string(0, "x")]),
        "string over 4095 bytes": W.msg([W.hello(), W.string(1, "x" * 5000)]),
        "string longer than its record": W.msg([W.hello(), W.string(1, "abc", declared=64)]),
        "name id 70000": W.msg([W.hello(), W.kernel(t - 2000, t - 1000, 70000)]),
        "message over 64 KiB": W.msg([W.hello()] + [k] * 700),
        "garbage": os.urandom(512),
        "short message": b"GPPI",
    }


@test
def hostile_input_closes_only_that_connection():
    d = daemon()
    try:
        good = W.connect(d.cupti)
        good.send(W.msg([W.hello(), W.string(1, "goodkern")]))
        cases = hostile_cases()
        for i, (what, data) in enumerate(cases.items()):
            s = W.connect(d.cupti)
            s.send(data)
            expect(W.closed_by_daemon(s), "%s: connection not closed" % what)
            s.close()
            # the good peer is unaffected, record by record
            t = W.now()
            good.send(W.msg([W.kernel(t - 2000, t - 1000, 1, corr=i + 1)], seq=i + 1))
        st = wait_status(d, lambda st: st["records"]["kernel"] == len(cases), "good records")
        eq(st["closed"]["malformed"], len(cases), "malformed closes")
        eq(st["peers"], 1, "the good peer remains")
        # dropped, not closed: an undefined name, impossible times
        s = W.connect(d.cupti)
        t = W.now()
        s.send(W.msg([W.hello(), W.kernel(t - 2000, t - 1000, 999),
                      W.kernel(0, 0, 0), W.kernel(t - 1000, t - 2000, 0),
                      W.kernel(t + 3600 * 10**9, t + 3601 * 10**9, 0),
                      W.kernel(t - 7200 * 10**9, t - 7199 * 10**9, 0)]))
        st = wait_status(d, lambda st: st["drops"]["time"] == 4, "time drops")
        eq(st["drops"]["undefined"], 1, "undefined name")
        bad = [x for x in st["peer_list"] if x["drops"]["time"]][0]
        expect(bad["last_error"].startswith("record times "), "why: %r", bad["last_error"])
        eq(st["records"]["kernel"], len(cases) + 1, "the unnamed kernel is kept")
        expect(not W.closed_by_daemon(s, 0.3), "closed on droppable records")
        s.close()
        expect(d.proc.poll() is None, "daemon alive")
        # SIGTERM with a peer still connected: a clean exit (no leak under ASan)
        eq(d.stop(), 0, "exit status with a peer connected")
        expect(W.closed_by_daemon(good, 2.0), "the peer's connection closed at exit")
        good.close()
        log = d.read_log()
        expect("cupti: closed pid" in log, "closes are logged")
        expect(log.count("cupti: closed pid") < len(cases), "the log lines are rate-limited")
        expect("LeakSanitizer" not in log and "AddressSanitizer" not in log, "sanitizers quiet")
    finally:
        d.cleanup()


@test
def bounds_rate_strings_peers_hello():
    d = daemon("cupti.peer_rate = 1000\ncupti.peer_strings = 64K\ncupti.max_peers = 4\n"
               "cupti.user_peers = 2\ncupti.hello_timeout = 500ms\n")
    try:
        # rate: 5000 records at once against a 1000/s bucket
        s = W.connect(d.cupti)
        s.send(W.msg([W.hello(), W.string(1, "k")]))
        t = W.now()
        for b in range(10):
            s.send(W.msg([W.kernel(t - 2000 + i, t - 1000 + i, 1) for i in range(500)], seq=b + 1))
        st = wait_status(d, lambda st: st["records"]["kernel"] + st["drops"]["rate"] >= 5000, "rate")
        expect(st["records"]["kernel"] <= 1500, "rate bound: %d kernels", st["records"]["kernel"])
        expect(st["drops"]["rate"] >= 3500, "rate drops: %d", st["drops"]["rate"])
        s.close()
        # strings: 70k ids of 100 bytes against a 64 KiB table (and the
        # rate): the excess is dropped, the connection lives
        time.sleep(1.1)  # a full bucket again
        s = W.connect(d.cupti)
        s.send(W.msg([W.hello()]))
        sid, seq = 1, 1
        while sid < 70000:
            recs = []
            while sid < 70000 and sum(len(r) for r in recs) < 60000:
                recs.append(W.string(sid % 65536 or 1, "s%05d" % sid + "x" * 94))
                sid += 1
            s.send(W.msg(recs, seq=seq))
            seq += 1
        st = wait_status(d, lambda st: st["drops"]["strings"] > 0, "string drops")
        expect(st["peer_list"][0]["string_bytes"] <= 64 * 1024, "string bytes bound")
        expect(not W.closed_by_daemon(s, 0.3), "closed on a full string table")
        s.close()
        wait_status(d, lambda st: st["peers"] == 0 and st["string_bytes"] == 0, "strings freed")
        # peers: 4 at most, 2 per user; root is bound by the total only
        uid, _ = attacker()
        users = [subprocess.Popen(as_attacker([sys.executable, WIRE, d.cupti, "kernels", "u", "1",
                                               "30"]), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                 for _ in range(3)]
        try:
            for p in users:
                p.stdout.readline()
            st = wait_status(d, lambda st: st["closed"]["limit"] >= 1, "user_peers")
            eq(st["peers"], 2, "two of the user's three")
            roots = [W.connect(d.cupti) for _ in range(3)]
            for r in roots:
                try:
                    r.send(W.msg([W.hello()]))
                except BrokenPipeError:  # the refused one, when refused already
                    pass
            st = wait_status(d, lambda st: st["closed"]["limit"] >= 2, "max_peers")
            eq(st["peers"], 4, "max_peers")
            expect(sum(W.closed_by_daemon(r, 0.5) for r in roots) == 1, "one root peer refused")
            for r in roots:
                r.close()
        finally:
            for p in users:
                p.kill()
                p.wait()
        wait_status(d, lambda st: st["peers"] == 0, "peers gone")
        # hello timeout: a silent peer is closed, an idle one is not
        silent = W.connect(d.cupti)
        idle = W.connect(d.cupti)
        idle.send(W.msg([W.hello()]))
        expect(W.closed_by_daemon(silent, 3.0), "silent peer closed")
        expect(not W.closed_by_daemon(idle, 1.5), "idle peer kept")
        eq(status(d)["closed"]["no_hello"], 1, "no_hello count")
        silent.close()
        idle.close()
    finally:
        d.cleanup()


@test
def pid_reuse_guard():
    d = daemon()
    try:
        out = os.path.join(d.tmp, "child.txt")
        p = subprocess.Popen([sys.executable, WIRE, d.cupti, "forkexit", "afterexit", out])
        eq(p.wait(timeout=30), 0, "sender")
        deadline = time.time() + 10
        while not os.path.exists(out) and time.time() < deadline:
            time.sleep(0.05)
        with open(out) as f:
            res = f.read()
        st = wait_status(d, lambda st: st["closed"]["exited"] == 1, "closed at exit")
        eq(st["records"]["kernel"], 1, "only the kernel sent before the exit")
        expect(res.startswith("refused"), "the child could still send: %s" % res)
        names = [r["name_s"] for r in cupti_recs(capture(d, [p.pid]))]
        eq(names, ["before-exit"], "only the kernel sent before the exit")
    finally:
        d.cleanup()


@test
def socket_taken_only_when_stale():
    d = daemon()
    d2 = d3 = None
    try:
        # another daemon does not take over a live socket
        d2 = Daemon()
        with open(d2.conf, "w") as f:
            f.write("sampling.cpu = false\ncupti.socket = %s\n" % d.cupti)
        d2.start()
        st = status(d2)
        eq(st["state"], "unavailable", "second daemon")
        cols = {c["name"]: c for c in d2.ctl_json("status")["collectors"]}
        expect("in use" in cols["cupti"]["reason"], "reason: %s" % cols["cupti"]["reason"])
        d2.stop()
        s = W.connect(d.cupti)  # still the first daemon's
        s.send(W.msg([W.hello()]))
        wait_status(d, lambda st: st["peers"] == 1, "first daemon keeps its socket")
        s.close()
        # a crashed daemon's socket is stale: the next one replaces it
        d.kill9()
        expect(os.path.exists(d.cupti), "stale socket left")
        d3 = Daemon()
        with open(d3.conf, "w") as f:
            f.write("sampling.cpu = false\ncupti.socket = %s\n" % d.cupti)
        d3.start()
        eq(status(d3)["state"], "attached", "stale socket replaced")
        eq(os.stat(d.cupti).st_mode & 0o777, 0o666, "socket mode")
        # any other file there is left alone
        d3.stop()
        with open(d.cupti, "w") as f:
            f.write("not a socket")
        d3.start()
        eq(status(d3)["state"], "unavailable", "a regular file is not replaced")
        with open(d.cupti) as f:
            eq(f.read(), "not a socket", "file kept")
    finally:
        for x in (d3, d2, d):
            if x:
                x.cleanup()


if __name__ == "__main__":
    main()
