#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_rpc_analyses.py BUILD [--size 256M] [--cache 2G] [--keep FILE] [--analyses LIST]

The analyses as a user runs them: a real gpuprofd on a private socket, a
generated Kineto trace (BUILD/bench/import/gen_kineto) imported with
gpuprofctl, then temporal, idle, kernels, overlap, queue and comm through
gpuprofctl, each timed wall-clock (process start, RPC, the analysis, the
JSON printed). Three rounds: right after the import (its timeline is in the
decoded-timeline cache), after a daemon restart (the first analysis loads
and decodes the capture, the next reuse it), and with analysis.cache_bytes
= 0 (every request loads and decodes). --analyses replaces the list:
comma-separated, each NAME or NAME:KEY=VALUE[:KEY=VALUE], e.g.
"launch,queue:series=true" (the analyses with long per-launch / per-sample
arrays). Prints figures; asserts nothing.
"""

import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

ANALYSES = ["temporal", "idle", "kernels", "overlap", "queue", "comm"]


def parse_analyses(v):
    """"a,b:k=v" -> [["a"], ["b", "k=v"]]: the analysis and its KEY=VALUE args."""
    return [x.split(":") for x in v.split(",") if x]


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    build = os.path.abspath(args.pop(0))
    size, cache, keep = "256M", "2G", None
    analyses = [[a] for a in ANALYSES]
    while args:
        k = args.pop(0)
        v = args.pop(0) if args else sys.exit(__doc__)
        if k == "--size":
            size = v
        elif k == "--cache":
            cache = v
        elif k == "--keep":
            keep = v
        elif k == "--analyses":
            analyses = parse_analyses(v)
        else:
            sys.exit(__doc__)
    os.environ.setdefault("GPUPROF_BUILD", build)
    os.environ.setdefault("GPUPROF_SOURCE", os.path.join(HERE, "..", ".."))
    import gpd  # after the environment: it reads GPUPROF_BUILD

    tmp = tempfile.mkdtemp(prefix="gpuprof-bench-")
    trace = keep or os.path.join(tmp, "trace_rank0.json")
    if not os.path.exists(trace):
        gen = os.path.join(build, "bench", "import", "gen_kineto")
        prefix = trace[: -len("_rank0.json")] if trace.endswith("_rank0.json") else trace
        if os.system("%s --size %s -o %s >/dev/null" % (gen, size, prefix)):
            sys.exit("gen_kineto failed")
        trace = prefix + "_rank0.json"
    mb = os.path.getsize(trace) / 1e6
    base = "memory.capture_max = 8G\nlimits.io_timeout = 600s\n"

    def run_all(d, cid, label):
        tot = 0.0
        parts = []
        for a in analyses:
            t = time.time()
            d.ctl("analyze", a[0], cid, *a[1:], "--json", check=0, timeout=900)
            dt = time.time() - t
            tot += dt
            parts.append("%s %.2f" % (" ".join(a), dt))
        st = d.ctl_json("status")["analysis_cache"]
        print("%-34s %6.2f s   (%s; cache hits %d, misses %d)"
              % (label, tot, ", ".join(parts), st["hits"], st["misses"]))

    print("trace: %.0f MB of Kineto JSON (%s)" % (mb, trace))
    d = gpd.Daemon(base + "analysis.cache_bytes = %s\n" % cache).start()
    try:
        t = time.time()
        cid = str(d.ctl_json("import", trace, timeout=900)["id"])
        print("%-34s %6.2f s" % ("import", time.time() - t))
        run_all(d, cid, "after the import (cached)")
        d.stop()
        d.start()
        run_all(d, cid, "after a restart (decoded once)")
    finally:
        d.cleanup()
    d = gpd.Daemon(base + "analysis.cache_bytes = 0\n").start()
    try:
        cid = str(d.ctl_json("import", trace, timeout=900)["id"])
        run_all(d, cid, "no cache (each request decodes)")
    finally:
        d.cleanup()
    if not keep:
        os.unlink(trace)
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
