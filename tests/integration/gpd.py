# SPDX-License-Identifier: MIT
"""Helpers for integration tests: a real gpuprofd on a private socket and
state directory, the real gpuprofctl, and raw protocol access."""

import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

BUILD = os.environ.get("GPUPROF_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE = os.environ.get("GPUPROF_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("GPUPROF_SHARED", os.path.join(SOURCE, "..", "shared"))
GPUPROFD = os.path.join(BUILD, "daemon", "gpuprofd")
GPUPROFCTL = os.path.join(BUILD, "cli", "gpuprofctl")


class Daemon:
    """gpuprofd in the foreground with its own socket, state dir and config."""

    def __init__(self, config="", state_dir=None, extra_args=(), wrapper=(), env=None):
        self.tmp = tempfile.mkdtemp(prefix="gpd-it-")
        os.chmod(self.tmp, 0o755)
        self.sock = os.path.join(self.tmp, "gpuprofd.sock")
        self.state = state_dir or os.path.join(self.tmp, "state")
        self.conf = os.path.join(self.tmp, "gpuprofd.conf")
        with open(self.conf, "w") as f:
            f.write(config)
            # the CUPTI library's socket: this daemon's own, not the
            # system's /run/gpuprof/cupti.sock (after the test's lines, so
            # their numbers in error messages stay)
            if not re.search(r"^\s*cupti\.socket\s*=", config, re.M):
                f.write("\ncupti.socket = %s\n" % os.path.join(self.tmp, "cupti.sock"))
        self.log = os.path.join(self.tmp, "gpuprofd.log")
        self.extra_args = list(extra_args)
        self.wrapper = list(wrapper)
        self.env = dict(os.environ)
        self.env.pop("NOTIFY_SOCKET", None)
        self.env.pop("LISTEN_FDS", None)
        if env:
            self.env.update(env)
        self.proc = None

    def start(self, wait=True):
        args = self.wrapper + [GPUPROFD, "--foreground", "-v", "--socket", self.sock,
                               "--state-dir", self.state, "--config", self.conf] + self.extra_args
        self.logf = open(self.log, "ab")
        self.proc = subprocess.Popen(args, stdout=self.logf, stderr=self.logf, env=self.env)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("gpuprofd exited early (%d):\n%s" % (self.proc.returncode, self.read_log()))
            try:
                r = self.call("version")
                if "result" in r:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("gpuprofd did not answer in time:\n" + self.read_log())

    def read_log(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise RuntimeError("gpuprofd did not stop in %ds" % timeout)
        self.logf.close()
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.logf.close()

    def cleanup(self):
        try:
            self.stop()
        except Exception:
            pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def connect(self):
        return Conn(self.sock)

    def call(self, method, params=None):
        with self.connect() as c:
            return c.call(method, params)

    def ctl(self, *args, input=None, user=None, check=None, timeout=60):
        cmd = [GPUPROFCTL, "--socket", self.sock] + list(args)
        if user is not None:
            cmd = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + cmd
        p = subprocess.run(cmd, input=input, capture_output=True, timeout=timeout)
        if check is not None and p.returncode != check:
            raise AssertionError("gpuprofctl %s: exit %d, expected %d\nstdout: %s\nstderr: %s" % (
                " ".join(args), p.returncode, check, p.stdout.decode(errors="replace"),
                p.stderr.decode(errors="replace")))
        return p

    def ctl_json(self, *args, **kw):
        p = self.ctl("--json", *args, check=0, **kw)
        return json.loads(p.stdout)


class Conn:
    """A raw JSON-RPC connection: one message per line."""

    def __init__(self, path, timeout=20):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(path)
        self.buf = b""
        self.next_id = 1

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def close(self):
        self.s.close()

    def send_raw(self, data, fds=None):
        if fds:
            self.s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(
                __import__("array").array("i", fds)))])
        else:
            self.s.sendall(data)

    def read_line(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionResetError("daemon closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params=None, fds=None):
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params is not None:
            msg["params"] = params
        self.send_raw((json.dumps(msg) + "\n").encode(), fds)
        return msg["id"]

    def call(self, method, params=None, fds=None):
        rid = self.request(method, params, fds)
        r = self.read_line()
        assert r.get("id") == rid, "reply id %r for request %r" % (r.get("id"), rid)
        return r

    def closed_by_peer(self, timeout=5):
        """True when the daemon has closed this connection (EOF) within timeout."""
        self.s.settimeout(timeout)
        try:
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
                self.buf += d
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True


ATTACKER = "gpuprof-attacker"
# The interpreter scripts run as the attacker use: pyenv's lies under /root (0700).
ATTACKER_PY = "/usr/bin/python3"


def attacker():
    """A real unprivileged user, member of group gpuprof, created on first use
    (the attacks of docs/security.md run as it). Returns (uid, gid)."""
    import pwd
    for _ in range(50):  # useradd fails while another test holds /etc/passwd's lock
        subprocess.run(["groupadd", "-f", "-r", "gpuprof"], capture_output=True)
        try:
            pw = pwd.getpwnam(ATTACKER)
            return pw.pw_uid, pw.pw_gid
        except KeyError:
            pass
        subprocess.run(["useradd", "-r", "-M", "-U", "-s", "/usr/sbin/nologin", "-G", "gpuprof",
                        ATTACKER], capture_output=True)
        time.sleep(0.1)
    raise RuntimeError("cannot create user %s" % ATTACKER)


def as_attacker(argv):
    """argv run as the attacker: its uid, its group and group gpuprof."""
    uid, gid = attacker()
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--init-groups", "--"] + list(argv)


def open_to_group(d):
    """Give the daemon's socket to group gpuprof, mode 0660, as the unit does."""
    import grp
    attacker()
    os.chown(d.sock, 0, grp.getgrnam("gpuprof").gr_gid)
    os.chmod(d.sock, 0o660)


def error_code(reply):
    return reply.get("error", {}).get("code")


# --- a tiny runner that prints the summary line CI reads -------------------

_tests = []


def test(fn):
    _tests.append(fn)
    return fn



def run_on_pty(argv, both=False, env=None, timeout=60, interrupt_after=None):
    """Run argv with stderr (and stdout too when both) on a pty: (rc,
    what the terminal got, stdout bytes when not both). env: variables set
    over ours. interrupt_after: send SIGINT once that many seconds have
    passed."""
    master, slave = pty.openpty()
    env = dict(os.environ, **(env or {}))
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=slave,
                             stdout=slave if both else subprocess.PIPE,
                             env=env)
        os.close(slave)
        slave = -1
        term, start = b"", time.time()
        deadline = start + timeout
        while time.time() < deadline:
            if interrupt_after is not None and time.time() - start >= interrupt_after:
                p.send_signal(signal.SIGINT)
                interrupt_after = None
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the other side is closed
                    break
                if not chunk:
                    break
                term += chunk
            elif p.poll() is not None:
                break
        out = b"" if both else p.stdout.read()
        p.wait(10)
        return p.returncode, term.replace(b"\r\n", b"\n"), out
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def pb_fields(buf):
    """(field, wiretype, value) of one protobuf message."""
    i, out = 0, []

    def varint():
        nonlocal i
        v = s = 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << s
            s += 7
            if b < 0x80:
                return v
    while i < len(buf):
        key = varint()
        f, wt = key >> 3, key & 7
        if wt == 0:
            out.append((f, 0, varint()))
        elif wt == 2:
            n = varint()
            out.append((f, 2, buf[i:i + n]))
            i += n
        else:
            raise AssertionError("unexpected wire type %d" % wt)
    return out


def pb_dict(buf):
    """{field: value} of one protobuf message (the last value of a field)."""
    return {f: v for f, _, v in pb_fields(buf)}


def need_sampler(d):
    """Skip without root, fail as root, when the CPU sampler is not attached."""
    st = d.ctl_json("status")
    cpu = [c for c in st["collectors"] if c["name"] == "cpu"][0]
    if cpu["state"] != "attached":
        if os.geteuid() != 0:
            raise Skip("CPU sampler needs root: " + cpu["reason"])
        raise AssertionError("CPU collector not attached as root: %r" % cpu)


def parse_folded(text):
    """gpuprofctl folded's lines ("frame;frame;... COUNT") as {stack: total
    count}."""
    stacks = {}
    for line in text.splitlines():
        expect(line.strip(), "no empty lines")
        frames, _, count = line.rpartition(" ")
        expect(count.isdigit(), "count after the last space: %r" % line)
        stacks[frames] = stacks.get(frames, 0) + int(count)
    return stacks


def cgroup2_mount():
    """The first cgroup2 mount point (mountinfo), or None on a v1-only host."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.startswith("cgroup2 "):
                return left.split()[4].replace("\\040", " ")
    return None


def main():
    only = sys.argv[1:]
    passed = failed = skipped = 0
    for fn in _tests:
        if only and fn.__name__ not in only:
            continue
        t0 = time.time()
        try:
            fn()
            passed += 1
            print("ok   %s (%.1fs)" % (fn.__name__, time.time() - t0), flush=True)
        except Skip as e:
            skipped += 1
            print("skip %s: %s" % (fn.__name__, e), flush=True)
        except Exception:
            failed += 1
            print("FAIL %s" % fn.__name__, flush=True)
            traceback.print_exc()
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if failed:
        sys.exit(1)
    if passed == 0 and skipped:
        sys.exit(77)


class Skip(Exception):
    pass


def expect(cond, msg="", *args):
    if not cond:
        raise AssertionError(msg % args if args else msg)


def eq(a, b, what=""):
    if a != b:
        raise AssertionError("%s: %r != %r" % (what, a, b))
