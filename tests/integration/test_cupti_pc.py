#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PC sampling through gpuprofd's cupti collector (inject/cupti_abi.h's
GPI_STALL_NAME, GPI_PC, GPI_CUBIN), from a Python sender: stall reason
names per device, PC samples into the store (STORE_REC_GPU_PC) and into a
capture with exact sums, cubins reassembled into the daemon's cache within
their bounds; hostile PC and cubin records (malformed: the connection
closes; out of bounds: dropped and counted); the SASS text a saved
capture keeps (after a restart, only the owner's cubins), the pprof
export of the stalls, and the same text in continuous profiles' windows."""

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpd import (BUILD, GPUPROFCTL, Skip, as_attacker, attacker, eq, expect, main,  # noqa: E402
                 open_to_group, test)
import cupti_send as W  # noqa: E402
import gpd  # noqa: E402

# test_cupti_ingest's helpers (daemon, capture reader, status), without
# running its tests here: what its @test registered is taken back
_n = len(gpd._tests)
from test_cupti_ingest import daemon, read_capture, ctl_json, wait_status  # noqa: E402
del gpd._tests[_n:]

REC_PC = 7
STALLED = "smsp__pcsamp_warps_issue_stalled_"


def pc_recs(d, cid):
    strs, recs = read_capture(d, cid)
    out = []
    for r in recs:
        if r["type"] != REC_PC:
            continue
        reason = r["aux1"] >> 32
        r["reason_s"] = strs[reason] if reason else None
        r["pc"] = r["aux1"] & 0xffffffff
        out.append(r)
    return out


# nvdisasm -c's shape for the test's kernel; it checks it was handed a
# readable cubin of the size sent, and that it does not run as root
FAKE_NVDISASM = """#!/bin/sh
[ "$1" = -c ] && [ "$(id -u)" != 0 ] && [ "$(wc -c < "$2")" = 70000 ] || exit 3
cat <<'EOT'
\t.section\t.text._Z6matmulPfS_,"ax",@progbits
.text._Z6matmulPfS_:
        /*0040*/                   LDG.E R2, desc[UR4][R2.64] ;
        /*01a0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
EOT
"""


@test
def pc_samples_stall_names_and_cubins():
    tool_dir = tempfile.mkdtemp(prefix="gpnvdis.")
    os.chmod(tool_dir, 0o755)
    tool = os.path.join(tool_dir, "nvdisasm")
    with open(tool, "w") as f:
        f.write(FAKE_NVDISASM)
    os.chmod(tool, 0o755)
    d = daemon("cupti.nvdisasm = %s\n" % tool)
    try:
        s = W.connect(d.cupti)
        t = W.now()
        blob = os.urandom(70000)  # three chunks; the daemon does not parse it
        crc = zlib.crc32(blob)
        s.send(W.msg([W.hello(features=0xff), W.string(1, "_Z6matmulPfS_"),
                      W.string(2, STALLED + "barrier"), W.string(3, STALLED + "long_scoreboard"),
                      W.stall_name(0, 0, 2), W.stall_name(0, 7, 3), W.stall_name(1, 0, 3)]))
        s.send(W.msg([W.pc(t - 1000, crc, 0x1a0, 1, 0, 30),
                      W.pc(t - 1000, crc, 0x1a0, 1, 7, 12),
                      W.pc(t - 900, crc, 0x40, 1, 0, 5, device=1),
                      W.pc(t - 800, crc, 0x50, 1, 9, 4)], seq=1))  # reason 9: never named
        for i, ch in enumerate(W.cubin_chunks(crc, blob)):
            s.send(W.msg([ch], seq=2 + i))
        st = wait_status(d, lambda st: st["records"]["cubin"] == 3 and st["records"]["pc"] == 4,
                         "PC records and cubin chunks")
        eq(st["records"]["stall_name"], 3, "stall names")
        eq(st["pc_samples"], 51, "samples")
        eq((st["cubins"], st["cubin_bytes"]), (1, 70000), "cubin kept")
        eq(st["drops"]["undefined"], 1, "the unnamed reason")
        eq((st["drops"]["pc"], st["drops"]["cubin"]), (0, 0), "no pc / cubin drops")
        # the library's PC counters, per connection in status
        s.send(W.msg([W.pc_stats(samples=51, sent=51, oom=2, drains=7, cubins=1,
                                 cubin_bytes=70000)], seq=4))
        st = wait_status(d, lambda st: "pc_library" in st["peer_list"][0], "pc_library")
        pl = st["peer_list"][0]["pc_library"]
        eq((pl["samples"], pl["oom"], pl["drains"], pl["cubin_bytes"]), (51, 2, 7, 70000),
           "the library's PC counters")
        eq((pl["getdata_calls"], pl["errors"], pl["last_error_call"]), (0, 0, ""),
           "an older library's 88 bytes: the counters added since read as 0")
        # today's library: why no samples came, with the call that failed
        s.send(W.msg([W.pc_stats(samples=51, sent=51, drains=9, extra={
            "getdata_calls": 12, "pcs": 4, "total_samples": 60, "nonuser_samples": 9,
            "errors": 8, "cfgbuf_pcs": 2, "names": 1, "contexts_on": 0, "contexts_ever": 1,
            "contexts_off": 1, "last_call": 6, "last_error": 3})], seq=5))
        st = wait_status(d, lambda st: st["peer_list"][0]["pc_library"]["drains"] == 9,
                         "longer pc_library")
        pl = st["peer_list"][0]["pc_library"]
        eq((pl["getdata_calls"], pl["pcs"], pl["cupti_total_samples"],
            pl["cupti_nonuser_samples"], pl["config_buffer_pcs"], pl["names_held"],
            pl["contexts_ever"], pl["contexts_off"], pl["errors"], pl["last_error"],
            pl["last_error_call"]),
           (12, 4, 60, 9, 2, 1, 1, 1, 8, 3, "cuptiPCSamplingGetData"), "the added counters")
        # the same cubin again (a reconnecting library): not kept twice
        for i, ch in enumerate(W.cubin_chunks(crc, blob)):
            s.send(W.msg([ch], seq=6 + i))
        st = wait_status(d, lambda st: st["records"]["cubin"] == 6, "repeat chunks")
        eq((st["cubins"], st["cubin_bytes"]), (1, 70000), "one copy per crc")

        cid = ctl_json(d, "capture", "--last", "30s", "--pid", str(os.getpid()))["id"]
        recs = pc_recs(d, cid)
        got = sorted((r["cpu"], r["pc"], r["reason_s"], r["aux32"]) for r in recs)
        eq(got, sorted([(0, 0x1a0, STALLED + "barrier", 30),
                        (0, 0x1a0, STALLED + "long_scoreboard", 12), (0, 0x50, "stall_9", 4),
                        (1, 0x40, STALLED + "long_scoreboard", 5)]),
           "(device, pc, reason, samples)")
        for r in recs:
            eq((r["pid"], r["uid"], r["aux0"], r["dur"], r["tid"]), (os.getpid(), 0, crc, 0, 0),
               "pid, owner, crc, dur, tid")
            eq(r["name_s"], "matmul(float*, float*)", "name (demangled as launches are)")
        # folded --weight stalls: KERNEL_[G];instruction_[g];reason_[g] (no
        # launch in this capture: no CPU frames), samples summed exactly;
        # SASS text from (the fake) nvdisasm on the kept cubin, an offset
        # where it has no instruction
        out = d.ctl("folded", str(cid), "--weight", "stalls", check=0).stdout.decode()
        comm = recs[0]["comm_s"]
        kern = recs[0]["name_s"]
        bar, ldg = "BAR.SYNC.DEFER_BLOCKING 0x0", "LDG.E R2, desc[UR4][R2.64]"
        want = sorted(["%s;%s_[G];%s_[g];barrier_[g] 30" % (comm, kern, bar),
                       "%s;%s_[G];%s_[g];long_scoreboard_[g] 12" % (comm, kern, bar),
                       "%s;%s_[G];%s_[g];long_scoreboard_[g] 5" % (comm, kern, ldg),
                       "%s;%s_[G];+0x50_[g];stall_9_[g] 4" % (comm, kern)])
        eq(sorted(out.splitlines()), want, "folded stall frames")
        # the capture keeps that text (its SASS section): no nvdisasm
        # needed to show it again, while a capture cut without a usable
        # nvdisasm shows offsets
        eq(sass_section(d, cid), {(crc, 0x1a0): bar, (crc, 0x40): ldg}, "the capture's SASS section")
        res = d.ctl_json("folded", str(cid), "--weight", "stalls", "--out",
                         os.path.join(d.tmp, "f.txt"))
        eq(res["sass"], {"kept": 2, "missing": 1, "capped": 0}, "folded's sass counts")
        os.chmod(tool, 0o644)
        out = d.ctl("folded", str(cid), "--weight", "stalls", check=0).stdout.decode()
        expect("%s_[g];barrier_[g] 30" % bar in out, "text kept in the capture: %r", out)
        cid2 = ctl_json(d, "capture", "--last", "30s", "--pid", str(os.getpid()))["id"]
        eq(sass_section(d, cid2), None, "no section without nvdisasm")
        out = d.ctl("folded", str(cid2), "--weight", "stalls", check=0).stdout.decode()
        expect("+0x1a0_[g];barrier_[g] 30" in out, "offsets without nvdisasm: %r", out)
        # pprof: the same frames as stall_samples/count, the reason a label
        pprof_stalls(d, cid, kern, bar, ldg)
        # the outputs that read every record type take these
        d.ctl("folded", str(cid), check=0)
        d.ctl("export", str(cid), "--format", "chrome", "--out", os.path.join(d.tmp, "t.json"),
              check=0)
        s.close()
        st = wait_status(d, lambda st: st["peers"] == 0, "peer gone")
        expect(d.proc.poll() is None, "daemon alive")
        # its PC counters stay in status after it is gone: why it had none
        eq([(e["pid"], e["pc_library"]["errors"], e["pc_library"]["last_error_call"])
            for e in st["pc_closed"]], [(os.getpid(), 8, "cuptiPCSamplingGetData")],
           "the closed peer's PC counters")
        out = d.ctl("status", check=0).stdout.decode()
        expect("pc:         pid %d (gone): 51 samples" % os.getpid() in out and
               "8 errors; last error 3 from cuptiPCSamplingGetData" in out,
               "gpuprofctl status says why: %r", out)
        open_to_group(d)
        st = ctl_json(d, "status", user=True)["cupti"]
        eq(st["pc_closed"], [], "another user does not see them")
        # after a restart (no cubin, no peer, nvdisasm unusable) the saved
        # capture still shows its instructions
        eq(d.stop(), 0, "clean exit")
        d.start()
        out = d.ctl("folded", str(cid), "--weight", "stalls", check=0).stdout.decode()
        eq(sorted(out.splitlines()), want, "folded stall frames after a restart")
        pprof_stalls(d, cid, kern, bar, ldg)
    finally:
        d.cleanup()
        shutil.rmtree(tool_dir, ignore_errors=True)


def sass_section(d, cid):
    """{(crc, pc): text} of the capture file's CAPSEC_CUPTI_SASS section
    (capture/capsass.h), None without one."""
    with open(os.path.join(d.state, "%d.gpc" % cid), "rb") as f:
        buf = f.read()
    nsec, off = struct.unpack_from("<I", buf, 12)[0], 20
    for _ in range(nsec):
        stype, _, slen = struct.unpack_from("<IIQ", buf, off)
        p = off + 24
        if stype == 0x4353:
            ver, n, _, _ = struct.unpack_from("<IIII", buf, p)
            eq(ver, 1, "section version")
            out, q = {}, p + 16
            for _ in range(n):
                crc, _, pc, ln = struct.unpack_from("<QIIH", buf, q)
                out[(crc, pc)] = buf[q + 18:q + 18 + ln].decode()
                q += 18 + ln
            eq(q, p + slen, "section length")
            return out
        off = p + slen
    return None


def pprof_stalls(d, cid, kern, bar, ldg):
    """export --format pprof: stall_samples/count, the default type with
    --weight stalls; checked with go tool pprof where it is installed."""
    path = os.path.join(d.tmp, "stalls.pb.gz")
    d.ctl("export", str(cid), "--format", "pprof", "--weight", "stalls", "--out", path, check=0)
    p = d.ctl("export", str(cid), "--format", "chrome", "--weight", "stalls", "--out",
              os.path.join(d.tmp, "x.json"))
    expect(p.returncode != 0 and b"--weight applies to --format pprof" in p.stderr,
           "chrome refuses --weight: %r", p.stderr)
    go = shutil.which("go")
    if not go:
        return
    env = dict(os.environ, HOME=d.tmp, GOCACHE=os.path.join(d.tmp, "gocache"), GOFLAGS="")
    top = subprocess.run([go, "tool", "pprof", "-symbolize=none", "-traces", path],
                         capture_output=True, env=env, timeout=300).stdout.decode()
    expect("Type: stall_samples" in top, "opens on stall samples:\n" + top)
    for frames, n in (((bar, "barrier"), 30), ((bar, "long_scoreboard"), 12),
                      ((ldg, "long_scoreboard"), 5), ((kern + "+0x50", "stall_9"), 4)):
        want = r"\s+%d\s+%s_\[g\]\n\s+%s_\[g\]\n\s+%s_\[G\]\n" % (
            n, re.escape(frames[1]), re.escape(frames[0]), re.escape(kern))
        expect(re.search(want, top), "trace %r %d in:\n%s", frames, n, top)


@test
def sass_text_only_for_the_owners_cubins():
    """A member's capture keeps no text for a cubin another uid sent, even
    with the same CRC; root's capture of the same samples has it."""
    tool_dir = tempfile.mkdtemp(prefix="gpnvdis.")
    os.chmod(tool_dir, 0o755)
    tool = os.path.join(tool_dir, "nvdisasm")
    with open(tool, "w") as f:
        f.write(FAKE_NVDISASM)
    os.chmod(tool, 0o755)
    d = daemon("cupti.nvdisasm = %s\n" % tool)
    try:
        open_to_group(d)
        uid, _ = attacker()
        blob = os.urandom(70000)
        crc = zlib.crc32(blob)
        s = W.connect(d.cupti)
        s.send(W.msg([W.hello(features=0xff), W.string(1, "_Z6matmulPfS_")]))
        for i, ch in enumerate(W.cubin_chunks(crc, blob)):
            s.send(W.msg([ch], seq=1 + i))
        wait_status(d, lambda st: st["cubins"] == 1, "root's cubin")
        p = subprocess.Popen(as_attacker([sys.executable, W.__file__, d.cupti, "pcs",
                                          "_Z6matmulPfS_", str(crc), "30"]),
                             stdout=subprocess.PIPE)
        try:
            expect(p.stdout.readline().strip() == b"sent", "user sender ran")
            wait_status(d, lambda st: st["pc_samples"] == 7, "the user's samples")
            cid = ctl_json(d, "capture", "--last", "30s", "--pid", str(p.pid), user=uid)["id"]
            eq(sass_section(d, cid), None, "no text of root's cubin in the user's capture")
            out = subprocess.run(as_attacker([GPUPROFCTL, "--socket", d.sock, "folded", str(cid),
                                              "--weight", "stalls"]),
                                 capture_output=True, timeout=60).stdout.decode()
            expect(out.endswith("_[G];+0x1a0_[g];barrier_[g] 7\n") and "BAR" not in out,
                   "the user sees offsets: %r", out)
            cid = ctl_json(d, "capture", "--last", "30s", "--pid", str(p.pid))["id"]
            eq(sass_section(d, cid), {(crc, 0x1a0): "BAR.SYNC.DEFER_BLOCKING 0x0"},
               "root's capture has the text")
        finally:
            p.kill()
            p.wait()
        s.close()
    finally:
        d.cleanup()
        shutil.rmtree(tool_dir, ignore_errors=True)


@test
def pushed_windows_carry_sass_text():
    """A continuous profile's window is never saved, yet its stall frames
    show the instruction text a saved capture keeps (nvdisasm run on the
    window's cubins as for a root's capture), and its offset where
    nvdisasm has no instruction. nvdisasm runs once for the cubin, not
    once per window: later windows take the texts the first resolved, even
    once nvdisasm is gone."""
    tool_dir = tempfile.mkdtemp(prefix="gpnvdis.")
    os.chmod(tool_dir, 0o755)
    runs_dir = os.path.join(tool_dir, "runs")
    os.mkdir(runs_dir)
    os.chmod(runs_dir, 0o777)  # nvdisasm runs as nobody
    runs = os.path.join(runs_dir, "n")
    tool = os.path.join(tool_dir, "nvdisasm")
    with open(tool, "w") as f:
        f.write(FAKE_NVDISASM.replace("#!/bin/sh\n", "#!/bin/sh\necho run >> %s\n" % runs, 1))
    os.chmod(tool, 0o755)
    pdir = os.path.join(tool_dir, "profiles")
    d = daemon("cupti.nvdisasm = %s\npush.dir = %s\npush.interval = 1s\n" % (tool, pdir))
    bar, ldg = b"BAR.SYNC.DEFER_BLOCKING 0x0", b"LDG.E R2, desc[UR4][R2.64]"
    seen = set()

    def new_profiles():
        """The profiles written since the last call, decompressed."""
        out = []
        for n in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
            if n.endswith(".pb.gz") and n not in seen:
                seen.add(n)
                with open(os.path.join(pdir, n), "rb") as f:
                    out.append(zlib.decompress(f.read(), 16 + zlib.MAX_WBITS))
        return out

    def pushed_with(seq, want):
        """Send the samples each 0.2 s until a pushed profile names the
        kernel; that profile."""
        deadline = time.time() + 30
        while time.time() < deadline:
            t = W.now()
            s.send(W.msg([W.pc(t, crc, 0x1a0, 1, 0, 30), W.pc(t, crc, 0x40, 1, 0, 5),
                          W.pc(t, crc, 0x50, 1, 0, 4)], seq=seq))
            seq += 1
            for prof in new_profiles():
                if b"matmul(float*, float*)" in prof and want in prof:
                    return prof, seq
            time.sleep(0.2)
        raise AssertionError("no pushed profile with %r in %s" % (want, pdir))

    try:
        s = W.connect(d.cupti)
        blob = os.urandom(70000)
        crc = zlib.crc32(blob)
        s.send(W.msg([W.hello(features=0xff), W.string(1, "_Z6matmulPfS_"),
                      W.string(2, STALLED + "barrier"), W.stall_name(0, 0, 2)]))
        for i, ch in enumerate(W.cubin_chunks(crc, blob)):
            s.send(W.msg([ch], seq=1 + i))
        wait_status(d, lambda st: st["cubins"] == 1, "the cubin kept")
        prof, seq = pushed_with(10, bar)
        expect(ldg in prof, "both instructions' text in the pushed profile")
        expect(b"+0x50" in prof and b"+0x1a0" not in prof and b"+0x40" not in prof,
               "an offset only where nvdisasm had no instruction")
        # later windows: the texts again, nvdisasm not run again, even
        # once it is unusable (the cubin of a CRC does not change)
        os.chmod(tool, 0o644)
        for _ in range(2):
            new_profiles()
            prof, seq = pushed_with(seq, bar)
            expect(ldg in prof and b"+0x50" in prof, "the same frames in a later window")
        with open(runs) as f:
            eq(len(f.read().splitlines()), 1, "nvdisasm runs for the cubin over the windows")
        eq(ctl_json(d, "status")["push"]["build_failures"], 0, "no window failed")
        s.close()
    finally:
        d.cleanup()
        shutil.rmtree(tool_dir, ignore_errors=True)


LIB = os.path.join(BUILD, "inject", "libgpuprof-cupti.so")
FAKE_CUPTI = os.path.join(BUILD, "tests", "cupti", "libcupti.so.13")
FAKE_CUDA = os.path.join(BUILD, "tests", "gpu", "cuda", "libcuda.so.1")
APP = os.path.join(BUILD, "tests", "cupti", "cuda_app")
CUBIN = os.path.join(BUILD, "tests", "cupti", "pc_kernel.cubin")


@test
def library_to_folded_stalls():
    """The real library (over the stand-in libcupti) into the daemon: the
    folded stall lines sum to the stand-in's fixed distribution."""
    for p in (LIB, FAKE_CUPTI, FAKE_CUDA, APP, CUBIN):
        if not os.path.exists(p):
            raise Skip("not built: %s" % p)
    d = daemon()
    try:
        env = dict(os.environ, CUDA_INJECTION64_PATH=LIB, GPUPROF_CUPTI_LIB=FAKE_CUPTI,
                   GPUPROF_CUPTI_SOCKET=d.cupti, GPUPROF_CUPTI_FLUSH_MS="50",
                   GPUPROF_CUPTI_FEATURES="default,pc", GPUPROF_CUPTI_PC_DUTY="100",
                   GPUPROF_CUPTI_DUTY="100")
        launches = 12
        p = subprocess.Popen([APP, "--cuda", FAKE_CUDA, "--kernel", "gpuprof_pc_kernel:20000",
                              "--pc", CUBIN, "--launches", str(launches), "--threads", "2",
                              "--wait"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            pid = int(p.stdout.readline().split()[1])  # "ready PID"
            out, err = p.communicate("go\n", timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        eq(p.returncode, 0, "app: " + err)
        n = 2 * launches
        wait_status(d, lambda st: st["pc_samples"] == 41 * n and st["cubins"] == 1,
                    "the app's samples and cubin")
        cid = ctl_json(d, "capture", "--last", "30s", "--pid", str(pid))["id"]
        out = d.ctl("folded", str(cid), "--weight", "stalls", check=0).stdout.decode()
        want = {}
        for i in range(8):
            key = "+0x%x_[g];%s_[g]" % (i * 0x40, ("long_scoreboard", "math_pipe_throttle",
                                                   "wait", "barrier")[i % 4])
            want[key] = want.get(key, 0) + (i + 1) * n
        want["+0x0_[g];not_selected_[g]"] = 5 * n
        got = {}
        for line in out.splitlines():
            frames, count = line.rsplit(" ", 1)
            f = frames.split(";")
            eq(f[-3], "gpuprof_pc_kernel_[G]", "kernel frame of %r" % line)
            key = ";".join(f[-2:])
            got[key] = got.get(key, 0) + int(count)
        eq(got, want, "samples per (instruction, stall reason)")
    finally:
        d.cleanup()


def hostile_pc_cases():
    t = W.now()
    return {
        "cubin chunk over 32 KiB": W.msg([W.hello(), W.cubin_chunk(1, 40000, 0, b"\0" * 33000)]),
        "cubin chunk past its size": W.msg([W.hello(), W.cubin_chunk(1, 100, 64, b"\0" * 64)]),
        "cubin of size 0": W.msg([W.hello(), W.cubin_chunk(1, 0, 0, b"")]),
        "cubin len past its record": W.msg([W.hello(), W.cubin_chunk(1, 100, 0, b"\0" * 8,
                                                                     declared=64)]),
        "truncated pc record": W.msg([W.hello(), W.rec(W.PC, b"\0" * 24)]),
        "truncated cubin record": W.msg([W.hello(), W.rec(W.CUBIN, b"\0" * 16)]),
        "pc function id 70000": W.msg([W.hello(), W.pc(t, 1, 0, 70000, 0, 1)]),
        "stall name id 70000": W.msg([W.hello(), W.stall_name(0, 0, 70000)]),
    }


@test
def hostile_pc_and_cubin_records():
    d = daemon("cupti.peer_cubin_bytes = 100K\ncupti.cubin_cache_bytes = 120K\n")
    try:
        for what, data in hostile_pc_cases().items():
            s = W.connect(d.cupti)
            s.send(data)
            expect(W.closed_by_daemon(s), "%s: connection not closed" % what)
            s.close()
        st = wait_status(d, lambda st: st["closed"]["malformed"] == len(hostile_pc_cases()),
                         "malformed closes")
        # dropped and counted, the connection kept
        s = W.connect(d.cupti)
        t = W.now()
        big = os.urandom(120 * 1024)
        s.send(W.msg([W.hello(), W.string(1, "k"), W.stall_name(16, 0, 1),
                      W.stall_name(0, 256, 1), W.pc(t, 1, 1 << 32, 1, 0, 1),
                      W.pc(t, 1, 0, 1, 0, 1, device=99), W.pc(t, 1, 0, 1, 300, 1),
                      W.pc(t, 1, 0, 1, 0, 0), W.pc(0, 1, 0, 1, 0, 5)]))
        st = wait_status(d, lambda st: st["drops"]["pc"] == 6, "pc drops")
        eq(st["drops"]["time"], 1, "a PC record without a time")
        eq((st["records"]["pc"], st["pc_samples"]), (0, 0), "nothing stored")
        # over cupti.peer_cubin_bytes: refused whole, its chunks ignored
        for i, ch in enumerate(W.cubin_chunks(7, big)):
            s.send(W.msg([ch], seq=1 + i))
        st = wait_status(d, lambda st: st["drops"]["cubin"] == 1, "cubin over the peer's bytes")
        eq(st["cubins"], 0, "nothing kept")
        # out of order: that cubin is dropped, a later one whole is kept
        a = os.urandom(40000)
        s.send(W.msg([W.cubin_chunk(8, len(a), 0, a[:32768])], seq=10))
        s.send(W.msg([W.cubin_chunk(8, len(a), 32000, a[32000:])], seq=11))
        st = wait_status(d, lambda st: st["drops"]["cubin"] == 2, "cubin chunk out of order")
        for i, ch in enumerate(W.cubin_chunks(9, a)):
            s.send(W.msg([ch], seq=12 + i))
        st = wait_status(d, lambda st: st["cubins"] == 1, "a whole cubin")
        eq(st["cubin_bytes"], 40000, "its bytes")
        # the peer's cubin budget (100K) is spent by what it started:
        # 40000 (out of order) + 40000 kept; 40000 more passes it
        b = os.urandom(40000)
        for i, ch in enumerate(W.cubin_chunks(10, b)):
            s.send(W.msg([ch], seq=20 + i))
        st = wait_status(d, lambda st: st["drops"]["cubin"] == 3, "the peer's budget")
        peer = st["peer_list"][0]
        expect("refused" in peer["last_error"], "why: %r", peer["last_error"])
        expect(not W.closed_by_daemon(s, 0.3), "closed on droppable records")
        # another peer: the daemon-wide cache (120K) keeps the newest
        s2 = W.connect(d.cupti)
        s2.send(W.msg([W.hello()]))
        for k in range(2):
            c = os.urandom(50000)
            for i, ch in enumerate(W.cubin_chunks(100 + k, c)):
                s2.send(W.msg([ch], seq=1 + 2 * k + i))
        st = wait_status(d, lambda st: st["cubins"] == 3, "cubins of the second peer")
        eq(st["cubin_bytes"], 100000, "the two newest fit (the oldest went)")
        s.close()
        s2.close()
        wait_status(d, lambda st: st["peers"] == 0, "peers gone")
        eq(d.stop(), 0, "clean exit")
        log = d.read_log()
        expect("LeakSanitizer" not in log and "AddressSanitizer" not in log, "sanitizers quiet")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
