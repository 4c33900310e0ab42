#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CPU stack sampling through the whole daemon: a real BPF sampler, the
symbolizer, captures and folded output, driven by the real gpuprofctl."""

import os
import shutil
import subprocess
import tempfile
import time

from gpd import BUILD, Daemon, eq, expect, main, need_sampler, parse_folded, Skip, test

WORKLOAD = os.path.join(BUILD, "tests", "workloads", "demo_workload")
CONFIG = "sampling.cpu_frequency = 499\n"


def run_capture(d, *extra, secs="1500ms"):
    w = subprocess.Popen([WORKLOAD, "0"])
    try:
        time.sleep(0.3)
        tmp = tempfile.mkdtemp()
        out = os.path.join(tmp, "folded.txt")
        info = d.ctl_json("capture", "--pid", str(w.pid), "--duration", secs, "--out", out, *extra)
        with open(out) as f:
            text = f.read()
        shutil.rmtree(tmp)
        return w.pid, info, text
    finally:
        w.kill()
        w.wait()


@test
def folded_call_chain_and_counts():
    d = Daemon(CONFIG).start()
    try:
        need_sampler(d)
        pid, info, text = run_capture(d)
        stacks = parse_folded(text)
        total = sum(stacks.values())
        eq(total, info["by_type"]["cpu_sample"], "folded counts sum to the samples captured")
        expect(total > 100, "enough samples at 499 Hz over 1.5 s: %d" % total)
        chain = "main;run_epoch;matmul_tile"
        hot = sum(n for k, n in stacks.items() if chain in k)
        expect(hot > total * 0.3, "matmul_tile under main;run_epoch in most samples (%d of %d):\n%s"
               % (hot, total, text[:2000]))
        for k in stacks:
            expect(k.startswith("demo_workload;"), "comm is the root frame: %r" % k)
        # kernel frames for the syscall-heavy write_log path, after a '-' separator
        kern = [k for k in stacks if ";-;" in k]
        expect(kern, "some samples carry kernel frames")
        expect(any("write_log" in k for k in kern), "kernel frames under write_log:\n" + "\n".join(kern[:10]))
        # the same capture read back: without kernel frames, with pid frames
        no_k = parse_folded(d.ctl("folded", str(info["id"]), "--no-kernel", check=0).stdout.decode())
        expect(all(";-;" not in k for k in no_k), "--no-kernel drops the separator and kernel frames")
        eq(sum(no_k.values()), total, "same total without kernel frames")
        with_pid = parse_folded(d.ctl("folded", str(info["id"]), "--pid-frames", check=0).stdout.decode())
        expect(all(k.startswith("demo_workload-%d;" % pid) for k in with_pid), "comm-PID root frames")
        # filters: pid, comm, and a time sub-window into the capture
        eq(sum(parse_folded(d.ctl("folded", str(info["id"]), "--pid", str(pid), check=0)
                            .stdout.decode()).values()), total, "--pid of the captured process")
        eq(d.ctl("folded", str(info["id"]), "--pid", "1", check=0).stdout, b"", "--pid of another")
        eq(d.ctl("folded", str(info["id"]), "--comm", "nope", check=0).stdout, b"", "--comm filter")
        first = sum(parse_folded(d.ctl("folded", str(info["id"]), "--to", "750ms", check=0)
                                 .stdout.decode()).values())
        second = sum(parse_folded(d.ctl("folded", str(info["id"]), "--from", "750ms", check=0)
                                  .stdout.decode()).values())
        expect(0 < first < total and 0 < second < total, "halves: %d + %d of %d" % (first, second, total))
        expect(abs(first + second - total) <= 2, "the halves add up: %d + %d vs %d" % (first, second, total))
        # folded to a pipe (stdout of gpuprofctl piped into another process)
        p = subprocess.run("%s --socket %s folded %d | wc -l" % (os.path.join(BUILD, "cli", "gpuprofctl"),
                                                                d.sock, info["id"]),
                           shell=True, capture_output=True)
        eq(int(p.stdout), len(stacks), "same lines through a pipe")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def flight_recorder_and_exited_process():
    d = Daemon(CONFIG).start()
    try:
        need_sampler(d)
        w = subprocess.Popen([WORKLOAD, "1.2"])
        w.wait()
        # the process has exited; its samples are still in the ring
        info = d.ctl_json("capture", "--pid", str(w.pid), "--last", "5s")
        expect(info["records"] > 50, "samples of an exited process cut from the past: %r" % info)
        text = d.ctl("folded", str(info["id"]), check=0).stdout.decode()
        expect("main;run_epoch;matmul_tile" in text, "exited process still symbolizes:\n" + text[:1500])
        # restart: the persisted capture keeps its symbols
        eq(d.stop(), 0, "stop")
        d.start()
        text2 = d.ctl("folded", str(info["id"]), check=0).stdout.decode()
        eq(parse_folded(text2), parse_folded(text), "same folded output after a restart")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def python_function_names():
    py = shutil.which("python3")
    probe = subprocess.run([py, "-X", "perf", "-c", "import sys; print(sys.version_info >= (3, 12))"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "True":
        raise Skip("python3 has no -X perf support (needs 3.12+): %s" % probe.stdout.strip())
    d = Daemon(CONFIG).start()
    try:
        need_sampler(d)
        code = ("import time\ndef gpuprof_py_hot(n):\n    s = 0\n    for i in range(n): s += i*i\n    return s\n"
                "t = time.time()\nwhile time.time() - t < 2: gpuprof_py_hot(10000)\n")
        w = subprocess.Popen([py, "-X", "perf", "-c", code])
        time.sleep(0.5)
        info = d.ctl_json("capture", "--pid", str(w.pid), "--duration", "1s")
        w.wait()
        text = d.ctl("folded", str(info["id"]), check=0).stdout.decode()
        expect("gpuprof_py_hot" in text, "Python function names from /tmp/perf-PID.map:\n" + text[:1500])
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
