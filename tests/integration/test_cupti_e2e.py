#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""NVIDIA end to end, without a GPU: a CUDA program (tests/cupti/cuda_app)
loads the fake driver, which loads libgpuprof-cupti.so through
CUDA_INJECTION64_PATH and plays the stand-in libcupti; the library sends
its batches to a real gpuprofd, whose launch probes see the same program's
cuLaunchKernel calls. Checked through the real CLI: the live capture's
GPU-time flame graph (each kernel's synthetic durations summed exactly on
the stack that launched it), the live timeline under every analysis
(against sums and unions computed here from the program's own totals and
from the Chrome export), kernels named from CUPTI where the launch probes
attached after the program named them (in saved captures and in the live
top table), drops counted while the daemon is
down, and a stopped daemon never holding the program up."""

import json
import os
import re
import shutil
import signal
import subprocess
import time

from cuda_app import APP, FAKE_CUDA, FAKE_CUPTI, LIB, inject_env, totals
from gpd import (GPUPROFCTL, Daemon, Skip, as_attacker, eq, expect, main, open_to_group, test)


# two kernels, one with a real Itanium-mangled name (saved captures show
# it demangled), on two threads and so two streams
K_A, K_B = "gpuprof_k_a", "_Z11gpuprof_k_bPfi"
K_B_SHOWN = "gpuprof_k_b(float*, int)"
WORK = ["--threads", "2", "--launches", "40", "--kernel", K_A + ":20000",
        "--kernel", K_B + ":5000", "--memcpy", "4096:3000", "--sync", "--nvtx"]


def need_build():
    for p in (LIB, FAKE_CUPTI, FAKE_CUDA, APP):
        if not os.path.exists(p):
            raise Skip("not built (no CUPTI headers?): %s" % p)
    if os.geteuid() != 0:
        raise Skip("the launch probes need root")


def daemon(extra=""):
    """A daemon with its own CUPTI socket; TMP in extra is its directory."""
    d = Daemon("sampling.cpu = false\n")
    d.cupti = os.path.join(d.tmp, "cupti.sock")
    with open(d.conf, "a") as f:
        f.write(extra.replace("TMP", d.tmp))
    d.start()
    return d


def status(d, name):
    st = d.ctl_json("status")
    return st[name] if name == "cupti" else [c for c in st["collectors"] if c["name"] == name][0]


def wait_until(cond, what, timeout=15.0):
    deadline = time.time() + timeout
    while not cond():
        expect(time.time() < deadline, "timed out waiting for " + what)
        time.sleep(0.05)


class App:
    """cuda_app --wait: started, probed by the daemon, then told to go."""

    def __init__(self, d, args, env=None):
        self.p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--wait"] + args,
                                  env=inject_env(d.cupti, env), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        expect(line[:1] == ["ready"], "cuda_app started: %r" % line)
        self.pid = int(line[1])

    def probed(self, d):
        g = status(d, "gpu")
        expect(g["state"] == "attached", "gpu collector: %r" % g)
        return any(os.path.samefile(lib["path"], FAKE_CUDA) and lib["processes"] >= 1
                   and lib["probes"] >= 1 for lib in g["libraries"]) and \
            not any(lib.get("attaching") for lib in g["libraries"])

    def run(self, d, timeout=120):
        wait_until(lambda: self.probed(d), "probes on the fake driver")
        out, _ = self.p.communicate("go\n", timeout=timeout)
        eq(self.p.returncode, 0, "cuda_app exit status")
        return totals(out)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def kernels_stored(d):
    return status(d, "cupti")["records"]["kernel"]


def capture(d, pid):
    return d.ctl_json("capture", "--pid", str(pid), "--last", "60s")["id"]


def analyze(d, name, cid, *args):
    return d.ctl_json("analyze", name, str(cid), *args)


def union(ivs):
    """Total length of the union of [start, end) intervals."""
    total, end = 0.0, None
    for s, e in sorted(ivs):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


@test
def live_capture_of_a_cuda_process():
    need_build()
    d = daemon()
    app = None
    try:
        app = App(d, WORK)
        t = app.run(d)
        n = 2 * 40
        eq(t["kernels"], {K_A: (n, n * 20000), K_B: (n, n * 5000)}, "what the program did")
        wait_until(lambda: kernels_stored(d) >= 2 * n, "the library's last batch")
        cid = capture(d, app.pid)

        # GPU time per launching stack: each kernel's durations, summed
        # exactly, on the stack the launch probe took for its launch
        p = d.ctl("folded", str(cid), "--weight", "gpu-time")
        per_kernel = {}
        for line in p.stdout.decode().splitlines():
            frames, _, w = line.rpartition(" ")
            top = frames.split(";")[-1]
            if top.startswith("gpuprof_k_"):
                expect(";worker;" in frames, "a kernel on its launching stack: %r" % line)
                per_kernel[top] = per_kernel.get(top, 0) + int(w)
        eq(per_kernel, {K_A + "_[G]": n * 20000, K_B_SHOWN + "_[G]": n * 5000},
           "gpu-time per kernel frame, ns")
        info = json.loads(d.ctl("--json", "folded", str(cid), "--weight", "gpu-time",
                                "--out", "/dev/null").stdout)
        eq(info["cupti"], {"intervals": 2 * n + t["memcpy"][0] + t["sync"],
                           "no_call": t["sync"], "no_launch": t["memcpy"][0]},
           "the join: syncs have no launch call, copies no launch probe")

        # the kernels analysis: count and total of each kernel
        rows = analyze(d, "kernels", cid)["kernels"]
        got = {r["name"]: (r["count"], round(r["sum_us"], 3)) for r in rows}
        eq(got[K_A], (n, n * 20.0), "kernels: " + K_A)
        eq(got[K_B_SHOWN], (n, n * 5.0), "kernels: the demangled second kernel")

        # temporal against the Chrome export of the same capture: span,
        # busy time as the union of every GPU interval, computed here
        trace = os.path.join(d.tmp, "trace.json")
        d.ctl("export", str(cid), "--format", "chrome", "--out", trace)
        with open(trace) as f:
            ev = json.load(f)["traceEvents"]
        gpu = [(e["ts"], e["ts"] + e["dur"]) for e in ev
               if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
        eq(len(gpu), 2 * n + t["memcpy"][0], "GPU rows in the export")
        calls = [e for e in ev if e.get("cat") == "cuda_driver"]
        eq(len(calls), 2 * n + t["memcpy"][0], "launch and copy calls on their threads")
        expect({e["tid"] for e in calls} == set(t["tids"]), "calls on the launching threads")
        tp = analyze(d, "temporal", cid)["ranks"][0]
        # HTA counts a cuda_sync row with a stream (a stream synchronize)
        # as GPU busy time too: one made while its stream was idle lies in
        # a gap between kernels
        gpu += [(e["ts"], e["ts"] + e["dur"]) for e in ev
                if e.get("ph") == "X" and e.get("cat") == "cuda_sync"
                and e.get("args", {}).get("stream", -1) != -1]
        span = max(e for _, e in gpu) - min(s for s, _ in gpu)
        busy = union(gpu)
        expect(abs(tp["kernel_time_us"] - span) < 0.01, "temporal span %r vs %r" % (tp, span))
        expect(abs(tp["idle_time_us"] - (span - busy)) < 0.01,
               "temporal idle %r vs %r" % (tp["idle_time_us"], span - busy))

        # every analysis runs on the live timeline
        analyze(d, "idle", cid)
        analyze(d, "overlap", cid)
        analyze(d, "queue", cid)
        ln = analyze(d, "launch", cid, "--extended")["ranks"][0]
        # cuLaunchKernel pairs with its kernel; the synchronous copies are
        # not launches (HTA counts cudaMemcpyAsync only)
        eq(ln["count"], 2 * n, "launch pairs (driver calls, extended)")
        sq = analyze(d, "sequences", cid, "--operator", "iteration")
        expect(json.dumps(sq).count(K_A) > 0, "sequences under the NVTX ranges: %s" % sq)
        cp = analyze(d, "critical_path", cid, "--annotation", "iteration")
        expect(cp["path"]["length_us"] > 0, "critical path: %s" % cp["path"])
        p = d.ctl("analyze", "comm", str(cid), check=1)
        expect(p.returncode != 0 and b"no communication kernels" in p.stderr,
               "comm without NCCL kernels says so: %r" % p.stderr)
    finally:
        if app:
            app.kill()
        d.cleanup()


def top_names_kernels_known_by_handle(d, pid, n):
    """gpuprofctl top of a program whose launches the probes know only as
    "0x<handle>": the live table names them from the CUPTI kernels joined
    to them, as a saved capture does, with the launches' own geometry and
    call sites; a member of group gpuprof who does not own the program
    sees none of its kernels, by handle or by name."""
    top = d.ctl_json("top", "--pid", str(pid), "--window", "10m")
    got = {k["name"]: k for k in top["kernels"]}
    eq(sorted(got), sorted([K_A, K_B]), "top's kernels: %s" % top)
    for k in got.values():
        eq((k["launches"], k["pids"]), (n, [pid]), "top's %s" % k["name"])
        expect(k["geometry"].startswith("grid="), "the launch's geometry kept: %s" % k)
        expect(any(s["name"].startswith("worker") for s in k["call_sites"]),
               "launched from the program's worker: %s" % k)
    table = d.ctl("top", "--pid", str(pid), "--window", "10m", check=0).stdout.decode()
    expect(K_A in table and K_B in table and " 0x" not in table.split("\n\n", 1)[1],
           "top's table names the kernels: %s" % table)
    open_to_group(d)
    p = subprocess.run(as_attacker([GPUPROFCTL, "--socket", d.sock, "--json", "top", "--pid",
                                    str(pid), "--window", "10m"]), capture_output=True)
    eq(p.returncode, 0, "top as a member: %s" % p.stderr)
    eq(json.loads(p.stdout)["kernels"], [], "another user's kernels shown to a member")


@test
def kernels_named_before_the_daemon_started():
    """A process that got its function handles before gpuprofd attached
    (any process of a host whose always-on daemon restarts): the launch
    probes never saw the names and know its launches only as "0x<handle>",
    but the CUPTI kernels joined to them name them, so the flame graphs
    show the real kernel names for both weights."""
    need_build()
    d = Daemon("sampling.cpu = false\n")
    d.cupti = os.path.join(d.tmp, "cupti.sock")
    app = None
    n = 2 * 20
    try:
        # the kernels named, then the daemon started: its probes attach to
        # the running program after the names went by
        app = App(d, ["--name-early", "--threads", "2", "--launches", "20",
                      "--kernel", K_A + ":20000", "--kernel", K_B + ":5000"])
        d.start()
        wait_until(lambda: status(d, "cupti")["peers"] >= 1, "the library connected")
        t = app.run(d)
        eq(t["kernels"], {K_A: (n, n * 20000), K_B: (n, n * 5000)}, "what the program did")
        wait_until(lambda: kernels_stored(d) >= 2 * n, "the library's last batch")
        wait_until(lambda: status(d, "gpu")["unnamed_launches"] >= 2 * n,
                   "the probes counting launches they could not name")
        top_names_kernels_known_by_handle(d, app.pid, n)
        cid = capture(d, app.pid)
        for weight, per in (("gpu-time", {K_A: 20000, K_B_SHOWN: 5000}),
                            ("launches", {K_A: 1, K_B_SHOWN: 1})):
            got = {}
            for line in d.ctl("folded", str(cid), "--weight", weight).stdout.decode().splitlines():
                frames, _, w = line.rpartition(" ")
                top = frames.split(";")[-1]
                expect(not top.startswith("0x"), "%s: a launch by handle: %r" % (weight, line))
                expect(";worker;" in frames, "%s: on its launching stack: %r" % (weight, line))
                got[top] = got.get(top, 0) + int(w)
            eq(got, {k + "_[G]": n * v for k, v in per.items()}, "folded --weight " + weight)
    finally:
        if app:
            app.kill()
        d.cleanup()


@test
def critical_path_follows_cuda_events():
    """Each iteration, the thread's stream runs K_A, records an event that a
    second stream waits on before it runs K_C, then waits for K_C through a
    second event (cudaEventSynchronize). The live capture links each wait
    to the event record it waits on, as a Kineto trace of the program
    would: critical path follows K_A -> K_C across the streams and K_C ->
    the cudaEventSynchronize that waited for it; the Chrome export writes
    the links as Kineto does (read back by the Kineto importer in the
    cupti-live unit test: the stand-in's calls here last under the
    microsecond that HTA's time grid keeps)."""
    need_build()
    d = daemon()
    app = None
    k_c, n = "gpuprof_k_c", 20
    try:
        # kernels long next to the program's own CPU time, so that the GPU
        # side makes the critical path
        # on device 2: the syncs, which name no device, take their context's
        app = App(d, ["--launches", str(n), "--kernel", K_A + ":400000", "--events",
                      k_c + ":200000", "--nvtx"], env={"FAKE_CUPTI_DEVICE": "2"})
        t = app.run(d)
        eq(t["kernels"], {K_A: (n, n * 400000), k_c: (n, n * 200000)}, "what the program did")
        wait_until(lambda: kernels_stored(d) >= 2 * n and
                   status(d, "cupti")["records"]["event"] >= 2 * n, "the library's last batch")
        cid = capture(d, app.pid)

        # one edge K_A -> K_C (the stream wait) and one K_C -> the end of
        # cudaEventSynchronize (the event synchronize) per iteration
        cp = analyze(d, "critical_path", cid)
        eq(cp["graph"]["edges_by_type"]["critical_path_sync_dependency"], 2 * n,
           "sync edges on the live capture: %s" % cp["graph"])
        # the path runs through them: K_A, across to the waiting stream's
        # K_C, back to the thread at its cudaEventSynchronize (in most
        # iterations: a descheduled thread may put its CPU time on it)
        expect(not cp["critical_edges_truncated"], "all critical edges listed")
        on_path = [e for e in cp["critical_edges"]
                   if e["type"] == "critical_path_sync_dependency"]
        expect(n <= len(on_path) <= 2 * n, "%d sync edges on the critical path" % len(on_path))

        trace = os.path.join(d.tmp, "events.json")
        d.ctl("export", str(cid), "--format", "chrome", "--out", trace)
        with open(trace) as f:
            ev = json.load(f)["traceEvents"]
        waits = [e["args"] for e in ev if e.get("name") == "Stream Wait Event"]
        eq(len(waits), n, "Stream Wait Event rows")
        records = {e["args"]["correlation"] for e in ev if e.get("name") == "cudaEventRecord"}
        expect(all(w["wait_on_stream"] == 1 and w["wait_on_cuda_event_record_corr_id"] in records
                   and w["wait_on_cuda_event_id"] == 1 and w["device"] == 2 for w in waits),
               "waits linked to the first stream's records: %s" % waits[:3])
    finally:
        if app:
            app.kill()
        d.cleanup()


@test
def drops_counted_while_the_daemon_is_down():
    """The daemon stops in the middle of a run and comes back: the program
    never notices, the library reconnects, and the batches it could not
    send are counted in the daemon's status."""
    need_build()
    d = daemon()
    app = None
    try:
        app = App(d, ["--launches", "100000", "--pause-ms", "10", "--until-eof",
                      "--kernel", K_A + ":1000"])
        wait_until(lambda: app.probed(d), "probes on the fake driver")
        app.p.stdin.write("go\n")
        app.p.stdin.flush()
        wait_until(lambda: kernels_stored(d) >= 5, "the first kernels")
        d.stop()
        time.sleep(1.0)
        d.start()
        wait_until(lambda: kernels_stored(d) >= 5, "kernels after the restart")
        wait_until(lambda: status(d, "cupti")["library_drops"]["records_dropped"] > 0,
                   "the library's count of what it could not send")
        app.p.stdin.close()
        out = app.p.stdout.read()
        eq(app.p.wait(30), 0, "cuda_app exit status")
        made = totals(out)["kernels"][K_A][0]
        st = status(d, "cupti")
        eq(st["peers_ever"], 1, "one reconnection")
        expect(st["records"]["kernel"] < made, "%d kernels made, %d after the restart: %s" %
               (made, st["records"]["kernel"], st))
    finally:
        if app:
            app.kill()
        d.cleanup()


@test
def a_stopped_daemon_never_holds_the_program_up():
    """SIGSTOP the daemon: its socket fills, the library drops batches
    instead of waiting, and the program runs at its own pace."""
    need_build()
    d = daemon()
    app = None
    try:
        # the same work once with the daemon running, for the pace
        base = App(d, ["--launches", "4000", "--kernel", K_A + ":1000"])
        t0 = time.time()
        base.run(d)
        free = time.time() - t0
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            app = App(d, ["--launches", "4000", "--kernel", K_A + ":1000"])
            app.p.stdin.write("go\n")
            app.p.stdin.flush()
            t0 = time.time()
            out, _ = app.p.communicate(timeout=60)
            held = time.time() - t0
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        eq(app.p.returncode, 0, "cuda_app exit status")
        eq(totals(out)["kernels"][K_A][0], 4000, "every launch made")
        expect(held < max(10.0, free * 5), "%.2fs with the daemon stopped vs %.2fs" % (held, free))
    finally:
        if app:
            app.kill()
        d.cleanup()


@test
def pushed_profiles_carry_the_gpu_label():
    """Continuous profiles (the directory sink): the CUDA process's samples
    carry the pprof label gpu = the device its work ran on."""
    need_build()
    go = shutil.which("go")
    if not go:
        raise Skip("go not installed: no go tool pprof to read the profiles")
    d = daemon("push.dir = TMP/profiles\npush.interval = 1s\n")
    pdir = os.path.join(d.tmp, "profiles")
    app = None
    try:
        app = App(d, ["--launches", "100000", "--pause-ms", "5", "--until-eof",
                      "--kernel", K_A + ":30000"], env={"FAKE_CUPTI_DEVICE": "3"})
        wait_until(lambda: app.probed(d), "probes on the fake driver")
        app.p.stdin.write("go\n")
        app.p.stdin.flush()
        env = dict(os.environ, HOME=d.tmp, GOCACHE=os.path.join(d.tmp, "gocache"))

        def tags_with_kernel():
            for n in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
                if n.endswith(".pb.gz"):
                    p = subprocess.run([go, "tool", "pprof", "-symbolize=none", "-tags",
                                        "-tagfocus=pid=%d" % app.pid, os.path.join(pdir, n)],
                                       capture_output=True, text=True, env=env, timeout=120)
                    if p.returncode == 0 and "gpu" in p.stdout:
                        return p.stdout
            return None
        deadline = time.time() + 60
        tags = None
        while not tags and time.time() < deadline:
            tags = tags_with_kernel()
            time.sleep(0.5)
        expect(tags, "a profile with the CUDA process's labels in %s" % pdir)
        expect(re.search(r"^ gpu: Total [^\n]+\n\s+[^\n]*\(\s*100%\): 3$", tags, re.M),
               "every sample of the process has gpu = 3:\n" + tags)
    finally:
        if app:
            app.kill()
        d.cleanup()


if __name__ == "__main__":
    main()
