#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Privilege attacks by a real member of group gpuprof (docs/security.md):
an exec of a setuid-root program after connect() must not make the
connection privileged; setuid targets must not be captured; a pid that does
not exist is refused; kernel symbols and addresses stay hidden from a peer
the kernel hides them from."""

import grp
import gzip
import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time

from gpd import (ATTACKER_PY, GPUPROFCTL, Daemon, Skip, as_attacker, attacker, eq, error_code, expect,
                 main, open_to_group, test)

HERE = os.path.dirname(os.path.abspath(__file__))

# Runs as the attacker with the daemon stopped: connect (the connection
# carries this pid), fork a child that keeps the socket, exec the setuid-root
# helper here. The child waits until this pid runs with euid 0, says
# "ready", and once told to go (the daemon has been continued) asks what
# only a privileged peer may.
EXEC_RACE = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from gpd import Conn
sock, helper, rootcap = sys.argv[2], sys.argv[3], int(sys.argv[4])
c = Conn(sock)
if os.fork() == 0:
    parent = os.getppid()
    for _ in range(1000):
        with open("/proc/%d/status" % parent) as f:
            uids = [l.split() for l in f if l.startswith("Uid:")][0]
        if uids[2] == "0":
            break
        time.sleep(0.01)
    else:
        print("helper never ran as root", flush=True)
        os._exit(1)
    print("ready", flush=True)
    sys.stdin.readline()
    out = [c.call("capture.list"), c.call("capture.info", {"id": rootcap}),
           c.call("capture.start", {"last_ms": 1000, "pids": [1]})]
    print(json.dumps(out), flush=True)
    os._exit(0)
os.execv(helper, [helper])
"""

SLEEPER_C = r"""
#include <unistd.h>
int main(void)
{
	for (;;)
		pause();
}
"""


def build(tmp, name, source, setuid=False, extra=()):
    """Compile source into tmp/name (readable by the attacker); setuid: owned
    by root, mode 4755."""
    src = os.path.join(tmp, name + ".c")
    exe = os.path.join(tmp, name)
    with open(src, "w") as f:
        f.write(source)
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-fno-inline", "-o", exe, src] + list(extra),
                   check=True)
    os.chown(exe, 0, 0)
    os.chmod(exe, 0o4755 if setuid else 0o755)
    return exe


def root_capture(d):
    """A capture of root's, of this (root) process."""
    return d.ctl_json("capture", "--last", "1s", "--pid", str(os.getpid()))["id"]


def readline(p, timeout=30):
    """A line of p's stdout; b"" after timeout (the setuid helper keeps the
    pipe open even when the child that writes to it has died)."""
    if not select.select([p.stdout], [], [], timeout)[0]:
        return b""
    return p.stdout.readline()


def exec_race_once(d, helper, rootcap):
    os.kill(d.proc.pid, signal.SIGSTOP)
    p = subprocess.Popen(as_attacker([ATTACKER_PY, "-c", EXEC_RACE, HERE, d.sock, helper, str(rootcap)]),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        line = readline(p)
        eq(line, b"ready\n", "the attacker's connecting pid runs the setuid helper")
        os.kill(d.proc.pid, signal.SIGCONT)
        p.stdin.write(b"go\n")
        p.stdin.flush()
        line = readline(p)
        expect(line, "the attacker's child answered")
        return json.loads(line)
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
        p.kill()  # the setuid helper, in the pid the connection carries
        p.wait()


@test
def exec_setuid_after_connect_stays_unprivileged():
    uid, _ = attacker()
    d = Daemon().start()
    try:
        open_to_group(d)
        helper = build(d.tmp, "suid_sleeper", SLEEPER_C, setuid=True)
        rootcap = root_capture(d)
        for i in range(4):
            lst, info, start = exec_race_once(d, helper, rootcap)
            ids = [c["id"] for c in lst["result"]["captures"]]
            expect(rootcap not in ids, "try %d: root's capture listed to the attacker: %r" % (i, lst))
            eq(error_code(info), -32003, "try %d: capture.info of root's capture" % i)
            eq(error_code(start), -32002, "try %d: capture.start of pid 1" % i)
        expect(not re.search(r"uid=%d .*connected \(privileged\)" % uid, d.read_log()),
               "no connection of the attacker was logged as privileged")
    finally:
        d.cleanup()


@test
def admin_group_is_privileged():
    uid, gid = attacker()
    # by name, by gid, by the primary gid; root's group the member lacks does not count
    for value, admin in (("gpuprof", True), (str(grp.getgrnam("gpuprof").gr_gid), True), (str(gid), True),
                         ("0", False)):
        d = Daemon("access.admin_group = %s\n" % value).start()
        try:
            open_to_group(d)
            rootcap = root_capture(d)
            rep = rpc_as_attacker(d, "capture.info", {"id": rootcap})
            if admin:
                eq(rep.get("result", {}).get("id"), rootcap, "admin group %s sees root's capture: %r" % (value, rep))
            else:
                eq(error_code(rep), -32003, "admin group %s: the member is not privileged" % value)
        finally:
            d.cleanup()
    d = Daemon("access.admin_group = no-such-group-gpuprof\n")
    try:
        d.start(wait=False)
        eq(d.proc.wait(timeout=30) != 0, True, "an unknown group stops the daemon")
        expect("access.admin_group" in d.read_log(), "the error names the key: %s" % d.read_log())
    finally:
        d.cleanup()


# ---- setuid targets and pids that do not exist ------------------------------

# FN burns CPU under a recognisable frame; built once setuid-root with
# FN=root_secret_fn and once plain with FN=user_burn_fn.
BURN_C = r"""
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
static volatile uint64_t sink;
__attribute__((noinline)) static void publish(uint64_t v) { sink += v; }
__attribute__((noinline)) void FN(void)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 200000; i++)
		h = (h ^ (uint64_t)i) * 1099511628211ull;
	publish(h);
}
int main(int argc, char **argv)
{
	time_t end = argc > 1 ? time(NULL) + atoi(argv[1]) : 0;
	while (!end || time(NULL) < end)
		FN();
	return 0;
}
"""

NO_SUCH_PID = 4194000


def ctl_err(d, *args):
    """Run gpuprofctl as the attacker expecting a failure; its stderr."""
    p = ctl_as_attacker(d, *args, check=None)
    expect(p.returncode != 0, "gpuprofctl %s as the attacker succeeded: %s" % (" ".join(args), p.stdout[:300]))
    return p.stderr.decode(errors="replace")


def rpc_as_attacker(d, method, params):
    """One raw request as the attacker (the CLI always names pids)."""
    p = subprocess.run(as_attacker([ATTACKER_PY, "-c",
                                    "import json, sys; sys.path.insert(0, sys.argv[1]); from gpd import Conn;"
                                    "print(json.dumps(Conn(sys.argv[2]).call(sys.argv[3], json.loads(sys.argv[4]))))",
                                    HERE, d.sock, method, json.dumps(params)]),
                       capture_output=True, timeout=60)
    eq(p.returncode, 0, "attacker script: %s" % p.stderr.decode(errors="replace"))
    return json.loads(p.stdout)


def member_folded(d, *capture_args):
    if capture_args[0] == "--all-last":  # every process of the member's
        info = rpc_as_attacker(d, "capture.start", {"last_ms": int(capture_args[1]), "wait": True})["result"]
    else:
        info = json.loads(ctl_as_attacker(d, "--json", "capture", *capture_args).stdout)
    return info, ctl_as_attacker(d, "folded", str(info["id"])).stdout.decode()


@test
def setuid_targets_not_captured():
    attacker()
    d = Daemon(SAMPLING).start()
    procs = []
    try:
        open_to_group(d)
        need_sampler(d)
        suid = build(d.tmp, "suid_burn", BURN_C, setuid=True, extra=["-DFN=root_secret_fn"])
        plain = build(d.tmp, "user_burn", BURN_C, extra=["-DFN=user_burn_fn"])
        s = subprocess.Popen(as_attacker([suid]))
        u = subprocess.Popen(as_attacker([plain]))
        procs += [s, u]
        time.sleep(0.5)

        # the check at capture.start: a setuid target is refused
        err = ctl_err(d, "capture", "--pid", str(s.pid), "--duration", "500ms")
        expect("-32002" in err and "credentials" in err, "setuid target refused: %s" % err)

        # all the member's processes: its plain burner, not the setuid one
        time.sleep(1)
        info, folded = member_folded(d, "--all-last", "1500")
        expect("user_burn_fn" in folded, "the member's own burner is captured: %r\n%s" % (info, folded[:1500]))
        expect("root_secret_fn" not in folded, "setuid process in the member's --last capture:\n" + folded[:3000])
        # root sees it: the sampler did record the setuid process
        root = d.ctl_json("capture", "--last", "1500ms", "--pid", str(s.pid))
        expect("root_secret_fn" in d.ctl("folded", str(root["id"]), check=0).stdout.decode(),
               "root's capture of the setuid burner holds its stacks")

        # by --pid: a process of the member's that execs the setuid program
        # once the capture has started (records, not only the start check)
        x = subprocess.Popen(as_attacker(["sh", "-c", "sleep 0.4; exec %s" % suid]))
        procs.append(x)
        info, folded = member_folded(d, "--pid", str(x.pid), "--duration", "1500ms")
        expect("root_secret_fn" not in folded, "setuid exec inside a --pid capture:\n" + folded[:3000])
        root = d.ctl_json("capture", "--last", "1s", "--pid", str(x.pid))
        expect("root_secret_fn" in d.ctl("folded", str(root["id"]), check=0).stdout.decode(),
               "root sees the exec'd setuid program under that pid")

        # flight recorder: an exited setuid process has nothing the member may see
        s.kill()
        s.wait()
        err = ctl_err(d, "capture", "--pid", str(s.pid), "--last", "3s")
        expect("-32003" in err and "no process %d" % s.pid in err, "exited setuid pid: %s" % err)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        d.cleanup()


@test
def capture_of_missing_pid_refused():
    attacker()
    d = Daemon(SAMPLING).start()
    try:
        open_to_group(d)
        need_sampler(d)
        for window in (["--duration", "200ms"], ["--last", "1s"]):
            err = ctl_err(d, "capture", "--pid", str(NO_SUCH_PID), *window)
            expect("-32003" in err and "no process %d" % NO_SUCH_PID in err, "%r: %s" % (window, err))
            p = d.ctl("capture", "--pid", str(NO_SUCH_PID), *window)
            expect(p.returncode != 0 and b"-32003" in p.stderr, "root too: %r" % p.stderr)
        # the flight-recorder case stays: an exited process of the member's
        # with records in the window
        plain = build(d.tmp, "user_burn", BURN_C, extra=["-DFN=user_burn_fn"])
        u = subprocess.Popen(as_attacker([plain, "1"]))
        u.wait()
        info = json.loads(ctl_as_attacker(d, "--json", "capture", "--pid", str(u.pid), "--last", "5s").stdout)
        expect(info["records"] > 0, "exited process of the member's, cut from the past: %r" % info)
        expect("user_burn_fn" in ctl_as_attacker(d, "folded", str(info["id"])).stdout.decode(),
               "its stacks")
        # but not a window that holds none of its records
        time.sleep(0.3)
        err = ctl_err(d, "capture", "--pid", str(u.pid), "--last", "100ms")
        expect("-32003" in err, "exited, no records in the window: %s" % err)
    finally:
        d.cleanup()


# ---- kernel addresses -------------------------------------------------------

SAMPLING = "sampling.cpu_frequency = 499\n"
KERNEL_TEXT = 0xffff800000000000  # x86-64 and arm64 kernel addresses start above this


def need_sampler(d):
    cpu = [c for c in d.ctl_json("status")["collectors"] if c["name"] == "cpu"][0]
    if cpu["state"] != "attached":
        raise Skip("CPU sampler not attached: %r" % cpu)


def ctl_as_attacker(d, *args, check=0):
    p = subprocess.run(as_attacker([GPUPROFCTL, "--socket", d.sock] + list(args)), capture_output=True,
                       timeout=120)
    if check is not None and p.returncode != check:
        raise AssertionError("gpuprofctl %s as the attacker: exit %d\n%s" % (
            " ".join(args), p.returncode, p.stderr.decode(errors="replace")))
    return p


def pb_fields(buf):
    """(field, wire type, value) of one protobuf message: ints for varints,
    bytes for length-delimited fields."""
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise AssertionError("bad wire type %d" % wt)
        yield field, wt, v


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def packed(v):
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def pprof_view(data):
    """Function names, location addresses and mapping files of a gzipped
    profile.proto."""
    prof = list(pb_fields(gzip.decompress(data)))
    strings = [v.decode(errors="replace") for f, _, v in prof if f == 6]
    funcs = {}
    for f, _, v in prof:
        if f == 5:
            d = {k: x for k, _, x in pb_fields(v)}
            funcs[d.get(1, 0)] = strings[d.get(2, 0)]
    addrs, names = [], set()
    for f, _, v in prof:
        if f != 4:
            continue
        for k, wt, x in pb_fields(v):
            if k == 3:
                addrs.append(x)
            elif k == 4:  # Line: function_id
                for lk, _, lv in pb_fields(x):
                    if lk == 1:
                        names.add(funcs.get(lv, ""))
    maps = [strings[d.get(5, 0)] for d in ({k: x for k, _, x in pb_fields(v)} for f, _, v in prof if f == 3)]
    return names, addrs, maps


def kernel_names_of(folded):
    """Kernel frame names (after the "-" separator) and user frame names."""
    kern, user = set(), set()
    for line in folded.splitlines():
        frames = line.rpartition(" ")[0].split(";")[1:]
        if "-" in frames:
            cut = frames.index("-")
            user.update(frames[:cut])
            kern.update(frames[cut + 1:])
        else:
            user.update(frames)
    return kern, user


def hidden_from_host():
    with open("/proc/sys/kernel/kptr_restrict") as f:
        kptr = int(f.read())
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        paranoid = int(f.read())
    return kptr != 0 or paranoid > 1, paranoid


@test
def kernel_frames_hidden_from_member():
    uid, gid = attacker()
    hidden, paranoid = hidden_from_host()
    if not hidden:  # this host shows kernel symbols to users: test the rule as a hardened host has it
        with open("/proc/sys/kernel/perf_event_paranoid", "w") as f:
            f.write("2")
    d = Daemon(SAMPLING).start()
    dd = None
    try:
        open_to_group(d)
        need_sampler(d)
        out = tempfile.mkdtemp(dir=d.tmp)
        os.chown(out, uid, gid)
        dd = subprocess.Popen(as_attacker(["dd", "if=/dev/zero", "of=/dev/null", "bs=512"]),
                              stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        info = json.loads(ctl_as_attacker(d, "--json", "capture", "--pid", str(dd.pid), "--duration",
                                          "1500ms").stdout)
        cid = str(info["id"])
        dd.kill()
        dd.wait()
        dd = None

        # root sees the kernel frames of the same capture: the check below is not vacuous
        root_folded = d.ctl("folded", cid, check=0).stdout.decode()
        kern, user = kernel_names_of(root_folded)
        kern -= user | {"[unknown]", "[kernel]"}
        kern = {k for k in kern if not k.startswith("0x")}
        expect(len(kern) >= 3, "root sees kernel frames of dd: %r\n%s" % (kern, root_folded[:2000]))
        root_pp = os.path.join(out, "root.pb.gz")
        d.ctl("export", cid, "--format", "pprof", "--out", root_pp, check=0)
        with open(root_pp, "rb") as f:
            _, addrs, maps = pprof_view(f.read())
        expect(any(a >= KERNEL_TEXT for a in addrs), "root's pprof has kernel addresses")
        expect("[kernel.kallsyms]" in maps, "root's pprof has the kernel mapping: %r" % maps)

        def clean(text, what):
            for k in kern:
                expect(k not in text, "%s shows kernel symbol %r to the member" % (what, k))
            bad = [a for a in re.findall(r"0x[0-9a-fA-F]{12,16}", text) if int(a, 16) >= KERNEL_TEXT]
            expect(not bad, "%s shows kernel addresses to the member: %r" % (what, bad[:5]))

        folded = ctl_as_attacker(d, "folded", cid).stdout.decode()
        clean(folded, "folded")
        mk, _ = kernel_names_of(folded)
        eq(mk, {"[kernel]"}, "the member's kernel frames: one [kernel] per stack")
        for name, args in (("flame.svg", ["flamegraph", cid]), ("heat.svg", ["heatmap", cid]),
                           ("diff.svg", ["diff", cid, cid]), ("chrome.json", ["export", cid, "--format", "chrome"]),
                           ("pprof.pb.gz", ["export", cid, "--format", "pprof"])):
            path = os.path.join(out, name)
            ctl_as_attacker(d, *args, "--out", path)
            with open(path, "rb") as f:
                data = f.read()
            if name.startswith("pprof"):
                names, addrs, maps = pprof_view(data)
                expect("[kernel]" in names, "pprof: kernel samples as [kernel]: %r" % sorted(names)[:20])
                expect(not kern & names, "pprof: kernel symbols %r" % (kern & names))
                expect(all(a < KERNEL_TEXT for a in addrs), "pprof: kernel addresses %r" %
                       [hex(a) for a in addrs if a >= KERNEL_TEXT][:5])
                expect("[kernel.kallsyms]" not in maps, "pprof: no kernel mapping: %r" % maps)
            else:
                text = data.decode(errors="replace")
                expect("[kernel]" in text, "%s draws [kernel] frames" % name)
                clean(text, name)
    finally:
        if dd:
            dd.kill()
            dd.wait()
        d.cleanup()
        if not hidden:
            with open("/proc/sys/kernel/perf_event_paranoid", "w") as f:
                f.write(str(paranoid))


if __name__ == "__main__":
    main()
