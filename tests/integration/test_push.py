#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Continuous profiles: a real daemon pushes a profile every second to a
Pyroscope-style ingest receiver run here on loopback (over HTTPS with the
store's own CA and over HTTP; query parameters, bearer / basic
authentication, tenant header, multipart body checked with `go tool pprof`), retries with backoff while the receiver fails, counts
drops in `gpuprofctl status --json`, and keeps a size-capped directory."""

import base64
import gzip
import http.server
import json
import os
import re
import shutil
import socket
import ssl
import stat
import subprocess
import tempfile
import threading
import time
import urllib.parse

from gpd import (BUILD, GPUPROFCTL, Daemon, Skip, as_attacker, eq, expect, main, need_sampler,
                 open_to_group, test)

WORKLOAD = os.path.join(BUILD, "tests", "workloads", "demo_workload")


class Receiver:
    """An ingest endpoint recording every request; answers the codes in
    `script` in turn, then `default`."""

    def __init__(self, tls=None):
        self.uploads = []
        self.scheme = "https" if tls else "http"
        self.script = []
        self.default = 200
        self.delay = 0  # seconds before answering (a store that hangs)
        self.started = 0
        self.lock = threading.Lock()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with rec.lock:
                    rec.started += 1
                time.sleep(rec.delay)
                u = urllib.parse.urlsplit(self.path)
                with rec.lock:
                    code = rec.script.pop(0) if rec.script else rec.default
                    rec.uploads.append({
                        "t": time.monotonic(), "path": u.path,
                        "query": dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True)),
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body, "code": code})
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self):
        return "%s://127.0.0.1:%d/ingest" % (self.scheme, self.port)

    def got(self):
        with self.lock:
            return list(self.uploads)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def multipart(up):
    """{field name: bytes} of a multipart/form-data body."""
    ctype = up["headers"].get("content-type", "")
    m = re.search(r'boundary="?([^";]+)"?', ctype)
    expect(ctype.startswith("multipart/form-data") and m, "multipart body: %r" % ctype)
    parts = {}
    for chunk in up["body"].split(b"--" + m.group(1).encode())[1:-1]:
        head, _, data = chunk.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head)
        expect(name, "a part without a name: %r" % head)
        parts[name.group(1).decode()] = data[:-2]  # the CRLF before the boundary
    return parts


def go_pprof(tmp, data, *args):
    go = shutil.which("go")
    if not go:
        raise Skip("go not installed: no go tool pprof to read the uploads")
    path = os.path.join(tmp, "p-%d.pb.gz" % time.monotonic_ns())
    with open(path, "wb") as f:
        f.write(data)
    env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"))
    p = subprocess.run([go, "tool", "pprof", "-symbolize=none"] + list(args) + [path],
                       capture_output=True, env=env, timeout=120)
    expect(p.returncode == 0, "go tool pprof %s: %s" % (args, p.stderr.decode(errors="replace")))
    return p.stdout.decode(errors="replace")


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("timed out waiting for " + what)


def secret(tmp, name, text):
    path = os.path.join(tmp, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, text.encode())
    os.close(fd)
    return path


def self_signed(tmp):
    """A certificate for 127.0.0.1 and its key: the store's own CA."""
    crt, key = os.path.join(tmp, "store.crt"), os.path.join(tmp, "store.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", crt], check=True, capture_output=True)
    return crt, key


def host_label():
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "unknown"


def push_status(d):
    return d.ctl_json("status")["push"]


@test
def uploads_carry_labelled_profiles():
    """Over HTTPS to a store with its own CA (push.ca_file)."""
    tmp = tempfile.mkdtemp(prefix="gpd-push-")
    crt, key = self_signed(tmp)
    rec = Receiver(tls=(crt, key))
    tok = secret(tmp, "token", "s3cr3t-token\n")
    d = Daemon("sampling.cpu_frequency = 499\npush.url = %s\npush.interval = 1s\n"
               "push.app_name = gpuprof-test\npush.bearer_token_file = %s\n"
               "push.tenant = team-a\npush.ca_file = %s\nsymbols.lines = false\n"
               % (rec.url(), tok, crt))
    w = None
    try:
        d.start()
        need_sampler(d)
        w = subprocess.Popen([WORKLOAD, "0"])

        def burner_seen():
            for up in rec.got():
                prof = multipart(up)["profile"]
                if b"matmul_tile" in gzip.decompress(prof):
                    return up
            return None
        up = wait_for(burner_seen, 45, "an upload holding the burner's frames")
        ups = rec.got()
        q = up["query"]
        eq(up["path"], "/ingest", "path")
        eq(q["name"], "gpuprof-test{host=%s}" % host_label(), "name")
        eq(q["format"], "pprof", "format")
        eq(q["sampleRate"], "499", "sampleRate")
        frm, until = int(q["from"]), int(q["until"])
        now = time.time()
        expect(now - 30 < frm < until <= now + 1 and until - frm <= 5,
               "from/until: the last window (at most 4 intervals) in UNIX seconds: %d..%d (now %d)" % (frm, until, now))
        eq(up["headers"].get("authorization"), "Bearer s3cr3t-token", "bearer authorization")
        eq(up["headers"].get("x-scope-orgid"), "team-a", "tenant header")
        # windows follow each other without overlap; a gap only where
        # the builder was still busy for four intervals (counted)
        wins = sorted((int(u["query"]["from"]), int(u["query"]["until"])) for u in ups)
        gaps = 0
        for a, b in zip(wins, wins[1:]):
            expect(b[0] >= a[1] - 1, "windows overlap: %r" % wins)
            gaps += b[0] > a[1]
        expect(not gaps or push_status(d)["windows_truncated"] >= 1,
               "a gap between windows is counted: %r" % wins)
        parts = multipart(up)
        stc = json.loads(parts["sample_type_config"])
        eq(stc["samples"]["display-name"], "cpu", "sample type config")
        raw = go_pprof(tmp, parts["profile"], "-raw")
        expect(re.search(r"^\s*\d+: .*matmul_tile", raw, re.M) or "matmul_tile" in raw,
               "go tool pprof -raw shows the burner's function:\n" + raw[:3000])
        top = go_pprof(tmp, parts["profile"], "-top", "-sample_index=samples",
                       "-tagfocus=pid=%d" % w.pid)
        expect("matmul_tile" in top, "the burner's samples carry its pid label:\n" + top[:3000])
        tags = go_pprof(tmp, parts["profile"], "-tags")
        expect("demo_workload" in tags and "cgroup" in tags,
               "comm and cgroup labels:\n" + tags[:3000])
        st = push_status(d)
        expect(st["enabled"] and st["upload"]["sent"] >= 1 and st["profiles"] >= 1,
               "status counts the uploads: %r" % st)
        eq(st["url"], rec.url(), "root sees the endpoint")
        eq(d.stop(), 0, "clean stop (threads joined, nothing leaked)")
    finally:
        if w:
            w.kill()
            w.wait()
        d.cleanup()
        rec.close()
        shutil.rmtree(tmp, ignore_errors=True)


@test
def failures_retry_with_backoff_then_drop():
    rec = Receiver()
    rec.script = [500, 500]
    tmp = tempfile.mkdtemp(prefix="gpd-push-")
    auth = secret(tmp, "basic", "alice:pa55word\n")
    # a 2 s interval: while the first window is retried (backoff 0.3 s,
    # then longer) at most one more window is queued, so a loaded machine
    # cannot overflow the queue (2) and drop the window being retried
    d = Daemon("push.url = %s\npush.interval = 2s\npush.basic_auth_file = %s\n"
               "push.queue_max = 2\npush.retry_max = 2s\nsymbols.lines = false\n"
               % (rec.url(), auth))
    w = subprocess.Popen([WORKLOAD, "0"])
    try:
        d.start()
        need_sampler(d)
        # the first profile is tried three times: 500, 500, then taken
        wait_for(lambda: len(rec.got()) >= 3, 20, "three attempts")
        a, b, c = rec.got()[:3]
        eq([u["code"] for u in (a, b, c)], [500, 500, 200], "answers")
        eq(a["query"]["from"], b["query"]["from"], "the same window retried")
        eq(b["query"]["from"], c["query"]["from"], "the same window retried again")
        g1, g2 = b["t"] - a["t"], c["t"] - b["t"]
        expect(0.3 <= g1 < g2, "the backoff grows: %.2fs then %.2fs" % (g1, g2))
        want = "Basic " + base64.b64encode(b"alice:pa55word").decode()
        eq(a["headers"].get("authorization"), want, "basic authorization")
        expect("x-scope-orgid" not in a["headers"], "no tenant header unless configured")
        # the store goes down: the queue (2) overflows and drops its oldest
        rec.default = 503
        def dropped():
            s = push_status(d)
            return s if s["upload"]["dropped_queue_full"] >= 1 else None
        st = wait_for(dropped, 20, "a drop counted in status")
        up = st["upload"]
        expect(up["retries"] >= 2 and up["failures"] >= 3 and up["queued"] <= 2,
               "retries, failures and a bounded queue: %r" % up)
        eq(up["last_http_status"], 503, "last status")
        # the daemon answered all along; the store comes back and takes the rest
        rec.default = 200
        sent = up["sent"]
        wait_for(lambda: push_status(d)["upload"]["sent"] > sent + 1, 20, "uploads again")
        eq(push_status(d)["upload"]["consecutive_failures"], 0, "failures reset")
        expect("url" in push_status(d), "root sees the url")
        human = d.ctl("status", check=0).stdout.decode()
        expect(re.search(r"upload: \d+ sent, .* dropped \(queue full\)", human),
               "status shows the upload counters:\n" + human)
        # a member of the group sees the counters, not the endpoint or its errors
        open_to_group(d)
        p = subprocess.run(as_attacker([GPUPROFCTL, "--socket", d.sock, "--json", "status"]),
                           capture_output=True, timeout=30)
        eq(p.returncode, 0, "status as a member: " + p.stderr.decode(errors="replace"))
        mine = json.loads(p.stdout)["push"]
        expect("url" not in mine and "last_error" not in mine["upload"]
               and mine["upload"]["sent"] >= 1, "a member's view: %r" % mine)
        # a store that hangs holds neither the loop nor the stop: the
        # upload in flight is aborted (push.timeout is 10 s here)
        rec.delay = 60
        n = rec.started
        wait_for(lambda: rec.started > n, 20, "an upload in flight")
        ms = []
        for _ in range(5):
            t1 = time.monotonic()
            d.call("status")
            ms.append(time.monotonic() - t1)
        expect(max(ms) < 2, "status answered while an upload hangs: %r s" % ms)
        t = time.monotonic()
        eq(d.stop(), 0, "clean stop with an upload in flight")
        expect(time.monotonic() - t < 8, "stopped in %.1f s" % (time.monotonic() - t))
    finally:
        w.kill()
        w.wait()
        d.cleanup()
        rec.close()
        shutil.rmtree(tmp, ignore_errors=True)


@test
def directory_sink_rotates_under_its_cap():
    tmp = tempfile.mkdtemp(prefix="gpd-push-")
    os.chmod(tmp, 0o755)
    pdir = os.path.join(tmp, "profiles")
    cap = 128 << 10
    d = Daemon("sampling.cpu_frequency = 99\npush.dir = %s\npush.dir_max_bytes = 128K\n"
               "push.interval = 1s\nsymbols.lines = false\n" % pdir)
    w = subprocess.Popen([WORKLOAD, "0"])
    try:
        d.start()
        need_sampler(d)
        def rotated():
            s = push_status(d)["dir_sink"]
            return s if s["removed"] >= 1 else None
        st = wait_for(rotated, 60, "the oldest profile removed")
        names = sorted(os.listdir(pdir))
        expect(names and all(re.fullmatch(r"gpuprof-\d{13}-\d{13}\.pb\.gz", n) for n in names),
               "only finished profiles, no temporary files: %r" % names)
        total = sum(os.path.getsize(os.path.join(pdir, n)) for n in names)
        expect(total <= cap, "%d bytes in %d files over the %d cap" % (total, len(names), cap))
        expect(st["written"] >= len(names) + 1, "written %r" % st)
        eq(stat.S_IMODE(os.stat(pdir).st_mode) & 0o022, 0, "directory writable by root only")
        for n in names:
            s = os.stat(os.path.join(pdir, n))
            eq((stat.S_IMODE(s.st_mode), s.st_uid), (0o640, os.geteuid()), "mode/owner of " + n)
        with open(os.path.join(pdir, names[-1]), "rb") as f:
            go_pprof(tmp, f.read(), "-raw")
        eq(d.stop(), 0, "clean stop")
    finally:
        w.kill()
        w.wait()
        d.cleanup()
    # a path through a symlink someone planted, or a directory someone
    # else owns, is refused at start
    try:
        os.symlink(tmp, os.path.join(tmp, "link"))
        for bad in (os.path.join(tmp, "link", "p2"), tmp + "/other"):
            if bad.endswith("other"):
                os.mkdir(bad)
                os.chown(bad, 65534, 65534)
            d = Daemon("push.dir = %s\n" % bad)
            try:
                d.start(wait=False)
                rc = d.proc.wait(15)
                eq(rc, 1, "start refused for " + bad)
                expect("push.dir" in d.read_log(), "the log says why:\n" + d.read_log())
                expect(not os.path.exists(os.path.join(tmp, "p2")), "nothing made through the link")
            finally:
                d.cleanup()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
