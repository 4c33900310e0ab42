#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""GPU launch attribution through the whole daemon: uprobes/USDT on fake
runtimes that export the real Level Zero, CUDA and HIP entry points under
the real sonames (tests/gpu), discovered by the library watcher, turned
into folded stacks with GPU frames and into `gpuprofctl top`."""

import json
import os
import subprocess
import time

from gpd import BUILD, Daemon, Skip, eq, expect, main, test

GPU = os.path.join(BUILD, "tests", "gpu")
APP = os.path.join(GPU, "gpu_app")
LIBS = {
    "cuda": ("cuda", os.path.join(GPU, "cuda", "libcuda.so.1")),
    "ze": ("ze", os.path.join(GPU, "ze", "libze_loader.so.1")),
    "ze_usdt": ("ze", os.path.join(GPU, "ze_usdt", "libze_loader.so.1")),
    "hip": ("hip", os.path.join(GPU, "hip", "libamdhip64.so.6")),
}
N = 250  # gpu_app's base launch count


def expected(kind, n=N):
    """folded lines (after "comm;...;main;") -> exact launch counts, per gpu_app.c"""
    if kind == "cuda":
        return {"run_cuda;cu_call_site_one;gpuprof_cu_saxpy_[G]": n,
                "run_cuda;cu_call_site_two;gpuprof_cu_reduce_[G]": 2 * n,
                "run_cuda;cu_call_site_three;gpuprof_cu_reduce_[G]": 3}
    if kind in ("ze", "ze_usdt"):
        return {"run_ze;ze_call_site_one;gpuprof_ze_alpha_[G]": n,
                "run_ze;ze_call_site_two;gpuprof_ze_beta_[G]": 2 * n,
                "run_ze;ze_call_site_three;gpuprof_ze_alpha_[G]": 3,
                "run_ze;ze_call_site_four;gpuprof_ze_beta_[G]": 2}
    return {"run_hip;hip_call_site_one;gpuprof_hip_stencil_[G]": n,
            "run_hip;hip_call_site_two;gpuprof_hip_gemm_[G]": 2 * n}


def gpu_status(d):
    st = d.ctl_json("status")
    return [c for c in st["collectors"] if c["name"] == "gpu"][0]


def need_probes(d):
    g = gpu_status(d)
    if g["state"] != "attached":
        if os.geteuid() != 0:
            raise Skip("GPU launch probes need root: " + g["reason"])
        if "uprobe" in g["reason"] and "refused" in g["reason"]:
            raise Skip("kernel refuses uprobes: " + g["reason"])
        raise AssertionError("gpu collector not attached as root: %r" % g)
    return g


class App:
    """gpu_app on one fake runtime; launches when go() is called."""

    def __init__(self, kind, n=N):
        self.kind = kind
        rt, self.lib = LIBS[kind]
        self.p = subprocess.Popen([APP, rt, self.lib, str(n), "--hold"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        expect(line and line[0] == "ready", "gpu_app started: %r" % line)
        self.pid = self.p.pid

    def wait_probed(self, d, timeout=10):
        """Until the daemon has probes on our library with us among its users,
        and no library's attach is still running on the thread pool (NEO's
        USDT attaches beside the loader's probes)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            g = gpu_status(d)
            libs = [l for l in g["libraries"] if os.path.samefile(l["path"], self.lib)
                    and l["processes"] >= 1 and l["probes"] >= 1]
            if libs and not any(l.get("attaching") for l in g["libraries"]):
                return libs[0]
            time.sleep(0.05)
        raise AssertionError("library %s never probed: %r" % (self.lib, gpu_status(d)))

    def go(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        eq(self.p.stdout.readline().strip(), "done", "gpu_app finished launching")

    def exit(self):
        self.p.stdin.close()
        eq(self.p.wait(10), 0, "gpu_app exit status")


def parse_folded(text):
    stacks = {}
    for line in text.splitlines():
        frames, _, count = line.rpartition(" ")
        expect(count.isdigit(), "count after the last space: %r" % line)
        stacks[frames] = stacks.get(frames, 0) + int(count)
    return stacks


def check_folded(stacks, kind, n=N):
    """Each expected chain appears exactly once, under main, with its count."""
    want = expected(kind, n)
    got = {}
    for k, v in stacks.items():
        expect(k.startswith("gpu_app;"), "comm is the root frame: %r" % k)
        expect(k.endswith("_[G]"), "a GPU frame on top: %r" % k)
        frames = k.split(";")
        expect("main" in frames, "launch stacks reach main: %r" % k)
        tail = ";".join(frames[frames.index("main") + 1:])
        got[tail] = got.get(tail, 0) + v
    eq(got, want, "launch counts per call site and kernel (%s)" % kind)


def folded(d, cid, *extra):
    p = d.ctl("folded", str(cid), *extra, check=0)
    return p.stdout.decode()


@test
def idle_status_names_watched_libraries():
    d = Daemon().start()
    try:
        g = need_probes(d)
        for lib in ("libze_loader.so", "libze_intel_gpu.so", "libcuda.so", "libamdhip64.so"):
            expect(lib in g["watching"], "%s watched: %r" % (lib, g["watching"]))
        if not g["libraries"]:
            expect(g["reason"].startswith("idle"), "idle reason: %r" % g["reason"])
    finally:
        d.cleanup()


@test
def folded_exact_counts_every_runtime():
    """Processes started after the daemon: found by the mmap watcher."""
    d = Daemon().start()
    try:
        need_probes(d)
        for kind in ("cuda", "ze", "hip", "ze_usdt"):
            app = App(kind)
            lib = app.wait_probed(d)
            if kind == "ze_usdt":
                # NEO's USDT is used, and launches are not counted twice
                neo = [l for l in gpu_status(d)["libraries"] if l["runtime"] == "level-zero-neo"]
                expect(neo and neo[0]["usdt"], "USDT launch_kernel attached in NEO: %r" % neo)
            else:
                expect(not lib.get("error"), "no attach error: %r" % lib)
            app.go()
            time.sleep(0.4)  # the collector drains every 200 ms
            info = d.ctl_json("capture", "--pid", str(app.pid), "--last", "10s")
            eq(info["by_type"].get("gpu_launch", 0), sum(expected(kind).values()),
               "launch records captured (%s)" % kind)
            check_folded(parse_folded(folded(d, info["id"], "--weight", "launches")), kind)
            # the default weight stays CPU samples: no GPU frames there
            expect("_[G]" not in folded(d, info["id"]), "no GPU frames in a CPU profile")
            app.exit()
        g = gpu_status(d)
        eq(g["lost"], 0, "no launches lost in the ring buffer")
        eq(g["unnamed_launches"], 0, "every kernel named")
    finally:
        d.cleanup()


@test
def process_running_before_the_daemon():
    """Found by the initial /proc scan."""
    app = App("cuda")
    d = Daemon().start()
    try:
        need_probes(d)
        app.wait_probed(d)
        app.go()
        time.sleep(0.4)
        info = d.ctl_json("capture", "--pid", str(app.pid), "--last", "10s")
        check_folded(parse_folded(folded(d, info["id"], "--weight", "launches")), "cuda")
    finally:
        app.exit()
        d.cleanup()


@test
def process_exits_mid_capture_and_probes_go():
    d = Daemon().start()
    try:
        need_probes(d)
        app = App("hip", n=100)
        app.wait_probed(d)
        cap = subprocess.Popen([os.path.join(BUILD, "cli", "gpuprofctl"), "--socket", d.sock,
                                "--json", "capture", "--pid", str(app.pid), "--duration", "2s"],
                               stdout=subprocess.PIPE)
        time.sleep(0.3)
        app.go()
        app.exit()  # well before the 2 s window closes
        out, _ = cap.communicate(timeout=30)
        eq(cap.returncode, 0, "capture of an exited process succeeds")
        info = json.loads(out)
        check_folded(parse_folded(folded(d, info["id"], "--weight", "launches")), "hip", 100)
        # the last process mapping the library is gone: its probes are too
        deadline = time.time() + 5
        while time.time() < deadline and gpu_status(d)["libraries"]:
            time.sleep(0.05)
        eq(gpu_status(d)["libraries"], [], "probes removed once no process maps the library")
    finally:
        d.cleanup()


@test
def top_lists_kernels_and_call_sites():
    d = Daemon().start()
    try:
        need_probes(d)
        app = App("cuda", n=40)
        app.wait_probed(d)
        app.go()
        time.sleep(0.4)
        top = d.ctl_json("top", "--pid", str(app.pid), "--window", "30s")
        eq(top["launches"], 40 + 80 + 3, "launches in the window")
        names = [k["name"] for k in top["kernels"]]
        eq(names, ["gpuprof_cu_reduce", "gpuprof_cu_saxpy"], "hottest first")
        reduce_k = top["kernels"][0]
        eq(reduce_k["launches"], 83, "reduce launches")
        sites = {s["name"]: s["launches"] for s in reduce_k["call_sites"]}
        eq(sites, {"cu_call_site_two": 80, "cu_call_site_three": 3}, "call sites by name")
        eq(top["kernels"][1]["geometry"], "grid=128,2,1 block=256,1,1",
           "cuLaunchKernel geometry (blockDimZ read from the stack)")
        # the human table, once, when stdout is not a terminal
        text = d.ctl("top", "--pid", str(app.pid), "--window", "30s", check=0).stdout.decode()
        expect("gpuprof_cu_saxpy" in text and "cu_call_site_one" in text, text)
        other = d.ctl_json("top", "--pid", "1", "--window", "30s")
        eq(other["launches"], 0, "other pids see none")
        app.exit()
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
