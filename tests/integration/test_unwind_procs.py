#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CFI unwinding of processes as they really are, through the whole daemon:
a program built -O2 -fomit-frame-pointer (frame pointers cannot walk it)
running in its own mount namespace from a file the host cannot see (a
container), one that becomes the program by exec after it was first
sampled, and the same program with the stack copy turned off
(sampling.stack_bytes = 0), which must fall back to frame pointers and so
NOT reach main -- the proof the CFI path is what walks it."""

import os
import shutil
import subprocess
import tempfile
import time

from gpd import Daemon, expect, main, need_sampler, parse_folded, Skip, test

CONFIG = "sampling.cpu_frequency = 499\n"

SRC = r"""
#include <stdlib.h>
#include <time.h>
static volatile long sink;
static int cmp(const void *a, const void *b)
{ int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
__attribute__((noinline)) void uw_d(int *v, int n)
{ for (int i = 0; i < n; i++) v[i] = rand(); qsort(v, n, sizeof(int), cmp); sink++; }
__attribute__((noinline)) void uw_c(int *v, int n) { uw_d(v, n); sink++; }
__attribute__((noinline)) void uw_b(int *v, int n) { uw_c(v, n); sink++; }
__attribute__((noinline)) void uw_a(int *v, int n) { uw_b(v, n); sink++; }
int main(int argc, char **argv)
{
	int n = 20000, *v = malloc(n * sizeof(int));
	time_t end = time(0) + (argc > 1 ? atoi(argv[1]) : 5);
	while (time(0) < end)
		uw_a(v, n);
	return 0;
}
"""


def build(tmp):
    src = os.path.join(tmp, "uwchain.c")
    exe = os.path.join(tmp, "uwchain")
    with open(src, "w") as f:
        f.write(SRC)
    subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-o", exe, src], check=True)
    return exe


def folded_of(d, pid, secs="2s"):
    text = d.ctl("folded", str(d.ctl_json("capture", "--pid", str(pid), "--duration",
                                          secs)["id"]), check=0).stdout.decode()
    return parse_folded(text)


def share(stacks, pred):
    total = sum(stacks.values())
    return total, (sum(n for s, n in stacks.items() if pred(s.split(";"))) / total if total else 0)


def chain_to_main(fr):
    """main, then uw_a, uw_b, uw_c, uw_d in order below it (the samples in
    main's own loop or in rand/qsort under uw_d all count)."""
    if "main" not in fr:
        return False
    below = fr[fr.index("main") + 1:]
    want = ["uw_a", "uw_b", "uw_c", "uw_d"]
    return below == [] or below[:len(want)] == want[:len(below)] or below[:4] == want


def top_stacks(stacks):
    return "\n".join("%6d %s" % (n, s[:200]) for s, n in
                     sorted(stacks.items(), key=lambda kv: -kv[1])[:6])


@test
def container_program_reaches_main():
    """The program runs from a tmpfs mounted only in its own mount
    namespace: the daemon opens its file through /proc/PID/map_files."""
    if not shutil.which("unshare"):
        raise Skip("no unshare(1)")
    d = Daemon(CONFIG).start()
    tmp = tempfile.mkdtemp()
    try:
        need_sampler(d)
        exe = build(tmp)
        hidden = os.path.join(tmp, "ns")
        os.mkdir(hidden)
        p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                              "mount -t tmpfs none %s && cp %s %s/prog && exec %s/prog 6" %
                              (hidden, exe, hidden, hidden)])
        time.sleep(0.5)
        expect(not os.path.exists(os.path.join(hidden, "prog")),
               "the program's file is invisible from the host")
        stacks = folded_of(d, p.pid)
        p.kill()
        p.wait()
        total, ok = share(stacks, chain_to_main)
        expect(total >= 100, "enough samples: %d" % total)
        expect(ok >= 0.95, "%.1f%% of %d samples reach main through uw_a..uw_d\n%s" %
               (100 * ok, total, top_stacks(stacks)))
    finally:
        d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@test
def exec_after_first_samples():
    """Sampled as a shell first; the same pid then execs the program: the
    unwinder's snapshot of the old program must not be used for the new."""
    d = Daemon(CONFIG).start()
    tmp = tempfile.mkdtemp()
    try:
        need_sampler(d)
        exe = build(tmp)
        p = subprocess.Popen(["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; "
                              "exec %s 6" % exe])
        time.sleep(2.5)  # the shell's loop runs about a second here
        stacks = folded_of(d, p.pid)
        p.kill()
        p.wait()
        prog = {s: n for s, n in stacks.items() if s.startswith("uwchain;")}
        total, ok = share(prog, chain_to_main)
        expect(total >= 100, "enough samples of the program: %d\n%s" % (total, top_stacks(stacks)))
        expect(ok >= 0.95, "%.1f%% of %d samples reach main\n%s" %
               (100 * ok, total, top_stacks(prog)))
    finally:
        d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@test
def frame_pointers_only_when_copy_is_off():
    d = Daemon(CONFIG + "sampling.stack_bytes = 0\n").start()
    tmp = tempfile.mkdtemp()
    try:
        need_sampler(d)
        exe = build(tmp)
        p = subprocess.Popen([exe, "6"])
        time.sleep(0.3)
        stacks = folded_of(d, p.pid)
        p.kill()
        p.wait()
        total, ok = share(stacks, lambda fr: "main" in fr)
        expect(total >= 100, "enough samples: %d" % total)
        expect(ok < 0.5, "without CFI the chain cannot be walked: %.1f%% reach main\n%s" %
               (100 * ok, top_stacks(stacks)))
        st = d.ctl_json("status")
        # the unwinder stays for GPU stacks (gpu.stack_bytes), but no CPU
        # sample went through it
        expect(st.get("unwind", {}).get("samples", 0) == 0,
               "CPU samples not unwound: %r" % st.get("unwind"))
        cpu = [c for c in st["collectors"] if c["name"] == "cpu"][0]
        expect(cpu["stack_bytes"] == 0, "cpu.stack_bytes %r" % cpu.get("stack_bytes"))
    finally:
        d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
