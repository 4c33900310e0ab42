#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Accuracy of user-stack unwinding, with `perf record --call-graph dwarf`
as the oracle (docs/collectors.md, "Accuracy against perf").

The programs are in tests/programs/unwind/ and are compiled here, at run
time, with the flags in PROGRAMS (so what is under test is explicit): a C
chain without frame pointers plus a qsort comparator, C++ std::sort with a
lambda and std::map, a frameless hot leaf under a caller with a frame, a
library without frame pointers loaded with dlopen() once the daemon has
seen the process (on SIGUSR1, 0.8 s into the capture), four threads, and
a program started before the daemon. A control, the leaf program with a
frame in every function, must pass with frame-pointer unwinding alone: it
shows the comparison can pass, so the others' failures are the unwinder's.

For each, one run of the program is sampled at the same time by the real
daemon (CPU sampler at 499 Hz, `gpuprofctl capture --pid`, `folded
--no-kernel`) and by `perf record -e cpu-clock -F 499 --call-graph dwarf
-p PID`, whose `perf script` output is folded by perffold.py. Both sides go
through the same normalization (perffold.py's docstring): user frames only,
mangled symbol names without offsets or versions, aliases of one address
merged, every frame a tool could not name written [unknown], no inline
expansion on either side. A stack is then cut to start at its outermost
anchor: `main`, or for threads their start routine.

Assertions, per program:

1. reach: at least 98 % of our samples have an anchor frame;
2. agreement: at least 95 % of our samples have a normalized, cut stack
   that is exactly one of the stacks perf recorded for the same run. The
   two tools take different samples, so a sample cannot be compared with
   "its" perf sample; the set of perf's stacks stands for the stacks the
   program really has. Exact equality means a missing frame (main;leaf for
   main;caller;leaf), an extra one, a wrong name or a stack that stops
   early all disagree. A stack ours and perf both leave partly [unknown]
   agrees only where the [unknown]s are at the same depth;
3. the oracle is sane: at least 95 % of perf's samples reach an anchor,
   and the program has the shape it was built for (its known chain is in
   perf's stacks).

On failure the message gives, per program, our and perf's figures and the
top stacks of ours that perf never had, with perf's top stacks beside
them. The figures are also printed for passing runs.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter

from gpd import Daemon, eq, expect, main, need_sampler, Skip, SOURCE, test
from perffold import (UNKNOWN, SymbolAliases, cut_at_anchor, our_frame_name, parse_folded,
                      parse_perf_script, perf_frame_name, strip_version)

PROGDIR = os.path.join(SOURCE, "tests", "programs", "unwind")
FREQ = 499
# 499 Hz on each CPU (the default 49 Hz gives too few samples in seconds);
# names compared mangled (see perffold.py).
CONFIG = "sampling.cpu_frequency = %d\nsymbols.demangle = false\n" % FREQ
CAPTURE_S = 2.5   # the daemon's capture window
RUN_S = 60        # the program's run: it is stopped once both have sampled it
REACH_MIN = 0.98
AGREE_MIN = 0.95
PERF_REACH_MIN = 0.95

NOFP = ["-O2", "-fomit-frame-pointer"]
# output: compiler, sources, flags (libraries last on the command line)
PROGRAMS = {
    "chain": ("cc", ["chain.c"], NOFP),
    "cxx": ("c++", ["cxx.cc"], NOFP),
    "leaf": ("cc", ["leaf.c"], ["-O2", "-fno-omit-frame-pointer"]),
    "leaf_control": ("cc", ["leaf.c"], ["-O2", "-fno-omit-frame-pointer", "-DLEAF_HAS_FRAME"]),
    "dlopen": ("cc", ["dlopen_main.c"], NOFP + ["-ldl"]),
    "threads": ("cc", ["threads.c"], NOFP + ["-pthread"]),
    "libunwind_plugin.so": ("cc", ["plugin.c"], NOFP + ["-fPIC", "-shared"]),
}

_built = {}


def build_dir():
    """The programs, compiled once per run of this file into a temp dir."""
    if "dir" in _built:
        return _built["dir"]
    d = tempfile.mkdtemp(prefix="gpd-unwind-")
    os.chmod(d, 0o755)
    for name, (cc, srcs, flags) in PROGRAMS.items():
        if not shutil.which(cc):
            raise AssertionError("no %s to build the test programs" % cc)
        src = [os.path.join(PROGDIR, s) for s in srcs]
        # sources first, then libraries (-ldl) after them for the linker
        libs = [f for f in flags if f.startswith("-l")]
        cmd = [cc] + [f for f in flags if not f.startswith("-l")] + ["-o", os.path.join(d, name)] + src + libs
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            raise AssertionError("%s failed:\n%s" % (" ".join(cmd), p.stderr))
    _built["dir"] = d
    return d


def need_perf():
    """perf is the oracle: without it the test cannot judge anything, so it
    fails (CI installs linux-perf, scripts/deps.sh) rather than skip.
    $GPUPROF_PERF names another perf binary."""
    perf = shutil.which(os.environ.get("GPUPROF_PERF", "perf"))
    if not perf:
        raise AssertionError("perf not found (%s): the accuracy oracle needs Debian's linux-perf "
                             "(apt-get install linux-perf; scripts/deps.sh installs it)"
                             % os.environ.get("GPUPROF_PERF", "perf on PATH"))
    p = subprocess.run([perf, "--version"], capture_output=True, text=True)
    if p.returncode:
        raise AssertionError("perf does not run (%s): %s" % (perf, p.stderr.strip()))
    return perf


def need_root():
    if os.geteuid() != 0:
        raise Skip("the daemon's CPU sampler and perf -p need root")


def wait_perf_sampling(perf_p, data, timeout=20):
    """Until perf has written samples (its file past 64 KiB: one dwarf
    sample is 8 KiB of stack), so its window covers the daemon's."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if perf_p.poll() is not None:
            raise AssertionError("perf record exited (%d): %s" % (
                perf_p.returncode, perf_p.stderr.read().decode(errors="replace")))
        if os.path.exists(data) and os.path.getsize(data) > 65536:
            return
        time.sleep(0.05)
    raise AssertionError("perf record wrote no samples in %ds" % timeout)


def wait_ready(d, cid, timeout=120):
    """Until capture cid is complete (raw calls: cheaper than a gpuprofctl
    process per poll on a loaded 2-CPU machine)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        r = d.call("capture.info", {"id": cid})
        expect("result" in r, "capture.info %d: %r" % (cid, r))
        if r["result"]["state"] == "ready":
            return
        expect(r["result"]["state"] == "recording", "capture %d: %r" % (cid, r["result"]))
        time.sleep(0.1)
    raise AssertionError("capture %d not ready after %ds" % (cid, timeout))


class Run:
    """One program, profiled at once by the daemon and by perf."""

    def __init__(self, name, argv, anchors, before_daemon=False, usr1_after=None):
        """usr1_after: send the program SIGUSR1 that many seconds into the
        capture (program d's cue to dlopen)."""
        self.name, self.argv, self.anchors = name, argv, anchors
        self.before_daemon = before_daemon
        self.usr1_after = usr1_after
        self.ours = Counter()   # cut stack -> samples
        self.ours_reach = 0
        self.ours_total = 0
        self.perf = Counter()
        self.perf_reach = 0
        self.perf_total = 0
        self.tids_ours = set()
        self.tids_perf = set()
        self.perf_raw = ""
        self.folded_raw = ""
        self.unwind_status = None  # the cpu collector's "unwind" status object, if any

    def go(self):
        perf = need_perf()
        need_root()
        d = Daemon(CONFIG)
        tmp = tempfile.mkdtemp(prefix="gpd-unwind-run-")
        prog = perf_p = None
        try:
            if self.before_daemon:
                prog = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL)
                time.sleep(0.5)  # running, its libraries mapped, before the daemon exists
                d.start()
            else:
                d.start()
                prog = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL)
            need_sampler(d)
            data = os.path.join(tmp, "perf.data")
            # cpu-clock: the daemon's event, and the one a VM without a PMU has
            perf_p = subprocess.Popen([perf, "record", "-e", "cpu-clock", "-F", str(FREQ),
                                       "--call-graph", "dwarf", "-p", str(prog.pid), "-o", data],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            wait_perf_sampling(perf_p, data)
            info = d.ctl_json("capture", "--pid", str(prog.pid), "--duration",
                              "%dms" % (CAPTURE_S * 1000), "--no-wait")
            if self.usr1_after is not None:
                # the window is on CLOCK_MONOTONIC, Python's monotonic clock
                start = info["window"]["start_ns"] / 1e9
                time.sleep(max(0.0, start + self.usr1_after - time.monotonic()))
                prog.send_signal(signal.SIGUSR1)
            wait_ready(d, info["id"])
            folded = d.ctl("folded", str(info["id"]), "--no-kernel", "--tid-frames", check=0)
            self.folded_raw = folded.stdout.decode(errors="replace")
            cpu = [c for c in d.ctl_json("status")["collectors"] if c["name"] == "cpu"][0]
            self.unwind_status = cpu.get("unwind")
            # the program runs until stopped, so it was running all along
            expect(prog.poll() is None, "%s exited early (%s)" % (self.name, prog.returncode))
            perf_p.send_signal(signal.SIGINT)
            _, err = perf_p.communicate(timeout=60)
            # perf record ends a SIGINT by re-raising it, after writing the data
            expect(perf_p.returncode in (0, -signal.SIGINT),
                   "perf record failed (%d): %s" % (perf_p.returncode, err.decode()))
            p = subprocess.run([perf, "script", "-i", data, "--no-demangle", "--no-inline",
                                "-F", "comm,tid,ip,sym,dso"], capture_output=True, timeout=120)
            expect(p.returncode == 0, "perf script failed: %s" % p.stderr.decode())
            self.perf_raw = p.stdout.decode(errors="replace")
            eq(d.stop(), 0, "daemon stops cleanly")
        finally:
            for c in (prog, perf_p):
                if c and c.poll() is None:
                    c.kill()
                    c.wait()
            d.cleanup()
            shutil.rmtree(tmp, ignore_errors=True)
        self._fold()
        return self

    def _fold(self):
        samples = parse_perf_script(self.perf_raw)
        aliases = SymbolAliases([dso for s in samples for dso in s[3]] + [self.argv[0]] +
                                [a for a in self.argv[1:] if a.endswith(".so")])
        for comm, tid, frames, _ in samples:
            stack, ok = cut_at_anchor(aliases.stack(frames), self.anchors)
            self.perf[stack] += 1
            self.perf_reach += ok
            self.perf_total += 1
            self.tids_perf.add(tid)
        for (root, frames), n in parse_folded(self.folded_raw).items():
            stack, ok = cut_at_anchor(aliases.stack(frames), self.anchors)
            self.ours[stack] += n
            self.ours_reach += n if ok else 0
            self.ours_total += n
            self.tids_ours.add(root.rpartition("-")[2])

    # figures
    def reach(self):
        return self.ours_reach / self.ours_total if self.ours_total else 0.0

    def perf_reach_frac(self):
        return self.perf_reach / self.perf_total if self.perf_total else 0.0

    def agree(self):
        ok = sum(n for s, n in self.ours.items() if s in self.perf)
        return ok / self.ours_total if self.ours_total else 0.0

    def agree_reverse(self):
        """Perf's samples whose stack is among ours: printed, not asserted
        (a partial picture, e.g. a phase ours sampled less, is not wrong)."""
        ok = sum(n for s, n in self.perf.items() if s in self.ours)
        return ok / self.perf_total if self.perf_total else 0.0

    def perf_has(self, chain):
        """Fraction of perf's samples whose cut stack starts with chain."""
        n = sum(c for s, c in self.perf.items() if s[:len(chain)] == tuple(chain))
        return n / self.perf_total if self.perf_total else 0.0

    def report(self):
        # perf's stacks seen once, over its samples: the Good-Turing estimate
        # of how much of the program's stack mass perf never saw, i.e. how
        # much disagreement sampling alone can explain
        once = sum(1 for n in self.perf.values() if n == 1)
        lines = ["%s: ours %d samples, %.1f%% reach %s, %.1f%% agree with perf | "
                 "perf %d samples, %.1f%% reach %s, %.1f%% among ours | %d vs %d distinct stacks, "
                 "%.1f%% unseen by perf (estimate)" % (
                     self.name, self.ours_total, 100 * self.reach(), "/".join(self.anchors),
                     100 * self.agree(), self.perf_total, 100 * self.perf_reach_frac(),
                     "/".join(self.anchors), 100 * self.agree_reverse(), len(self.ours), len(self.perf),
                     100 * once / max(1, self.perf_total))]
        diff = [(n, s) for s, n in self.ours.items() if s not in self.perf]
        diff.sort(key=lambda x: -x[0])
        if diff:
            lines.append("  top stacks of ours that perf never had:")
            lines += ["  %7d  %s" % (n, fmt_stack(s)) for n, s in diff[:5]]
        lines.append("  perf's top stacks:")
        lines += ["  %7d  %s" % (n, fmt_stack(s)) for s, n in self.perf.most_common(5)]
        if self.unwind_status is not None:
            lines.append("  daemon status, cpu.unwind: " + json.dumps(self.unwind_status, sort_keys=True))
        return "\n".join(lines)

    def check_oracle(self, chains):
        """Assertion 3: perf saw the program, reached its anchors, and the
        program has the shape it was built for: each (chain, fraction) in
        chains, a call chain from the anchor, starts at least that fraction
        of perf's samples. Printed figures for every run."""
        rep = self.report()
        print(rep, flush=True)
        expect(self.perf_total >= 200, "perf recorded too few samples:\n" + rep)
        expect(self.perf_reach_frac() >= PERF_REACH_MIN,
               "oracle insane: perf reaches an anchor in %.1f%% < %d%%:\n%s" % (
                   100 * self.perf_reach_frac(), 100 * PERF_REACH_MIN, rep))
        for chain, frac in chains:
            got = self.perf_has(chain)
            expect(got >= frac, "the program lacks its shape: perf has %s in %.1f%% of samples, "
                   "expected >= %.0f%%:\n%s" % (";".join(chain), 100 * got, 100 * frac, rep))
        expect(self.ours_total >= 200, "the daemon captured too few samples:\n" + rep)

    def check_ours(self):
        """Assertions 1 and 2."""
        expect(self.reach() >= REACH_MIN and self.agree() >= AGREE_MIN,
               "unwinding accuracy below target (reach >= %d%%, agreement >= %d%%):\n%s" % (
                   100 * REACH_MIN, 100 * AGREE_MIN, self.report()))


def fmt_stack(stack):
    """A stack for a message: a run of one frame (recursion) as `f (xN)`."""
    out = []
    for f in stack:
        if out and out[-1][0] == f:
            out[-1][1] += 1
        else:
            out.append([f, 1])
    return ";".join(f if n == 1 else "%s (x%d)" % (f, n) for f, n in out) or "(no user frame)"


def program(name, *args):
    return [os.path.join(build_dir(), name)] + [str(a) for a in args]


# --- the folding itself, on canned text (no root, no perf) ------------------

PERF_SCRIPT = """\
chain  5027 
	            1272 cmp_ints+0x2 (/tmp/x/chain)
	           3fbf3 msort_with_tmp.part.0 (/usr/lib/x86_64-linux-gnu/libc.so.6)
	           3fd35 __GI___qsort_r (/usr/lib/x86_64-linux-gnu/libc.so.6)
	            12e2 chain_d (/tmp/x/chain)
	            1107 main (/tmp/x/chain)
	           27304 __libc_start_main@@GLIBC_2.34 (/usr/lib/x86_64-linux-gnu/libc.so.6)
	            1190 _start (/tmp/x/chain)

my worker 77 
	ffffffff81a0b2c3 asm_sysvec_apic_timer_interrupt+0x1a ([kernel.kallsyms])
	ffffffffc0a01000 some_mod_fn ([nvidia])
	            2f00 inlined_helper (inlined)
	            2f10 thread_hash (/tmp/x/threads)
	            dead [unknown] ([unknown])
	    7ffd1e7f3a49 __vdso_clock_gettime+0x9 ([vdso])
	           8a0c3 start_thread (/usr/lib/x86_64-linux-gnu/libc.so.6)
	          1166ff clone3+0x2f (/usr/lib/x86_64-linux-gnu/libc.so.6)
chain 5028
	            1040 qsort@plt (/tmp/x/chain)
"""


@test
def perf_script_folding():
    s = parse_perf_script(PERF_SCRIPT)
    eq(len(s), 3, "three samples, blank line and header both end one")
    eq(s[0][:2], ("chain", 5027), "comm and tid")
    eq(s[0][2], ("_start", "__libc_start_main", "main", "chain_d", "__GI___qsort_r",
                 "msort_with_tmp.part.0", "cmp_ints"),
       "outermost first, offset and symbol version cut")
    eq(s[0][3][0], "/tmp/x/chain", "dso kept per frame")
    eq(s[1][:2], ("my worker", 77), "comm with a space")
    eq(s[1][2], ("clone3", "start_thread", UNKNOWN, UNKNOWN, "thread_hash"),
       "kernel frames (by address) and inline entries dropped, [unknown] kept, [vdso] unknown")
    eq(s[1][3][2:4], (None, None), "[unknown] and [vdso] dsos are no paths")
    eq(s[2][2], ("qsort@plt",), "@plt kept; header without trailing space")
    eq(parse_perf_script(""), [], "empty output")
    eq(perf_frame_name("[unknown]"), UNKNOWN, "unknown")
    eq(perf_frame_name("foo+0x1f"), "foo", "symoff cut")
    eq(strip_version("memcpy@GLIBC_2.2.5"), "memcpy", "single-@ version")


@test
def our_folding():
    text = ("chain-41;__libc_start_call_main;main;chain_a;libc.so.6+0x3f9c0;cmp_ints 7\n"
            "chain-41;main;[unknown];-;do_syscall_64;entry_SYSCALL_64 2\n"
            "chain-42;main;[unknown] 1\n")
    f = parse_folded(text)
    eq(f[("chain-41", ("__libc_start_call_main", "main", "chain_a", UNKNOWN, "cmp_ints"))], 7,
       "object+offset is unknown")
    eq(f[("chain-41", ("main", UNKNOWN))], 2, "kernel frames after '-' dropped")
    eq(f[("chain-42", ("main", UNKNOWN))], 1, "root kept apart")
    eq(our_frame_name("[truncated]"), "[truncated]", "the unwinder's truncation mark stays visible")
    eq(our_frame_name("[vdso]"), UNKNOWN, "a special mapping's name is no function name")
    eq(cut_at_anchor(("_start", "main", "a", "main", "b"), ("main",)), (("main", "a", "main", "b"), True),
       "cut at the outermost anchor")
    eq(cut_at_anchor(("x", "y"), ("main",)), (("x", "y"), False), "no anchor: whole stack, not reached")


@test
def comparison_on_canned_runs():
    """Reach and agreement from canned perf and folded text: a lost caller
    disagrees, aliases and unnamed frames at the same depth agree."""
    perf = ("p 1\n\t1 leaf (/x/p)\n\t2 caller (/x/p)\n\t3 main (/x/p)\n\t4 _start (/x/p)\n\n" * 3 +
            "p 1\n\t5 cmp (/x/p)\n\t6 [unknown] (/x/libc.so.6)\n\t7 main (/x/p)\n\n")
    r = Run("canned", ["/nonexistent/p"], ("main",))
    r.perf_raw = perf
    r.folded_raw = ("p-1;__libc_start_call_main;main;caller;leaf 90\n"
                    "p-1;main;libc.so.6+0x3f9c0;cmp 5\n"
                    "p-2;main;leaf 4\n"
                    "p-2;[truncated];caller;leaf 1\n")
    r._fold()
    eq((r.ours_total, r.perf_total), (100, 4), "sample counts")
    eq(r.reach(), 0.99, "all but the [truncated] stack reach main")
    eq(r.agree(), 0.95, "main;leaf (lost caller) and the truncated stack disagree")
    eq(r.perf_reach_frac(), 1.0, "perf reaches main")
    eq(r.tids_ours, {"1", "2"}, "threads from --tid-frames roots")
    eq(r.perf_has(("main", "caller", "leaf")), 0.75, "known chain share")
    expect("main;leaf" in r.report() and "[truncated];caller;leaf" in r.report(),
           "the differing stacks are reported:\n" + r.report())


@test
def symbol_aliases_from_nm():
    d = build_dir()
    a = SymbolAliases([os.path.join(d, "chain")])
    eq(a.canon("cmp_ints"), "cmp_ints", "a name with one symbol is itself")
    eq(a.canon("no_such_symbol"), "no_such_symbol", "unknown names pass through")
    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    if os.path.exists(libc):
        a = SymbolAliases([libc])
        expect(a.canon("qsort_r") == a.canon("__qsort_r"),
               "aliases of one address meet: %s vs %s" % (a.canon("qsort_r"), a.canon("__qsort_r")))


# --- the programs -----------------------------------------------------------

@test
def accuracy_chain():
    """a: C -O2 -fomit-frame-pointer, main -> chain_a..chain_d + qsort."""
    r = Run("chain", program("chain", RUN_S), ("main",)).go()
    r.check_oracle([(("main", "chain_a", "chain_b", "chain_c", "chain_d"), 0.9)])
    cmp = sum(n for s, n in r.perf.items() if s[-1:] == ("cmp_ints",) and "msort_with_tmp.part.0" in s)
    expect(cmp > 0.05 * r.perf_total, "the qsort comparator is hot under msort (%d of %d):\n%s"
           % (cmp, r.perf_total, r.report()))
    r.check_ours()


@test
def accuracy_cxx():
    """b: C++ -O2, std::sort with a lambda and std::map."""
    r = Run("cxx", program("cxx", RUN_S), ("main",)).go()
    r.check_oracle([(("main",), 0.95)])
    # in std:: template code (mangled _ZSt...: __introsort_loop, the
    # insertion sort, with the lambda inlined) under sort_phase
    sort = sum(n for s, n in r.perf.items() if any("sort_phase" in f for f in s) and
               any(f.startswith("_ZSt") for f in s))
    mp = sum(n for s, n in r.perf.items() if any("map_phase" in f for f in s))
    expect(sort > 0.15 * r.perf_total and mp > 0.15 * r.perf_total,
           "hot in std::sort (%d) and std::map (%d) of %d:\n%s" % (sort, mp, r.perf_total, r.report()))
    r.check_ours()


def disassembly(name, fn):
    """objdump's text of function fn in the built program name."""
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", os.path.join(build_dir(), name)],
                         capture_output=True, text=True).stdout
    expect("<%s>:" % fn in dis, "%s not in %s" % (fn, name))
    return dis.split("<%s>:" % fn, 1)[1].split("\n\n", 1)[0]


@test
def control_frame_pointers():
    """The positive control: program c built with every function keeping
    its frame, where today's frame-pointer walk is right. It must pass the
    same assertions, so a failure of the others is the unwinder's and not
    the comparison's."""
    expect("mov    %rsp,%rbp" in disassembly("leaf_control", "leaf_spin"),
           "the control's leaf_spin has a frame:\n" + disassembly("leaf_control", "leaf_spin"))
    r = Run("leaf-control", program("leaf_control", RUN_S), ("main",)).go()
    r.check_oracle([(("main", "caller_frame", "leaf_spin"), 0.8)])
    r.check_ours()


@test
def accuracy_leaf():
    """c: a frameless hot leaf under a caller with a frame."""
    leaf, caller = disassembly("leaf", "leaf_spin"), disassembly("leaf", "caller_frame")
    expect("push   %rbp" not in leaf, "leaf_spin sets up no frame:\n" + leaf)
    expect("mov    %rsp,%rbp" in caller, "caller_frame has a frame:\n" + caller)
    r = Run("leaf", program("leaf", RUN_S), ("main",)).go()
    r.check_oracle([(("main", "caller_frame", "leaf_spin"), 0.8)])
    skipped = sum(n for s, n in r.ours.items() if s[:2] == ("main", "leaf_spin"))
    expect(skipped == 0, "%d samples read main;leaf_spin, losing caller_frame:\n%s" % (skipped, r.report()))
    r.check_ours()


@test
def accuracy_dlopen():
    """d: a library without frame pointers, dlopen()ed after the start."""
    lib = os.path.join(build_dir(), "libunwind_plugin.so")
    r = Run("dlopen", program("dlopen", RUN_S, lib), ("main",), usr1_after=0.8).go()
    r.check_oracle([(("main", "run_plugin", "plugin_entry", "plugin_mid", "plugin_leaf"), 0.4),
                    (("main", "before_dlopen"), 0.1)])
    r.check_ours()


@test
def accuracy_threads():
    """e: four CPU-bound threads; stacks reach thread_worker."""
    r = Run("threads", program("threads", RUN_S), ("thread_worker", "main")).go()
    r.check_oracle([(("thread_worker", "thread_work", "thread_hash"), 0.8)])
    expect(len(r.tids_perf) >= 4, "perf saw the four threads: %r" % sorted(r.tids_perf))
    expect(len(r.tids_ours) >= 4, "the daemon saw the four threads: %r" % sorted(r.tids_ours))
    r.check_ours()


@test
def accuracy_started_before():
    """f: program a, started before the daemon."""
    r = Run("started-before", program("chain", RUN_S), ("main",), before_daemon=True).go()
    r.check_oracle([(("main", "chain_a", "chain_b", "chain_c", "chain_d"), 0.9)])
    r.check_ours()


if __name__ == "__main__":
    try:
        main()
    finally:
        if "dir" in _built:
            shutil.rmtree(_built["dir"], ignore_errors=True)
