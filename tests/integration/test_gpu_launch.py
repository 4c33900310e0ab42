#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""GPU launch attribution through the whole daemon: uprobes/USDT on fake
runtimes that export the real Level Zero, CUDA and HIP entry points under
the real sonames (tests/gpu), discovered by the library watcher, turned
into folded stacks with GPU frames and into `gpuprofctl top`."""

import json
import os
import shutil
import subprocess
import tempfile
import time

from gpd import BUILD, Daemon, Skip, cgroup2_mount, eq, expect, main, parse_folded, test
from zebin_elf import zebin

GPU = os.path.join(BUILD, "tests", "gpu")
APP = os.path.join(GPU, "gpu_app")
APP_NOFP = os.path.join(GPU, "gpu_app_nofp")  # gpu_app.c, -O2 -fomit-frame-pointer
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

    def __init__(self, kind, n=N, cgroup=None, env=None, lib=None, hide=False, app=APP):
        """cgroup: a directory under the cgroup2 mount the app runs in;
        env: extra environment variables; lib: the library's path, when not
        the fake runtime's own; hide: run in a private mount namespace and
        mount a tmpfs over the library's directory after the dlopen, so
        that its path does not resolve under the process's root (returns
        once it does not); app: the gpu_app build to run."""
        self.kind = kind
        rt, self.lib = LIBS[kind]
        self.lib = lib or self.lib
        cmd = [app, rt, self.lib, str(n), "--hold"]
        if hide:
            script = 'hide() { sleep 0.3; mount -t tmpfs none "$0"; }; hide "$0" & exec "$@"'
            cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                   os.path.dirname(self.lib)] + cmd

        def enter():
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0\n")
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, **(env or {})),
                                  preexec_fn=enter if cgroup else None)
        line = self.p.stdout.readline().split()
        expect(line and line[0] == "ready", "gpu_app started: %r" % line)
        self.pid = self.p.pid
        if hide:
            hidden = "/proc/%d/root%s" % (self.pid, self.lib)
            expect(wait_until(lambda: not os.path.exists(hidden)),
                   "the library's path is hidden under the process's root")

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

    def kill(self):
        """Cleanup after a failure: ends the app if still running."""
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def wait_until(cond, timeout=10):
    """Polls cond until it holds (True) or timeout seconds pass (False)."""
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


def check_folded(stacks, kind, n=N, want=None, comm="gpu_app"):
    """Each expected chain appears exactly once, under main, with its count
    (want: those counts, when not expected(kind, n))."""
    want = want or expected(kind, n)
    got = {}
    for k, v in stacks.items():
        expect(k.startswith(comm + ";"), "comm is the root frame: %r" % k)
        expect(k.endswith("_[G]"), "a GPU frame on top: %r" % k)
        frames = k.split(";")
        expect("main" in frames, "launch stacks reach main: %r" % k)
        tail = ";".join(frames[frames.index("main") + 1:])
        got[tail] = got.get(tail, 0) + v
    eq(got, want, "launch counts per call site and kernel (%s)" % kind)


def fresh_cgroups(n):
    """n new cgroups: [(absolute dir, path relative to the mount)]."""
    mnt = cgroup2_mount()
    if not mnt:
        raise Skip("no cgroup2 mount (cgroup v1-only host)")
    made = []
    for i in range(n):
        rel = "/gpuprof-test-%d-%d" % (os.getpid(), i)
        try:
            os.mkdir(mnt + rel)
        except OSError as e:
            for a, _ in made:
                os.rmdir(a)
            raise Skip("cgroup2 mount %s not writable: %s" % (mnt, e))
        made.append((mnt + rel, rel))
    return made


def remove_cgroups(made):
    for a, _ in made:
        for _ in range(100):  # the last task's exit is noticed asynchronously
            try:
                os.rmdir(a)
                break
            except OSError:
                time.sleep(0.01)


def folded(d, cid, *extra):
    p = d.ctl("folded", str(cid), *extra, check=0)
    return p.stdout.decode()


def launch_and_check(d, app, kind="cuda"):
    """app launches its kernels; a capture of its pid holds exactly them."""
    app.go()
    time.sleep(0.4)  # the collector drains every 200 ms
    info = d.ctl_json("capture", "--pid", str(app.pid), "--last", "10s")
    check_folded(parse_folded(folded(d, info["id"], "--weight", "launches")), kind)


ZEBIN_COUNTERS = ("zebins_seen", "zebins_loaded", "zebins_skipped", "zebins_failed")


def zebin_counters(d):
    g = gpu_status(d)
    return {k: g[k] for k in ZEBIN_COUNTERS}, g.get("zebin_error", "")


def zebin_read_by_the_daemon(d, before, path):
    """The daemon opened the zebin through /proc/PID/root and parsed it; the
    kernels load where an xe kernel table exists, else are skipped. Deltas:
    the daemon sees every process on the host."""
    deadline = time.time() + 10
    while True:
        now, err = zebin_counters(d)
        done = now["zebins_loaded"] + now["zebins_skipped"] + now["zebins_failed"] - \
            before["zebins_loaded"] - before["zebins_skipped"] - before["zebins_failed"]
        if done >= 1 or time.time() > deadline:
            break
        time.sleep(0.05)
    expect(now["zebins_seen"] > before["zebins_seen"], "compile_kernel USDT seen: %r" % now)
    expect(path not in err, "zebin read and parsed: %r" % err)
    expect(now["zebins_loaded"] + now["zebins_skipped"] >
           before["zebins_loaded"] + before["zebins_skipped"],
           "zebin loaded or skipped (no xe): %r, %r" % (now, err))


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
        # NEO's compile_kernel USDT names this debug zebin (fake_neo.c)
        zf = tempfile.NamedTemporaryFile(prefix="dumped_zebin_module_", suffix=".elf")
        zf.write(zebin())
        zf.flush()
        for kind in ("cuda", "ze", "hip", "ze_usdt"):
            zbefore = zebin_counters(d)[0]
            app = App(kind, env={"FAKE_NEO_ZEBIN": zf.name} if kind == "ze_usdt" else None)
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
            if kind == "ze_usdt":
                zebin_read_by_the_daemon(d, zbefore, zf.name)
            app.exit()
        zf.close()
        g = gpu_status(d)
        eq(g["lost"], 0, "no launches lost in the ring buffer")
        eq(g["unnamed_launches"], 0, "every kernel named")
    finally:
        d.cleanup()


@test
def library_path_hidden_under_the_process_root():
    """A process whose library path does not resolve under its own root
    (here a tmpfs mounted over the library's directory in its private mount
    namespace, after the dlopen; a chroot is the same case), found by the
    daemon's start-up scan: /proc/PID/root/<path> fails, and the probes go
    on through the daemon's own path, which names the same file."""
    if os.geteuid() != 0:
        raise Skip("needs root (mount namespace)")
    tmp = tempfile.mkdtemp(prefix="gpuprof-hidden-")
    lib = os.path.join(tmp, "libcuda.so.1")
    shutil.copy(LIBS["cuda"][1], lib)
    d = app = None
    try:
        app = App("cuda", lib=lib, hide=True)
        d = Daemon().start()
        need_probes(d)
        got = app.wait_probed(d)
        expect(not got.get("error"), "no attach error: %r" % got)
        launch_and_check(d, app)
        app.exit()
    finally:
        if app:
            app.kill()
        if d:
            d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@test
def library_unreadable_through_its_first_process():
    """The first process seen mapping a library cannot show its file (its
    root hides the path, and the daemon's own path names another file: a
    bind mount over it), so that attach reads nothing. A second process
    mapping the same file (a hard link) must get the library probed, for
    both: the attach is tried again through it."""
    if os.geteuid() != 0:
        raise Skip("needs root (mount namespace, bind mount)")
    tmp = tempfile.mkdtemp(prefix="gpuprof-unread-")
    dird, dire = os.path.join(tmp, "d"), os.path.join(tmp, "e")
    os.mkdir(dird)
    os.mkdir(dire)
    lib1, lib2 = os.path.join(dird, "libcuda.so.1"), os.path.join(dire, "libcuda.so.1")
    other = os.path.join(tmp, "other.so")
    shutil.copy(LIBS["cuda"][1], lib1)
    os.link(lib1, lib2)
    shutil.copy(LIBS["cuda"][1], other)
    ino = os.stat(lib1).st_ino
    d = app1 = app2 = None
    mounted = False
    try:
        app1 = App("cuda", lib=lib1, hide=True)
        subprocess.run(["mount", "--bind", other, lib1], check=True)
        mounted = True
        d = Daemon().start()
        need_probes(d)

        def entry():
            e = [l for l in gpu_status(d)["libraries"] if l["inode"] == ino]
            return e[0] if e else {}
        wait_until(lambda: entry().get("error"))
        e = entry()
        expect(e.get("probes") == 0 and "reading the library" in e.get("error", ""),
               "the first attach read nothing: %r" % e)
        app2 = App("cuda", lib=lib2)
        wait_until(lambda: entry().get("probes", 0) >= 1 and entry()["processes"] >= 2
                   and not entry().get("attaching"))
        e = entry()
        expect(e.get("probes", 0) >= 1 and not e.get("error"),
               "probed through the second process: %r" % e)
        for a in (app2, app1):
            launch_and_check(d, a)
            a.exit()
    finally:
        for a in (app1, app2):
            if a:
                a.kill()
        if mounted:
            subprocess.run(["umount", lib1])
        if d:
            d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@test
def process_running_before_the_daemon():
    """Found by the initial /proc scan."""
    app = App("cuda")
    d = Daemon().start()
    try:
        need_probes(d)
        app.wait_probed(d)
        launch_and_check(d, app)
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
def launches_split_by_cgroup():
    """Two containers sharing the GPU: folded --cgroup roots each launch
    stack at its cgroup path, with exact counts per cgroup."""
    d = Daemon().start()
    made = []
    try:
        need_probes(d)
        made = fresh_cgroups(2)
        apps = [App("cuda", n=N, cgroup=made[0][0]), App("cuda", n=40, cgroup=made[1][0])]
        for app in apps:
            app.wait_probed(d)
            app.go()
        time.sleep(0.4)
        info = d.ctl_json("capture", "--pid", str(apps[0].pid), "--pid", str(apps[1].pid),
                          "--last", "10s")
        stacks = parse_folded(folded(d, info["id"], "--weight", "launches", "--cgroup"))
        per = {}
        for k, v in stacks.items():
            root, _, rest = k.partition(";")
            expect(rest.startswith("gpu_app;"), "cgroup, then comm: %r" % k)
            per.setdefault(root, {})[rest] = v
        eq(sorted(per), sorted(rel for _, rel in made), "one root frame per cgroup")
        check_folded(per[made[0][1]], "cuda", N)
        check_folded(per[made[1][1]], "cuda", 40)
        # without --cgroup the same stacks merge across the two
        both = {k: v + expected("cuda", 40)[k] for k, v in expected("cuda", N).items()}
        check_folded(parse_folded(folded(d, info["id"], "--weight", "launches")), "cuda",
                     want=both)
        cg = gpu_status(d)["cgroups"]
        expect(cg.get("resolved", 0) >= 2 and "mount" in cg, "status cgroups: %r" % cg)
        for app in apps:
            app.exit()
    finally:
        d.cleanup()
        remove_cgroups(made)


@test
def launch_stacks_without_frame_pointers():
    """gpu_app built -O2 -fomit-frame-pointer, as real AI stacks are (its
    functions use %rbp as a general register): the launch-site stacks reach
    main through CFI unwinding of the copied stack, with exact counts per
    call site, every stack taken (gpu.stack_sample 1) and sampled (the
    default), and the call site found by CFI without the entry-probe fix-up.
    With stack copying off (gpu.stack_bytes = 0) the same launches get
    today's frame-pointer walk, which cannot get there."""
    for conf, cfi in (("gpu.stack_sample = 1\n", True), ("", True),
                      ("gpu.stack_bytes = 0\ngpu.stack_sample = 1\n", False)):
        d = Daemon(config=conf).start()
        app = None
        try:
            need_probes(d)
            app = App("cuda", app=APP_NOFP)
            app.wait_probed(d)
            app.go()
            time.sleep(0.4)  # the collector drains every 200 ms
            info = d.ctl_json("capture", "--pid", str(app.pid), "--last", "10s")
            stacks = parse_folded(folded(d, info["id"], "--weight", "launches"))
            total = sum(stacks.values())
            eq(total, sum(expected("cuda").values()), "every launch recorded (%r)" % conf)
            reach = sum(v for k, v in stacks.items() if "main" in k.split(";"))
            g = gpu_status(d)
            print("%-45r stacks taken %d, reaching main %d of %d" %
                  (conf, g["stacks_taken"], reach, total))
            if cfi:
                eq(g["stack_bytes"], 65536, "stack copying on (gpu.stack_bytes)")
                check_folded(stacks, "cuda", comm="gpu_app_nofp")
                eq(g["callers_inserted"], 0, "CFI unwinding found every call site itself")
                unw = d.ctl_json("status")["unwind"]
                expect(unw["samples"] >= g["stacks_taken"], "launch stacks unwound: %r" % unw)
            else:
                eq(g["stack_bytes"], 0, "stack copying off")
                eq(reach, 0, "frame pointers alone never reach main here")
            app.exit()
            app = None
        finally:
            if app:
                app.kill()
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
