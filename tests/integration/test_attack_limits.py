#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks on the daemon's shared resources by an unprivileged member of
group gpuprof (docs/security.md), against a real gpuprofd:

- a capture whose window closes while every job slot is busy must never
  vanish: it waits for a slot and ends ready, or stays listed as failed
  with the reason;
- one uid holding connections, captures or job slots must not lock root
  (or, within the per-uid caps, the other users) out, and every refusal
  names the limit it hit.

Job slots are held the way an attacker holds them: imports of pipes the
client keeps open and silent (each blocks a worker until
limits.io_timeout)."""

import json
import os
import select
import socket
import subprocess
import sys
import time

import gpd
from gpd import Conn, Daemon, eq, error_code, expect, main, test

NOBODY = 65534
SMALL_TRACE = (b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,'
               b'"ts":1000,"dur":6,"args":{"stream":7,"device":0}}]}')

# Runs as another uid: takes commands as JSON lines on stdin, answers each
# with one JSON line. Self-contained (the attacker cannot read pyenv's gpd).
PEER = r"""
import json, os, select, socket, sys

sock = sys.argv[1]
held = []   # connections kept open
pipes = []  # write ends of pipes passed to imports, kept open and silent

def connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    s.connect(sock)
    return s

def send(s, method, params, fds=None):
    msg = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": params}) + "\n").encode()
    if fds:
        import array
        s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(array.array("i", fds)))])
    else:
        s.sendall(msg)

def reply(s, timeout=20):
    buf = b""
    s.settimeout(timeout)
    while b"\n" not in buf:
        d = s.recv(65536)
        if not d:
            return {"closed": True}
        buf += d
    return json.loads(buf.split(b"\n", 1)[0])

def answered_within(s, secs):
    return bool(select.select([s], [], [], secs)[0])

for line in sys.stdin:
    cmd = json.loads(line)
    op = cmd["op"]
    out = {}
    if op == "hold":  # connections, each checked with a call
        out = {"held": 0, "refused": None}
        for _ in range(cmd["n"]):
            s = connect()
            send(s, "version", {})
            r = reply(s)
            if "error" in r:
                out["refused"] = r
                s.close()
                break
            held.append(s)
            out["held"] += 1
    elif op == "import_silent":  # job slots, each an import of a silent pipe
        out = {"held": 0, "refused": None}
        for _ in range(cmd["n"]):
            s = connect()
            r, w = os.pipe()
            send(s, "capture.import", {"fd": 0}, [r])
            os.close(r)
            if answered_within(s, 1.0):  # a held job answers only at its end
                out["refused"] = reply(s)
                os.close(w)
                s.close()
                break
            held.append(s)
            pipes.append(w)
            out["held"] += 1
    elif op == "captures":  # captures until refused
        out = {"made": 0, "refused": None}
        s = connect()
        for _ in range(cmd["n"]):
            send(s, "capture.start", cmd["params"])
            r = reply(s)
            if "error" in r:
                out["refused"] = r
                break
            out["made"] += 1
        s.close()
    elif op == "call":
        s = connect()
        send(s, cmd["method"], cmd.get("params", {}))
        out = reply(s)
        s.close()
    elif op == "import":  # a small trace from a pipe
        s = connect()
        r, w = os.pipe()
        send(s, "capture.import", {"fd": 0}, [r])
        os.close(r)
        try:
            os.write(w, cmd["data"].encode())
        except BrokenPipeError:  # refused before reading
            pass
        os.close(w)
        out = reply(s)
        s.close()
    elif op == "release":
        for w in pipes:
            os.close(w)
        for s in held:
            s.close()
        pipes.clear()
        held.clear()
    print(json.dumps(out), flush=True)
"""


class Peer:
    """A process of another uid driving the daemon on command."""

    def __init__(self, d, uid=None):
        argv = [gpd.ATTACKER_PY, "-c", PEER, d.sock]
        if uid is None:
            argv = gpd.as_attacker(argv)
        else:
            argv = ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"] + argv
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)

    def do(self, op, timeout=120, **kw):
        kw["op"] = op
        self.p.stdin.write((json.dumps(kw) + "\n").encode())
        self.p.stdin.flush()
        if not select.select([self.p.stdout], [], [], timeout)[0]:
            raise AssertionError("peer did not answer %s in %ds" % (op, timeout))
        line = self.p.stdout.readline()
        if not line:
            raise AssertionError("peer died: %s" % self.p.stderr.read().decode(errors="replace"))
        return json.loads(line)

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(10)
        except Exception:
            self.p.kill()
            self.p.wait()


def message(rep):
    return (rep or {}).get("error", {}).get("message", "")


class SilentImports:
    """Root's own imports of silent pipes: job slots held until release()."""

    def __init__(self, d, n):
        self.conns, self.pipes = [], []
        for _ in range(n):
            c = Conn(d.sock)
            r, w = os.pipe()
            c.request("capture.import", {"fd": 0}, fds=[r])
            os.close(r)
            self.conns.append(c)
            self.pipes.append(w)
        time.sleep(0.5)
        for c in self.conns:  # a held job answers only at its end
            expect(not select.select([c.s], [], [], 0)[0], "root's import holds a job slot")

    def release(self):
        for w in self.pipes:
            os.close(w)
        for c in self.conns:
            c.close()
        self.pipes, self.conns = [], []


def listed(d):
    return {c["id"]: c for c in d.call("capture.list")["result"]["captures"]}


def wait_states(d, ids, timeout=20):
    """Poll until no capture in ids is recording; each must stay listed."""
    deadline = time.time() + timeout
    while True:
        caps = listed(d)
        for i in ids:
            expect(i in caps, "capture %d vanished; listed: %r" % (i, sorted(caps)))
        if all(caps[i]["state"] != "recording" for i in ids) or time.time() > deadline:
            return caps
        time.sleep(0.1)


@test
def a_closing_window_waits_for_a_busy_slot():
    """Every job slot busy (root's own imports of silent pipes) when the
    windows of root's and the attacker's --duration captures close: both
    stay listed, waiting, and end ready once the slots free. A --last
    capture in the same state is accepted too (it was refused as "too many
    captures (limits.captures)" with 3 of 256 in use), and a refused
    analysis names limits.max_jobs."""
    d = Daemon("limits.max_jobs = 2\nlimits.io_timeout = 60s\n").start()
    gpd.open_to_group(d)
    att = Peer(d)
    slots = None
    try:
        slots = SilentImports(d, 2)
        with Conn(d.sock) as c:
            a = c.call("capture.start", {"duration_ms": 800, "name": "root-forward"})
        expect("result" in a, "root's forward capture starts: %r" % a)
        b = att.do("call", method="capture.start", params={"duration_ms": 800})
        expect("result" in b, "the attacker's forward capture starts: %r" % b)
        with Conn(d.sock) as c:
            last = c.call("capture.start", {"last_ms": 100})
        expect("result" in last, "a --last capture while every slot is busy: %r" % last)
        ids = [a["result"]["id"], b["result"]["id"], last["result"]["id"]]
        # the windows close while the slots stay busy: listed all along
        t_end = time.time() + 2.0
        while time.time() < t_end:
            caps = listed(d)
            for i in ids:
                expect(i in caps, "capture %d vanished while the slots were busy" % i)
                eq(caps[i]["state"], "recording", "capture %d before a slot frees" % i)
            time.sleep(0.1)
        expect(all(caps[i].get("waiting_for_job") for i in ids), "waiting: %r" % caps)
        slots.release()
        caps = wait_states(d, ids)
        for i in ids:
            eq(caps[i]["state"], "ready", "capture %d once a slot freed: %r" % (i, caps[i]))
        mine = att.do("call", method="capture.info", params={"id": ids[1]})
        eq(mine.get("result", {}).get("state"), "ready", "the attacker's own capture")
        expect("waits to be saved" in d.read_log() or "waiting to be saved" in d.read_log(),
               "the wait is logged")
        # every slot busy again: a refused job names limits.max_jobs
        slots = SilentImports(d, 2)
        null = os.open("/dev/null", os.O_RDONLY)
        with Conn(d.sock) as c:
            r = c.call("capture.import", {"fd": 0}, fds=[null])
        os.close(null)
        eq(error_code(r), -32004, "third job while two run: %r" % r)
        expect("limits.max_jobs" in message(r), "names limits.max_jobs: %r" % r)
        slots.release()
        eq(d.stop(), 0, "clean stop")
    finally:
        if slots:
            slots.release()
        att.close()
        d.cleanup()


@test
def a_full_persist_queue_keeps_failed_captures_listed():
    """More windows close than the persist queue holds while every slot is
    busy: the attacker fills its quarter of the queue (4 of 16), root the
    rest; the captures beyond stay listed as failed with the reason (naming
    limits.persist_queue), the queued ones end ready."""
    d = Daemon("limits.max_jobs = 2\nlimits.io_timeout = 60s\n").start()
    gpd.open_to_group(d)
    att = Peer(d)
    slots = None
    try:
        slots = SilentImports(d, 2)
        att_ids = []
        for _ in range(5):
            r = att.do("call", method="capture.start", params={"duration_ms": 600})
            expect("result" in r, "attacker's capture starts: %r" % r)
            att_ids.append(r["result"]["id"])
        root_ids = []
        with Conn(d.sock) as c:
            for _ in range(13):
                r = c.call("capture.start", {"duration_ms": 1200})
                expect("result" in r, "root's capture starts: %r" % r)
                root_ids.append(r["result"]["id"])
        time.sleep(2.0)
        caps = listed(d)
        for i in att_ids + root_ids:
            expect(i in caps, "capture %d vanished" % i)
        failed = [i for i in att_ids + root_ids if caps[i]["state"] == "failed"]
        eq(failed, [att_ids[4], root_ids[12]], "the captures beyond the queue")
        expect("this user's 4 places" in caps[att_ids[4]]["error"] and
               "limits.persist_queue" in caps[att_ids[4]]["error"],
               "the attacker's quarter: %r" % caps[att_ids[4]])
        expect("16 of 16 places" in caps[root_ids[12]]["error"] and
               "limits.persist_queue" in caps[root_ids[12]]["error"],
               "root's: %r" % caps[root_ids[12]])
        expect("not saved" in d.read_log(), "the failure is logged")
        slots.release()
        caps = wait_states(d, att_ids + root_ids)
        for i in att_ids[:4] + root_ids[:12]:
            eq(caps[i]["state"], "ready", "queued capture %d" % i)
        for i in failed:
            eq(caps[i]["state"], "failed", "capture %d stays failed" % i)
        p = d.ctl("info", str(root_ids[12]), check=0)
        expect(b"error:" in p.stdout and b"limits.persist_queue" in p.stdout,
               "gpuprofctl info shows why: %r" % p.stdout)
        with Conn(d.sock) as c:
            r = c.call("capture.folded", {"id": root_ids[12], "fd": 0}, fds=[1])
            eq(error_code(r), -32010, "no data in a failed capture: %r" % r)
            r = c.call("capture.delete", {"id": root_ids[12]})
            expect("result" in r, "a failed capture can be deleted: %r" % r)
        eq(d.stop(), 0, "clean stop")
    finally:
        if slots:
            slots.release()
        att.close()
        d.cleanup()


@test
def a_capture_that_cannot_be_written_stays_failed():
    """The state directory's filesystem is full when a forward window
    closes: the capture whose id was given out stays listed as failed with
    the cause, and is logged; it can be deleted."""
    import tempfile
    mnt = tempfile.mkdtemp(prefix="gpd-full-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs",
                       mnt]).returncode:
        os.rmdir(mnt)
        raise gpd.Skip("cannot mount a tmpfs here")
    d = Daemon(state_dir=os.path.join(mnt, "state"))
    try:
        d.start()
        with open(os.path.join(mnt, "filler"), "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        r = d.call("capture.start", {"duration_ms": 300, "pids": [os.getpid()]})
        expect("result" in r, "forward capture starts: %r" % r)
        cid = r["result"]["id"]
        caps = wait_states(d, [cid])
        eq(caps[cid]["state"], "failed", "the capture once its window closed")
        expect("No space left" in caps[cid].get("error", ""), "names the cause: %r" % caps[cid])
        expect("not saved" in d.read_log(), "logged")
        eq(d.call("capture.delete", {"id": cid}).get("result", {}).get("deleted"), True,
           "deleted")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()
        subprocess.run(["umount", mnt])
        os.rmdir(mnt)


@test
def one_uid_holding_connections_leaves_root_in():
    """The attacker opens connections until refused: it gets
    limits.user_clients (16) of the 64, its next is refused naming that
    limit, and root's gpuprofctl status answers at once."""
    d = Daemon().start()
    gpd.open_to_group(d)
    att = Peer(d)
    try:
        r = att.do("hold", n=80)
        eq(r["held"], 16, "connections the attacker holds")
        eq(error_code(r["refused"]), -32004, "its next connection: %r" % r["refused"])
        expect("limits.user_clients" in message(r["refused"]), "names the limit: %r" % r)
        t0 = time.time()
        p = d.ctl("status", timeout=30)
        eq(p.returncode, 0, "root's status: %s" % p.stderr.decode(errors="replace"))
        expect(time.time() - t0 < 5, "root's status answered in %.1fs" % (time.time() - t0))
        att.do("release")
        eq(d.stop(), 0, "clean stop")
    finally:
        att.close()
        d.cleanup()


@test
def one_uid_creating_captures_leaves_root_room():
    """The attacker creates captures until refused by its per-uid limit
    (limits.user_captures = 32, named in the error), a second unprivileged
    uid until the privileged reserve (limits.reserved_captures); root still
    captures and imports."""
    d = Daemon("limits.captures = 64\nsocket_mode = 0666\n").start()
    att = Peer(d)
    other = Peer(d, NOBODY)
    try:
        params = {"last_ms": 10, "wait": True}
        r = att.do("captures", n=100, params=params)
        eq(r["made"], 32, "captures the attacker made")
        eq(error_code(r["refused"]), -32004, "refused: %r" % r)
        expect("limits.user_captures" in message(r["refused"]), "names the limit: %r" % r)
        # an import by the attacker is refused before it reads, naming the limit
        r = att.do("import", data=SMALL_TRACE.decode())
        expect("limits.user_captures" in message(r), "attacker's import: %r" % r)
        r = other.do("captures", n=100, params=params)
        eq(r["made"], 16, "a second uid stops at the reserve")
        expect("limits.reserved_captures" in message(r["refused"]), "names it: %r" % r)
        root = d.ctl_json("capture", "--last", "100ms", "--pid", str(os.getpid()))
        eq(root["state"], "ready", "root's capture")
        path = os.path.join(d.tmp, "t.json")
        with open(path, "wb") as f:
            f.write(SMALL_TRACE)
        eq(d.ctl_json("import", path)["state"], "ready", "root's import")
        eq(d.stop(), 0, "clean stop")
    finally:
        att.close()
        other.close()
        d.cleanup()


@test
def one_uid_holding_job_slots_leaves_root_a_slot():
    """The attacker imports silent pipes until refused: it holds
    limits.user_jobs (2) of the 4 slots, the refusal names that limit; a
    second unprivileged uid gets one more and is then refused naming
    limits.reserved_jobs; root's import and capture still run. Saving the
    attacker's own capture counts as its job too: it waits (listed) for
    the attacker's slots rather than taking root's, and ends ready."""
    d = Daemon("limits.io_timeout = 60s\nsocket_mode = 0666\n").start()
    att = Peer(d)
    other = Peer(d, NOBODY)
    try:
        r = att.do("import_silent", n=6)
        eq(r["held"], 2, "job slots the attacker holds")
        eq(error_code(r["refused"]), -32004, "refused: %r" % r)
        expect("limits.user_jobs" in message(r["refused"]), "names the limit: %r" % r)
        r = other.do("import_silent", n=3)
        eq(r["held"], 1, "a second uid gets the last unreserved slot")
        expect("limits.reserved_jobs" in message(r["refused"]), "names it: %r" % r)
        r = att.do("call", method="capture.start", params={"duration_ms": 200})
        expect("result" in r, "the attacker's forward capture starts: %r" % r)
        att_cap = r["result"]["id"]
        time.sleep(1.0)
        info = att.do("call", method="capture.info", params={"id": att_cap})["result"]
        expect(info["state"] == "recording" and info.get("waiting_for_job"),
               "saving it waits for the attacker's own slots: %r" % info)
        path = os.path.join(d.tmp, "t.json")
        with open(path, "wb") as f:
            f.write(SMALL_TRACE)
        t0 = time.time()
        eq(d.ctl_json("import", path, timeout=30)["state"], "ready", "root's import")
        root = d.ctl_json("capture", "--last", "100ms", "--pid", str(os.getpid()), timeout=30)
        eq(root["state"], "ready", "root's capture")
        expect(time.time() - t0 < 10, "root served at once (%.1fs)" % (time.time() - t0))
        att.do("release")
        other.do("release")
        eq(wait_states(d, [att_cap])[att_cap]["state"], "ready", "the attacker's capture")
        eq(d.stop(), 0, "clean stop")
    finally:
        att.close()
        other.close()
        d.cleanup()


@test
def per_uid_limits_are_configurable():
    """limits.user_disk refuses the attacker's next capture naming it;
    limits.user_clients above the unprivileged share is held to
    limits.max_clients less limits.reserved_clients, which the refusal
    names."""
    d = Daemon("limits.user_disk = 2K\nlimits.user_clients = 100\n"
               "limits.reserved_clients = 8\n").start()
    gpd.open_to_group(d)
    att = Peer(d)
    try:
        made = 0
        for _ in range(20):
            r = att.do("import", data=SMALL_TRACE.decode())
            if "error" in r:
                break
            made += 1
        expect(0 < made < 20, "imports before the disk quota: %d" % made)
        eq(error_code(r), -32004, "refused: %r" % r)
        expect("limits.user_disk" in message(r), "names the limit: %r" % r)
        root = d.ctl_json("capture", "--last", "100ms", "--pid", str(os.getpid()))
        eq(root["state"], "ready", "root's capture")
        time.sleep(0.5)  # the daemon sees the attacker's earlier connections close
        r = att.do("hold", n=80)
        eq(r["held"], 56, "connections: 64 less the 8 reserved")
        expect("limits.reserved_clients" in message(r["refused"]), "names it: %r" % r)
        eq(d.ctl("status").returncode, 0, "root still gets in")
        att.do("release")
        eq(d.stop(), 0, "clean stop")
    finally:
        att.close()
        d.cleanup()


if __name__ == "__main__":
    main()
