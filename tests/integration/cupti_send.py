# SPDX-License-Identifier: MIT
"""The CUPTI library's wire (inject/cupti_abi.h) written with struct.pack, so
the integration tests can speak to gpuprofd's `cupti` collector without the
library. Run as a script it is a sender another user or a forked process can
run: `cupti_send.py SOCKET SCENARIO ARGS...` (see main())."""

import os
import socket
import struct
import sys
import time

MAGIC = 0x49505047
VERSION = 1
MSG_MAX = 65536

HELLO, STRING, KERNEL, MEMCPY, MEMSET, SYNC, GRAPH, API, MARKER, STATS = range(1, 11)
STALL_NAME, PC, CUBIN = 11, 12, 13
CUBIN_CHUNK = 32768
F_KERNEL, F_MEMCPY, F_MEMSET, F_SYNC, F_GRAPH, F_API, F_NVTX = (1 << i for i in range(7))


def now():
    return time.monotonic_ns()  # CLOCK_MONOTONIC, as the daemon's


def rec(rtype, body, length=None):
    """One record: struct gpi_rec, then body, padded to 8."""
    n = 8 + len(body)
    pad = (-n) % 8
    return struct.pack("<HHI", rtype, length if length is not None else n + pad, 0) + body + b"\0" * pad


def msg(records, seq=0, nrec=None, magic=MAGIC, version=VERSION):
    return struct.pack("<IHHII", magic, version, len(records) if nrec is None else nrec, seq, 0) + b"".join(records)


def hello(features=0x7f, lib_version=VERSION):
    return rec(HELLO, struct.pack("<IIiIQ", lib_version, 130000, 13000, features, now()))


def string(sid, text, declared=None):
    b = text.encode() if isinstance(text, str) else text
    return rec(STRING, struct.pack("<II", sid, len(b) if declared is None else declared) + b)


def kernel(start, end, name, corr=1, device=0, ctx=1, stream=7, grid=(128, 1, 1), block=(256, 1, 1),
           smem=(0, 1024), lmem=0, regs=32, flags=0, graph=0, node=0):
    return rec(KERNEL, struct.pack("<QQIIIII3I3IIIIHBBIQ", start, end, corr, name, device, ctx, stream,
                                   *grid, *block, smem[0], smem[1], lmem, regs, flags, 0, graph, node))


def memcpy(start, end, nbytes, copy_kind=1, src=1, dst=3, corr=2, device=0, ctx=1, stream=7, flags=0,
           src_dev=0, dst_dev=0, graph=0):
    return rec(MEMCPY, struct.pack("<QQQIIIIIIBBBBI", start, end, nbytes, corr, device, ctx, stream,
                                   src_dev, dst_dev, copy_kind, src, dst, flags, graph))


def memset(start, end, nbytes, kind=3, value=0, corr=3, device=0, ctx=1, stream=7, flags=0, graph=0):
    return rec(MEMSET, struct.pack("<QQQIIIIIBBxxII", start, end, nbytes, corr, device, ctx, stream,
                                   value, kind, flags, graph, 0))


def sync(start, end, stype=3, corr=4, ctx=1, stream=7, event=0):
    return rec(SYNC, struct.pack("<QQIIIIII", start, end, corr, stype, ctx, stream, event, 0))


def graph(start, end, graph_id, corr=5, device=0, ctx=1, stream=7):
    return rec(GRAPH, struct.pack("<QQIIIIII", start, end, corr, device, ctx, stream, graph_id, 0))


def api(enter, exit_, name, tid, corr=1, cbid=211, domain=2, failed=0):
    return rec(API, struct.pack("<QQIIIHBB", enter, exit_, corr, tid, name, cbid, domain, failed))


def marker(start, end, name, tid, domain=0, flags=2):
    return rec(MARKER, struct.pack("<QQIIII", start, end, tid, name, domain, flags))


def stats(state=1, on=0x7f, failed=0, last_error=0, conflict=0, records=10, cupti_dropped=3,
          buffers_refused=0, api_dropped=2, batches_sent=4, batches_dropped=1, records_dropped=5,
          reconnects=0, flags=0, idle=None):
    """idle: (unsubscribes, resubscribes, failures), the counters a newer
    library appends; None: the record of a library that predates them."""
    body = struct.pack("<IIIiII8Q", state, on, failed, last_error, conflict, flags, records,
                       cupti_dropped, buffers_refused, api_dropped, batches_sent,
                       batches_dropped, records_dropped, reconnects)
    if idle is not None:
        body += struct.pack("<3Q", *idle)
    return rec(STATS, body)


def stall_name(device, index, name):
    return rec(STALL_NAME, struct.pack("<IIII", device, index, name, 0))


def pc(time_ns, crc, pc_off, function, reason, samples, device=0, corr=0):
    return rec(PC, struct.pack("<QQQIIIIII", time_ns, crc, pc_off, function, reason, samples, device,
                               corr, 0))


def cubin_chunk(crc, size, offset, data, declared=None):
    return rec(CUBIN, struct.pack("<QIIII", crc, size, offset,
                                  len(data) if declared is None else declared, 0) + data)


def pc_stats(samples=0, sent=0, dropped=0, oom=0, drains=0, windows=0, contexts_refused=0,
             cubins=0, cubins_refused=0, cubin_bytes=0, extra=None):
    """The first libraries' 88 bytes; extra (a dict of the fields added
    since: getdata_calls ... last_error) gives today's 176."""
    b = struct.pack("<10Q", samples, sent, dropped, oom, drains, windows,
                    contexts_refused, cubins, cubins_refused, cubin_bytes)
    if extra is not None:
        e = dict.fromkeys("getdata_calls pcs total_samples nonuser_samples errors cfgbuf_pcs "
                          "names names_untracked contexts_on contexts_ever contexts_off "
                          "last_call last_error".split(), 0)
        e.update(extra)
        b += struct.pack("<8Q4Ii4x", *e.values())
    return rec(14, b)


def cubin_chunks(crc, data):
    """A cubin as the library sends it: CUBIN_CHUNK pieces in order."""
    return [cubin_chunk(crc, len(data), o, data[o:o + CUBIN_CHUNK])
            for o in range(0, len(data), CUBIN_CHUNK)]


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


def closed_by_daemon(s, timeout=5.0):
    """Did the daemon close s (within timeout)?"""
    s.settimeout(timeout)
    try:
        return s.recv(16) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def main():
    path, scenario = sys.argv[1], sys.argv[2]
    if scenario == "kernels":
        # kernels NAME COUNT HOLD_S: COUNT kernels named NAME, then stay
        # alive HOLD_S seconds (the daemon attributes at accept)
        name, count, hold = sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
        s = connect(path)
        s.send(msg([hello(), string(1, name)]))
        t = now()
        recs = [kernel(t - 1000000 + i, t - 500000 + i, 1, corr=i + 1) for i in range(count)]
        seq = 1
        while recs:
            s.send(msg(recs[:500], seq=seq))
            recs = recs[500:]
            seq += 1
        print("sent", flush=True)
        time.sleep(hold)
    elif scenario == "pcs":
        # pcs NAME CRC HOLD_S: PC samples of function NAME in cubin CRC
        # (0x1a0, reason 0 "..._barrier", 7 samples; no cubin), then stay
        # alive HOLD_S seconds
        name, crc, hold = sys.argv[3], int(sys.argv[4], 0), float(sys.argv[5])
        s = connect(path)
        s.send(msg([hello(features=0xff), string(1, name),
                    string(2, "smsp__pcsamp_warps_issue_stalled_barrier"), stall_name(0, 0, 2)]))
        s.send(msg([pc(now() - 1000, crc, 0x1a0, 1, 0, 7)], seq=1))
        print("sent", flush=True)
        time.sleep(hold)
    elif scenario == "forkexit":
        # the parent connects and exits; its child keeps the socket and
        # sends a kernel named NAME after the parent is gone
        name = sys.argv[3]
        s = connect(path)
        s.send(msg([hello(), string(1, "before-exit")]))
        t = now()
        s.send(msg([kernel(t - 2000, t - 1000, 1)], seq=1))
        r, w = os.pipe()
        if os.fork() == 0:
            os.close(w)
            os.read(r, 1)  # the parent has exited when this returns
            time.sleep(1.0)
            t = now()
            try:
                s.send(msg([string(2, name), kernel(t - 2000, t - 1000, 2)], seq=2))
                res = "sent"
            except OSError as e:
                res = "refused %s" % e.errno
            with open(sys.argv[4], "w") as f:
                f.write(res)
            os._exit(0)
        time.sleep(0.3)
        print("parent exits", flush=True)
        os._exit(0)  # the pipe's write end closes with it
    else:
        sys.exit("unknown scenario " + scenario)


if __name__ == "__main__":
    main()
