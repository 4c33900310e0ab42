#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real gpuprofd on a private socket, driven by the real gpuprofctl and by
raw JSON-RPC: the foundation's protocol, limits, captures, persistence,
authorization and shutdown."""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

from gpd import (GPUPROFCTL, Conn, Daemon, Skip, eq, error_code, expect, main, test)

FAST = "limits.idle_timeout = 2s\nlimits.request_timeout = 1s\nlimits.io_timeout = 2s\n"


def with_daemon(config="", **kw):
    def deco(fn):
        def run():
            d = Daemon(config=config, **kw).start()
            try:
                fn(d)
                rc = d.stop()
                eq(rc, 0, "clean exit status (uv_loop_close succeeded, no leaks)")
            finally:
                d.cleanup()
        run.__name__ = fn.__name__
        return run
    return deco


def still_serving(d):
    r = d.call("status")
    expect("result" in r, "daemon still serves status: %r", r)


@test
@with_daemon()
def cli_version_status(d):
    v = d.ctl_json("version")
    eq(v["protocol"], 1, "protocol")
    st = d.ctl_json("status")
    for k in ("store", "collectors", "clients", "captures", "jobs", "uptime_s"):
        expect(k in st, "status has %s", k)
    expect(st["store"]["budget_bytes"] > 0, "store budget reported")
    names = [c["name"] for c in st["collectors"]]
    for c in st["collectors"]:
        expect(c["state"] in ("attached", "unavailable", "off", "failed", "busy", "paused"),
               "collector state %r", c["state"])
        if c["state"] != "attached":
            expect(c["reason"], "a collector that is not attached says why: %r", c)
    expect("cpu" in names, "cpu collector listed: %r", names)
    human = d.ctl("status", check=0).stdout.decode()
    expect("cpu" in human, "human status names the collector")
    # global options after the command, and the environment default
    env = dict(os.environ, GPUPROF_SOCKET=d.sock)
    p = subprocess.run([GPUPROFCTL, "version", "--json"], env=env, capture_output=True)
    eq(p.returncode, 0, "GPUPROF_SOCKET + trailing --json")
    eq(json.loads(p.stdout)["protocol"], 1, "version via env socket")


@test
@with_daemon()
def capture_last_and_forward(d):
    me = os.getpid()
    info = d.ctl_json("capture", "--pid", str(me), "--last", "2s")
    eq(info["state"], "ready", "past capture is ready when the command returns")
    eq(info["pids"], [me], "pid filter recorded")
    eq(info["window"]["duration_ns"], 2_000_000_000, "window length")
    t0 = time.time()
    fwd = d.ctl_json("capture", "--pid", str(me), "--duration", "700ms", "--name", "fwd")
    expect(time.time() - t0 >= 0.65, "forward capture waited for its window")
    eq(fwd["state"], "ready", "forward capture state")
    eq(fwd["name"], "fwd", "name")
    expect(fwd["id"] > info["id"], "ids increase")
    lst = d.ctl_json("list")["captures"]
    eq([c["id"] for c in lst], [info["id"], fwd["id"]], "list order")
    got = d.ctl_json("info", str(fwd["id"]))
    eq(got["id"], fwd["id"], "info id")
    d.ctl("delete", str(info["id"]), check=0)
    eq([c["id"] for c in d.ctl_json("list")["captures"]], [fwd["id"]], "deleted")
    eq(d.ctl("info", str(info["id"])).returncode, 1, "info of a deleted capture fails")
    expect(not os.path.exists(os.path.join(d.state, "%d.gpc" % info["id"])), "file removed")
    # no-wait forward capture, then stop it early
    nw = d.ctl_json("capture", "--pid", str(me), "--duration", "60s", "--no-wait")
    eq(nw["state"], "recording", "no-wait returns while recording")
    with d.connect() as c:
        r = c.call("capture.stop", {"id": nw["id"], "wait": True})
    eq(r["result"]["state"], "ready", "stopped early and persisted")
    expect(r["result"]["window"]["duration_ns"] < 10_000_000_000, "window cut at stop")


@test
@with_daemon()
def durations_and_usage_errors(d):
    eq(d.ctl("capture", "--pid", "1").returncode, 2, "capture without a window is a usage error")
    eq(d.ctl("capture", "--pid", "1", "--last", "5parsecs").returncode, 2, "bad duration")
    eq(d.ctl("frobnicate").returncode, 2, "unknown command")
    p = d.ctl("capture", "--pid", "999999999", "--last", "1s")
    eq(p.returncode, 2 if b"pid" in p.stderr and p.returncode == 2 else 1, "bogus pid rejected")
    p = d.ctl("capture", "--pid", "4000000", "--duration", "1s")
    eq(p.returncode, 1, "nonexistent pid is a daemon error")
    expect(b"no process" in p.stderr, "message names the problem: %r" % p.stderr)
    p = subprocess.run([GPUPROFCTL, "--socket", d.sock + ".nope", "status"], capture_output=True)
    eq(p.returncode, 3, "cannot connect")
    expect((d.sock + ".nope").encode() in p.stderr, "names the socket")
    still_serving(d)


BAD_REQUESTS = [
    (b"{not json\n", -32700, True),
    (b"[]\n", -32600, True),
    (b'[{"jsonrpc":"2.0","id":1,"method":"status"}]\n', -32600, True),
    (b'"a string"\n', -32600, True),
    (b'{"id":1,"method":"status"}\n', -32600, True),
    (b'{"jsonrpc":"1.0","id":1,"method":"status"}\n', -32600, True),
    (b'{"jsonrpc":"2.0","id":1}\n', -32600, True),
    (b'{"jsonrpc":"2.0","id":1,"method":42}\n', -32600, True),
    (b'{"jsonrpc":"2.0","id":{"x":1},"method":"status"}\n', -32600, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"status","params":5}\n', -32600, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"no.such"}\n', -32601, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":1}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":{}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":{"last_ms":-5}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":{"last_ms":1,"duration_ms":1}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":{"last_ms":1e300}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":{"last_ms":100,"pids":["x"]}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":{"last_ms":100,"pids":[0]}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":{"duration_ms":100,"pids":[4000000]}}\n', -32003, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.info","params":{"id":"1"}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.info","params":{"id":424242}}\n', -32003, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.delete","params":{"id":1.5}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.info","params":{"id":1,"fd":0}}\n', -32006, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"capture.info","params":{"id":1,"fd":99}}\n', -32602, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"status","params":' + b"[" * 40 + b"]" * 40 + b"}\n", -32001, True),
    (b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}\n', None, True),
    (b"\x00\x01\x02garbage\n", -32700, True),
]


@test
@with_daemon()
def malformed_requests(d):
    with d.connect() as c:
        for raw, code, stays in BAD_REQUESTS:
            c.send_raw(raw)
            r = c.read_line()
            expect("error" in r, "error for %r: %r", raw, r)
            if code is not None:
                eq(error_code(r), code, "code for %r" % raw[:80])
            expect(r["error"]["message"], "a message for %r", raw)
        # the same connection still works after all of that
        eq(c.call("version")["result"]["protocol"], 1, "connection survives bad requests")
    still_serving(d)


@test
@with_daemon()
def notifications_and_pipelining(d):
    with d.connect() as c:
        c.send_raw(b'{"jsonrpc":"2.0","method":"status"}\n')  # notification: no reply
        ids = [c.request("version") for _ in range(20)]
        got = [c.read_line()["id"] for _ in range(20)]
        eq(sorted(got), ids, "every pipelined request answered once")
        c.s.settimeout(0.3)
        try:
            extra = c.s.recv(100)
        except socket.timeout:
            extra = b""
        eq(extra, b"", "no reply to the notification")


@test
@with_daemon("limits.max_message = 4K\n")
def oversized_message(d):
    c = d.connect()
    c.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"status","params":{"x":"' + b"a" * 8000 + b'"}}\n')
    r = c.read_line()
    eq(error_code(r), -32001, "too large")
    expect(c.closed_by_peer(), "connection closed after an oversized message")
    c.close()
    # without a newline at all: the daemon must not buffer forever
    c = d.connect()
    try:
        c.send_raw(b"x" * 100000)
    except (BrokenPipeError, ConnectionResetError):
        pass
    expect(c.closed_by_peer(), "unterminated flood disconnected")
    c.close()
    still_serving(d)


@test
@with_daemon(FAST + "limits.max_output_buffer = 64K\n")
def slow_and_stuck_clients(d):
    # one that sends a byte a second never completes a request in time
    slow = d.connect()
    stop = threading.Event()

    def dribble():
        for b in b'{"jsonrpc":"2.0","id":1,"method":"status"}':
            if stop.is_set():
                return
            try:
                slow.send_raw(bytes([b]))
            except OSError:
                return
            time.sleep(0.4)
    t = threading.Thread(target=dribble)
    t.start()
    # one that floods requests and never reads its replies
    stuck = d.connect()
    stuck.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        for _ in range(3000):
            stuck.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"status"}\n' * 10)
    except (BlockingIOError, BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    # meanwhile others are served promptly
    for _ in range(10):
        t0 = time.time()
        still_serving(d)
        expect(time.time() - t0 < 1.0, "status answered in under a second while others misbehave")
    expect(slow.closed_by_peer(timeout=4), "byte-a-second client disconnected")
    stop.set()
    t.join()
    expect(stuck.closed_by_peer(timeout=6), "client that does not read disconnected")
    slow.close()
    stuck.close()
    # an idle client is disconnected after the idle timeout
    idle = d.connect()
    expect(idle.closed_by_peer(timeout=5), "idle client disconnected")
    idle.close()
    still_serving(d)


@test
@with_daemon("limits.max_clients = 4\n")
def max_clients(d):
    conns = [d.connect() for _ in range(4)]
    for c in conns:
        c.call("version")
    extra = d.connect()
    r = extra.read_line()
    eq(error_code(r), -32004, "fifth client refused as busy")
    extra.close()
    for c in conns:
        c.close()
    time.sleep(0.2)
    still_serving(d)


@test
@with_daemon()
def library_client(d):
    p = subprocess.run([os.path.join(os.environ.get("GPUPROF_BUILD", "build"), "tests",
                                     "integration", "lib_client"), d.sock],
                       capture_output=True, timeout=60)
    out = p.stdout.decode() + p.stderr.decode()
    eq(p.returncode, 0, "lib_client:\n" + out)
    expect("2 passed, 0 failed" in out, out)


@test
@with_daemon()
def concurrent_clients(d):
    errors = []

    def worker():
        try:
            with d.connect() as c:
                for _ in range(25):
                    r = c.call("status")
                    if "result" not in r:
                        errors.append(r)
        except Exception as e:  # noqa
            errors.append(repr(e))
    ts = [threading.Thread(target=worker) for _ in range(64)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    eq(errors, [], "64 concurrent clients x 25 status calls")


@test
@with_daemon()
def fd_passing_rules(d):
    r, w = os.pipe()
    with d.connect() as c:
        # an fd sent with a request that does not name it is closed by the daemon
        c.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"version"}\n', fds=[w])
        eq(c.read_line()["result"]["protocol"], 1, "request with a stray fd")
    os.close(w)
    time.sleep(0.3)
    os.set_blocking(r, False)
    try:
        data = os.read(r, 1)
    except BlockingIOError:
        data = None
    eq(data, b"", "daemon closed the stray write end (EOF on the read end)")
    os.close(r)
    still_serving(d)


def make_captures(d, n):
    return [d.ctl_json("capture", "--last", "1s", "--pid", str(os.getpid()))["id"] for _ in range(n)]


@test
def restart_reloads_and_damage_is_reported():
    d = Daemon().start()
    try:
        ids = make_captures(d, 3)
        before = {c["id"]: c for c in d.ctl_json("list")["captures"]}
        eq(d.stop(), 0, "clean stop")
        # damage the second file: flip a byte in the middle
        p = os.path.join(d.state, "%d.gpc" % ids[1])
        data = bytearray(open(p, "rb").read())
        data[len(data) // 2] ^= 0xFF
        open(p, "wb").write(bytes(data))
        d.start()
        after = {c["id"]: c for c in d.ctl_json("list")["captures"]}
        eq(sorted(after), sorted(before), "same captures after restart")
        eq(after[ids[0]]["records"], before[ids[0]]["records"], "intact capture reloaded")
        eq(after[ids[1]]["state"], "damaged", "damaged capture reported")
        expect(after[ids[1]].get("damage"), "damage says why")
        eq(after[ids[2]]["state"], "ready", "third intact")
        new = make_captures(d, 1)[0]
        expect(new > max(ids), "ids are not reused after restart")
        d.ctl("delete", str(ids[1]), check=0)
        expect(not os.path.exists(p), "damaged capture deletable")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def kill9_during_capture_writing():
    d = Daemon("memory.store_budget = 32M\n").start()
    try:
        done = make_captures(d, 3)
        done_info = {c["id"]: c for c in d.ctl_json("list")["captures"]}
        # captures in flight when the daemon dies
        conns = []
        for _ in range(4):
            c = d.connect()
            c.request("capture.start", {"last_ms": 5000, "wait": True})
            conns.append(c)
        d.kill9()
        for c in conns:
            c.close()
        d.start()
        listed = {c["id"]: c for c in d.ctl_json("list")["captures"]}
        for i in done:
            expect(i in listed, "acknowledged capture %d survived", i)
            eq(listed[i]["state"], "ready", "intact")
            eq(listed[i]["records"], done_info[i]["records"], "same content")
        for c in listed.values():
            expect(c["state"] in ("ready", "damaged"), "no half-written capture listed as valid")
            if c["id"] not in done:
                eq(c["state"], "ready", "a capture that reached its final name is complete")
        eq(glob.glob(os.path.join(d.state, "*.tmp")), [], "temporary files cleaned at start")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
@with_daemon("socket_mode = 0666\n")
def unprivileged_peer(d):
    nobody = 65534
    mine = d.ctl_json("capture", "--last", "1s", "--pid", str(os.getpid()))
    # another uid may not capture root's process
    p = d.ctl("capture", "--pid", str(os.getpid()), "--last", "1s", user=nobody)
    eq(p.returncode, 1, "refused: %s" % p.stderr)
    expect(b"another user" in p.stderr, "says why: %r" % p.stderr)
    # nor see, read or delete root's capture
    lst = json.loads(d.ctl("--json", "list", user=nobody, check=0).stdout)
    eq(lst["captures"], [], "another uid's captures are invisible")
    eq(d.ctl("info", str(mine["id"]), user=nobody).returncode, 1, "info refused")
    eq(d.ctl("delete", str(mine["id"]), user=nobody).returncode, 1, "delete refused")
    eq(d.ctl_json("info", str(mine["id"]))["state"], "ready", "root's capture untouched")
    # its own process and its own captures are fine
    child = subprocess.Popen(["setpriv", "--reuid=%d" % nobody, "--regid=%d" % nobody,
                              "--clear-groups", "sleep", "30"])
    try:
        time.sleep(0.2)
        own = json.loads(d.ctl("--json", "capture", "--pid", str(child.pid), "--last", "1s",
                               user=nobody, check=0).stdout)
        eq(own["owner_uid"], nobody, "owned by the peer")
        lst = json.loads(d.ctl("--json", "list", user=nobody, check=0).stdout)
        eq([c["id"] for c in lst["captures"]], [own["id"]], "sees only its own")
        st = json.loads(d.ctl("--json", "status", user=nobody, check=0).stdout)
        eq(st["clients"]["privileged"], False, "peer not privileged")
        d.ctl("delete", str(own["id"]), user=nobody, check=0)
    finally:
        child.kill()
        child.wait()


@test
def state_dir_modes_and_symlinks():
    d = Daemon().start()
    try:
        st = os.stat(d.state)
        eq(st.st_mode & 0o777, 0o750, "state dir mode")
        eq(oct(os.stat(d.sock).st_mode & 0o777), oct(0o660), "socket mode")
        cid = make_captures(d, 1)[0]
        f = os.path.join(d.state, "%d.gpc" % cid)
        eq(os.stat(f).st_mode & 0o777, 0o640, "capture file mode")
        eq(d.stop(), 0, "stop")
        # replace the file by a symlink to a valid capture elsewhere: not followed
        os.rename(f, os.path.join(d.tmp, "elsewhere.gpc"))
        os.symlink(os.path.join(d.tmp, "elsewhere.gpc"), f)
        d.start()
        eq([c for c in d.ctl_json("list")["captures"] if c["id"] == cid and c["state"] == "ready"],
           [], "a symlinked capture is not loaded")
        eq(d.stop(), 0, "stop")
    finally:
        d.cleanup()


@test
def sd_notify_and_watchdog():
    tmp = Daemon()
    nsock = os.path.join(tmp.tmp, "notify.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(nsock)
    s.settimeout(10)
    tmp.env["NOTIFY_SOCKET"] = nsock
    tmp.env["WATCHDOG_USEC"] = "400000"
    try:
        tmp.proc = None
        tmp.start(wait=False)
        tmp.env["WATCHDOG_PID"] = str(tmp.proc.pid)  # informative; sd_watchdog_enabled(0) checks it
        msgs = []
        deadline = time.time() + 10
        while time.time() < deadline and not any(b"READY=1" in m for m in msgs):
            msgs.append(s.recv(4096))
        expect(any(b"READY=1" in m for m in msgs), "READY=1 sent: %r" % msgs)
        expect(any(b"STATUS=" in m for m in msgs), "STATUS= sent")
        # the daemon is reachable once READY=1 arrived
        eq(tmp.call("version")["result"]["protocol"], 1, "ready means serving")
        wd = 0
        t_end = time.time() + 2
        while time.time() < t_end:
            try:
                m = s.recv(4096)
            except socket.timeout:
                break
            wd += m.count(b"WATCHDOG=1")
        expect(wd >= 3, "watchdog pinged at half the interval (%d pings in 2 s)" % wd)
        tmp.proc.send_signal(signal.SIGTERM)
        got_stopping = False
        t_end = time.time() + 10
        while time.time() < t_end and not got_stopping:
            try:
                got_stopping = b"STOPPING=1" in s.recv(4096)
            except socket.timeout:
                break
        expect(got_stopping, "STOPPING=1 on exit")
        eq(tmp.proc.wait(20), 0, "clean exit")
    finally:
        s.close()
        tmp.cleanup()


@test
def socket_activation():
    if not os.path.exists("/usr/bin/systemd-socket-activate"):
        raise Skip("systemd-socket-activate not installed")
    d = Daemon(wrapper=[])
    sock = os.path.join(d.tmp, "activated.sock")
    args = ["systemd-socket-activate", "-l", sock, os.path.join(os.environ.get("GPUPROF_BUILD", "build"), "daemon", "gpuprofd"),
            "--foreground", "-v", "--state-dir", d.state, "--config", d.conf,
            "--socket", os.path.join(d.tmp, "unused.sock")]
    logf = open(d.log, "ab")
    proc = subprocess.Popen(args, stdout=logf, stderr=logf)
    try:
        deadline = time.time() + 10
        while not os.path.exists(sock) and time.time() < deadline:
            time.sleep(0.05)
        # the first connection starts the daemon (systemd-socket-activate accepts-less mode)
        with Conn(sock) as c:
            eq(c.call("version")["result"]["protocol"], 1, "served on the inherited socket")
        expect(not os.path.exists(os.path.join(d.tmp, "unused.sock")),
               "did not bind its own socket when one was passed")
        expect("socket passed by the service manager" in d.read_log(), "logged activation")
        proc.send_signal(signal.SIGTERM)
        eq(proc.wait(20), 0, "clean exit")
    finally:
        if proc.poll() is None:
            proc.kill()
        logf.close()
        d.cleanup()


@test
def config_errors():
    d = Daemon("limits.max_clients = lots\n")
    try:
        d.start(wait=False)
        rc = d.proc.wait(10)
        eq(rc, 1, "bad config value is a start-up error")
        expect("gpuprofd.conf:1" in d.read_log(), "error names the line: " + d.read_log())
    finally:
        d.cleanup()
    d = Daemon(open(os.path.join(os.environ.get("GPUPROF_SOURCE", "."), "systemd", "gpuprofd.conf")).read())
    try:
        d.start()
        eq(d.stop(), 0, "the shipped example config loads")
    finally:
        d.cleanup()


@test
@with_daemon()
def socket_permission_hint(d):
    # A user outside group gpuprof is refused by the socket's mode: the CLI
    # says which group gives access and that it needs a new login.
    p = d.ctl("status", user=65534)
    eq(p.returncode, 3, "connect failure status: %r" % p.stderr)
    err = p.stderr.decode()
    expect("Permission denied" in err, "errno kept: %r" % err)
    expect("group 'gpuprof'" in err, "names the group: %r" % err)
    expect("newgrp gpuprof" in err and "log in again" in err, "new login hint: %r" % err)


@test
def unprivileged_daemon_names_cause():
    # Without CAP_BPF/CAP_PERFMON the kernel refuses the BPF programs; libbpf's
    # probe reports that as "not available", which must not reach the user.
    nobody = 65534
    # (the CUPTI socket off: it needs no privilege, and would attach)
    d = Daemon("cupti.socket = off\n", wrapper=["setpriv", "--reuid=%d" % nobody, "--regid=%d" % nobody,
                        "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"])
    try:
        os.chown(d.tmp, nobody, nobody)
        os.chown(d.conf, nobody, nobody)
        d.start()
        with Conn(d.sock) as c:
            st = c.call("status")["result"]
        cols = {x["name"]: x for x in st["collectors"]}
        for name in ("cpu", "gpu"):
            if name not in cols:
                continue
            c = cols[name]
            eq(c["state"], "unavailable", name)
            expect("CAP_BPF" in c["reason"] and "not supported" not in c["reason"],
                   "%s names the missing capability: %r" % (name, c["reason"]))
        log = d.read_log()
        expect("no collector attached" in log, "warning logged:\n%s" % log)
        expect("libbpf: libbpf:" not in log, "one libbpf prefix:\n%s" % log)
    finally:
        d.cleanup()


@test
@with_daemon()
def json_folded_to_a_file_prints_the_result(d):
    # --json with --out FILE: the stacks go to FILE, the result to stdout
    c = d.ctl_json("capture", "--last", "1s", "--pid", str(os.getpid()))
    out = os.path.join(d.tmp, "f.folded")
    p = d.ctl("--json", "folded", str(c["id"]), "--out", out, check=0)
    res = json.loads(p.stdout)
    expect(isinstance(res, dict) and res, "a result object: %r" % p.stdout)
    expect(os.path.exists(out), "stacks written")
    # to stdout the stacks alone, no JSON mixed in
    p = d.ctl("--json", "folded", str(c["id"]), check=0)
    expect(not p.stdout.lstrip().startswith(b"{"), "no JSON among the stacks")


def help_examples():
    """Every example command line of every --help: (help, line)."""
    top = subprocess.run([GPUPROFCTL, "--help"], capture_output=True, check=True).stdout.decode()
    cmds = []
    in_cmds = False
    for line in top.splitlines():
        if line == "COMMANDS":
            in_cmds = True
        elif in_cmds and not line.strip():
            break
        elif in_cmds:
            words = line.split("  ")[1].split()  # "  analyze comm communication ..."
            cmds.append(words if words[0] == "analyze" and len(words) > 1 and words[1] == "comm"
                        else words[:1])
    cmds = [w[:2] if w[:2] == ["analyze", "comm"] else w[:1] for w in cmds]
    out = []
    for cmd in [[]] + cmds:
        text = subprocess.run([GPUPROFCTL] + cmd + ["--help"], capture_output=True,
                              check=True).stdout.decode()
        in_ex = False
        for line in text.splitlines():
            if line.strip() == "EXAMPLES":
                in_ex = True
            elif in_ex and not line.startswith("  "):
                in_ex = False
            elif in_ex and line.strip().startswith("gpuprofctl "):
                out.append((" ".join(cmd) or "gpuprofctl", line.strip()))
    return out


@test
@with_daemon()
def every_help_example_runs(d):
    # Each example as a user would type it, against this daemon with a live
    # capture, an import and a process of its own: none may be a usage error.
    # (The part after a pipe is not run: flamegraph.pl's options are checked
    # by hand.)
    import shlex
    examples = help_examples()
    expect(len(examples) > 20, "examples found: %d" % len(examples))
    child = subprocess.Popen(["sleep", "120"])
    work = os.path.join(d.tmp, "work")
    os.mkdir(work)
    try:
        live = d.ctl_json("capture", "--pid", str(child.pid), "--last", "1s")["id"]
        live2 = d.ctl_json("capture", "--pid", str(child.pid), "--last", "1s")["id"]
        traces = sorted(glob.glob(os.path.join(os.environ.get("GPUPROF_SHARED", "/work/shared"),
                                               "reference", "hta", "traces", "alexnet", "*")))
        if not traces:
            raise Skip("no reference trace")
        imp = d.ctl_json("import", traces[0])["id"]
        for name in ("rank0.pt.trace.json.gz", "rank0.json.gz", "rank1.json.gz"):
            shutil.copy(traces[0], os.path.join(work, name))
        for name in ("app.folded", "before.folded", "after.folded", "stacks.folded"):
            with open(os.path.join(work, name), "w") as f:
                f.write("python;main;work 10\n")
        failures = []
        # upstream flamegraph.pl's palettes: any other name paints every
        # frame black
        palettes = {"hot", "mem", "io", "wakeup", "chain", "java", "js", "perl", "red",
                    "green", "blue", "aqua", "yellow", "purple", "orange"}
        for where, line in examples:
            for w in line.split():
                if w.startswith("--colors=") and w[len("--colors="):] not in palettes:
                    failures.append("%s: %s -> flamegraph.pl has no palette %s" % (
                        where, line, w[len("--colors="):]))
            # the command up to a pipe, a redirection, a && or a comment
            line = line.replace("$(pidof python)", str(child.pid))
            argv = []
            for w in shlex.split(line, comments=True):
                if w in ("|", ">", "&&", ";"):
                    break
                argv.append(w)
            cmd = argv[1:]
            analyze = "analyze" in cmd
            for i, w in enumerate(cmd):
                if w.isdigit() and i > 0 and cmd[i - 1] in ("--pid", "-p"):
                    cmd[i] = str(child.pid)
                elif w in ("1", "3", "7"):  # capture ids as the help writes them
                    cmd[i] = str(imp if analyze else live)
                elif w == "4":
                    cmd[i] = str(live2)
                elif w == "10s" and i > 0 and cmd[i - 1] in ("--duration", "-d"):
                    cmd[i] = "1s"  # the same command, sooner
            try:
                p = subprocess.run([GPUPROFCTL, "--socket", d.sock, "--timeout", "30s"] + cmd,
                                   cwd=work, capture_output=True, timeout=60,
                                   stdin=subprocess.DEVNULL)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                continue  # a live view (top) runs until stopped: not a usage error
            # 2: the CLI's usage error; the daemon's: a parameter it does
            # not know (other invalid-params answers depend on the data)
            if rc == 2 or (rc == 1 and b"unknown parameter" in p.stderr):
                failures.append("%s: %s -> %s" % (where, line, p.stderr.decode().strip()))
        expect(not failures, "help examples that are usage errors:\n  " + "\n  ".join(failures))
    finally:
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
