#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Renderers through the real daemon and CLI: flame graphs of folded files
(no sampler needed) and of a real CPU capture, diff, heat map with a time
range rendered back, Chrome trace and pprof exports."""

import gzip
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

from gpd import BUILD, GPUPROFCTL, Daemon, Skip, eq, expect, main, test

WORKLOAD = os.path.join(BUILD, "tests", "workloads", "demo_workload")
SVG = "{http://www.w3.org/2000/svg}"
FOLDED_A = b"app;main;hot 70\napp;main;cold 30\napp;main;<odd & \xff> 5\n"
FOLDED_B = b"app;main;hot 90\napp;main;cold 10\n"


def frames(svg_bytes):
    root = ET.fromstring(svg_bytes)
    return root, {g[0].text.split(" (")[0]: g for g in root.find(SVG + "g[@id='frames']")}


def heat_data(page):
    """A heat map page's embedded data (a JSON object literal)."""
    text = page.decode("utf-8")
    a = text.index("var HMD=") + len("var HMD=")
    return json.loads(text[a:text.index(";\n]]></script>", a)])


def embedded_frames(data, lo, hi):
    """Frame name -> count over cells lo..hi, as the page's script sums
    them (frames of equal names added up)."""
    par = [None] + data["nodes"][0::2]
    nm = [0] + data["nodes"][1::2]
    tot = [0] * len(par)
    c, i = data["cells"], 0
    while i < len(c):
        cell, k = c[i], c[i + 1]
        if lo <= cell <= hi:
            for j in range(k):
                tot[c[i + 2 + 2 * j]] += c[i + 3 + 2 * j]
        i += 2 + 2 * k
    for n in range(len(par) - 1, 0, -1):
        tot[par[n]] += tot[n]
    out = {}
    for n in range(len(par)):
        if tot[n]:
            name = data["names"][nm[n]]
            out[name] = out.get(name, 0) + tot[n]
    return out


def tmpfile(data):
    f = tempfile.NamedTemporaryFile("wb", suffix=".folded", delete=False)
    f.write(data)
    f.close()
    return f.name


def go_pprof_check(pp, tmp):
    """`go tool pprof` (when installed) reads a real capture's export: the
    workload's frames sit in its own mapping, with its GNU build id."""
    go = shutil.which("go")
    if not go:
        print("note: go not installed; pprof not checked with go tool pprof")
        return
    env = dict(os.environ, HOME=tmp, GOCACHE=os.path.join(tmp, "gocache"))
    p = subprocess.run([go, "tool", "pprof", "-raw", "-symbolize=none", pp],
                       capture_output=True, env=env, timeout=300)
    expect(p.returncode == 0, "go tool pprof: " + p.stderr.decode(errors="replace"))
    text = p.stdout.decode(errors="replace")
    note = subprocess.run(["readelf", "-n", WORKLOAD], capture_output=True).stdout.decode()
    bid = re.search(r"Build ID: ([0-9a-f]+)", note)
    expect(bid, "the workload has a build id:\n" + note)
    maps = re.findall(r"^\d+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (\S+) ?(\S*)", text, re.M)
    mine = [m for m in maps if m[0].endswith("/demo_workload")]
    expect(mine and mine[0][1] == bid.group(1),
           "demo_workload mapped with build id %s:\n%s" % (bid.group(1), text))
    expect(re.search(r" M=\d+ matmul_tile ", text), "matmul_tile located in a mapping")


@test
def flamegraph_of_folded_files():
    d = Daemon().start()
    a, b = tmpfile(FOLDED_A), tmpfile(FOLDED_B)
    out = tempfile.mktemp(suffix=".svg")
    try:
        res = d.ctl_json("flamegraph", "--folded", a, "--out", out, "--title", "T&T", "--icicle")
        eq(res["total"], 105, "total")
        eq(res["lines"], 3, "lines")
        root, fr = frames(open(out, "rb").read())
        expect("hot" in fr and "<odd & \ufffd>" in fr, "frames: %r" % list(fr))
        eq(root.find(SVG + "text[@id='title']").text, "T&T", "title")
        # to stdout through a pipe, input from stdin
        p = subprocess.run("%s --socket %s flamegraph --folded - --out - < %s | head -c 5"
                           % (GPUPROFCTL, d.sock, a), shell=True, capture_output=True)
        eq(p.stdout, b"<?xml", "SVG on stdout")
        res = d.ctl_json("diff", a, b, "--out", out, "--normalize")
        eq((res["total_a"], res["total_b"]), (105, 100), "diff totals")
        _, fr = frames(open(out, "rb").read())
        expect(fr["hot"][1].get("fill").startswith("rgb(255,"), "hot grew: red")
        expect(fr["cold"][1].get("fill").endswith(",255)"), "cold shrank: blue")
        # bad input: a descriptor is required, garbage is counted not fatal
        g = tmpfile(b"\x00\x01 garbage\nno count\n")
        p = d.ctl("flamegraph", "--folded", g, "--out", out, check=1)
        expect(b"nothing to draw" in p.stderr, p.stderr)
        os.unlink(g)
        d.ctl("flamegraph", "99", "--out", out, check=1)
        d.ctl("export", "1", "--format", "svg", "--out", out, check=2)
        expect(d.proc.poll() is None, "daemon still running")
    finally:
        for f in (a, b, out):
            if os.path.exists(f):
                os.unlink(f)
        d.cleanup()


def capture(d):
    st = d.ctl_json("status")
    cpu = [c for c in st["collectors"] if c["name"] == "cpu"][0]
    if cpu["state"] != "attached":
        raise Skip("CPU sampler not attached: " + cpu.get("reason", ""))
    w = subprocess.Popen([WORKLOAD, "0"])
    try:
        time.sleep(0.3)
        return d.ctl_json("capture", "--pid", str(w.pid), "--duration", "2500ms")
    finally:
        w.kill()
        w.wait()


@test
def capture_flamegraph_heatmap_exports():
    d = Daemon("sampling.cpu_frequency = 499\n").start()
    tmp = tempfile.mkdtemp()
    try:
        info = capture(d)
        cid, nsamp = str(info["id"]), info["by_type"]["cpu_sample"]
        svg = os.path.join(tmp, "cpu.svg")
        res = d.ctl_json("flamegraph", cid, "--out", svg, "--subtitle", "it")
        eq(res["total"], nsamp, "flame total = samples")
        _, fr = frames(open(svg, "rb").read())
        expect("matmul_tile" in fr and "run_epoch" in fr, "symbolized frames")
        # heat map, then the flame graph of the first second's cells
        heat = os.path.join(tmp, "heat.svg")
        res = d.ctl_json("heatmap", cid, "--out", heat)
        eq(res["samples"], nsamp, "heat samples")
        root = ET.fromstring(open(heat, "rb").read())
        HM = "{urn:gpuprof:heatmap}"
        cells = root.findall(".//" + SVG + "g[@id='cells']/" + SVG + "rect")
        eq(len(cells), res["columns"] * res["rows"], "grid")
        first = cells[:res["rows"]]
        s, e = int(first[0].get(HM + "s")), int(first[-1].get(HM + "e"))
        want = sum(int(c.get(HM + "n")) for c in first)
        res = d.ctl_json("flamegraph", cid, "--start-ns", str(s), "--end-ns", str(e), "--out", svg)
        eq(res["total"], want, "range flame graph = the cells' samples")
        # the page's embedded stacks: the cells' counts again, and the
        # range's frames are the range flame graph's
        data = heat_data(open(heat, "rb").read())
        emb = embedded_frames(data, 0, data["rows"] - 1)
        _, fr = frames(open(svg, "rb").read())
        eq(emb.get("all"), want, "embedded first second = its samples")
        eq(set(emb), set(fr), "embedded frames = the range flame graph's")
        # bounded: a small --heatmap-max-bytes coarsens or merges, and says so
        small = os.path.join(tmp, "small.svg")
        res = d.ctl_json("heatmap", cid, "--out", small, "--heatmap-max-bytes", "1000")
        expect(res["data_bytes"] <= 1000 or res["nodes"] == 1, "bound kept: %r" % res)
        expect(res["bucket_ns"] > 20000000 or res["min_count"] > 0, "bounded: %r" % res)
        expect(b"To fit the page's data bound" in open(small, "rb").read(), "the page says so")
        # diff of the capture against itself: nothing changed
        res = d.ctl_json("diff", cid, cid, "--out", svg)
        _, fr = frames(open(svg, "rb").read())
        expect(all(g[1].get("fill") == "rgb(250,250,250)" for g in fr.values()), "no change")
        # exports
        tj = os.path.join(tmp, "trace.json")
        res = d.ctl_json("export", cid, "--format", "chrome", "--out", tj)
        t = json.load(open(tj))
        eq(len([e for e in t["traceEvents"] if e.get("cat") == "cpu"]), nsamp, "instants")
        expect(t["stackFrames"], "stackFrames")
        # round trip: our own importer takes the export back as a capture
        back = d.ctl_json("import", tj, "--name", "round-trip")
        eq(back["state"], "ready", "exported trace imports")
        eq(back["import"]["files"][0]["events_raw"], len(t["traceEvents"]),
           "every exported event read back")
        eq(sum(back["import"]["files"][0]["warnings"].values()), 0, "without warnings")
        pp = os.path.join(tmp, "cpu.pb.gz")
        res = d.ctl_json("export", cid, "--format", "pprof", "--out", pp)
        raw = gzip.decompress(open(pp, "rb").read())
        expect(b"matmul_tile" in raw and b"samples" in raw, "pprof strings")
        expect(res["events"] > 0, "pprof samples")
        go_pprof_check(pp, tmp)
    finally:
        subprocess.run(["rm", "-rf", tmp])
        d.cleanup()


if __name__ == "__main__":
    main()
