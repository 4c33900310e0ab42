#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Input hygiene and outputs that must not lose data, attacked through a real
daemon: capture names with terminal escapes and invalid UTF-8 from a real
unprivileged member of group gpuprof, shown on root's terminal; protocol
faults on the raw socket (two requests on a line, NUL bytes, ids a double
cannot echo); integers in replies in exponent form; a loose or foreign state
directory; --out files truncated by failing requests; imported captures whose
exports and folded stacks came out empty."""

import glob
import json
import os
import re
import stat
import subprocess

from gpd import (ATTACKER_PY, GPUPROFCTL, SHARED, Daemon, Skip, as_attacker, attacker, eq,
                 error_code, expect, main, open_to_group, run_on_pty, test)

TRACES = os.path.join(SHARED, "reference", "hta", "traces")


def trace_files(name):
    return sorted(glob.glob(os.path.join(TRACES, name, "*")))


def raw_reply(c, data):
    """Send raw bytes, return the raw bytes of the next reply line."""
    c.send_raw(data)
    while b"\n" not in c.buf:
        chunk = c.s.recv(65536)
        if not chunk:
            raise ConnectionResetError("daemon closed the connection")
        c.buf += chunk
    line, c.buf = c.buf.split(b"\n", 1)
    return line


def no_terminal_controls(data, what):
    """No C0 control but LF, no DEL, no C1 (U+0080..U+009F) in output bytes."""
    for i, b in enumerate(data):
        expect(b >= 0x20 or b == 0x0a, "%s: control byte 0x%02x at %d: %r" % (what, b, i, data[max(0, i - 20):i + 20]))
        expect(b != 0x7f, "%s: DEL at %d" % (what, i))
    text = data.decode("utf-8", errors="strict")
    for ch in text:
        expect(not (0x80 <= ord(ch) <= 0x9f), "%s: C1 control U+%04X" % (what, ord(ch)))


def write_trace(d, name, events, mode=0o644, extra=None):
    path = os.path.join(d.tmp, name)
    doc = {"traceEvents": events}
    doc.update(extra or {})
    with open(path, "w") as f:
        json.dump(doc, f)
    os.chmod(path, mode)
    return path


def attacker_ctl(d, *args):
    return subprocess.run(as_attacker([GPUPROFCTL, "--socket", d.sock] + list(args)),
                          capture_output=True, timeout=60)


ESC_NAME = "\x1b]0;owned\x07\x1b[2J\rroot# \n"


@test
def names_with_terminal_escapes_never_reach_roots_terminal():
    d = Daemon().start()
    try:
        open_to_group(d)
        path = write_trace(d, "t.json", [
            {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 100, "dur": 50}])
        # The attack: the attacker names its capture with escape sequences.
        p = attacker_ctl(d, "--json", "import", path, "--name", ESC_NAME)
        eq(p.returncode, 1, "a name with control characters is refused: %s" % p.stdout.decode())
        expect(b"-32602" in p.stderr and b"control characters" in p.stderr, p.stderr.decode())
        for bad in ["a\x1bb", "cr\r", "tab\there", "del\x7f", "c1\u009b"]:
            r = subprocess.run(as_attacker([ATTACKER_PY, "-c", (
                "import json,socket,sys\n"
                "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
                "s.sendall((json.dumps({'jsonrpc':'2.0','id':1,'method':'capture.start',"
                "'params':{'pids':[1],'last_ms':10,'name':sys.argv[2]}})+'\\n').encode())\n"
                "print(s.makefile('rb').readline().decode())\n"), d.sock, bad]),
                capture_output=True, timeout=30)
            eq(error_code(json.loads(r.stdout)), -32602, "capture.start name %r: %s" % (bad, r.stdout))
        # root's listing holds nothing the attacker wrote
        for args in (["list"], ["--json", "list"]):
            p = d.ctl(*args, check=0)
            no_terminal_controls(p.stdout, "gpuprofctl %s" % " ".join(args))
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def strings_from_a_trace_are_escaped_on_roots_terminal():
    d = Daemon().start()
    try:
        open_to_group(d)
        # A trace whose strings carry escapes: process and kernel names come
        # back in root's tables, and in errors quoting them.
        evil = "\x1b]2;pwned\x07\x9b31m\rK"
        path = write_trace(d, "evil.json", [
            {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": evil}},
            {"ph": "X", "cat": "cpu_op", "name": "op" + evil, "pid": 1, "tid": 1, "ts": 100, "dur": 50,
             "args": {"External id": 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110,
             "dur": 5, "args": {"correlation": 7, "External id": 1}},
            {"ph": "X", "cat": "kernel", "name": "kern" + evil, "pid": 0, "tid": 7, "ts": 120, "dur": 20,
             "args": {"stream": 7, "correlation": 7, "device": 0, "External id": 1}},
        ])
        p = attacker_ctl(d, "--json", "import", path, "--name", "fair")
        eq(p.returncode, 0, p.stderr.decode())
        cid = json.loads(p.stdout)["id"]
        # What root sees: list, info, the kernel table, an error quoting a string.
        for args in (["list"], ["info", str(cid)], ["analyze", "kernels", str(cid)],
                     ["analyze", "sequences", str(cid), "operator=op" + evil]):
            p = d.ctl(*args)
            no_terminal_controls(p.stdout, "stdout of gpuprofctl %s" % args[0])
            no_terminal_controls(p.stderr, "stderr of gpuprofctl %s" % args[0])
        # --wide: the name whole (100 columns would cut its end)
        p = d.ctl("--wide", "analyze", "kernels", str(cid), check=0)
        expect(b"kern\\x1b]2;pwned\\x07\\xc2\\x9b31m\\x0dK" in p.stdout,
               "the escapes are shown, visibly: %s" % p.stdout.decode())
        # --json is JSON: the C1 CSI leaves as \\u009b, not raw
        p = d.ctl("--json", "analyze", "kernels", str(cid), check=0)
        no_terminal_controls(p.stdout, "--json analyze kernels")
        json.loads(p.stdout)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def on_a_terminal(argv, timeout=60):
    """argv's stdout and stderr as a terminal shows them (a pty), bytes."""
    rc, out, _ = run_on_pty(argv, both=True, timeout=timeout)
    return rc, out


SPIN = ("import sys,time\n"
        "open('/proc/self/comm','wb').write(bytes.fromhex(sys.argv[1]))\n"
        "print('ready',flush=True)\n"
        "t=time.time()\n"
        "while time.time()-t<20: pass\n")


@test
def process_names_are_escaped_on_roots_terminal():
    d = Daemon("sampling.cpu_frequency = 499\n").start()
    try:
        cpu = [c for c in d.ctl_json("status")["collectors"] if c["name"] == "cpu"][0]
        if cpu["state"] != "attached":
            raise Skip("no CPU sampler here: %s" % cpu.get("reason"))
        open_to_group(d)
        # the attacker's own busy process, named with an OSC title change,
        # a C1 CSI and a byte that is not UTF-8 (comm is 15 bytes)
        comm = b"\x1b]0;pwn\x07\xc2\x9bJ\xff\r"
        w = subprocess.Popen(as_attacker([ATTACKER_PY, "-c", SPIN, comm.hex()]), stdout=subprocess.PIPE)
        try:
            eq(w.stdout.readline().strip(), b"ready", "workload started")
            pid = w.pid  # setpriv execs the interpreter in place
            with open("/proc/%d/comm" % pid, "rb") as f:
                eq(f.read().rstrip(b"\n"), comm, "the workload's comm")
            p = attacker_ctl(d, "--json", "capture", "--pid", str(pid), "--duration", "1500ms")
            eq(p.returncode, 0, p.stderr.decode())
            cid = json.loads(p.stdout)["id"]
        finally:
            w.kill()
            w.wait()
        # root on a terminal: folded stacks, the capture's info, the list
        for args in (["folded", str(cid)], ["info", str(cid)], ["list"],
                     ["flamegraph", str(cid), "--out", "-"]):
            rc, out = on_a_terminal([GPUPROFCTL, "--socket", d.sock] + args)
            eq(rc, 0, "gpuprofctl %s: %s" % (args[0], out[:300]))
            no_terminal_controls(out, "gpuprofctl %s on a terminal" % args[0])
            if args[0] == "folded":
                # (the folded writer already blanks C0 controls)
                expect(b"pwn \\xc2\\x9bJ\\xff" in out, "shown escaped: %r" % out[:300])
        # to a file the data stays as it is
        path = os.path.join(d.tmp, "f.folded")
        d.ctl("folded", str(cid), "--out", path, check=0)
        with open(path, "rb") as f:
            expect(b"pwn \xc2\x9bJ\xff" in f.read(), "the file keeps the bytes")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def invalid_utf8_is_refused_and_every_reply_is_utf8():
    d = Daemon().start()
    try:
        path = write_trace(d, "t.json", [
            {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2}])
        with d.connect() as c:
            # capture.start and capture.import names: raw 0xff / overlong / surrogate bytes
            for bad in (b"\xff\xfe", b"a\xc0\xafb", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"):
                line = raw_reply(c, b'{"jsonrpc":"2.0","id":1,"method":"capture.start","params":'
                                 b'{"pids":[1],"last_ms":10,"name":"' + bad + b'"}}\n')
                line.decode("utf-8")
                eq(error_code(json.loads(line)), -32602, "name %r" % bad)
                expect(b"UTF-8" in line, line)
            fd = os.open(path, os.O_RDONLY)
            try:
                c.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"capture.import","params":'
                           b'{"fd":0,"name":"x\xffy"}}\n', [fd])
            finally:
                os.close(fd)
            line = raw_reply(c, b"")
            eq(error_code(json.loads(line)), -32602, "import name")
            # a string id that is not UTF-8 cannot be echoed: invalid request, id null
            line = raw_reply(c, b'{"jsonrpc":"2.0","id":"\xc3\x28","method":"version"}\n')
            r = json.loads(line.decode("utf-8"))
            eq(error_code(r), -32600, "bad string id")
            eq(r["id"], None, "id of the refusal")
            # a parameter string that is not UTF-8, echoed in no reply
            line = raw_reply(c, b'{"jsonrpc":"2.0","id":3,"method":"capture.list","params":'
                             b'{"\xff":1}}\n')
            line.decode("utf-8")
            line = raw_reply(c, b'{"jsonrpc":"2.0","id":4,"method":"capture.list"}\n')
            r = json.loads(line.decode("utf-8"))
            eq(r["result"]["captures"], [], "nothing was stored")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def one_request_per_line_and_no_nul():
    d = Daemon().start()
    try:
        with d.connect() as c:
            # two objects on one line: an error, not the first run and the second dropped
            line = raw_reply(c, b'{"jsonrpc":"2.0","id":1,"method":"version"}'
                             b'{"jsonrpc":"2.0","id":2,"method":"capture.delete","params":{"id":1}}\n')
            r = json.loads(line)
            eq(error_code(r), -32700, "trailing data: %s" % line)
            eq(r["id"], None, "id of a message that is not one request")
            expect("data after the JSON value" in r["error"]["message"], line)
            # the connection goes on, in order
            r = json.loads(raw_reply(c, b'{"jsonrpc":"2.0","id":3,"method":"version"}\n'))
            eq(r["id"], 3, "next reply is for the next request")
            expect("result" in r, r)
            # whitespace after the value is fine
            r = json.loads(raw_reply(c, b'{"jsonrpc":"2.0","id":4,"method":"version"} \t\r\n'))
            eq(r["id"], 4, "trailing whitespace")
            expect("result" in r, r)
            # a raw NUL, after the value or inside a string
            for msg in (b'{"jsonrpc":"2.0","id":5,"method":"version"}\x00\n',
                        b'{"jsonrpc":"2.0","id":6,"method":"version\x00evil"}\n',
                        b'\x00{"jsonrpc":"2.0","id":7,"method":"version"}\n'):
                r = json.loads(raw_reply(c, msg))
                eq(error_code(r), -32700, "NUL in %r" % msg)
                expect("NUL" in r["error"]["message"], r)
            r = json.loads(raw_reply(c, b'{"jsonrpc":"2.0","id":8,"method":"version"}\n'))
            eq(r["id"], 8, "still in step")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def ids_are_echoed_exactly_or_refused():
    d = Daemon().start()
    try:
        with d.connect() as c:
            for bad in (b"1e400", b"-1e400", b"0.5", b"9007199254740993", b"9007199254740992",
                        b"1e300", b"true", b"{}"):
                line = raw_reply(c, b'{"jsonrpc":"2.0","id":' + bad + b',"method":"version"}\n')
                r = json.loads(line)
                eq(error_code(r), -32600, "id %s: %s" % (bad, line))
                eq(r["id"], None, "id %s" % bad)
            for good, text in ((b"1000000000000000", b'"id":1000000000000000,'),
                               (b"9007199254740991", b'"id":9007199254740991,'),
                               (b"-42", b'"id":-42,'), (b"1e15", b'"id":1000000000000000,'),
                               (b'"abc\\u00e9"', '"id":"abcé",'.encode())):
                line = raw_reply(c, b'{"jsonrpc":"2.0","id":' + good + b',"method":"version"}\n')
                expect(text in line, "id %s echoed as %s" % (good, line))
                expect("result" in json.loads(line), line)
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def number_tokens(text):
    """The number tokens of JSON text, outside strings."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        m = re.match(r"-?[0-9][0-9.eE+-]*", text[i:])
        if m and (i == 0 or text[i - 1] in ":,[ "):
            out.append(m.group(0))
            i += len(m.group(0))
            continue
        i += 1
    return out


@test
def integers_in_replies_are_exact():
    d = Daemon().start()
    try:
        # 4458676416789 us: start_ns 4458676416789000, which %.15g prints as
        # 4.458676416789e+15; and a wall-clock-sized one past 2^53
        path = write_trace(d, "t.json", [
            {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 4458676416789, "dur": 1000000},
            {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 4458677416789, "dur": 2}])
        info = d.ctl_json("import", path)
        with d.connect() as c:
            for method, params in (("capture.info", {"id": info["id"]}), ("capture.list", None),
                                   ("status", None)):
                msg = {"jsonrpc": "2.0", "id": 1, "method": method}
                if params:
                    msg["params"] = params
                line = raw_reply(c, (json.dumps(msg) + "\n").encode()).decode()
                for tok in number_tokens(line):
                    expect("e" not in tok.lower(), "%s: number in exponent form %s in %s" % (method, tok, line[:400]))
                if method == "capture.info":
                    expect('"start_ns":4458676416789000' in line, line[:400])
                    expect('"end_ns":4458677416791000' in line, line[:400])
        # the CLI's --json passes them on unchanged
        p = d.ctl("--json", "info", str(info["id"]), check=0)
        expect(b'"start_ns": 4458676416789000' in p.stdout or b'"start_ns":4458676416789000' in p.stdout,
               p.stdout.decode()[:400])
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def a_loose_state_dir_is_tightened_and_a_foreign_one_refused():
    d = Daemon()
    try:
        os.makedirs(d.state)
        os.chmod(d.state, 0o777)
        d.start()
        mode = stat.S_IMODE(os.stat(d.state).st_mode)
        eq(mode, 0o750, "state dir mode after start (was 0777)")
        expect("had mode 0777" in d.read_log(), d.read_log())
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()
    d = Daemon()
    try:
        uid, gid = attacker()
        os.makedirs(d.state)
        os.chown(d.state, uid, gid)
        os.chmod(d.state, 0o700)
        # the attacker owns it: it could plant links and swap captures in it
        d.start(wait=False)
        rc = d.proc.wait(20)
        expect(rc != 0, "gpuprofd refuses a state dir owned by uid %d (exit %d)" % (uid, rc))
        expect("owned by uid %d" % uid in d.read_log(), d.read_log())
    finally:
        d.cleanup()


def keep_file(d, name, mode=0o640):
    path = os.path.join(d.tmp, "out", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"precious work\n")
    os.chmod(path, mode)
    return path


@test
def a_failing_output_keeps_the_existing_file():
    d = Daemon().start()
    try:
        imp = d.ctl_json("import", *trace_files("alexnet"))["id"]
        outdir = os.path.join(d.tmp, "out")
        cases = [
            ("folded", ["folded", "999", "--out"]),
            ("flamegraph", ["flamegraph", "999", "--out"]),
            ("heatmap", ["heatmap", "999", "--out"]),
            ("export-chrome", ["export", "999", "--format", "chrome", "--out"]),
            ("export-pprof-of-import", ["export", str(imp), "--format", "pprof", "--out"]),
            ("comm-svg", ["analyze", "comm", "999", "--svg"]),
        ]
        for name, args in cases:
            path = keep_file(d, name + ".out")
            p = d.ctl(*(args + [path]))
            expect(p.returncode != 0, "%s fails: %s" % (name, p.stderr.decode()))
            with open(path, "rb") as f:
                eq(f.read(), b"precious work\n", "%s: the existing --out file is untouched" % name)
            eq(stat.S_IMODE(os.stat(path).st_mode), 0o640, name + ": mode")
        eq(sorted(os.listdir(outdir)), sorted(n + ".out" for n, _ in cases), "no temporary files left")
        # success replaces it, keeping its mode; through a symlink, the target
        path = keep_file(d, "good.json", 0o600)
        link = os.path.join(outdir, "link.json")
        os.symlink("good.json", link)
        p = d.ctl("export", str(imp), "--format", "chrome", "--out", link, check=0)
        expect(os.path.islink(link), "the symlink stays a symlink")
        with open(path) as f:
            expect(len(json.load(f)["traceEvents"]) > 0, "replaced with the export")
        eq(stat.S_IMODE(os.stat(path).st_mode), 0o600, "mode kept on success")
        # hard links are kept: the file is written in place, cut to length
        # only on success
        hard = keep_file(d, "hard.folded", 0o644)
        with open(hard, "wb") as f:
            f.write(b"x" * 10000000)
        other = os.path.join(outdir, "hard-other")
        os.link(hard, other)
        p = d.ctl("folded", "999", "--out", hard)
        expect(p.returncode != 0, "bad id")
        eq(os.path.getsize(hard), 10000000, "a failed request leaves the linked file")
        d.ctl("folded", str(imp), "--out", hard, check=0)
        expect(os.path.samefile(hard, other), "still one file")
        with open(other, "rb") as f:
            data = f.read()
        expect(data.startswith(b"rank 0;") and len(data) < 10000000 and b"xxxx" not in data,
               "the linked file holds the new output only")
        # a member writing a file it may write in a directory it may not:
        # in place as well, untouched by a failure
        open_to_group(d)
        shared = keep_file(d, "shared.folded", 0o666)
        p = attacker_ctl(d, "folded", "999", "--out", shared)
        expect(p.returncode != 0, "bad id: %s" % p.stderr.decode())
        with open(shared, "rb") as f:
            eq(f.read(), b"precious work\n", "the shared file is untouched")
        # a new file gets 0644 under the umask, as before
        new = os.path.join(outdir, "new.folded")
        d.ctl("folded", str(imp), "--out", new, check=0)
        eq(stat.S_IMODE(os.stat(new).st_mode), 0o644 & ~current_umask(), "mode of a new file")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def current_umask():
    u = os.umask(0)
    os.umask(u)
    return u


def event_count(d, cid):
    return d.ctl_json("info", str(cid))["import"]["events"]


@test
def an_imported_capture_exports_its_events_and_imports_again_the_same():
    d = Daemon().start()
    try:
        for name, analyses in (("alexnet", ["temporal", "kernels", "idle", "overlap", "launch", "queue"]),
                               ("nccl_parser_config", ["temporal", "kernels", "idle"])):
            info = d.ctl_json("import", *trace_files(name), "--name", name)
            out = os.path.join(d.tmp, name + ".json")
            res = d.ctl_json("export", str(info["id"]), "--format", "chrome", "--out", out)
            with open(out) as f:
                doc = json.load(f)
            ev = doc["traceEvents"]
            xs = [e for e in ev if e["ph"] == "X"]
            expect(len(xs) >= info["import"]["events"], "%s: %d X events for %d kept" % (
                name, len(xs), info["import"]["events"]))
            eq(res["events"], info["import"]["events"], name + ": events in the result")
            for e in xs[:50]:
                for k in ("pid", "tid", "ts", "dur", "name", "cat", "args"):
                    expect(k in e, "%s: %s in %r" % (name, k, e))
            expect(any(e["ph"] == "M" and e["name"] == "process_name" for e in ev), name + ": metadata")
            again = d.ctl_json("import", out, "--name", name + "-again")
            eq(again["import"]["events"], info["import"]["events"], name + ": events after the round trip")
            for a in analyses:
                one = d.ctl_json("analyze", a, str(info["id"]))
                two = d.ctl_json("analyze", a, str(again["id"]))
                eq(two, one, "%s: analyze %s after the round trip" % (name, a))
        # several ranks: one per file, named
        files = trace_files("trace_filter")
        info = d.ctl_json("import", *files)
        out = os.path.join(d.tmp, "multi.json")
        p = d.ctl("export", str(info["id"]), "--format", "chrome", "--out", out)
        eq(p.returncode, 1, "several ranks need --rank")
        expect(b"-32602" in p.stderr and b"rank" in p.stderr, p.stderr.decode())
        expect(not os.path.exists(out), "no file from a failed export")
        rank = info["import"]["ranks"][-1]
        d.ctl_json("export", str(info["id"]), "--format", "chrome", "--rank", str(rank), "--out", out)
        with open(out) as f:
            eq(json.load(f)["distributedInfo"]["rank"], rank, "the rank is kept")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def an_imported_capture_folds_its_cpu_ops():
    d = Daemon().start()
    try:
        path = write_trace(d, "ops.json", [
            {"ph": "M", "name": "thread_name", "pid": 10, "tid": 11, "args": {"name": "main"}},
            {"ph": "X", "cat": "cpu_op", "name": "A", "pid": 10, "tid": 11, "ts": 1000, "dur": 100},
            {"ph": "X", "cat": "cpu_op", "name": "B", "pid": 10, "tid": 11, "ts": 1010, "dur": 30},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 11, "ts": 1020,
             "dur": 5, "args": {"correlation": 1}},
            {"ph": "X", "cat": "user_annotation", "name": "C;x", "pid": 10, "tid": 11, "ts": 1050, "dur": 10},
            {"ph": "X", "cat": "cpu_op", "name": "D", "pid": 10, "tid": 12, "ts": 1000, "dur": 7},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1030, "dur": 50,
             "args": {"stream": 7, "correlation": 1}},
        ])
        info = d.ctl_json("import", path)
        p = d.ctl("folded", str(info["id"]), check=0)
        got = dict(l.rsplit(" ", 1) for l in p.stdout.decode().splitlines())
        got = {k: int(v) for k, v in got.items()}
        want = {
            "rank 0;pid 10;main (tid 11);A": 60000,
            "rank 0;pid 10;main (tid 11);A;B": 25000,
            "rank 0;pid 10;main (tid 11);A;B;cudaLaunchKernel": 5000,
            "rank 0;pid 10;main (tid 11);A;C:x": 10000,
            "rank 0;pid 10;tid 12;D": 7000,
        }
        eq(got, want, "folded CPU-op stacks weighted by exclusive ns")
        # the flame graph draws the same stacks
        svg = os.path.join(d.tmp, "f.svg")
        d.ctl("flamegraph", str(info["id"]), "--out", svg, check=0)
        with open(svg) as f:
            expect("cudaLaunchKernel" in f.read(), "flame graph of the CPU ops")
        # what cannot be made fails clearly, never an empty success
        for args in (["export", str(info["id"]), "--format", "pprof", "--out", os.path.join(d.tmp, "x.pb")],
                     ["heatmap", str(info["id"]), "--out", os.path.join(d.tmp, "h.svg")]):
            p = d.ctl(*args)
            eq(p.returncode, 1, "%s of an import" % args[0])
            expect(b"imported trace" in p.stderr, p.stderr.decode())
        gpu_only = write_trace(d, "gpu.json", [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1030, "dur": 50,
             "args": {"stream": 7, "correlation": 1}}])
        g = d.ctl_json("import", gpu_only)
        p = d.ctl("folded", str(g["id"]))
        eq(p.returncode, 1, "folded of a trace without CPU events: %s" % p.stdout)
        expect(b"-32010" in p.stderr, p.stderr.decode())
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
