#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""NEO debug zebins through the real daemon and gpuprofctl (docs/xe.md):
an ELF with two STT_FUNC kernels goes in with `xe zebin`, the reply says
what was found and kept; malformed, unprivileged and missing input get
clear errors and the daemon carries on."""

import os
import struct
import tempfile

from gpd import Daemon, eq, expect, main, test

TEXT_VA = 0xFFFF800000010000
ISA = bytes([0x40, 0, 0x10, 0, 0xA0, 0x0A, 0x05, 0x0A, 0x04, 0x0B, 0x10, 0x0A,
             0x04, 0x0C, 0x10, 0, 0x60] + [0] * 15)


def zebin():
    shstr = b"\0.text\0.symtab\0.strtab\0.shstrtab\0"
    strtab = b"\0kern_a\0kern_b\0"
    sym = lambda name, value: struct.pack("<IBBHQQ", name, 0x12, 0, 1, value, 16)
    symtab = bytes(24) + sym(1, TEXT_VA) + sym(8, TEXT_VA + 16)
    body, offs = b"", []
    for blob in (ISA, symtab, strtab, shstr):
        offs.append(64 + len(body))
        body += blob + bytes((-len(blob)) % 8)
    shoff = 64 + len(body)
    sh = bytes(64)
    sh += struct.pack("<IIQQQQIIQQ", 1, 1, 6, TEXT_VA, offs[0], len(ISA), 0, 0, 16, 0)
    sh += struct.pack("<IIQQQQIIQQ", 7, 2, 0, 0, offs[1], len(symtab), 3, 1, 8, 24)
    sh += struct.pack("<IIQQQQIIQQ", 15, 3, 0, 0, offs[2], len(strtab), 0, 0, 1, 0)
    sh += struct.pack("<IIQQQQIIQQ", 23, 3, 0, 0, offs[3], len(shstr), 0, 0, 1, 0)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    eh = ident + struct.pack("<HHIQQQIHHHHHH", 2, 205, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 5, 4)
    return eh + body + sh


@test
def zebin_in_kernels_kept():
    d = Daemon().start()
    try:
        with tempfile.NamedTemporaryFile(suffix=".elf") as f:
            f.write(zebin())
            f.flush()
            r = d.ctl_json("xe", "zebin", f.name, "42")
        eq(r["kernels"], 2, "kernels in the zebin")
        eq(r["binaries"], 2, "binaries kept")
        eq(r["binary_bytes"], 32 + 16, "bytes kept")
        eq(r["binaries_dropped"], 0, "nothing dropped")
        # from stdin, the same kernels of the same pid: replaced, not added
        p = d.ctl("xe", "zebin", "-", "42", input=zebin(), check=0)
        expect(b"kernels: 2" in p.stdout and b"binaries held: 2" in p.stdout,
               p.stdout.decode())
        # another process's kernels at the same VAs are its own
        eq(d.ctl_json("xe", "zebin", "-", "43", input=zebin())["binaries"], 4, "per pid")
    finally:
        d.cleanup()


@test
def malformed_and_unprivileged_zebins_are_refused():
    d = Daemon("socket_mode = 0666\n").start()
    try:
        good = zebin()
        with tempfile.NamedTemporaryFile(suffix=".elf") as f:
            f.write(good[:100])  # section headers cut off
            f.flush()
            p = d.ctl("xe", "zebin", f.name, check=1)
            expect(b"-32009" in p.stderr, p.stderr.decode())
            f.seek(0)
            f.write(b"NOTANELF" + good[8:])
            f.flush()
            p = d.ctl("xe", "zebin", f.name, check=1)
            expect(b"-32009" in p.stderr and b"ELF" in p.stderr, p.stderr.decode())
            os.chmod(f.name, 0o644)
            p = d.ctl("xe", "zebin", f.name, user=65534, check=1)
            expect(b"CAP_PERFMON" in p.stderr, p.stderr.decode())
        eq(d.ctl("xe", "zebin", "/nonexistent.elf").returncode, 4, "local file missing")
        eq(d.ctl("xe", "zebin").returncode, 2, "no file named")
        eq(d.call("version").get("error"), None, "daemon still answers")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
