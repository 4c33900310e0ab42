#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Critical path through the real daemon and gpuprofctl: HTA's numbers over
RPC, the overlay written through client fds and parsed back, what-if edits
answered from the cached graph, and clear errors for bad params."""

import glob
import gzip
import json
import os
import tempfile

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


if __name__ == "__main__":
    main()
