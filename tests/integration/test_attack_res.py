#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Resource attacks by a member of group gpuprof (docs/security.md): a gzip
bomb and a sparse SQLite file against the daemon's memory, descriptors that
can never carry a trace, stalled pipes holding every job slot, and a stop
while jobs hang. Each runs as the real unprivileged user gpd.attacker()
makes, against a real daemon."""

import json
import os
import signal
import socket
import subprocess
import time
import zlib

import gpd
from gpd import Daemon, eq, error_code, expect, main, test

MiB = 1 << 20
# What a refused import may hold past memory.capture_max (docs/operations.md,
# "Memory"): its read and inflate buffers, the inflate thread's pieces, the
# tokenizer's scratch, the string table's growth. The test daemon's baseline
# under ASan is measured before the attack and not counted.
IMPORT_OVERHEAD = 32 * MiB
# A small ASan quarantine, so that freed blocks are reused and the peak is
# the daemon's, not what ASan keeps poisoned (test_soak.py does the same).
ASAN = "detect_leaks=1:abort_on_error=1:quarantine_size_mb=4:malloc_context_size=5"

SMALL_TRACE = (b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,'
               b'"ts":1000,"dur":2,"args":{"stream":7,"correlation":1,"device":0}},'
               b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,'
               b'"ts":999,"dur":1,"args":{"correlation":1}}]}')

# Run as the attacker: raw JSON-RPC with whatever descriptor the attack needs.
ATTACK_PY = r'''
import ctypes, json, os, select, socket, sys, time, array

libc = ctypes.CDLL(None, use_errno=True)

def make_fd(kind, tmp):
    if kind.startswith("file:"):
        return os.open(kind[5:], os.O_RDONLY)
    if kind == "eventfd":
        return os.eventfd(0)
    if kind == "timerfd":
        return libc.timerfd_create(1, 0)  # CLOCK_MONOTONIC, never armed
    if kind == "signalfd":
        mask = ctypes.create_string_buffer(128)
        return libc.signalfd(-1, mask, 0)
    if kind == "inotify":
        return libc.inotify_init1(0)
    if kind == "epoll":
        ep = select.epoll()
        fd = os.dup(ep.fileno())
        ep.close()
        return fd
    if kind == "pidfd":
        return os.pidfd_open(os.getpid())
    if kind == "opath":
        return os.open(tmp, os.O_PATH)
    if kind == "opath-file":
        return os.open("/etc/hostname", os.O_PATH)
    if kind == "dir":
        return os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    if kind == "listen":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind("\0gpuprof-attack-%d" % os.getpid())
        s.listen(1)
        return os.dup(s.fileno())
    raise SystemExit("unknown fd kind " + kind)

def call(sock, method, params, fd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    msg = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}) + "\n").encode()
    if fd is None:
        s.sendall(msg)
    else:
        s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(array.array("i", [fd])))])
    buf = b""
    while b"\n" not in buf:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return json.loads(buf.split(b"\n")[0]) if buf else {"error": {"code": "closed"}}

mode, sock, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "call":  # call METHOD PARAMS FDKIND...: one reply per fd kind
    method, params = sys.argv[4], json.loads(sys.argv[5])
    for kind in sys.argv[6:]:
        fd = make_fd(kind, tmp)
        if fd < 0:
            print(json.dumps({"kind": kind, "reply": {"error": {"code": "nofd"}}}), flush=True)
            continue
        t0 = time.time()
        r = call(sock, method, params, fd)
        print(json.dumps({"kind": kind, "reply": r, "secs": time.time() - t0}), flush=True)
        os.close(fd)
elif mode == "hang":  # hang N: N imports of pipes nobody writes, then wait
    n = int(sys.argv[4])
    conns, writers = [], []
    for i in range(n):
        r, w = os.pipe()
        writers.append(w)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        msg = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "capture.import",
                           "params": {"fd": 0}}) + "\n").encode()
        s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(array.array("i", [r])))])
        os.close(r)
        conns.append(s)
    print("sent", flush=True)
    sys.stdin.readline()  # "close": the clients hang up, the writers stay
    for s in conns:
        s.close()
    print("closed", flush=True)
    sys.stdin.read()
'''


def start(config):
    d = Daemon(config, env={"ASAN_OPTIONS": ASAN}).start()
    gpd.open_to_group(d)
    path = os.path.join(d.tmp, "attack.py")
    with open(path, "w") as f:
        f.write(ATTACK_PY)
    os.chmod(path, 0o644)
    d.attack_py = path
    return d


def attack(d, method, params, *kinds, timeout=120):
    """Replies, one per descriptor kind, to method called by the attacker."""
    p = subprocess.run(gpd.as_attacker([gpd.ATTACKER_PY, d.attack_py, "call", d.sock, d.tmp,
                                        method, json.dumps(params)] + list(kinds)),
                       capture_output=True, timeout=timeout)
    expect(p.returncode == 0, "attacker script failed: %s" % p.stderr.decode(errors="replace"))
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


def proc_status(d, key):
    with open("/proc/%d/status" % d.proc.pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no %s in /proc/PID/status" % key)


def attacker_file(d, name, data=None):
    path = os.path.join(d.tmp, name)
    if data is not None:
        with open(path, "wb") as f:
            f.write(data)
    os.chmod(path, 0o644)
    return path


def gzip_bomb(path, events):
    """A gzip stream of one Kineto event repeated: ~100 bytes of JSON each,
    compressed about 1000:1."""
    ev = (b'{"ph":"X","cat":"kernel","name":"void bomb_kernel<float>(float*)","pid":0,'
          b'"tid":7,"ts":1000.5,"dur":2.25,"args":{"stream":7,"correlation":1,"device":0}},')
    block = ev * 10000
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(z.compress(b'{"traceEvents":['))
        for _ in range(events // 10000):
            f.write(z.compress(block))
        f.write(z.compress(ev[:-1] + b']}'))
        f.write(z.flush())
    os.chmod(path, 0o644)
    return len(block) // 10000 * events


def root_import(d, data, timeout=20):
    """A root capture.import of data through a pipe: (reply, seconds)."""
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    t0 = time.time()
    try:
        with gpd.Conn(d.sock, timeout=timeout) as c:
            rep = c.call("capture.import", {"fd": 0}, fds=[r])
    finally:
        os.close(r)
    return rep, time.time() - t0


@test
def gzip_bomb_stays_within_capture_max():
    cap = 16 * MiB
    d = start("memory.capture_max = 16M\n")
    try:
        bomb = os.path.join(d.tmp, "bomb.json.gz")
        json_bytes = gzip_bomb(bomb, 1500000)
        expect(os.path.getsize(bomb) < 2 * MiB, "a small bomb: %d bytes" % os.path.getsize(bomb))
        rss0 = proc_status(d, "VmRSS")
        [r] = attack(d, "capture.import", {"fd": 0}, "file:" + bomb)
        hwm = proc_status(d, "VmHWM")
        rep = r["reply"]
        print("  bomb: %d MB of JSON in %d KB; daemon RSS %.1f MB before, peak %.1f MB; %.1f s"
              % (json_bytes >> 20, os.path.getsize(bomb) >> 10, rss0 / MiB, hwm / MiB, r["secs"]))
        eq(error_code(rep), -32001, "refused as too large: %r" % rep)
        expect("memory.capture_max" in rep["error"]["message"],
               "the error names the limit: %r" % rep)
        expect(hwm - rss0 < cap + IMPORT_OVERHEAD,
               "peak RSS %.1f MB over the %.1f MB before: more than capture_max + %d MB"
               % ((hwm - rss0) / MiB, rss0 / MiB, IMPORT_OVERHEAD >> 20))
        eq(d.call("version")["result"]["protocol"], 1, "the daemon still answers")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def jobs_share_one_memory_budget():
    """memory.jobs_max bounds what the jobs hold together: an import whose
    timeline fits capture_max but not the budget is refused, naming it."""
    d = start("memory.capture_max = 64M\nmemory.jobs_max = 8M\n")
    try:
        bomb = os.path.join(d.tmp, "mid.json.gz")
        gzip_bomb(bomb, 300000)
        [r] = attack(d, "capture.import", {"fd": 0}, "file:" + bomb)
        rep = r["reply"]
        eq(error_code(rep), -32001, "refused: %r" % rep)
        expect("memory.jobs_max" in rep["error"]["message"], "names the budget: %r" % rep)
        # the budget was given back: a small import fits
        rep, _ = root_import(d, SMALL_TRACE)
        expect("result" in rep, "a small import after the refusal: %r" % rep)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def sparse_sqlite_file_is_not_read_into_memory():
    d = start("memory.capture_max = 16M\n")
    try:
        path = attacker_file(d, "sparse.sqlite", b"SQLite format 3\0" + b"\0" * 4080)
        os.truncate(path, 1 << 30)  # 1 GiB, 4 KiB on disk
        rss0 = proc_status(d, "VmRSS")
        [r] = attack(d, "capture.import", {"fd": 0}, "file:" + path)
        hwm = proc_status(d, "VmHWM")
        rep = r["reply"]
        print("  sparse: RSS %.1f MB before, peak %.1f MB; %.2f s"
              % (rss0 / MiB, hwm / MiB, r["secs"]))
        eq(error_code(rep), -32001, "refused before reading: %r" % rep)
        expect("memory.capture_max" in rep["error"]["message"], "names the limit: %r" % rep)
        expect(hwm - rss0 < 16 * MiB + IMPORT_OVERHEAD,
               "peak RSS grew by %.1f MB" % ((hwm - rss0) / MiB))
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def descriptors_that_cannot_be_a_trace():
    d = start("limits.io_timeout = 3s\n")
    try:
        small = attacker_file(d, "small.json", SMALL_TRACE)
        [r] = attack(d, "capture.import", {"fd": 0}, "file:" + small)
        expect("result" in r["reply"], "the attacker's own import: %r" % r)
        cid = r["reply"]["result"]["id"]
        kinds = ["eventfd", "timerfd", "signalfd", "inotify", "epoll", "pidfd", "opath",
                 "opath-file", "dir", "listen"]
        for r in attack(d, "capture.import", {"fd": 0}, *kinds, timeout=60):
            eq(error_code(r["reply"]), -32006, "import from %s: %r" % (r["kind"], r["reply"]))
            expect(r["secs"] < 2, "%s refused at once (%.1f s)" % (r["kind"], r["secs"]))
        # output descriptors go through the same check
        for r in attack(d, "capture.folded", {"id": cid, "fd": 0}, "eventfd", "timerfd",
                        "listen", timeout=60):
            eq(error_code(r["reply"]), -32006, "output to %s: %r" % (r["kind"], r["reply"]))
        rep, _ = root_import(d, SMALL_TRACE)
        expect("result" in rep, "service goes on: %r" % rep)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def stalled_pipe_fails_at_io_timeout():
    d = start("limits.io_timeout = 2s\n")
    try:
        r, w = os.pipe()
        t0 = time.time()
        with gpd.Conn(d.sock, timeout=30) as c:
            rep = c.call("capture.import", {"fd": 0}, fds=[r])
        took = time.time() - t0
        os.close(r)
        os.close(w)
        print("  stalled pipe answered after %.2f s" % took)
        eq(error_code(rep), -32005, "an I/O error: %r" % rep)
        expect("limits.io_timeout" in rep["error"]["message"], "names the limit: %r" % rep)
        expect(1.8 <= took < 3.0, "after about limits.io_timeout, not twice it: %.2f s" % took)
        # a FIFO the same way
        fifo = os.path.join(d.tmp, "fifo")
        os.mkfifo(fifo)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        wfd = os.open(fifo, os.O_WRONLY)
        t0 = time.time()
        with gpd.Conn(d.sock, timeout=30) as c:
            rep = c.call("capture.import", {"fd": 0}, fds=[rfd])
        took = time.time() - t0
        os.close(rfd)
        os.close(wfd)
        eq(error_code(rep), -32005, "FIFO: %r" % rep)
        expect(1.8 <= took < 3.0, "FIFO after about limits.io_timeout: %.2f s" % took)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def hang_jobs(d, n):
    p = subprocess.Popen(gpd.as_attacker([gpd.ATTACKER_PY, d.attack_py, "hang", d.sock, d.tmp,
                                          str(n)]),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    eq(p.stdout.readline().strip(), b"sent", "the attacker sent its imports")
    # every slot taken: a root import is turned away
    deadline = time.time() + 10
    while time.time() < deadline:
        rep, _ = root_import(d, SMALL_TRACE)
        if error_code(rep) == -32004:
            break
        time.sleep(0.1)
    eq(error_code(rep), -32004, "all %d job slots held by the attacker" % n)
    return p


# The per-uid job limit (limits.user_jobs) and the privileged reserve
# (limits.reserved_jobs) already keep one member from holding every slot
# (test_attack_limits.py); lifted here, so that the attacker holds them all
# and what is tested is that the slots come back.
ALL_SLOTS = "limits.user_jobs = 4\nlimits.reserved_jobs = 0\n"


@test
def hung_imports_end_when_their_clients_leave():
    # a long io_timeout: service must come back because the clients left
    d = start("limits.io_timeout = 60s\nlimits.max_jobs = 4\n" + ALL_SLOTS)
    p = None
    try:
        p = hang_jobs(d, 4)
        t0 = time.time()
        p.stdin.write(b"close\n")
        p.stdin.flush()
        eq(p.stdout.readline().strip(), b"closed", "the attacker hung up")
        rep = None
        while time.time() - t0 < 15:
            rep, _ = root_import(d, SMALL_TRACE)
            if "result" in rep:
                break
            time.sleep(0.05)
        took = time.time() - t0
        print("  service resumed %.2f s after the attacker hung up" % took)
        expect(rep is not None and "result" in rep, "root's import succeeds: %r" % rep)
        expect(took < 3, "service resumed in %.2f s" % took)
        eq(d.stop(), 0, "clean stop")
    finally:
        if p:
            p.kill()
            p.wait()
        d.cleanup()


@test
def sigterm_stops_with_jobs_hung():
    d = start("limits.io_timeout = 60s\nlimits.max_jobs = 4\n" + ALL_SLOTS)
    p = None
    try:
        p = hang_jobs(d, 4)
        t0 = time.time()
        d.proc.send_signal(signal.SIGTERM)
        try:
            rc = d.proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.time() - t0
        print("  stopped %.2f s after SIGTERM" % took)
        expect(rc is not None, "the daemon did not stop in 10 s")
        eq(rc, 0, "exit status")
        expect(took < 5, "stopped within a few seconds: %.2f s" % took)
    finally:
        if p:
            p.kill()
            p.wait()
        d.cleanup()


if __name__ == "__main__":
    main()
