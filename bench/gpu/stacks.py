#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of launch-site stacks: N cuLaunchKernel calls through gpu_app --bench
(tests/gpu) from under DEEP KiB of touched stack (so a stack copy is the
whole gpu.stack_bytes, as from a real launcher's deep stack), without
the daemon, then with it for each of gpu.stack_bytes 0 (frame pointers
walked in BPF) and 16384 (registers + stack copied, unwound by CFI in the
daemon), at gpu.stack_sample 1 (every launch takes a stack) and the default
32. CPU sampling is off, so the unwinder's figures are the launches' alone.

Per configuration: launches/s and ns per launch (wall), the launching
thread's CPU per launch (the uprobe trap, the BPF program and its stack
copy run there) and what that adds over no daemon, the launch program's
own run time per launch (BPF statistics, kernel.bpf_stats_enabled = 1, set
for the run: the figure the machine's load disturbs least), the daemon's CPU
per launch (ring reading, unwinding, store; from /proc/PID/stat), stacks
taken (and of those walked by frame pointers because the ring was over half
full), bytes copied per stack and the unwinder's time per stack (mean, and
the median's power-of-two bucket: the mean carries the first stacks' object
loads). The collector sees every process on the host: other launchers
running meanwhile add to its counts. Needs root and bpftool.

  bench/gpu/stacks.py BUILD_DIR [N] [DEEP_KIB] [ROUNDS]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

CONFIGS = [
    ("stack_bytes 0, stack_sample 1", "gpu.stack_bytes = 0\ngpu.stack_sample = 1\n"),
    ("stack_bytes 65536, stack_sample 1", "gpu.stack_bytes = 65536\ngpu.stack_sample = 1\n"),
    ("stack_bytes 0, stack_sample 32", "gpu.stack_bytes = 0\n"),
    ("stack_bytes 65536, stack_sample 32", "gpu.stack_bytes = 65536\n"),
]


def proc_cpu_ns(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks * 1e9 / os.sysconf("SC_CLK_TCK")


def app_run(build, n, deep, wait_s=0.0):
    """gpu_app --bench: (wall ns, thread CPU ns) per launch."""
    app = os.path.join(build, "tests", "gpu", "gpu_app")
    lib = os.path.join(build, "tests", "gpu", "cuda", "libcuda.so.1")
    p = subprocess.Popen([app, "cuda", lib, str(n), "--bench", "--deep", str(deep)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdout.readline()  # ready
    time.sleep(wait_s)  # the probes attach once the library is mapped
    out, _ = p.communicate("go\n", timeout=600)
    got = dict(l.split() for l in out.splitlines() if l.startswith(("ns_", "cpu_ns_")))
    return float(got["ns_per_launch"]), float(got["cpu_ns_per_launch"])


def prog_ns(name):
    """Mean run time of the loaded BPF program name (0 when unknown)."""
    try:
        progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], check=True,
                                          stdout=subprocess.PIPE).stdout)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 0.0
    t = n = 0
    for p in progs:
        if p.get("name") == name:
            t += p.get("run_time_ns", 0)
            n += p.get("run_cnt", 0)
    return t / n if n else 0.0


def ctl(build, sock, *args):
    out = subprocess.run([os.path.join(build, "cli", "gpuprofctl"), "--socket", sock, "--json"]
                         + list(args), check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out)


def with_daemon(build, n, deep, conf):
    tmp = tempfile.mkdtemp(prefix="gpuprof-bench-")
    sock = os.path.join(tmp, "sock")
    with open(os.path.join(tmp, "conf"), "w") as f:
        f.write("sampling.cpu = false\n" + conf)
    log = open(os.path.join(tmp, "log"), "w")
    d = subprocess.Popen([os.path.join(build, "daemon", "gpuprofd"), "--foreground",
                          "--socket", sock, "--state-dir", os.path.join(tmp, "state"),
                          "--config", os.path.join(tmp, "conf")], stderr=log)
    try:
        for _ in range(100):
            if os.path.exists(sock):
                try:
                    ctl(build, sock, "status")
                    break
                except subprocess.CalledProcessError:
                    pass
            time.sleep(0.1)
        c0 = proc_cpu_ns(d.pid)
        wall, cpu = app_run(build, n, deep, wait_s=1.0)
        time.sleep(0.5)  # the last records drained
        dcpu = proc_cpu_ns(d.pid) - c0
        bpf = prog_ns("gl_cu_launch")
        st = ctl(build, sock, "status")
        g = [c for c in st["collectors"] if c["name"] == "gpu"][0]
        u = st.get("unwind", {})
        return {"wall": wall, "cpu": cpu, "daemon": dcpu / n, "taken": g["stacks_taken"],
                "events": g["events"], "lost": g["lost"], "bpf": bpf,
                "fp": g.get("stacks_fp_fallback", 0),
                "bytes": u.get("stack_bytes_per_sample", 0) if g["stack_bytes"] else 0,
                "unwind_ns": u.get("unwind_ns_mean", 0) if g["stack_bytes"] else 0,
                "unwind_med": u.get("unwind_ns_median_bucket", 0) if g["stack_bytes"] else 0}
    finally:
        d.terminate()
        d.wait(30)
        log.close()
        subprocess.run(["rm", "-rf", tmp])


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    build = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    deep = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_were = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    base, runs = [], {name: [] for name, _ in CONFIGS}
    for _ in range(rounds):  # alternating, so load drifts hit every config alike
        base.append(app_run(build, n, deep))
        for name, conf in CONFIGS:
            runs[name].append(with_daemon(build, n, deep, conf))
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write(stats_were)
    bw, bc = median([b[0] for b in base]), median([b[1] for b in base])
    print("%d cuLaunchKernel per run from under %d KiB of stack, %d rounds, medians" %
          (n, deep, rounds))
    print("%-36s %11s %8s %8s %8s %7s %7s %6s %6s %5s %7s %7s %7s" %
          ("config", "launches/s", "wall ns", "thr CPU", "added", "BPF ns", "daemon",
           "taken", "fp", "lost", "B/stack", "unw ns", "unw med"))
    print("%-36s %11.0f %8.1f %8.1f" % ("no daemon", 1e9 / bw, bw, bc))
    for name, _ in CONFIGS:
        r = runs[name]
        wall, cpu = median([x["wall"] for x in r]), median([x["cpu"] for x in r])
        med = lambda k: median([x[k] for x in r])  # noqa: E731
        print("%-36s %11.0f %8.1f %8.1f %8.1f %7.0f %7.0f %6d %6d %5d %7.0f %7.0f %7.0f" %
              (name, 1e9 / wall, wall, cpu, cpu - bc, med("bpf"), med("daemon"), med("taken"),
               med("fp"), med("lost"), med("bytes"), med("unwind_ns"), med("unwind_med")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
