#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Crash consistency and a full disk. gpuprofd is killed with
SIGKILL at random points while captures are being written (and traces
imported, when capture.import exists); after each restart every capture
acknowledged before the kill must be listed, intact and readable, nothing
half-written may be listed as valid, and no temporary file may remain.
Then the state directory on a 2 MiB tmpfs: writes fail with a clear error,
the daemon keeps serving and recovers when space returns."""

import glob
import os
import random
import subprocess
import tempfile
import threading
import time

from gpd import SOURCE, Conn, Daemon, Skip, eq, error_code, expect, main, test

ROUNDS = int(os.environ.get("GPUPROF_CRASH_ROUNDS", "10"))
TRACE = os.path.join(SOURCE, "tests", "fuzz", "corpus", "import", "cuda_event_sync.json.gz")


def read_back(d, cid):
    """folded output of a capture into a file: the reply and the bytes."""
    with tempfile.TemporaryFile() as f, d.connect() as c:
        r = c.call("capture.folded", {"id": cid, "fd": 0}, fds=[f.fileno()])
        return r


class Load:
    """Clients writing captures (and imports) until the daemon dies."""

    def __init__(self, d, importing, nclients=4):
        self.d = d
        self.acked = {}  # id -> records, acknowledged as ready
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.capture_loop, args=(i,))
                        for i in range(nclients)]
        if importing:
            self.threads.append(threading.Thread(target=self.import_loop))

    def start(self):
        for t in self.threads:
            t.start()

    def join(self):
        for t in self.threads:
            t.join()

    def ack(self, rep):
        res = rep.get("result")
        if res and res.get("state") == "ready":
            with self.lock:
                self.acked[res["id"]] = res["records"]

    def capture_loop(self, i):
        try:
            with Conn(self.d.sock, timeout=10) as c:
                while True:
                    params = {"last_ms": random.choice([50, 500, 3000]), "wait": True}
                    if i % 2:
                        params["pids"] = [os.getpid()]
                    self.ack(c.call("capture.start", params))
        except (OSError, ValueError):
            return  # the daemon died under us

    def import_loop(self):
        try:
            with Conn(self.d.sock, timeout=10) as c:
                while True:
                    fd = os.open(TRACE, os.O_RDONLY)
                    try:
                        self.ack(c.call("capture.import", {"fd": 0}, fds=[fd]))
                    finally:
                        os.close(fd)
        except (OSError, ValueError):
            return


@test
def random_sigkill_while_writing():
    rng = random.Random(os.environ.get("GPUPROF_CRASH_SEED", str(time.time())))
    d = Daemon("memory.store_budget = 16M\nlimits.captures = 100000\n").start()
    importing = error_code(d.call("capture.import", {})) != -32601
    acked = {}
    try:
        for rnd in range(ROUNDS):
            load = Load(d, importing)
            load.start()
            time.sleep(rng.uniform(0.05, 1.5))
            d.kill9()
            load.join()
            acked.update(load.acked)
            d.start()
            listed = {c["id"]: c for c in d.call("capture.list")["result"]["captures"]}
            for cid, records in acked.items():
                expect(cid in listed, "round %d: acknowledged capture %d lost", rnd, cid)
                eq(listed[cid]["state"], "ready", "round %d: capture %d intact" % (rnd, cid))
                eq(listed[cid]["records"], records, "round %d: capture %d content" % (rnd, cid))
            for cid, c in listed.items():
                # a capture that reached its final name is complete: nothing
                # half-written is ever listed, not even as damaged
                eq(c["state"], "ready", "round %d: capture %d listed as %s" % (rnd, cid, c["state"]))
            eq(glob.glob(os.path.join(d.state, "*.tmp")), [],
               "round %d: temporary files removed at start" % rnd)
            # a sample of them reads back through the renderer
            for cid in rng.sample(sorted(listed), min(3, len(listed))):
                if listed[cid]["kind"] == "live":
                    r = read_back(d, cid)
                    expect("result" in r, "round %d: capture %d reads back: %r", rnd, cid, r)
        expect(len(acked) > 0, "some captures were acknowledged over %d rounds", ROUNDS)
        print("  %d rounds, %d acknowledged captures survived%s" % (
            ROUNDS, len(acked), ", imports included" if importing else ""))
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def fill(path):
    """Write into path until the filesystem is full."""
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
        try:
            os.fsync(f.fileno())
        except OSError:
            pass


@test
def disk_full_state_dir():
    mnt = tempfile.mkdtemp(prefix="gpd-full-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", mnt]).returncode:
        os.rmdir(mnt)
        raise Skip("cannot mount a tmpfs here")
    d = Daemon(state_dir=os.path.join(mnt, "state"))
    try:
        d.start()
        pid = [os.getpid()]
        ok = d.call("capture.start", {"last_ms": 1000, "pids": pid, "wait": True})
        expect("result" in ok, "a capture while there is space: %r", ok)
        filler = os.path.join(mnt, "filler")
        fill(filler)
        for _ in range(3):
            r = d.call("capture.start", {"last_ms": 1000, "pids": pid, "wait": True})
            eq(error_code(r), -32005, "write on a full disk fails as I/O: %r" % r)
            expect("No space left" in r["error"]["message"], "names the cause: %r" % r)
        r = d.call("status")
        expect("result" in r, "still serving on a full disk")
        listed = d.call("capture.list")["result"]["captures"]
        eq([c["id"] for c in listed], [ok["result"]["id"]], "failed captures are not listed")
        eq(glob.glob(os.path.join(d.state, "*.tmp")), [], "no partial file left")
        # space returns by deleting
        os.unlink(filler)
        r = d.call("capture.start", {"last_ms": 1000, "pids": pid, "wait": True})
        expect("result" in r, "recovers once files are deleted: %r", r)
        # and by growing the filesystem
        fill(filler)
        expect(error_code(d.call("capture.start", {"last_ms": 1000, "pids": pid, "wait": True}))
               == -32005, "full again")
        subprocess.run(["mount", "-o", "remount,size=16m", mnt], check=True)
        r = d.call("capture.start", {"last_ms": 1000, "pids": pid, "wait": True})
        expect("result" in r, "recovers once the filesystem grows: %r", r)
        eq(d.stop(), 0, "clean stop")
        # what was acknowledged survives a restart intact
        d.start()
        states = [c["state"] for c in d.call("capture.list")["result"]["captures"]]
        eq(states, ["ready"] * 3, "three captures, all intact")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()
        subprocess.run(["umount", "-l", mnt])
        os.rmdir(mnt)


if __name__ == "__main__":
    main()
