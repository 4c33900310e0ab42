# SPDX-License-Identifier: MIT
"""Stands where gpuprofd's CUPTI collector listens, for
scripts/device/cupti_check.sh: receives what libgpuprof-cupti.so sends
until SIGTERM or SIGINT, then writes a JSON summary per connection.
Usage: cupti_recv.py SOCKET OUT_JSON"""
import collections
import json
import os
import signal
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "integration"))
import cupti_wire as W  # noqa: E402


def summary(c):
    api = {a["corr"]: a for a in c.of(W.API)}
    kernels = collections.defaultdict(lambda: {"count": 0, "total_ns": 0})
    joined = late = 0
    for k in c.of(W.KERNEL):
        kernels[k["name"]]["count"] += 1
        kernels[k["name"]]["total_ns"] += k["end"] - k["start"]
        a = api.get(k["corr"])
        if a:
            joined += 1
            late += a["enter"] > k["start"]
    marks = collections.Counter((m["domain"], m["name"], m["flags"]) for m in c.of(W.MARKER))
    out = {
        "hello": c.of(W.HELLO)[0] if c.of(W.HELLO) else None,
        "seq_gaps": (c.seqs[-1] + 1 - len(c.seqs)) if c.seqs else 0,
        "kernels": kernels,
        "kernels_joined_to_api": joined,
        "kernels_starting_before_their_api_enter": late,
        "api": len(api),
        "memcpy": {"count": len(c.of(W.MEMCPY)), "bytes": sum(m["bytes"] for m in c.of(W.MEMCPY))},
        "memset": {"count": len(c.of(W.MEMSET)), "bytes": sum(m["bytes"] for m in c.of(W.MEMSET))},
        "sync": len(c.of(W.SYNC)),
        "graph": len(c.of(W.GRAPH)),
        "markers": {"%s/%s/%d" % k: v for k, v in marks.items()},
        "stats": c.of(W.STATS)[-1] if c.of(W.STATS) else None,
    }
    return out


def main():
    rx = W.Receiver(sys.argv[1])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    while not stop.wait(0.2):
        pass
    rx.stop()
    with open(sys.argv[2], "w") as f:
        json.dump([summary(c) for c in rx.decoded()], f, indent=1, default=str)


if __name__ == "__main__":
    main()
