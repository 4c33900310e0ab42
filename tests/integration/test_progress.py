# SPDX-License-Identifier: MIT
"""Progress of long commands: `capture --duration` counts down and `import`
shows reading, then finalizing, on one status line of stderr that is
rewritten in place and erased at the end, only when stderr is a terminal
(a pty here); with stderr on a pipe nothing at all."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from gpd import Daemon, GPUPROFCTL, test, main, expect, eq, run_on_pty  # noqa: E402

CLEAR = b"\r\x1b[K"


def on_a_tty(argv, both=False, env=None, timeout=60, interrupt_after=None):
    """run_on_pty() as a terminal of a known kind (TERM=xterm unless env
    says otherwise)."""
    return run_on_pty(argv, both, dict({"TERM": "xterm"}, **(env or {})), timeout,
                      interrupt_after)


def status_lines(term):
    """The texts drawn on the status line, and whether the last draw was
    erased (the terminal's bytes end with the clear)."""
    parts = term.split(CLEAR)
    expect(parts[0] == b"", "the status line starts with a clear: %r" % term[:80])
    return [x.decode() for x in parts[1:-1]], parts[-1]


class Sleeper:
    """A process to capture."""

    def __enter__(self):
        self.p = subprocess.Popen(["sleep", "60"])
        return self.p.pid

    def __exit__(self, *a):
        self.p.kill()
        self.p.wait()


@test
def capture_counts_down_on_a_terminal_and_erases_the_line():
    d = Daemon().start()
    try:
        with Sleeper() as pid:
            rc, term, out = on_a_tty([GPUPROFCTL, "--socket", d.sock, "capture", "--pid",
                                      str(pid), "--duration", "2s"])
        eq(rc, 0, "capture exit")
        lines, tail = status_lines(term)
        eq(tail, b"", "nothing after the erased status line")
        expect(lines, "a status line was drawn: %r" % term)
        expect(all(x.startswith("capturing: ") for x in lines), "status lines: %r" % lines)
        expect("capturing: 2s left of 2s [" in lines[0], "first: %r" % lines[0])
        expect(any(" 1s left of 2s [" in x for x in lines), "counts down: %r" % lines)
        expect(b"\x1b" not in out and b"\r" not in out, "stdout is clean: %r" % out)
        expect(b"duration:          2.00s" in out, "info printed: %r" % out)
    finally:
        d.cleanup()


@test
def an_interrupted_capture_leaves_no_status_line():
    d = Daemon().start()
    try:
        with Sleeper() as pid:
            rc, term, out = on_a_tty([GPUPROFCTL, "--socket", d.sock, "capture", "--pid",
                                      str(pid), "--duration", "30s"], interrupt_after=1.5,
                                     timeout=20)
        eq(rc, -signal.SIGINT, "killed by SIGINT, as without the status line")
        lines, tail = status_lines(term)
        expect(lines and all(x.startswith("capturing: ") for x in lines), "%r" % lines)
        eq(tail, b"", "the line was erased")
        eq(out, b"", "nothing on stdout")
        expect("result" in d.call("version"), "the daemon still answers")
    finally:
        d.cleanup()


@test
def json_on_the_same_terminal_starts_on_a_clean_line():
    d = Daemon().start()
    try:
        with Sleeper() as pid:
            rc, term, _ = on_a_tty([GPUPROFCTL, "--socket", d.sock, "--json", "capture",
                                    "--pid", str(pid), "--duration", "1s"], both=True)
        eq(rc, 0, "capture exit")
        lines, tail = status_lines(term)
        expect(lines and all(x.startswith("capturing: ") for x in lines), "%r" % lines)
        eq(json.loads(tail)["window"]["duration_ns"], 10**9, "the JSON after the erased line")
    finally:
        d.cleanup()


@test
def nothing_drawn_on_a_pipe_or_a_dumb_terminal():
    d = Daemon().start()
    try:
        with Sleeper() as pid:
            p = d.ctl("--json", "capture", "--pid", str(pid), "--duration", "1s", check=0)
            eq(p.stderr, b"", "stderr on a pipe")
            eq(json.loads(p.stdout)["window"]["duration_ns"], 10**9, "JSON on stdout")
            rc, term, out = on_a_tty([GPUPROFCTL, "--socket", d.sock, "capture", "--pid",
                                      str(pid), "--duration", "1s"], env={"TERM": "dumb"})
            eq(rc, 0, "capture exit")
            eq(term, b"", "TERM=dumb: no escape sequences")
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            f.write(b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,'
                    b'"ts":1,"dur":2,"args":{"stream":7,"correlation":1}}]}')
            f.flush()
            p = d.ctl("import", f.name, check=0)
            eq(p.stderr, b"", "import's stderr on a pipe")
            expect(p.stdout.startswith(b"capture "), "import printed: %r" % p.stdout)
    finally:
        d.cleanup()


def big_trace(path, events):
    with open(path, "w") as f:
        f.write('{"traceEvents":[')
        f.write(",".join('{"ph":"X","cat":"cpu_op","name":"op%d","pid":1,"tid":1,'
                         '"ts":%d,"dur":5}' % (i % 50, i * 10) for i in range(events)))
        f.write("]}")


@test
def import_shows_reading_then_finalizing():
    # 200k events (17 MiB): after the last byte is read the daemon still
    # decodes and indexes for about a second on a sanitizer build, several
    # 200 ms redraws.
    d = Daemon().start()
    tmp = tempfile.mkdtemp(prefix="gpd-progress-")
    path = os.path.join(tmp, "big.json")
    try:
        big_trace(path, 200000)
        rc, term, out = on_a_tty([GPUPROFCTL, "--socket", d.sock, "import", path])
        eq(rc, 0, "import exit: %r" % term[-300:])
        lines, tail = status_lines(term)
        eq(tail, b"", "nothing after the erased status line")
        expect(all(x.startswith("importing 1 file: ") for x in lines), "%r" % lines)
        expect(any(x.endswith("%)") for x in lines), "a reading stage: %r" % lines)
        expect(any("read, finalizing" in x for x in lines), "a finalizing stage: %r" % lines)
        expect(out.startswith(b"capture ") and b"200000 events" in out, "result: %r" % out)
    finally:
        os.unlink(path) if os.path.exists(path) else None
        os.rmdir(tmp)
        d.cleanup()


if __name__ == "__main__":
    main()
