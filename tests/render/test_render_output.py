#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Structural checks of the renderers' output, through render_tool: the SVG
is well-formed XML whatever the frame names hold, frames match a reference
aggregation of the folded input (count, widths, no overlaps), the diff and
heat map carry what they promise, pprof decodes (a small protobuf reader)
with the right totals, and the Chrome trace's stackFrames resolve."""

import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from gpd import eq, expect, main, pb_fields, test  # noqa: E402

TOOL = sys.argv.pop(1) if len(sys.argv) > 1 else "render_tool"
SVG = "{http://www.w3.org/2000/svg}"
FG = "{urn:gpuprof:flame}"
W, XPAD = 1200, 10


def run(*args, data=None):
    p = subprocess.run([TOOL] + list(args), input=data, capture_output=True, timeout=60)
    expect(p.returncode == 0, "render_tool %s: %s" % (args, p.stderr.decode(errors="replace")))
    stats = dict(kv.split("=", 1) for kv in p.stderr.decode().split() if "=" in kv)
    return p.stdout, stats


def frames_of(svg):
    root = ET.fromstring(svg)
    out = []
    for g in root.find(SVG + "g[@id='frames']"):
        title, rect, text = list(g)
        out.append({
            "title": title.text, "x": float(rect.get("x")), "w": float(rect.get("width")),
            "y": float(rect.get("y")), "fx": int(rect.get(FG + "x")), "fw": int(rect.get(FG + "w")),
            "fill": rect.get("fill"), "label": text.text or "",
        })
    return root, out


def reference(lines):
    """path tuple -> count, every prefix included (the frame tree)."""
    tree = {(): 0}
    for stack, n in lines:
        fr = tuple(stack.split(";"))
        for k in range(len(fr) + 1):
            tree[fr[:k]] = tree.get(fr[:k], 0) + n
    return tree


def check_layout(fr, total):
    eq(len([f for f in fr if f["title"].startswith("all (")]), 1, "one root")
    by_y = {}
    for f in fr:
        by_y.setdefault(f["y"], []).append(f)
    for y, row in by_y.items():
        row.sort(key=lambda f: f["fx"])
        for a, b in zip(row, row[1:]):
            expect(a["fx"] + a["fw"] <= b["fx"], "overlap at y=%s: %r %r" % (y, a, b))
            expect(a["x"] + a["w"] <= b["x"] + 0.02, "pixel overlap at y=%s" % y)
        expect(sum(f["fw"] for f in row) <= total, "level wider than the total")
        for f in row:
            expect(abs(f["x"] - (XPAD + f["fx"] * (W - 2 * XPAD) / total)) < 0.01, "x from fg:x")
            expect(abs(f["w"] - f["fw"] * (W - 2 * XPAD) / total) < 0.01, "width from fg:w")


def render_lines(lines, *opts):
    with tempfile.NamedTemporaryFile("wb", suffix=".folded", delete=False) as f:
        for s, n in lines:
            f.write(s.encode("utf-8", "surrogateescape") + b" %d\n" % n)
    try:
        return run("flame", *opts, f.name)
    finally:
        os.unlink(f.name)


@test
def random_stacks_match_reference():
    rnd = random.Random(7)
    names = ["fn%d" % i for i in range(40)]
    lines = [(";".join(rnd.choice(names) for _ in range(rnd.randint(1, 12))), rnd.randint(1, 50))
             for _ in range(3000)]
    svg, st = render_lines(lines, "--minwidth", "0.000001")
    ref = reference(lines)
    total = ref[()]
    root, fr = frames_of(svg)
    eq(int(st["total"]), total, "total")
    # a tiny minwidth drops nothing: every tree node is drawn
    eq(len(fr), len(ref), "one frame per tree node")
    check_layout(fr, total)
    widths = sorted(f["fw"] for f in fr)
    eq(widths, sorted(ref.values()), "frame counts are the reference's")
    # default pruning keeps exactly the nodes wider than 0.1 px
    svg, st = render_lines(lines)
    _, fr = frames_of(svg)
    px = (W - 2 * XPAD) / total
    eq(len(fr), sum(1 for v in ref.values() if v * px >= 0.1), "pruned at 0.1 px")
    eq(int(st["frames"]) + int(st["pruned"]), len(ref), "drawn + pruned = all")


@test
def icicle_puts_root_on_top():
    lines = [("a;b;c", 3), ("a;d", 1)]
    _, fl = frames_of(render_lines(lines)[0])
    _, ic = frames_of(render_lines(lines, "--icicle")[0])
    y = lambda fr, t: [f["y"] for f in fr if f["title"].startswith(t + " (")][0]  # noqa: E731
    expect(y(fl, "all") > y(fl, "c"), "flame: root at the bottom")
    expect(y(ic, "all") < y(ic, "c"), "icicle: root at the top")


@test
def hostile_names_stay_well_formed():
    names = ["<script>alert(1)</script>", "a&b", "q\"uo'te", "bad\udcff\udcfebytes", "é✓",
             "ctl\x01x", "]]>", "x" * 300]
    lines = [(";".join(["root", n]), 5) for n in names]
    svg, st = render_lines(lines, "--title", "t<&>\"", "--subtitle", "s&", "--countname", "µs")
    root, fr = frames_of(svg)  # ET raises on anything malformed
    titles = [f["title"] for f in fr]
    for want in ["<script>alert(1)</script> (5 µs", "a&b (5", "q\"uo'te (5", "é✓ (5",
                 "bad\ufffd\ufffdbytes (5", "ctl x (5", "]]> (5"]:
        expect(any(t.startswith(want) for t in titles), "title %r in %r" % (want, titles))
    eq(len(root.findall(".//" + SVG + "script")), 1, "only our own script element")
    eq(root.find(SVG + "text[@id='title']").text, "t<&>\"", "title escaped")
    long = [f for f in fr if f["title"].startswith("xxx")][0]
    expect(long["label"].endswith("..") and len(long["label"]) < 300, "long label truncated")


@test
def diff_colours_and_widths():
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a"), os.path.join(d, "b")
        open(a, "w").write("m;grow 10\nm;same 10\nm;shrink 10\n")
        open(b, "w").write("m;grow 30\nm;same 10\nm;shrink 5\nm;new 5\n")
        svg, st = run("diff", a, b)
    _, fr = frames_of(svg)
    by = {f["title"].split(" (")[0]: f for f in fr}
    eq(int(st["total"]), 50, "width by B")
    eq(by["grow"]["fw"], 30, "grow width")
    expect(by["grow"]["fill"].startswith("rgb(255,"), "grow is red: %s" % by["grow"]["fill"])
    expect(by["shrink"]["fill"].endswith(",255)"), "shrink is blue")
    expect(by["new"]["fill"].startswith("rgb(255,"), "new is red")
    eq(by["same"]["fill"], "rgb(250,250,250)", "unchanged is neutral")


def packed(b):
    vals, v, s = [], 0, 0
    for x in b:
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            vals.append(v)
            v = s = 0
    return vals


def decode_pprof(data):
    prof = pb_fields(gzip.decompress(data))
    strings = [v.decode() for f, _, v in prof if f == 6]
    eq(strings[0], "", "string table starts with \"\"")
    st = lambda i: strings[i]  # noqa: E731
    types = []
    for f, _, v in prof:
        if f == 1:
            d = dict((a, c) for a, _, c in pb_fields(v))
            types.append((st(d.get(1, 0)), st(d.get(2, 0))))
    funcs = {}
    for f, _, v in prof:
        if f == 5:
            d = dict((a, c) for a, _, c in pb_fields(v))
            funcs[d[1]] = st(d.get(2, 0))
    locs = {}
    for f, _, v in prof:
        if f == 4:
            fl = pb_fields(v)
            d = dict((a, c) for a, _, c in fl if a != 4)
            lines = [dict((a, c) for a, _, c in pb_fields(c)) for a, _, c in fl if a == 4]
            locs[d[1]] = (d.get(3, 0), [funcs[ln[1]] for ln in lines])
    samples = []
    for f, _, v in prof:
        if f == 2:
            fl = pb_fields(v)
            loc = [x for a, _, c in fl if a == 1 for x in packed(c)]
            val = [x for a, _, c in fl if a == 2 for x in packed(c)]
            labels = {}
            for a, _, c in fl:
                if a == 3:
                    d = dict((k, x) for k, _, x in pb_fields(c))
                    labels[st(d[1])] = st(d[2]) if 2 in d else d.get(3, 0)
            samples.append((loc, val, labels))
    period = [v for f, _, v in prof if f == 12]
    return types, funcs, locs, samples, period


@test
def pprof_main_mapping_and_lines():
    """The profiled executable is the first Mapping (pprof's main binary),
    though a libc frame is the first one used; lines and file names come
    from the symbols section."""
    data, _ = run("synth", "pprof-main")
    prof = pb_fields(gzip.decompress(data))
    strings = [v.decode() for f, _, v in prof if f == 6]
    maps = [dict((a, c) for a, _, c in pb_fields(v)) for f, _, v in prof if f == 3]
    expect(maps, "mappings present")
    eq(maps[0].get(1), 1, "first Mapping has id 1")
    eq(strings[maps[0][5]], "/usr/bin/srv", "main mapping is the executable")
    eq(sorted(strings[m[5]] for m in maps), ["/usr/bin/srv", "/usr/lib/x86_64-linux-gnu/libc.so.6"],
       "both mappings")
    funcs = {}
    for f, _, v in prof:
        if f == 5:
            d = dict((a, c) for a, _, c in pb_fields(v))
            funcs[d[1]] = (strings[d.get(2, 0)], strings[d.get(4, 0)])
    got = {}
    for f, _, v in prof:
        if f == 4:
            fl = pb_fields(v)
            d = dict((a, c) for a, _, c in fl if a != 4)
            for a, _, c in fl:
                if a == 4:
                    ln = dict((k, x) for k, _, x in pb_fields(c))
                    name, fname = funcs[ln[1]]
                    got[name] = (fname, ln.get(2, 0), d.get(2, 0))
    eq(got["serve"], ("/src/srv.c", 42, 1), "serve: file, line, main mapping")
    eq(got["main"], ("/src/srv.c", 12, 1), "main: file, line")
    eq(got["memcpy"][:2], ("", 0), "no line where none is known")
    expect(got["memcpy"][2] not in (0, 1), "memcpy in libc's mapping")


@test
def pprof_decodes_with_totals():
    data, _ = run("synth", "pprof")
    types, funcs, locs, samples, period = decode_pprof(data)
    eq(types, [("samples", "count"), ("cpu", "nanoseconds"), ("launches", "count"),
               ("gpu", "nanoseconds")], "sample types")
    eq(period, [10000000], "period")
    tot = [sum(s[1][i] for s in samples) for i in range(4)]
    eq(tot, [100, 100 * 10000000, 1, 12345], "totals per value type")
    for loc, val, _ in samples:
        eq(len(val), 4, "one value per type")
        for l in loc:
            expect(l in locs, "location %d defined" % l)
    stacks = {}
    for loc, val, lab in samples:
        names = [locs[l][1][0] for l in loc]
        stacks[";".join(reversed(names))] = (val[0], lab)
    eq(stacks["main;run;compute"][0], 60, "compute samples")
    eq(stacks["main;run;write_log;do_syscall_64;vfs_write"][0], 30, "kernel frames follow user ones")
    eq(stacks["main;run;compute"][1], {"comm": "app", "pid": 10}, "labels")
    expect("gemm<float>_[G]" in stacks, "GPU kernel frame")
    eq(locs[[l for l in locs if locs[l][1] == ["compute"]][0]][0], 0x1003, "address kept")


@test
def chrome_trace_stack_frames():
    data, _ = run("synth", "chrome")
    t = json.loads(data)
    sf = t["stackFrames"]

    def path(i):
        out = []
        while i is not None:
            out.append(sf[str(i)]["name"])
            i = sf[str(i)].get("parent")
        return ";".join(reversed(out))
    samples = [e for e in t["traceEvents"] if e.get("cat") == "cpu"]
    eq(len(samples), 100, "one instant per sample")
    paths = {}
    for e in samples:
        paths[path(e["sf"])] = paths.get(path(e["sf"]), 0) + 1
    eq(paths["app;main;run;compute"], 60, "sample stacks resolve")
    eq(paths["bad<&>\ufffd;main;f\"q'<x>&y"], 10, "hostile names survive JSON")
    k = [e for e in t["traceEvents"] if e.get("cat") == "kernel"][0]
    eq((k["ts"], k["dur"]), (1000000008.0, 12.345), "exact ns decimals")
    names = {e["args"]["name"] for e in t["traceEvents"] if e["ph"] == "M"}
    expect("GPU context 3" in names and "app" in names, "thread names: %r" % names)


@test
def heatmap_cells():
    data, st = run("synth", "heat", "--bucket-ms", "20")
    root = ET.fromstring(data)
    cells = root.findall(".//" + SVG + "g[@id='cells']/" + SVG + "rect")
    eq(len(cells), 150, "3 s x 50 rows")
    HM = "{urn:gpuprof:heatmap}"
    eq(sum(int(c.get(HM + "n")) for c in cells), 100, "samples in cells")
    for c in cells:
        expect(int(c.get(HM + "e")) - int(c.get(HM + "s")) == 20000000 - 1, "20 ms cells")


@test
def heatmap_nvidia_stalls():
    """--weight stalls: each PC sample's own instruction and reason (the
    capture's SASS text, else its offset), counted in stall samples, and
    the range command keeps the weight."""
    page, _ = run("synth", "heat", "--weight", "stalls")
    d = heat_data(page)
    eq(d["count"], "stall samples", "unit")
    for name in ("BAR.SYNC.DEFER_BLOCKING 0x0_[g]", "+0x40_[g]", "barrier_[g]",
                 "long_scoreboard_[g]"):
        expect(name in d["names"], "%s in %r", name, d["names"])
    eq(sum(d["cells"][i + 3 + 2 * j] for i, k in heat_cells(d["cells"]) for j in range(k)), 47,
       "samples")
    expect(b"--weight stalls" in page, "range command keeps the weight")


def heat_cells(c):
    """(offset, pairs) of each cell of HMD.cells"""
    i = 0
    while i < len(c):
        yield i, c[i + 1]
        i += 2 + 2 * c[i + 1]


def heat_data(page):
    """The page's embedded data (a JSON object literal in its own script)."""
    text = page.decode("utf-8")
    a = text.index("var HMD=") + len("var HMD=")
    return json.loads(text[a:text.index(";\n]]></script>", a)])


@test
def heatmap_embedded_stacks():
    """Every cell's embedded stacks add up to its hm:n; the stack table is
    depth-first with siblings in byte order; each node's path is a line of
    the capture's folded output, with the counts the folded renderer gives."""
    page, _ = run("synth", "heat")
    root = ET.fromstring(page)
    d = heat_data(page)
    HM = "{urn:gpuprof:heatmap}"
    cells = root.findall(".//" + SVG + "g[@id='cells']/" + SVG + "rect")
    eq(len(cells), d["rows"] * d["cols"], "grid = data shape")
    par = [None] + d["nodes"][0::2]
    nm = [0] + d["nodes"][1::2]
    eq(len(d["names"]), len(d["colors"]), "a colour per name")
    eq(d["names"][0], "all", "root")
    for i in range(1, len(par)):
        expect(par[i] < i, "parents first: %d" % i)
    sums = [0] * len(cells)
    paths = {}
    c = d["cells"]
    i = 0
    while i < len(c):
        cell, k = c[i], c[i + 1]
        for j in range(k):
            node, n = c[i + 2 + 2 * j], c[i + 3 + 2 * j]
            sums[cell] += n
            names = []
            while node:
                names.append(d["names"][nm[node]])
                node = par[node]
            key = ";".join(reversed(names))
            paths[key] = paths.get(key, 0) + n
        i += 2 + 2 * k
    eq(sums, [int(x.get(HM + "n")) for x in cells], "cells = their stacks")
    folded, _ = run("synth", "folded")
    want = {}
    for l in folded.decode("utf-8", "surrogateescape").splitlines():
        stack, n = l.rsplit(" ", 1)
        want[stack.encode("utf-8", "surrogateescape").decode("utf-8", "replace")] = int(n)
    eq(paths, want, "stacks = the folded output")
    # siblings in byte order (the flame graph's frame-wise order)
    kids = {}
    for i in range(1, len(par)):
        kids.setdefault(par[i], []).append(d["names"][nm[i]].encode())
    for p, ks in kids.items():
        eq(ks, sorted(ks), "siblings of %d sorted" % p)


@test
def folded_from_capture_is_the_flame_input():
    folded, _ = run("synth", "folded")
    svg, _ = run("synth", "flame")
    lines = [(l.rsplit(" ", 1)[0], int(l.rsplit(" ", 1)[1]))
             for l in folded.decode("utf-8", "surrogateescape").splitlines()]
    ref = reference(lines)
    _, fr = frames_of(svg)
    eq(sorted(f["fw"] for f in fr), sorted(ref.values()), "flame graph = folded output's tree")
    kern = [f for f in fr if f["title"].startswith("vfs_write (")][0]
    expect(kern["fill"] != [f for f in fr if f["title"].startswith("run (")][0]["fill"], "kernel palette")
    sep = [f for f in fr if f["title"].startswith("- (")][0]
    eq(sep["fill"], "rgb(200,200,200)", "separator grey")


@test
def speedscope_folded_format():
    """The rules of speedscope's collapsed-stack importer (bg-flamegraph.ts):
    each line is /^(.*) (\\d+)$/, frames split on ';'."""
    import re
    folded, _ = run("synth", "folded")
    lines = folded.decode("utf-8", "surrogateescape").splitlines()
    expect(lines, "some lines")
    for l in lines:
        m = re.match(r"^(.*) (\d+)$", l)
        expect(m, "speedscope line shape: %r" % l)
        expect(all(m.group(1).split(";")), "no empty frame: %r" % l)


if __name__ == "__main__":
    main()
