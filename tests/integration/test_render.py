#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Renderers through the real daemon and CLI: flame graphs of folded files
(no sampler needed) and of a real CPU capture, diff, heat map with a time
range rendered back, Chrome trace and pprof exports."""

import gzip
import json
import os
import re
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


def tmpfile(data):
    f = tempfile.NamedTemporaryFile("wb", suffix=".folded", delete=False)
    f.write(data)
    f.close()
    return f.name


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
    finally:
        subprocess.run(["rm", "-rf", tmp])
        d.cleanup()


if __name__ == "__main__":
    main()
