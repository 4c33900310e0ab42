# SPDX-License-Identifier: MIT
"""The wire of libgpuprof-cupti.so (inject/cupti_abi.h) decoded in Python:
a SOCK_SEQPACKET receiver standing where gpuprofd's collector listens, for
tests/integration/test_cupti_inject.py and scripts/device/cupti_check.sh.
No dependency on the test runner."""

import os
import socket
import struct
import threading
import time


class WireError(AssertionError):
    pass


def _expect(cond, msg, *args):
    if not cond:
        raise WireError(msg % args if args else msg)


# inject/cupti_abi.h
MAGIC, VERSION = 0x49505047, 1
CONTROL, CTL_RELEASE = 32, 1


def control(op, typ=CONTROL, rlen=16, magic=MAGIC):
    """A daemon-to-library request (struct gpi_hdr + struct gpi_control)."""
    return struct.pack("<IHHII", magic, VERSION, 1, 0, 0) + struct.pack("<HHIII", typ, rlen, 0, op, 0)
HELLO, STRING, KERNEL, MEMCPY, MEMSET, SYNC, GRAPH, API, MARKER, STATS = range(1, 11)
STALL_NAME, PC, CUBIN, PC_STATS = 11, 12, 13, 14
CUDA_EVENT = 15
WINDOW = 16
CUBIN_CHUNK = 32768
F_KERNEL, F_MEMCPY, F_MEMSET, F_SYNC, F_GRAPH, F_API, F_NVTX, F_PC, F_MONO, F_EVENT = \
    (1 << i for i in range(10))
ST_ACTIVE, ST_CONFLICT, ST_DISABLED = 1, 2, 3
SF_SUB_KNOWN, SF_SUBSCRIBED = 1, 2  # gpi_stats.flags
SF_IDLE_UNSUB, SF_IDLE_APPLIES, SF_IDLE_OUT = 4, 8, 16
MK_INSTANT, MK_RANGE = 1, 2
LAYOUT = {
    HELLO: ("<IIiIQ", "lib_version cupti_version driver_version features mono_ns"),
    KERNEL: ("<QQIIIII3I3IIIIHBBIQ", "start end corr name device context stream gx gy gz bx by bz "
             "static_smem dynamic_smem local_mem regs flags rsv graph_id graph_node"),
    MEMCPY: ("<QQQIIIIIIBBBBI", "start end bytes corr device context stream src_device dst_device "
             "copy_kind src_kind dst_kind flags graph_id"),
    MEMSET: ("<QQQIIIIIBBBBII", "start end bytes corr device context stream value mem_kind flags "
             "rsv0 rsv1 graph_id rsv2"),
    SYNC: ("<QQIIIIII", "start end corr type context stream event rsv"),
    GRAPH: ("<QQIIIIII", "start end corr device context stream graph_id rsv"),
    API: ("<QQIIIHBB", "enter exit corr tid name cbid domain failed"),
    MARKER: ("<QQIIII", "start end tid name domain flags"),
    STATS: ("<IIIiII11Q", "state on failed last_error conflict flags records cupti_dropped "
            "buffers_refused api_dropped batches_sent batches_dropped records_dropped reconnects "
            "idle_unsubs idle_subs idle_sub_failed"),
    STALL_NAME: ("<IIII", "device index name rsv"),
    PC: ("<QQQIIIIII", "time cubin_crc pc function reason samples device corr rsv"),
    CUBIN: ("<QIIII", "crc size offset len rsv"),
    CUDA_EVENT: ("<QIIIIII", "time corr event device context stream rsv"),
    WINDOW: ("<QQII", "start end duty period_ms"),
    PC_STATS: ("<18Q4IiI2Q2I", "samples sent dropped oom drains windows contexts_refused cubins "
               "cubins_refused cubin_bytes getdata_calls pcs total_samples nonuser_samples "
               "errors cfgbuf_pcs names names_untracked contexts_on contexts_ever "
               "contexts_off last_call last_error period launch_ns getdata_ns enables "
               "enable_mode"),
}
NAMED = {KERNEL: ("name",), API: ("name",), MARKER: ("name", "domain"), STATS: ("conflict",),
         STALL_NAME: ("name",), PC: ("function",)}


class Conn:
    """One connection's messages, decoded in order with its string table."""

    def __init__(self):
        self.msgs, self.recs, self.strings, self.seqs = [], [], {}, []
        self.ndecoded = 0

    def decode(self, msg):
        magic, version, nrec, seq, rsv = struct.unpack_from("<IHHII", msg)
        _expect(magic == MAGIC, "magic %x", magic)
        _expect(version == VERSION, "version %d", version)
        _expect(len(msg) <= 65536, "message of %d bytes", len(msg))
        self.seqs.append(seq)
        off, n = 16, 0
        while off < len(msg):
            typ, ln, _ = struct.unpack_from("<HHI", msg, off)
            _expect(ln >= 8 and ln % 8 == 0 and off + ln <= len(msg), "bad record len %d", ln)
            self.record(typ, msg[off + 8:off + ln])
            off += ln
            n += 1
        _expect(n == nrec, "%d records, header says %d", n, nrec)

    def record(self, typ, body):
        if typ == STRING:
            sid, ln = struct.unpack_from("<II", body)
            self.strings[sid] = body[8:8 + ln].decode()
            return
        fmt, names = LAYOUT[typ]
        _expect(len(body) >= struct.calcsize(fmt), "short record type %d", typ)
        r = dict(zip(names.split(), struct.unpack_from(fmt, body)))
        r["rtype"] = typ
        if typ == CUBIN:
            _expect(r["len"] <= CUBIN_CHUNK and 32 + r["len"] <= len(body) + 8, "cubin chunk len %d",
                    r["len"])
            r["data"] = bytes(body[24:24 + r["len"]])
        for f in NAMED.get(typ, ()):
            if r[f]:
                _expect(r[f] in self.strings, "type %d: string id %d undefined", typ, r[f])
                r[f] = self.strings[r[f]]
            else:
                r[f] = None
        self.recs.append(r)

    def of(self, typ):
        return [r for r in self.recs if r["rtype"] == typ]

    def cubins(self):
        """crc -> bytes of every cubin whose chunks arrived whole and in
        order (a chunk at offset 0 restarts one)."""
        parts, whole = {}, {}
        for r in self.of(CUBIN):
            if r["offset"] == 0:
                parts[r["crc"]] = b""
            got = parts.get(r["crc"])
            _expect(got is not None and len(got) == r["offset"], "cubin %x: chunk at %d after %r",
                    r["crc"], r["offset"], None if got is None else len(got))
            parts[r["crc"]] = got + r["data"]
            if len(parts[r["crc"]]) == r["size"]:
                whole[r["crc"]] = parts[r["crc"]]
        return whole


class Receiver:
    """A SOCK_SEQPACKET listener where the daemon would be. read=False:
    accept but read nothing until resume()."""

    def __init__(self, path, read=True):
        self.path, self.conns, self.lock = path, [], threading.Lock()
        self.reading = threading.Event()
        if read:
            self.reading.set()
        self.stopped = False
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        if os.path.exists(path):
            os.unlink(path)
        self.sock.bind(path)
        self.sock.listen(8)
        self.socks = []
        self.threads = [threading.Thread(target=self.accept, daemon=True)]
        self.threads[0].start()

    def accept(self):
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            conn = Conn()
            with self.lock:
                self.conns.append(conn)
                self.socks.append(c)
            t = threading.Thread(target=self.serve, args=(c, conn), daemon=True)
            t.start()
            self.threads.append(t)

    def serve(self, c, conn):
        self.reading.wait()
        while True:
            try:
                m = c.recv(65536)
            except OSError:
                return
            if not m:
                return
            with self.lock:
                conn.msgs.append(m)

    def resume(self):
        self.reading.set()

    def stop(self):
        self.stopped = True
        self.reading.set()
        for s in [self.sock] + self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in self.threads:
            t.join(5)
        if os.path.exists(self.path):
            os.unlink(self.path)

    def decoded(self):
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            with self.lock:
                new = c.msgs[c.ndecoded:]
                c.ndecoded += len(new)
            for m in new:
                c.decode(m)
        return conns

    def wait_for(self, typ, timeout=20):
        """Until some connection has a record of type typ: True, or False
        when timeout seconds pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(c.of(typ) for c in self.decoded()):
                return True
            time.sleep(0.05)
        return False


