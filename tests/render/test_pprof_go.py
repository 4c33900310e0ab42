#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Our pprof export read by the real tool: `go tool pprof` (Debian's
golang-go) must accept the profile and report what we put in — sample
types, per-type totals, function names, stacks, mappings with their build
ids — for a CPU capture (render_tool synth pprof) and one with an EU-stall
section (synth pprof-xe) and one with NVIDIA PC samples (synth pprof-pc).
Exit 77 when `go` is not installed."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from gpd import Skip, eq, expect, main, test  # noqa: E402

TOOL = sys.argv.pop(1) if len(sys.argv) > 1 else "render_tool"
GO = shutil.which("go")
TMP = tempfile.mkdtemp(prefix="gpuprof-pprof-go-")
# go tool pprof wants a writable HOME (its ~/pprof directory) and GOCACHE
ENV = dict(os.environ, HOME=TMP, GOCACHE=os.path.join(TMP, "gocache"), GOFLAGS="",
           PPROF_TMPDIR=TMP)

REASONS = ["active", "control", "pipestall", "send", "dist_acc", "sbid", "sync",
           "inst_fetch", "other", "tdr"]
BID_APP = "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334"  # tests/render/synth.h
BID_BAD = "ffeeddccbbaa99887766554433221100"


def export(what):
    path = os.path.join(TMP, what + ".pb.gz")
    with open(path, "wb") as f:
        p = subprocess.run([TOOL, "synth", what], stdout=f, stderr=subprocess.PIPE, timeout=60)
    expect(p.returncode == 0, "render_tool synth %s: %s" % (what, p.stderr.decode()))
    return path


def pprof(*args):
    if not GO:
        raise Skip("`go` is not installed (Debian: apt-get install golang-go)")
    p = subprocess.run([GO, "tool", "pprof", "-symbolize=none"] + list(args),
                       capture_output=True, env=ENV, timeout=300)
    expect(p.returncode == 0, "go tool pprof %s: %s" % (args, p.stderr.decode(errors="replace")))
    return p.stdout.decode(errors="replace")


def raw(path):
    """-raw output -> (types, samples [(values, [loc ids])], locs {id: (addr, map, func)},
    maps {id: (start, limit, offset, file, build id)})."""
    text = pprof("-raw", path)
    sec = None
    types, samples, locs, maps = [], [], {}, {}
    for line in text.splitlines():
        if line in ("Samples:", "Locations", "Mappings"):
            sec = line
            continue
        if sec == "Samples:":
            if not types:
                types = [tuple(t.split("/")) for t in line.split()]
            elif ":" in line and re.match(r"^\s*\d", line):
                vals, ids = line.split(":", 1)
                samples.append(([int(v) for v in vals.split()], [int(i) for i in ids.split()]))
        elif sec == "Locations":
            m = re.match(r"^\s*(\d+): (0x[0-9a-f]+) (?:M=(\d+) )?(.*?) :\d+ s=\d+$", line)
            if m:
                locs[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3) or 0), m.group(4))
        elif sec == "Mappings":
            m = re.match(r"^(\d+): (0x[0-9a-f]+)/(0x[0-9a-f]+)/(0x[0-9a-f]+) (\S+) ?(\S*)", line)
            if m:
                maps[int(m.group(1))] = (int(m.group(2), 16), int(m.group(3), 16),
                                         int(m.group(4), 16), m.group(5),
                                         "" if m.group(6) == "[FN]" else m.group(6))
    expect(types and samples and locs and maps, "-raw output parsed:\n" + text)
    return types, samples, locs, maps


def stacks(samples, locs, idx):
    """root-first "a;b;c" -> summed value of sample type idx"""
    out = {}
    for vals, ids in samples:
        if vals[idx]:
            k = ";".join(locs[i][2] for i in reversed(ids))
            out[k] = out.get(k, 0) + vals[idx]
    return out


def map_of(maps, locs, func):
    return maps[[locs[i][1] for i in locs if locs[i][2] == func][0]]


@test
def go_reads_cpu_profile():
    types, samples, locs, maps = raw(export("pprof"))
    eq(types, [("samples", "count"), ("cpu", "nanoseconds"), ("launches", "count"),
               ("gpu", "nanoseconds")], "sample types")
    eq([sum(v[i] for v, _ in samples) for i in range(4)], [100, 100 * 10000000, 1, 12345],
       "totals per sample type")
    st = stacks(samples, locs, 0)
    eq(st["main;run;compute"], 60, "main;run;compute")
    eq(st["main;run;write_log;do_syscall_64;vfs_write"], 30, "user then kernel frames")
    eq(st["main;f\"q'<x>&y"], 10, "odd names survive")
    eq(stacks(samples, locs, 3), {"gemm<float>_[G]": 12345}, "GPU time")
    app = map_of(maps, locs, "compute")
    eq(app, (0x1000, 0x2000, 0x1000, "/usr/bin/app", BID_APP), "app mapping and build id")
    eq(map_of(maps, locs, "f\"q'<x>&y")[3:], ("/opt/bad/libbad.so", BID_BAD), "lib mapping")
    eq(map_of(maps, locs, "vfs_write")[3], "[kernel.kallsyms]", "kernel frames' mapping")
    eq(locs[[i for i in locs if locs[i][2] == "compute"][0]][0], 0x1003, "address kept")
    # pprof's own aggregation agrees, and names the main binary by its build id
    top = pprof("-top", "-sample_index=samples", export("pprof"))
    expect("Build ID: " + BID_APP in top, "main binary build id in -top:\n" + top)
    expect(re.search(r"^\s+60\s+60\.00%.*\scompute$", top, re.M), "-top compute 60:\n" + top)


@test
def go_reads_main_binary_and_lines():
    """render_tool synth pprof-main: a libc leaf is the first frame used, yet
    pprof takes the executable as the main binary; lines show with -lines."""
    path = export("pprof-main")
    text = pprof("-raw", path)
    expect(re.search(r"^1: 0x401000/0x402000/0x1000 /usr/bin/srv " + BID_APP, text, re.M),
           "mapping 1 is the executable:\n" + text)
    expect(re.search(r"^\s*\d+: 0x401234 M=1 serve /src/srv\.c:42 ", text, re.M),
           "serve at /src/srv.c:42 in the main mapping:\n" + text)
    top = pprof("-top", path)
    expect("Build ID: " + BID_APP in top, "main binary build id in -top:\n" + top)
    lines = pprof("-top", "-lines", path)
    expect(re.search(r"\smain /src/srv\.c:12$", lines, re.M), "-lines:\n" + lines)


@test
def go_reads_eu_stall_profile():
    types, samples, locs, maps = raw(export("pprof-xe"))
    eq(types[4:], [(r, "samples") for r in REASONS], "one sample type per stall reason")
    tot = dict((types[i][0], sum(v[i] for v, _ in samples)) for i in range(len(types)))
    eq([tot[r] for r in REASONS], [2, 0, 0, 8, 0, 0, 7, 0, 4, 0], "stall totals")
    eq(tot["samples"], 100, "CPU samples unchanged")
    send = [(v, ids) for v, ids in samples if v[types.index(("send", "samples"))]]
    eq(len(send), 1, "one (kernel, offset) sample with send stalls")
    v, ids = send[0]
    eq([locs[i][2] for i in ids], ["gemm<float>_[G]", "compute", "run", "main"],
       "GPU instruction on top of the launching CPU stack")
    eq(locs[ids[0]][0], 0xff000040, "kernel start + instruction offset")
    eq(v[types.index(("active", "samples"))], 2, "reasons of one offset in one sample")
    eq(maps[locs[ids[0]][1]][:4], (0xff000000, 0xff001000, 0, "model.zebin"), "GPU mapping")
    eq(maps[locs[ids[1]][1]][4], BID_APP, "CPU frames keep their build id")
    eq(stacks(samples, locs, types.index(("sync", "samples"))),
       {"main;run;compute;gemm<float>_[G]": 7}, "sync stalls at +0x80")
    eq(stacks(samples, locs, types.index(("other", "samples"))),
       {"[unattributed]_[G]": 4}, "unattributed stalls")
    top = pprof("-top", "-sample_index=send", export("pprof-xe"))
    expect(re.search(r"^\s+8samples\s+100%.*gemm<float>_\[G\]$", top, re.M),
           "-top -sample_index=send:\n" + top)


def run_tool(*args):
    p = subprocess.run([TOOL] + list(args), capture_output=True, timeout=60)
    expect(p.returncode == 0, "render_tool %s: %s" % (args, p.stderr.decode()))
    return p.stdout.decode()


@test
def go_reads_nvidia_stalls():
    """render_tool synth pprof-pc: NVIDIA PC samples as stall_samples/count,
    stall reason <- instruction <- kernel <- launching CPU stack, the same
    frames as folded --weight stalls; the reason also as a label."""
    path = export("pprof-pc")
    types, samples, locs, maps = raw(path)
    eq(types[-1], ("stall_samples", "count"), "one NVIDIA stall type, last")
    iv = len(types) - 1
    bar = "BAR.SYNC.DEFER_BLOCKING 0x0_[g]"
    want = {"main;run;compute;gemm<float>_[G];%s;barrier_[g]" % bar: 30,
            "main;run;compute;gemm<float>_[G];%s;long_scoreboard_[g]" % bar: 12,
            "main;run;compute;gemm<float>_[G];gemm<float>+0x40_[g];barrier_[g]": 5}
    eq(stacks(samples, locs, iv), want, "stall stacks")
    eq(sum(v[0] for v, _ in samples), 100, "CPU samples unchanged")
    # folded --weight stalls draws the same frames under the comm (the
    # offset alone: its kernel frame is its parent there)
    folded = {}
    for line in run_tool("synth", "folded-pc").splitlines():
        frames, n = line.rsplit(" ", 1)
        folded[frames.split(";", 1)[1].replace(";+0x40_[g]", ";gemm<float>+0x40_[g]")] = int(n)
    eq(folded, want, "pprof and folded agree")
    insn = [i for i in locs if locs[i][2] == bar][0]
    eq(locs[insn][:2], (0x1a0, 0), "instruction: its offset, no mapping")
    tags = pprof("-tags", "-sample_index=stall_samples", path)
    expect(re.search(r"stall_reason: Total 47(\.0)?\n\s+35(\.0)? \(\s*74\.47%\): barrier\n"
                     r"\s+12(\.0)? \(\s*25\.53%\): long_scoreboard", tags),
           "stall_reason label:\n" + tags)
    top = pprof("-top", path)  # the last type, stall_samples, by default
    expect("Type: stall_samples" in top and re.search(r"^\s+35\s.*\sbarrier_\[g\]$", top, re.M),
           "-top on stall samples:\n" + top)
    # --weight samples: the same profile opens on CPU samples
    top = pprof("-top", export("pprof-pc-cpu"))
    expect("Type: samples" in top and re.search(r"^\s+60\s.*\scompute$", top, re.M),
           "-top opens on CPU samples:\n" + top)


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
