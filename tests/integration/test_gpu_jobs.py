#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The driver-side GPU job collector in the real daemon (docs/collectors.md,
"GPU jobs"): its tracepoint groups in `gpuprofctl status`, the
gpu_jobs.pending configuration key, and what a live capture without GPU job
intervals answers to an analysis."""

import os

from gpd import Daemon, Skip, eq, expect, main, test


def gpu_jobs(d):
    st = d.ctl_json("status")
    return [c for c in st["collectors"] if c["name"] == "gpu_jobs"][0]


@test
def status_groups():
    d = Daemon(config="gpu_jobs.pending = 128\n")
    try:
        d.start()
        c = gpu_jobs(d)
        if os.geteuid() != 0:
            expect(c["state"] in ("unavailable", "attached"), "state %r" % c)
            raise Skip("BPF needs root: " + c["reason"])
        groups = {g["name"]: g for g in c["groups"]}
        eq(sorted(groups), ["dma_fence", "i915", "xe"], "groups")
        # the core kernel's fence tracepoints: attached wherever BTF is
        fence = groups["dma_fence"]
        eq(fence["state"], "attached", "dma_fence group")
        expect("dma_fence_init" in fence["tracepoints"], "tracepoints %r" % fence)
        expect("dma_fence_signaled" in fence["tracepoints"], "tracepoints %r" % fence)
        eq(c["state"], "attached", "collector with one group attached")
        for drv in ("xe", "i915"):
            if not os.path.exists("/sys/kernel/btf/" + drv):
                eq(groups[drv]["state"], "unavailable", drv)
                eq(groups[drv]["reason"], "no %s BTF (module not loaded)" % drv, drv)
                expect(("%s: no %s BTF" % (drv, drv)) in c["reason"], c["reason"])
        eq(c["pending_max"], 128, "gpu_jobs.pending")
        # the human table names it too
        out = d.ctl("status", check=0).stdout.decode()
        expect("gpu_jobs" in out, out)
    finally:
        d.stop()
        d.cleanup()


@test
def bad_pending_config():
    d = Daemon(config="gpu_jobs.pending = 0\n")
    try:
        d.start(wait=False)
        rc = d.proc.wait(timeout=20)
        expect(rc != 0, "gpuprofd accepted gpu_jobs.pending = 0")
        expect("gpu_jobs.pending" in d.read_log(), d.read_log())
    finally:
        d.cleanup()


@test
def analysis_without_intervals():
    d = Daemon()
    try:
        d.start()
        info = d.ctl_json("capture", "--pid", str(os.getpid()), "--last", "200ms")
        r = d.ctl("analyze", "temporal", str(info["id"]))
        expect(r.returncode != 0, "temporal on a capture without GPU jobs succeeded")
        err = r.stderr.decode()
        expect("GPU job intervals" in err, err)
    finally:
        d.stop()
        d.cleanup()


if __name__ == "__main__":
    main()
