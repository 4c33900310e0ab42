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


# gpi_sync.type (CUpti_ActivitySynchronizationType)
SYNC_TYPES = {1: "event_synchronize", 2: "stream_wait_event", 3: "stream_synchronize",
              4: "context_synchronize"}


def events(c):
    """CUDA event records (type 15, struct gpi_cuda_event: time, corr of
    the cudaEventRecord, event id, device, context, stream) and how many
    waits on an event (sync types 1 and 2) find their record: the latest
    one of the same (context, event) whose correlation id is below the
    wait's, as the daemon links them."""
    recs = collections.defaultdict(list)
    for e in c.of(W.CUDA_EVENT):
        recs[(e["context"], e["event"])].append(e["corr"])
    waits = [s for s in c.of(W.SYNC) if s["type"] in (1, 2)]
    linked = sum(1 for s in waits if any(r < s["corr"] for r in recs.get((s["context"], s["event"]), ())))
    return {"records": len(c.of(W.CUDA_EVENT)), "events": len(recs),
            "streams": len({(e["context"], e["stream"]) for e in c.of(W.CUDA_EVENT)}),
            "waits": len(waits), "waits_linked": linked}


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
        "sync_by_type": dict(collections.Counter(SYNC_TYPES.get(s["type"], str(s["type"]))
                                                 for s in c.of(W.SYNC))),
        "cuda_event": events(c),
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
