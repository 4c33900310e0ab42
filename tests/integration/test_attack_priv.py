#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Privilege attacks by a real member of group gpuprof (docs/security.md):
an exec of a setuid-root program after connect() must not make the
connection privileged; setuid targets must not be captured; a pid that does
not exist is refused; kernel symbols and addresses stay hidden from a peer
the kernel hides them from."""

import grp
import json
import os
import signal
import subprocess
import tempfile
import time

from gpd import (ATTACKER_PY, Daemon, Skip, as_attacker, attacker, eq, error_code, expect, main,
                 open_to_group, test)

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


def exec_race_once(d, helper, rootcap):
    os.kill(d.proc.pid, signal.SIGSTOP)
    p = subprocess.Popen(as_attacker([ATTACKER_PY, "-c", EXEC_RACE, HERE, d.sock, helper, str(rootcap)]),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        eq(line, b"ready\n", "the attacker's connecting pid runs the setuid helper")
        os.kill(d.proc.pid, signal.SIGCONT)
        p.stdin.write(b"go\n")
        p.stdin.flush()
        line = p.stdout.readline()
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
        expect("(privileged)" not in d.read_log().split("uid=%d" % uid, 1)[-1],
               "no connection of the attacker was privileged")
    finally:
        d.cleanup()


@test
def admin_group_is_privileged():
    uid, gid = attacker()
    for value in ("gpuprof", str(grp.getgrnam("gpuprof").gr_gid), str(gid)):
        d = Daemon("access.admin_group = %s\n" % value).start()
        try:
            open_to_group(d)
            rootcap = root_capture(d)
            p = subprocess.run(as_attacker([ATTACKER_PY, "-c",
                                            "import sys; sys.path.insert(0, sys.argv[1]); from gpd import Conn;"
                                            "import json; print(json.dumps(Conn(sys.argv[2]).call('capture.info',"
                                            " {'id': int(sys.argv[3])})))", HERE, d.sock, str(rootcap)]),
                               capture_output=True, timeout=60)
            eq(p.returncode, 0, "attacker script: %s" % p.stderr.decode(errors="replace"))
            rep = json.loads(p.stdout)
            eq(rep.get("result", {}).get("id"), rootcap, "admin group %s sees root's capture: %r" % (value, rep))
        finally:
            d.cleanup()
    d = Daemon("access.admin_group = no-such-group-gpuprof\n")
    try:
        d.start(wait=False)
        eq(d.proc.wait(timeout=30) != 0, True, "an unknown group stops the daemon")
        expect("access.admin_group" in d.read_log(), "the error names the key: %s" % d.read_log())
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
