#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the daemon's `cupti` collector costs per record: a private gpuprofd
takes N kernel records (plus their API records) from one connection, as
fast as a Python sender writes them, and the daemon's own CPU time
(utime + stime of /proc/PID/stat) is divided by the records stored.

    GPUPROF_BUILD=build python3 bench/cupti/ingest.py [N]

Prints figures; asserts nothing (bench/ is never a test)."""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))
from gpd import Daemon  # noqa: E402
import cupti_send as W  # noqa: E402


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    d = Daemon()
    sock = os.path.join(d.tmp, "cupti.sock")
    with open(d.conf, "w") as f:
        f.write("sampling.cpu = false\ncupti.socket = %s\ncupti.peer_rate = 100000000\n" % sock)
    d.start()
    try:
        s = W.connect(sock)
        s.send(W.msg([W.hello(), W.string(1, "_Z6kernelPfi"), W.string(2, "cudaLaunchKernel")]))
        time.sleep(0.2)
        c0, t0 = cpu_s(d.proc.pid), time.time()
        now = W.now()
        per = 300  # kernel + api pairs per message: 300 * 136 bytes < 64 KiB
        seq, sent = 1, 0
        while sent < n:
            recs = []
            for i in range(per):
                t = now - 10**9 + sent + i
                recs.append(W.kernel(t, t + 500, 1, corr=sent + i, grid=((sent + i) % 64 + 1, 1, 1)))
                recs.append(W.api(t - 100, t - 50, 2, tid=7, corr=sent + i))
            s.send(W.msg(recs, seq=seq))
            seq += 1
            sent += per
        want = 2 * sent
        while True:
            st = d.ctl_json("status")["cupti"]
            got = st["records"]["kernel"] + st["records"]["api"]
            if got >= want or time.time() - t0 > 120:
                break
            time.sleep(0.1)
        c1, t1 = cpu_s(d.proc.pid), time.time()
        print("records stored: %d of %d (drops %s)" % (got, want, st["drops"]))
        print("daemon CPU: %.3f s, %.2f us per record; wall %.2f s (the Python sender "
              "bounds it)" % (c1 - c0, (c1 - c0) / max(got, 1) * 1e6, t1 - t0))
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
