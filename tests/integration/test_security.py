#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Security checks against a real gpuprofd, extending
test_daemon.py's unprivileged_peer and state_dir_modes_and_symlinks:
another uid over the raw protocol (stop, folded output, import, analyses),
no method takes a path, owners and modes, planted symlinks (a symlinked
"<id>.gpc.tmp", a symlinked state directory), fds of the wrong mode."""

import json
import os
import socket
import subprocess
import sys
import tempfile

from gpd import Conn, Daemon, eq, error_code, expect, main, test

NOBODY = 65534
HERE = os.path.dirname(os.path.abspath(__file__))

# Runs as another uid: raw JSON-RPC requests, replies printed as JSON lines.
PEER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from gpd import Conn
reqs = json.loads(sys.argv[3])
out = []
with Conn(sys.argv[2]) as c:
    for method, params, fdmode in reqs:
        fds = None
        if fdmode:
            r, w = os.pipe()
            fds = [w if fdmode == "w" else r]
        rep = c.call(method, params, fds=fds)
        if fds:
            os.close(r); os.close(w)
        out.append(rep)
print(json.dumps(out))
"""


def as_user(d, uid, reqs):
    p = subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups",
                        sys.executable, "-c", PEER, HERE, d.sock, json.dumps(reqs)],
                       capture_output=True, timeout=60)
    expect(p.returncode == 0, "peer script failed: %s", p.stderr.decode(errors="replace"))
    return json.loads(p.stdout)


def has_method(d, name):
    return error_code(d.call(name, {})) != -32601


def root_capture(d):
    return d.ctl_json("capture", "--last", "1s", "--pid", str(os.getpid()))["id"]


@test
def another_uid_over_raw_protocol():
    d = Daemon("socket_mode = 0666\n").start()
    try:
        cid = root_capture(d)
        reqs = [
            ["capture.info", {"id": cid}, None],
            ["capture.stop", {"id": cid}, None],
            ["capture.folded", {"id": cid, "fd": 0}, "w"],
            ["capture.delete", {"id": cid}, None],
            ["capture.start", {"last_ms": 1000, "pids": [1]}, None],
            ["capture.start", {"duration_ms": 100, "pids": [os.getpid()]}, None],
        ]
        analyses = has_method(d, "analyze.list")
        if analyses:
            reqs.append(["analyze.temporal", {"id": cid}, None])
        got = as_user(d, NOBODY, reqs)
        for (method, params, _), rep in zip(reqs, got):
            code = error_code(rep)
            if method == "capture.start":
                eq(code, -32002, "%s %r by another uid" % (method, params))
            else:
                # not found, not permission: ids of others do not leak
                eq(code, -32003, "%s on root's capture by another uid" % method)
        info = d.call("capture.info", {"id": cid})["result"]
        eq(info["state"], "ready", "root's capture untouched")
        expect(os.path.exists(os.path.join(d.state, "%d.gpc" % cid)), "file still there")
        # a capture of all processes by an unprivileged peer is limited to its uid
        got = as_user(d, NOBODY, [["capture.start", {"last_ms": 2000, "wait": True}, None]])
        mine = got[0]["result"]
        eq(mine["owner_uid"], NOBODY, "owned by the peer")
        # and root sees it (privileged), the peer sees only its own
        lst = as_user(d, NOBODY, [["capture.list", {}, None]])[0]["result"]["captures"]
        eq([c["id"] for c in lst], [mine["id"]], "peer lists only its own")
        # its own folded output works through a passed fd
        rep = as_user(d, NOBODY, [["capture.folded", {"id": mine["id"], "fd": 0}, "w"]])[0]
        expect("result" in rep, "own folded output: %r", rep)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def no_method_takes_a_path():
    d = Daemon().start()
    try:
        secret = os.path.join(d.tmp, "must-not-be-created")
        cid = root_capture(d)
        with d.connect() as c:
            for method, params in [
                    ("capture.folded", {"id": cid, "fd": secret}),
                    ("capture.folded", {"id": cid, "path": secret}),
                    ("capture.folded", {"id": cid, "out": secret}),
                    ("capture.start", {"last_ms": 100, "path": secret}),
                    ("capture.start", {"last_ms": 100, "file": secret}),
                    ("capture.info", {"id": secret}),
                    ("capture.import", {"path": secret}),
                    ("capture.import", {"fd": "/etc/passwd"}),
                    ("status", {"state_dir": secret})]:
                r = c.call(method, params)
                expect(error_code(r) in (-32602, -32601), "%s %r rejected: %r", method, params, r)
            # a path as a label is only a label
            r = c.call("capture.start", {"last_ms": 100, "name": secret, "wait": True})
            eq(r["result"]["name"], secret, "name kept verbatim")
        expect(not os.path.exists(secret), "the daemon never created the named path")
        eq(sorted(os.listdir(d.state)),
           sorted(["next-id"] + ["%d.gpc" % i for i in (cid, cid + 1)]),
           "state dir holds only captures and next-id")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def owners_and_modes():
    d = Daemon().start()
    try:
        cid = root_capture(d)
        for path, mode in [(d.state, 0o750), (d.sock, 0o660),
                           (os.path.join(d.state, "%d.gpc" % cid), 0o640),
                           (os.path.join(d.state, "next-id"), 0o640)]:
            st = os.lstat(path)
            eq(st.st_uid, 0, "%s owned by root" % path)
            eq(oct(st.st_mode & 0o7777), oct(mode), "%s mode" % path)
        eq(d.stop(), 0, "clean stop")
        # socket_mode from the config is what the socket gets
        d2 = Daemon("socket_mode = 0600\n").start()
        try:
            eq(oct(os.stat(d2.sock).st_mode & 0o777), oct(0o600), "configured socket mode")
        finally:
            d2.cleanup()
    finally:
        d.cleanup()


@test
def symlinked_tmp_file_is_not_followed():
    d = Daemon().start()
    try:
        first = root_capture(d)
        target = os.path.join(d.tmp, "victim")
        with open(target, "w") as f:
            f.write("precious\n")
        # plant "<id>.gpc.tmp" links for the next ids the daemon will use
        planted = [os.path.join(d.state, "%d.gpc.tmp" % i) for i in range(first + 1, first + 4)]
        for p in planted:
            os.symlink(target, p)
        r = d.call("capture.start", {"last_ms": 500, "pids": [os.getpid()], "wait": True})
        # decided behaviour: the write fails (O_NOFOLLOW), the client gets an
        # I/O error naming the cause, the target is untouched
        eq(error_code(r), -32005, "capture over a planted link fails: %r" % r)
        expect("symbolic links" in r["error"]["message"], "says why: %r" % r)
        eq(open(target).read(), "precious\n", "symlink target untouched")
        expect(os.path.islink(planted[0]), "the link itself left for the restart to remove")
        still = d.call("status")
        expect("result" in still, "daemon still serving")
        eq(d.stop(), 0, "clean stop")
        d.start()
        for p in planted:
            expect(not os.path.lexists(p), "planted %s removed at start" % p)
        eq(open(target).read(), "precious\n", "target still untouched after cleanup")
        new = root_capture(d)
        expect(new > first, "captures work again")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def symlinked_state_dir():
    tmp = tempfile.mkdtemp(prefix="gpd-sec-")
    try:
        real = os.path.join(tmp, "real")
        os.mkdir(real, 0o750)
        link = os.path.join(tmp, "state-link")
        os.symlink(real, link)
        # the state dir itself a symlink: refused, the daemon does not start
        d = Daemon(state_dir=link).start(wait=False)
        try:
            rc = d.proc.wait(15)
            expect(rc != 0, "daemon refuses a symlinked state dir")
            expect("state directory" in d.read_log(), "log names it: %s" % d.read_log())
        finally:
            d.cleanup()
        # a symlink in a parent component is the administrator's choice: followed
        parent = os.path.join(tmp, "parent-link")
        os.symlink(real, parent)
        d = Daemon(state_dir=os.path.join(parent, "captures")).start()
        try:
            cid = root_capture(d)
            expect(os.path.exists(os.path.join(real, "captures", "%d.gpc" % cid)),
                   "written through the parent link")
            eq(d.stop(), 0, "clean stop")
        finally:
            d.cleanup()
    finally:
        subprocess.run(["rm", "-rf", tmp])


@test
def fd_of_the_wrong_mode():
    d = Daemon().start()
    try:
        cid = root_capture(d)
        with d.connect() as c:
            ro = os.open("/dev/null", os.O_RDONLY)
            r = c.call("capture.folded", {"id": cid, "fd": 0}, fds=[ro])
            eq(error_code(r), -32006, "read-only fd for output")
            os.close(ro)
            rd, wr = os.pipe()
            r = c.call("capture.folded", {"id": cid, "fd": 0}, fds=[rd])
            eq(error_code(r), -32006, "read end of a pipe for output")
            # a directory fd is not an output either
            dfd = os.open(d.tmp, os.O_RDONLY | os.O_DIRECTORY)
            r = c.call("capture.folded", {"id": cid, "fd": 0}, fds=[dfd])
            eq(error_code(r), -32006, "directory fd for output")
            os.close(dfd)
            if error_code(c.call("capture.import", {})) != -32601:
                r = c.call("capture.import", {"fd": 0}, fds=[wr])
                eq(error_code(r), -32006, "write-only fd for import input")
            os.close(rd)
            os.close(wr)
            # an fd index naming a descriptor that was not sent
            r = c.call("capture.folded", {"id": cid, "fd": 2}, fds=None)
            eq(error_code(r), -32006, "fd index without a descriptor")
            eq(c.call("version")["result"]["protocol"], 1, "connection still usable")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
