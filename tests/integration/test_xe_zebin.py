#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""NEO debug zebins through the real daemon and gpuprofctl (docs/xe.md):
an ELF with two STT_FUNC kernels goes in with `xe zebin`, the reply says
what was found and kept; malformed, unprivileged and missing input get
clear errors and the daemon carries on."""

import os
import tempfile

from gpd import Daemon, eq, expect, main, test
from zebin_elf import zebin

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
            expect(b"access.admin_group" in p.stderr, p.stderr.decode())
        eq(d.ctl("xe", "zebin", "/nonexistent.elf").returncode, 4, "local file missing")
        eq(d.ctl("xe", "zebin").returncode, 2, "no file named")
        eq(d.call("version").get("error"), None, "daemon still answers")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
