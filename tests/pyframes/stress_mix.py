#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Stress check of Python frames in the daemon's CPU samples, by hand (not
a registered test: it runs for minutes). One daemon; busy.py's mix started
ROUNDS times per interpreter, after the daemon, with LOAD busy loops
beside it; each capture is cut after the process exited, as
agrees_with_an_in_process_sampler does, and checked: does it hold Python
stacks at all, and is every <module> frame under mix busy.py's own line of
main()? Prints a line per run, the daemon's view of a run that failed, and
a summary. Root (the CPU sampler), a built tree:

  GPUPROF_BUILD=$PWD/build-test GPUPROF_SOURCE=$PWD GPUPROF_SHARED=/work/shared \\
      python3 tests/pyframes/stress_mix.py [ROUNDS [VERSIONS [SECONDS [LOAD]]]]

VERSIONS: comma-separated pyenv versions or interpreter paths (default
3.11.7,3.12.1); SECONDS of each run (1.5); LOAD busy loops (2)."""
import json
import os
import re
import subprocess
import sys

SRC = os.environ["GPUPROF_SOURCE"]
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from gpd import Daemon, need_sampler  # noqa: E402

BUSY = os.path.realpath(os.path.join(SRC, "tests", "pyframes", "busy.py"))
PYENV = os.path.expanduser(os.environ.get("PYENV_ROOT", "~/.pyenv"))
CONFIG = "sampling.cpu_frequency = 499\nsymbols.lines = false\n"
MAIN_LINE = [n for n, t in enumerate(open(BUSY), 1) if t.strip() == "main()"][-1]


def check(d, pid, cap):
    """(Python samples, <module> frames under mix, those at a wrong place,
    an example)"""
    text = d.ctl("folded", "--lines", "--pid", str(pid), "--tid", str(pid), str(cap),
                 check=0).stdout.decode()
    py = mods = bad = 0
    example = None
    for line in text.splitlines():
        frames, _, n = line.rpartition(" ")
        fr = [f for f in frames.split(";") if f.endswith("_[p]")]
        if not fr:
            continue
        py += int(n)
        m = re.fullmatch(r"<module> \((.*):(-?\d+)\)_\[p\]", fr[0])
        if m and any(re.fullmatch(r"mix \(%s:\d+\)_\[p\]" % re.escape(BUSY), f) for f in fr):
            mods += int(n)
            if m.group(1) != BUSY or int(m.group(2)) != MAIN_LINE:
                bad += int(n)
                example = fr[0]
    return py, mods, bad, example


def main():
    a = sys.argv[1:]
    rounds = int(a[0]) if a else 10
    versions = a[1].split(",") if len(a) > 1 else ["3.11.7", "3.12.1"]
    secs = a[2] if len(a) > 2 else "1.5"
    load = int(a[3]) if len(a) > 3 else 2
    hogs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(load)]
    d = Daemon(CONFIG).start()
    counts = {}
    try:
        need_sampler(d)
        for i in range(rounds):
            for v in versions:
                exe = v if v.startswith("/") else os.path.join(PYENV, "versions", v, "bin",
                                                                 "python3")
                p = subprocess.Popen([exe, BUSY, secs, "mix", os.path.join(d.tmp, "inproc")],
                                     stdout=subprocess.PIPE)
                p.stdout.readline()
                p.wait(120)
                cap = d.ctl_json("capture", "--pid", str(p.pid), "--last", "12s")["id"]
                py, mods, bad, example = check(d, p.pid, cap)
                st = d.ctl_json("status")["python"]
                known = [e for e in st.get("by_process", []) if e["pid"] == p.pid]
                known += [{k: st[k] for k in ("scans", "scans_running", "scans_deferred",
                                              "scan_ms_max") if k in st}]
                c = counts.setdefault(v, {"runs": 0, "no_python": 0, "bad_module": 0})
                c["runs"] += 1
                verdict = "ok"
                if not py:
                    c["no_python"] += 1
                    verdict = "NO PYTHON"
                elif bad:
                    c["bad_module"] += 1
                    verdict = "BAD MODULE %s (%d of %d)" % (example, bad, mods)
                print("run %d %s pid %d: %d Python samples: %s" % (i, v, p.pid, py, verdict),
                      flush=True)
                if verdict != "ok":
                    print("   status:", json.dumps(known), flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        d.cleanup()
    print("SUMMARY", json.dumps(counts))
    return 1 if any(c["no_python"] or c["bad_module"] for c in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
