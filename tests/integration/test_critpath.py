#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Critical path through the real daemon and gpuprofctl: HTA's numbers over
RPC, the overlay written through client fds and parsed back, what-if edits
answered from the cached graph, and clear errors for bad params; an overlay
only on the capture's own trace file (checked against the digest the import
recorded); the human output saying when the edge list is cut, and numbers
without exponents."""

import glob
import gzip
import json
import os
import re
import struct
import tempfile
import zlib

from gpd import SHARED, Daemon, eq, expect, main, test

TRACES = os.path.join(SHARED, "reference", "hta", "traces")
OUTPUTS = os.path.join(SHARED, "reference", "hta", "outputs")


def trace(name):
    return sorted(glob.glob(os.path.join(TRACES, name, "*")))[0]


def ref(name, f):
    with open(os.path.join(OUTPUTS, name, f + ".json")) as fh:
        return json.load(fh)


@test
def critical_path_overlay_and_whatif():
    d = Daemon().start()
    tmp = tempfile.mkdtemp(prefix="gpuprof-cp-")
    try:
        src = trace("cuda_event_sync")
        info = d.ctl_json("import", src, "--name", "cp")
        cid = str(info["id"])
        h = ref("cuda_event_sync", "critical_path_env_default")
        r = d.ctl_json("analyze", "critical-path", cid, "--rank", "0",
                       "--annotation", "ProfilerStep", "--instance", "0")
        eq(r["analysis"], "critical_path", "analysis name")
        eq(r["graph"]["nodes"], h["num_nodes"], "nodes")
        eq(r["graph"]["edges"], h["num_edges"], "edges")
        eq(r["path"]["length_us"], h["critical_path_length_sum_of_edge_weights"], "length")
        eq(r["critical_events"], h["critical_event_indices_sorted"], "critical events")
        for k, v in h["summary"].items():
            if k:
                expect(abs(r["summary"][k + "_pctg"] - v) < 1e-9, "summary %s" % k)
        eq(r["graph_cached"], False, "first call builds")

        # what-if: same window, graph from the cache, CPU ops 2x faster
        w = d.ctl_json("analyze", "critical-path", cid, "--annotation", "ProfilerStep",
                       "--instance", "0:0", "--edit", "kind:cpu*0.5",
                       "--edit", "kind:launch_delay=5")
        eq(w["graph_cached"], True, "what-if reuses the saved graph")
        gc = d.ctl_json("status")["graph_cache"]
        eq((gc["entries"], gc["hits"], gc["misses"], gc["evicted"], gc["budget_bytes"]),
           (1, 1, 1, 0, 256 << 20), "status: one graph built, then found: %r" % gc)
        expect(0 < gc["bytes"] <= gc["budget_bytes"], "its bytes counted: %r" % gc)
        st = d.ctl("status").stdout.decode()
        expect(re.search(r"^graphs: +1 kept, .* of 256(\.0)? MiB; 1 hits, 1 misses", st, re.M),
               "gpuprofctl status shows the graph cache:\n" + st)
        eq(w["whatif"]["baseline_length_us"], r["path"]["length_us"], "baseline")
        expect(w["whatif"]["length_us"] < r["path"]["length_us"], "faster CPU, shorter path")
        expect(w["whatif"]["matched_edges"] > 0, "edits matched edges")

        # overlay through fds, parsed back
        out = os.path.join(tmp, "overlay.json")
        o = d.ctl_json("analyze", "critical-path", cid, "--annotation", "ProfilerStep",
                       "--overlay", out, "--trace", src)
        with open(out) as f:
            ov = json.load(f)
        evs = ov["traceEvents"]
        with gzip.open(src) as f:
            orig = json.load(f)
        eq(sorted(k for k in ov), sorted(k for k in orig), "top-level keys kept")
        # flows carry "critical": true (== 1 in Python), so skip them here
        crit = [e for e in evs if e.get("cat") != "critical_path"
                and isinstance(e.get("args"), dict) and e["args"].get("critical") == 1]
        eq(len(crit), len(r["critical_events"]), "critical events marked")
        flows = [e for e in evs if e.get("cat") == "critical_path"]
        eq(len(flows), o["overlay"]["flow_events"], "flow events")
        expect(len(flows) > 0 and len(flows) % 2 == 0, "s/f pairs")
        expect(all(e["ph"] in ("s", "f") for e in flows), "flow phases")

        # errors: unknown annotation, bad edit, overlay without the trace fd
        p = d.ctl("analyze", "critical-path", cid, "--annotation", "NoSuchThing")
        eq(p.returncode, 1, "unknown annotation fails")
        expect(b"not found" in p.stderr, p.stderr.decode())
        p = d.ctl("analyze", "critical-path", cid, "edits=[{\"kind\":\"bogus\",\"scale\":1}]")
        eq(p.returncode, 1, "bad edit kind fails")
        expect(b"kind must be" in p.stderr, p.stderr.decode())
        p = d.ctl("analyze", "critical-path", cid, "--overlay", out)
        eq(p.returncode, 2, "--overlay without --trace is a usage error")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def xxh64(b):
    """XXH64 (seed 0) in Python: what the import records, computed here
    independently of the daemon's code."""
    M = (1 << 64) - 1
    P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
    P4, P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & M

    def rnd(acc, v):
        return rotl((acc + v * P2) & M, 31) * P1 & M

    n, p = len(b), 0
    if n >= 32:
        v = [(P1 + P2) & M, P2, 0, (-P1) & M]
        while p + 32 <= n:
            for i in range(4):
                v[i] = rnd(v[i], struct.unpack_from("<Q", b, p + 8 * i)[0])
            p += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for x in v:
            h = ((h ^ rnd(0, x)) * P1 + P4) & M
    else:
        h = P5
    h = (h + n) & M
    while p + 8 <= n:
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", b, p)[0]), 27) * P1 + P4) & M
        p += 8
    if p + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", b, p)[0] * P1 & M), 23) * P2 + P3) & M
        p += 4
    while p < n:
        h = rotl(h ^ (b[p] * P5 & M), 11) * P1 & M
        p += 1
    h = (h ^ (h >> 33)) * P2 & M
    h = (h ^ (h >> 29)) * P3 & M
    return "%016x" % (h ^ (h >> 32))


def critical_edges_note(out):
    m = re.search(r"showing ([\d,]+) of ([\d,]+) critical edges; --max-edges N to see more", out)
    return (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))) if m else None


def forget_digests(state, cid):
    """Rewrite capture cid's import info as an older gpuprofd wrote it: no
    "xxh64" in its files (same length, section CRC recomputed)."""
    path = os.path.join(state, "%d.gpc" % cid)
    with open(path, "rb") as f:
        b = bytearray(f.read())
    off, n = 20, struct.unpack_from("<I", b, 12)[0]
    for _ in range(n):
        typ, _flags, ln = struct.unpack_from("<IIQ", b, off)
        if typ == 7:  # CAPSEC_IMPORT_INFO
            body = bytes(b[off + 24:off + 24 + ln])
            expect(b'"xxh64":"' in body, "the import recorded a hash")
            body = body.replace(b'"xxh64":"', b'"old_x":"')
            b[off + 24:off + 24 + ln] = body
            crc = zlib.crc32(body, zlib.crc32(bytes(b[off:off + 16])))
            struct.pack_into("<I", b, off + 16, crc)
        off += 24 + ln
    with open(path, "wb") as f:
        f.write(b)


@test
def critical_path_overlay_only_on_its_own_trace():
    d = Daemon().start()
    tmp = tempfile.mkdtemp(prefix="gpuprof-cp-")
    try:
        sa, an = trace("simple_add"), trace("alexnet")
        with open(sa, "rb") as f:
            sa_bytes = f.read()
        with open(an, "rb") as f:
            an_bytes = f.read()
        info = d.ctl_json("import", sa, "--name", "simple_add")
        cid = info["id"]
        out = os.path.join(tmp, "overlay.json")

        def overlay(src, *extra, **kw):
            return d.ctl("analyze", "critical-path", str(cid), "--overlay", out,
                         "--trace", src, *extra, **kw)

        # another model's trace: refused before a byte is written
        p = overlay(an)
        err = p.stderr.decode()
        eq(p.returncode, 1, "alexnet's trace on simple_add's capture is refused: " + err)
        expect("(code -32009)" in err, err)
        expect("%d bytes" % len(an_bytes) in err and "%d bytes" % len(sa_bytes) in err, err)
        expect("capture %d" % cid in err and an in err, "both named: " + err)
        expect(not os.path.exists(out), "no overlay written")
        rec = info["import"]["files"][0]
        eq(rec.get("xxh64"), xxh64(sa_bytes), "hash of the imported bytes")
        eq(rec["bytes"], len(sa_bytes), "bytes")

        # the same through a pipe (size unknown): found by the digest at the end
        p = overlay("/dev/stdin", input=an_bytes)
        err = p.stderr.decode()
        eq(p.returncode, 1, "refused through a pipe: " + err)
        expect("xxh64 " + xxh64(an_bytes) in err and "is not the file capture %d" % cid in err,
               err)
        expect(not os.path.exists(out), "no overlay written")

        # not even JSON, larger: named as the wrong file, read no further than needed
        p = overlay("/dev/stdin", input=b"x" * 100000)
        err = p.stderr.decode()
        eq(p.returncode, 1, "garbage refused: " + err)
        expect("(more than %d bytes) is not the file" % len(sa_bytes) in err, err)

        # same size, other bytes (gzip header mtime changed)
        other = bytearray(sa_bytes)
        other[4] ^= 0xff
        same_size = os.path.join(tmp, "same_size.json.gz")
        with open(same_size, "wb") as f:
            f.write(other)
        p = overlay(same_size)
        eq(p.returncode, 1, "same size, other digest: " + p.stderr.decode())
        expect("xxh64 " + xxh64(bytes(other)) in p.stderr.decode(), p.stderr.decode())
        expect(not os.path.exists(out), "no overlay written")

        # its own file, from a path and through a pipe
        o = d.ctl_json("analyze", "critical-path", str(cid), "--overlay", out, "--trace", sa)
        eq(o["overlay"]["verified"], True, "verified")
        with open(out, "rb") as f:
            first = f.read()
        os.unlink(out)
        o = d.ctl_json("analyze", "critical-path", str(cid), "--overlay", out,
                       "--trace", "/dev/stdin", input=sa_bytes)
        eq(o["overlay"]["verified"], True, "verified through a pipe")
        with open(out, "rb") as f:
            eq(f.read(), first, "same overlay through a pipe")

        # a capture imported before digests were recorded
        eq(d.stop(), 0, "clean stop")
        forget_digests(d.state, cid)
        d.start()
        os.unlink(out)
        p = overlay(sa)
        err = p.stderr.decode()
        eq(p.returncode, 1, "unverifiable: refused: " + err)
        expect("cannot be verified" in err and "--trust-trace" in err, err)
        expect(not os.path.exists(out), "no overlay written")
        o = d.ctl_json("analyze", "critical-path", str(cid), "--overlay", out,
                       "--trace", sa, "--trust-trace")
        eq(o["overlay"]["verified"], False, "overlaid on trust")
        with open(out, "rb") as f:
            eq(f.read(), first, "same overlay on trust")
        p = d.ctl("analyze", "idle", str(cid), "--trust-trace")
        eq(p.returncode, 2, "--trust-trace is a critical-path option")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def critical_path_human_output():
    d = Daemon().start()
    try:
        cid = str(d.ctl_json("import", trace("simple_add"))["id"])
        full = d.ctl_json("analyze", "critical-path", cid)
        n = full["path"]["edges"]
        expect(n > 1000 and full["critical_edges_truncated"], "%d edges, cut at 1000" % n)
        eq(len(full["critical_edges"]), 1000, "default max_edges")
        p = d.ctl("analyze", "critical-path", cid, check=0)
        eq(critical_edges_note(p.stdout.decode()), (1000, n), "the default cut is said")
        p = d.ctl("analyze", "critical-path", cid, "--max-edges", "5", check=0)
        eq(critical_edges_note(p.stdout.decode()), (5, n), "the cut is said")
        p = d.ctl("analyze", "critical-path", cid, "--max-edges", str(n), check=0)
        eq(critical_edges_note(p.stdout.decode()), None, "no note when nothing is cut")
        j = d.ctl_json("analyze", "critical-path", cid, "--max-edges", "5")
        eq(len(j["critical_edges"]), 5, "--max-edges passed")

        # what-if lengths of tens of thousands of µs and more: no exponents
        p = d.ctl("analyze", "critical-path", cid, "--edit", "kind:cpu*0.5", check=0)
        out = p.stdout.decode()
        m = re.search(r"whatif\.length_us: ([\d,.]+)\n", out)
        expect(m is not None, "what-if length printed plainly:\n" + out)
        w = d.ctl_json("analyze", "critical-path", cid, "--edit", "kind:cpu*0.5")
        eq(float(m.group(1).replace(",", "")), round(w["whatif"]["length_us"]), "value")
        expect(not re.search(r"\d[eE][+-]\d", out), "no exponent anywhere:\n" + out)

        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
