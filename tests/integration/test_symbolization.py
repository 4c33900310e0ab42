#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Symbolization through the whole daemon: source lines recorded when a
capture is symbolized (config symbols.lines, on by default) and shown by
`gpuprofctl folded --lines`; the pprof export's main mapping (the profiled
executable) and its line numbers (docs/symbolization.md)."""

import gzip
import os
import re
import shutil
import subprocess
import tempfile
import time

from gpd import BUILD, Daemon, eq, expect, main, need_sampler, pb_dict, pb_fields, Skip, test

WORKLOAD = os.path.join(BUILD, "tests", "workloads", "demo_workload")  # built with -g
CONFIG = "sampling.cpu_frequency = 499\n"
LINE_RE = re.compile(r"^(\S.*) \((\S*demo_workload\.c):(\d+)\)$")


def capture(d, secs="1500ms"):
    w = subprocess.Popen([WORKLOAD, "0"])
    try:
        time.sleep(0.3)
        return w.pid, d.ctl_json("capture", "--pid", str(w.pid), "--duration", secs)
    finally:
        w.kill()
        w.wait()


def frames(text):
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        expect(count.isdigit(), "count after the last space: %r" % line)
        out.append((stack.split(";"), int(count)))
    return out


@test
def folded_lines_and_pprof():
    d = Daemon(CONFIG).start()
    try:
        need_sampler(d)
        pid, info = capture(d)
        cid = str(info["id"])
        plain = d.ctl("folded", cid, check=0).stdout.decode()
        expect("main;run_epoch;matmul_tile" in plain, "symbolized:\n" + plain[:1500])
        expect(not re.search(r"\.c:\d+\)", plain), "no lines unless asked:\n" + plain[:1500])
        text = d.ctl("folded", cid, "--lines", check=0).stdout.decode()
        fr = frames(text)
        eq(sum(n for _, n in fr), sum(n for _, n in frames(plain)), "same samples with --lines")
        hot = [f for stack, n in fr for f in stack if f.startswith("matmul_tile (")]
        expect(hot, "matmul_tile frames carry a line:\n" + text[:2000])
        m = LINE_RE.match(hot[0])
        expect(m, "func (demo_workload.c:N) form: %r" % hot[0])
        # the frames of libc (no DWARF on Debian) stay bare names
        bare = [f for stack, _ in fr for f in stack[1:] if f and " (" not in f]
        expect(bare, "frames without debug info keep their bare name")

        # pprof: the executable is the main (first) mapping, lines and file names known
        tmp = tempfile.mkdtemp()
        try:
            out = os.path.join(tmp, "p.pb.gz")
            d.ctl("export", cid, "--format", "pprof", "--out", out, check=0)
            with open(out, "rb") as f:
                prof = [(f, v) for f, _, v in pb_fields(gzip.decompress(f.read()))]
        finally:
            shutil.rmtree(tmp)
        strings = [v.decode(errors="replace") for f, v in prof if f == 6]
        maps = [pb_dict(v) for f, v in prof if f == 3]
        expect(maps, "mappings")
        eq(maps[0].get(1), 1, "first Mapping is id 1")
        expect(strings[maps[0][5]].endswith("/demo_workload"),
               "main mapping is the executable, not %r" % strings[maps[0][5]])
        funcs = {}
        for f, v in prof:
            if f == 5:
                fd = pb_dict(v)
                funcs[fd[1]] = (strings[fd.get(2, 0)], strings[fd.get(4, 0)])
        lines = {}
        for f, v in prof:
            if f == 4:
                for a, _, c in pb_fields(v):
                    if a == 4:
                        ln = pb_dict(c)
                        name, fname = funcs[ln[1]]
                        if ln.get(2):
                            lines.setdefault(name, set()).add((fname, ln[2]))
        expect("matmul_tile" in lines, "matmul_tile has lines in pprof: %r" % sorted(lines)[:20])
        fname, _ = next(iter(lines["matmul_tile"]))
        expect(fname.endswith("demo_workload.c"), "Function.filename: %r" % fname)
        # folded and pprof agree on matmul_tile's lines
        flines = set(int(LINE_RE.match(f).group(3)) for f in hot if LINE_RE.match(f))
        expect(flines & set(n for _, n in lines["matmul_tile"]), "same lines: %r vs %r"
               % (flines, lines["matmul_tile"]))
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def lines_off_by_config():
    d = Daemon(CONFIG + "symbols.lines = false\n").start()
    try:
        need_sampler(d)
        _, info = capture(d, secs="800ms")
        text = d.ctl("folded", str(info["id"]), "--lines", check=0).stdout.decode()
        expect("matmul_tile" in text, "symbolized:\n" + text[:1500])
        expect(not re.search(r"\.c:\d+\)", text), "no lines recorded:\n" + text[:1500])
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
