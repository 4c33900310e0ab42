#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The batch-buffer parser's host path through the real daemon and
gpuprofctl (docs/gpu-cs.md): a dump built from the documented encodings
goes in with `xe batch`, the reply and `status` say what was found and
which path is active, damaged and unprivileged input gets clear errors."""

import os
import struct
import tempfile

from gpd import Daemon, eq, expect, main, test

VA = 0x1000A0000
IBA = 0x7FF100000000


def sba(iba):
    d = [0] * 22
    d[0] = (0x6101 << 16) | 20
    d[10] = (iba & 0xFFFFF000) | 1  # Modify Enable
    d[11] = iba >> 32
    return d


def walker_xe2(ksp):
    d = [0] * 40
    d[0] = (0x7208 << 16) | 38
    d[19] = ksp & 0xFFFFFFC0
    d[20] = (ksp >> 32) & 0xFFFF
    return d


def sip(off):
    return [(0x6102 << 16) | 1, off & 0xFFFFFFF0, off >> 32]


BB_END = 0x0A << 23


def dump(dwords, asid=3, pid=1234, submit_first=False):
    payload = struct.pack("<%dI" % len(dwords), *dwords)
    buf = struct.pack("<IIIIQ", 1, 16 + len(payload), asid, 0, VA) + payload
    sub = struct.pack("<IIIIIIQ", 2, 24, asid, pid, 0, 0, VA)
    body = sub + buf if submit_first else buf + sub
    return b"GPUCSDMP" + struct.pack("<II", 1, 0) + body


@test
def dump_in_kernels_out():
    d = Daemon().start()
    try:
        cmds = sba(IBA) + sip(0x800) + walker_xe2(0x1C40) + walker_xe2(0x3000) + [BB_END]
        with tempfile.NamedTemporaryFile(suffix=".dmp") as f:
            f.write(dump(cmds))
            f.flush()
            r = d.ctl_json("xe", "batch", f.name)
        eq(r["submits"], 1, "submissions in the dump")
        b = r["batch_parser"]
        eq(b["path"], "host", "path")
        expect("xe" in b["reason"] or "i915" in b["reason"], "reason: %r" % b["reason"])
        eq(b["ends"]["done"], 1, "parse ended at MI_BATCH_BUFFER_END")
        eq(b["ksps"], 2, "KSPs")
        eq(b["sips"], 1, "system routine")

        # from stdin, the submission before its memory: waits, then parses
        p = d.ctl("xe", "batch", "-", input=dump(cmds, asid=4, submit_first=True), check=0)
        expect(b"retry 1" in p.stdout and b"done 2" in p.stdout, p.stdout.decode())

        st = d.ctl_json("status")
        xe = [c for c in st["collectors"] if c["name"] == "xe"][0]
        eq(xe["batch_parser"]["submits"], 2, "status counts both submissions")
        eq(xe["batch_parser"]["retry_waiting"], 0, "nothing left waiting")
    finally:
        d.cleanup()


@test
def damaged_and_unprivileged_dumps_are_refused():
    d = Daemon("socket_mode = 0666\n").start()  # so that nobody may connect
    try:
        good = dump(sba(IBA) + walker_xe2(0x1C40) + [BB_END])
        with tempfile.NamedTemporaryFile(suffix=".dmp") as f:
            f.write(good[:-5])  # the submit record cut short
            f.flush()
            p = d.ctl("xe", "batch", f.name, check=1)
            expect(b"-32009" in p.stderr and b"byte" in p.stderr, p.stderr.decode())
            f.seek(0)
            f.write(b"NOTADUMP" + good[8:])
            f.flush()
            p = d.ctl("xe", "batch", f.name, check=1)
            expect(b"magic" in p.stderr, p.stderr.decode())
            os.chmod(f.name, 0o644)
            p = d.ctl("xe", "batch", f.name, user=65534, check=1)
            expect(b"access.admin_group" in p.stderr, p.stderr.decode())
        eq(d.ctl("xe", "batch", "/nonexistent.dmp").returncode, 4, "local file missing")
        eq(d.ctl("xe", "batch").returncode, 2, "no file named")
        # the daemon carries on
        eq(d.call("version").get("error"), None, "daemon still answers")
    finally:
        d.cleanup()



XE_VM_BIND = 0x40886445
XE_EXEC = 0x40386449


@test
def submission_hook_parses_execs():
    """xe.submit_hook = on: the BPF hook on the raw syscall tracepoints
    parses an xe exec in the submitting process's memory. There is no xe
    driver here, so this process's ioctls on /dev/null fail (ENOTTY), but
    the hook reads their arguments at syscall entry, as it would on xe."""
    import ctypes
    import errno
    import fcntl

    d = Daemon("xe.submit_hook = on\n").start()
    try:
        st = d.ctl_json("status")
        b = [c for c in st["collectors"] if c["name"] == "xe"][0]["batch_parser"]
        if b["path"] != "bpf":
            expect("submission hook" in b["reason"], "reason: %r" % b["reason"])
            print("SKIP hook not attached here: %s" % b["reason"])
            return
        cmds = sba(IBA) + sip(0x800) + walker_xe2(0x1C40) + walker_xe2(0x3000) + [BB_END]
        batch = ctypes.create_string_buffer(struct.pack("<%dI" % len(cmds), *cmds))
        # drm_xe_vm_bind with one drm_xe_vm_bind_op: MAP_USERPTR (xe_drm.h)
        op = struct.pack("<QIHHQQQII", 0, 0, 0, 0, ctypes.addressof(batch),
                         len(batch.raw) & ~3, VA, 2, 0) + bytes(32)
        bind = bytearray(struct.pack("<QIIII", 0, 1, 0, 0, 1) + op + struct.pack("<IIQ", 0, 0, 0)
                         + bytes(16))
        eq(len(bind), 136, "drm_xe_vm_bind size")
        ex = bytearray(struct.pack("<QIIQQH", 0, 2, 0, 0, VA, 1) + bytes(6 + 16))
        eq(len(ex), 56, "drm_xe_exec size")
        with open("/dev/null", "rb") as f:
            for cmd, arg in ((XE_VM_BIND, bind), (XE_EXEC, ex)):
                try:
                    fcntl.ioctl(f.fileno(), cmd, arg, True)
                except OSError as e:
                    eq(e.errno, errno.ENOTTY, "no xe driver behind /dev/null")
        for _ in range(50):  # the ring buffer wakes the daemon's loop
            st = d.ctl_json("status")
            b = [c for c in st["collectors"] if c["name"] == "xe"][0]["batch_parser"]
            if b["submits"]:
                break
            import time
            time.sleep(0.1)
        eq(b["path"], "bpf", "path")
        expect(b["hook"]["binds"] >= 1, "binds: %r" % b["hook"])
        expect(b["hook"]["parsed"] >= 1, "parsed: %r" % b["hook"])
        eq(b["submits"], 1, "one exec parsed")
        eq(b["ends"]["done"], 1, "parse ended at MI_BATCH_BUFFER_END")
        eq(b["ksps"], 2, "KSPs")
        eq(b["sips"], 1, "system routine")
    finally:
        d.cleanup()

if __name__ == "__main__":
    main()
