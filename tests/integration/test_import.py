#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Trace import and analyses through the real daemon and gpuprofctl: every
reference trace and a current PyTorch's trace import, analyses answer with
HTA's numbers, hostile files get clear errors, and the daemon and its
stored captures carry on."""

import glob
import gzip
import json
import os
import subprocess
import time

from gpd import GPUPROFCTL, SHARED, SOURCE, Daemon, Conn, eq, error_code, expect, main, test

TRACES = os.path.join(SHARED, "reference", "hta", "traces")
OUTPUTS = os.path.join(SHARED, "reference", "hta", "outputs")
ANALYSES = ["temporal", "idle", "kernels", "overlap", "launch", "queue", "sequences"]
# analyze.list names these too; their own tests are test_critpath.py, test_comm.py
EVERY_ANALYSIS = ANALYSES + ["critical_path", "comm"]


def trace_files(name):
    return sorted(glob.glob(os.path.join(TRACES, name, "*")))


def hta(name, analysis):
    with open(os.path.join(OUTPUTS, name, analysis + ".json")) as f:
        return json.load(f)


@test
def every_reference_trace_imports_and_analyses_answer():
    d = Daemon().start()
    try:
        names = sorted(os.listdir(TRACES))
        expect(len(names) >= 10, "reference traces present: %r" % names)
        with d.connect() as c:
            listed = [a["name"] for a in c.call("analyze.list")["result"]["analyses"]]
            # and each listed one is a method: a capture that is not there,
            # not an unknown method
            for a in listed:
                r = c.call("analyze." + a, {"id": 999999})
                eq(r["error"]["code"], -32003, "analyze.%s answers: %r" % (a, r))
        eq(sorted(listed), sorted(EVERY_ANALYSIS), "analyze.list names every analysis")
        for name in names:
            files = trace_files(name)
            info = d.ctl_json("import", *files, "--name", name)
            eq(info["kind"], "import", name)
            eq(info["state"], "ready", name)
            eq(len(info["import"]["ranks"]), len(files), name + ": one rank per file")
            gpu = name not in ("cupti_profiler", "rank_non_gpu")
            for a in ANALYSES:
                extra = ["operator=aten::linear"] if a == "sequences" else []
                p = d.ctl("--json", "analyze", a, str(info["id"]), *extra)
                if gpu:
                    eq(p.returncode, 0, "%s %s: %s" % (name, a, p.stderr.decode()))
                    json.loads(p.stdout)
                else:
                    eq(p.returncode, 1, "%s %s on a CPU-only trace fails" % (name, a))
                    expect(b"no GPU activity" in p.stderr, p.stderr.decode())
                    expect(b"-32010" in p.stderr, "code -32010: " + p.stderr.decode())
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


# a value of each parameter type as a command line writes it
TYPE_VALUES = {"int": ["1"], "number": ["1"], "bool": [], "string": ["x"], "json": ["[]"],
               "range": ["0"], "edits": ["kind:cpu*0.5"]}


@test
def analysis_parameters_are_options_of_gpuprofctl():
    """The CLI's analyze options come from the daemon's table: each
    parameter analyze.list names is an option (--with-dashes), taken only
    for its analysis, converted by type, and the same as KEY=VALUE."""
    d = Daemon().start()
    tmp = d.tmp
    try:
        with d.connect() as c:
            listed = c.call("analyze.list")["result"]
        eq(d.ctl_json("analyze", "list"), listed, "analyze list --json: analyze.list")
        human = d.ctl("analyze", "list", check=0).stdout.decode()
        for a in listed["analyses"]:
            eq(a["parameters"][0]["name"], "rank", a["name"] + ": rank first")
            expect(a["name"] + ": " + a["summary"] in human, "analyze list names " + a["name"])
            for p in a["parameters"][1:]:
                if p["type"] == "fds":  # analyze's own --overlay and --trace fill these
                    continue
                opt = "--" + p.get("option", p["name"]).replace("_", "-")
                expect(opt + " " in human or opt + "\n" in human, "%s listed:\n%s" % (opt, human))
                value = TYPE_VALUES.get(p["type"], [os.path.join(tmp, "out.svg")])
                # no daemon at this socket: parsed, then the connect fails (3)
                q = subprocess.run([GPUPROFCTL, "--socket", "/nonexistent/s", "analyze",
                                    a["name"], "1", opt] + value, capture_output=True)
                eq(q.returncode, 3, "%s %s accepted: %s" % (a["name"], opt, q.stderr.decode()))
        q = d.ctl("analyze", "temporal", "1", "--num-kernels", "2")
        eq(q.returncode, 2, "an option of another analysis is a usage error")
        expect(b"not an option of 'analyze temporal'" in q.stderr, q.stderr.decode())

        cid = str(d.ctl_json("import", *trace_files("nccl_parser_config"))["id"])
        # the table and the code that reads the parameters agree: each one
        # listed is taken (its value may still be refused), none unknown
        sample = {"int": 1, "number": 1, "bool": True, "string": "x", "json": [], "range": 0,
                  "edits": [], "fd": 0, "fds": [0, 1]}
        with d.connect() as c:
            for a in listed["analyses"]:
                for p in a["parameters"]:
                    r = c.call("analyze." + a["name"], {"id": int(cid),
                                                        p["name"]: sample[p["type"]]})
                    msg = r.get("error", {}).get("message", "")
                    expect("unknown parameter" not in msg and "not allowed" not in msg,
                           "analyze.%s takes %s: %r" % (a["name"], p["name"], r.get("error")))
        by_kv = d.ctl_json("analyze", "kernels", cid, "num_kernels=2", "include_memory=false")
        by_opt = d.ctl_json("analyze", "kernels", cid, "--num-kernels", "2",
                            "--include-memory=false")
        eq(by_opt, by_kv, "options and KEY=VALUE give the same request")
        eq(by_opt["include_memory"], False, "a flag set false")
        idle = d.ctl_json("analyze", "idle", cid, "--interval-stats")
        st = [c for r in idle["ranks"] for s in r["streams"] for c in s["categories"]]
        expect(st and all("interval_stats" in c for c in st), "a flag alone is true")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def temporal_matches_hta_through_the_daemon():
    """The RPC path gives HTA's numbers (the unit parity test covers every
    analysis; this checks nothing is lost between the analysis and the CLI)."""
    d = Daemon().start()
    try:
        for name in ("alexnet", "trace_filter", "nccl_parser_config"):
            info = d.ctl_json("import", *trace_files(name))
            ours = d.ctl_json("analyze", "temporal", str(info["id"]))
            eq(ours["unit"], "us", "units stated")
            ref = {r["rank"]: r for r in hta(name, "temporal_breakdown")["result"]["records"]}
            eq(sorted(r["rank"] for r in ours["ranks"]), sorted(ref), name + ": ranks")
            for r in ours["ranks"]:
                h = ref[r["rank"]]
                for ours_k, hta_k in (("idle_time_us", "idle_time(us)"),
                                      ("compute_time_us", "compute_time(us)"),
                                      ("non_compute_time_us", "non_compute_time(us)"),
                                      ("kernel_time_us", "kernel_time(us)")):
                    eq(r[ours_k], h[hta_k], "%s rank %d %s" % (name, r["rank"], ours_k))
                for k in ("idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"):
                    expect(abs(r[k] - h[k]) <= 0.01, "%s rank %d %s: %r vs HTA %r"
                           % (name, r["rank"], k, r[k], h[k]))
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


# A trace we made ourselves (scripts/device/torch_trace.py 3 on an H200,
# PyTorch 2.11.0+cu130): what a current PyTorch writes, newer than the
# reference traces. cuBLAS launches there go through cudaLaunchKernelExC.
TORCH_211 = os.path.join(SOURCE, "tests", "data", "pytorch-2.11-h200-3steps.json.gz")
HTA_LAUNCH = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync"}


@test
def a_current_pytorch_trace():
    with gzip.open(TORCH_211) as f:
        events = json.load(f)["traceEvents"]
    cpu = {e["args"]["correlation"]: e["name"] for e in events
           if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    d = Daemon().start()
    try:
        info = d.ctl_json("import", TORCH_211)
        f = info["import"]["files"][0]
        eq(f["events_raw"], len(events), "every traceEvents element counted")
        eq(f["warnings"], {}, "no warning on a current PyTorch trace")
        cid = str(info["id"])
        for a in ANALYSES:
            extra = ["operator=aten::linear"] if a == "sequences" else []
            p = d.ctl("--json", "analyze", a, cid, *extra)
            eq(p.returncode, 0, "%s: %s" % (a, p.stderr.decode()))
        launches = d.ctl_json("analyze", "launch", cid, "extended=true")["ranks"][0]["launches"]
        names = [cpu.get(c) for c in launches["correlation"]]
        for name, ext in zip(names, launches["extended"]):
            expect(name is not None, "each launch's correlation names a runtime call")
            eq(ext, name not in HTA_LAUNCH, "%s flagged extended iff HTA leaves it out" % name)
        expect("cudaLaunchKernelExC" in names, "cuBLAS's cudaLaunchKernelExC launches counted")
        expect("cuLaunchKernel" in names, "cuLaunchKernel launches there, as an extension")
        base = d.ctl_json("analyze", "launch", cid)["ranks"][0]["count"]
        eq(base, sum(n in HTA_LAUNCH for n in names), "HTA's launch set without the extension")
        kernels = d.ctl_json("analyze", "kernels", cid)["kernels"]
        expect(any("xmma_gemm" in k["name"] for k in kernels), "cuBLAS GEMM kernels by name")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


def import_bytes(d, data, name="x"):
    path = os.path.join(d.tmp, name)
    with open(path, "wb") as f:
        f.write(data)
    return d.ctl("--json", "import", path)


@test
def hostile_trace_files():
    d = Daemon().start()
    try:
        keep = d.ctl_json("import", *trace_files("alexnet"))
        good = gzip.decompress(open(trace_files("alexnet")[0], "rb").read())
        big_gz = open(trace_files("nccl_parser_config")[0], "rb").read()
        big = gzip.decompress(big_gz)
        # large enough for the second thread to inflate / copy and parse
        # ahead (kineto_spec.c): broken past the middle
        mid = len(big) * 3 // 5
        cases = {
            "big_truncated_gzip": big_gz[: len(big_gz) * 3 // 5],
            "big_broken_json": big[:mid] + b"#" + big[mid + 1 :],
            "big_truncated_json": big[:mid],
            "empty": b"",
            "garbage": b"\x00\x01\x02 not json at all",
            "truncated_json": good[: len(good) // 2],
            "truncated_gzip": gzip.compress(good)[:5000],
            "deep": b'{"traceEvents":[' + b"[" * 100000 + b"]" * 100000 + b"]}",
            "not_utf8": b'{"traceEvents":[{"name":"\xff\xfe","ph":"X","ts":1,"dur":2,"cat":"kernel"}]}',
            "huge_number": b'{"traceEvents":[{"name":"k","ph":"X","ts":1e999,"dur":-5,"cat":"kernel"}]}',
            # what real traces hold: an exact duplicate, a missing ts, a
            # float ts, a negative duration, an unknown phase, unknown args
            "odd_rows": b'{"traceEvents":['
                        b'{"name":"a","ph":"X","ts":10,"dur":5,"cat":"cpu_op","pid":1,"tid":1,'
                        b'"args":{"weird arg":[1,{"x":2}],"External id":3}},'
                        b'{"name":"a","ph":"X","ts":10,"dur":5,"cat":"cpu_op","pid":1,"tid":1,'
                        b'"args":{"weird arg":[1,{"x":2}],"External id":3}},'
                        b'{"name":"b","ph":"X","dur":5,"cat":"cpu_op","pid":1,"tid":1},'
                        b'{"name":"c","ph":"X","ts":20.5,"dur":3,"cat":"cpu_op","pid":1,"tid":1},'
                        b'{"name":"d","ph":"X","ts":30,"dur":-4,"cat":"cpu_op","pid":1,"tid":1},'
                        b'{"name":"e","ph":"Q","ts":40,"cat":"cpu_op"}]}',
            # ts + dur past int64 ns: the row is refused as a bad number
            "end_overflow": b'{"traceEvents":[{"name":"k","ph":"X","ts":9000000000000000,'
                            b'"dur":9000000000000000,"cat":"cpu_op"},'
                            b'{"name":"j","ph":"X","ts":1,"dur":2,"cat":"cpu_op"}]}',
        }
        for label, data in cases.items():
            p = import_bytes(d, data, label)
            if p.returncode == 0:
                info = json.loads(p.stdout)
                expect(info["state"] == "ready", label)
                if label == "odd_rows":
                    # kept: both copies (the second flagged), the float
                    # ts and the negative duration; dropped: no ts, no dur
                    eq(info["import"]["events"], 4, "odd_rows: rows kept")
                    eq(info["import"]["files"][0]["warnings"],
                       {"missing_ts": 1, "negative_dur": 1, "unknown_ph": 1, "duplicate": 1},
                       "odd_rows: one warning of each kind")
                if label == "end_overflow":
                    eq(info["import"]["events"], 1, "end_overflow: the good row kept")
                    eq(info["import"]["files"][0]["warnings"].get("bad_number"), 1,
                       "end_overflow: counted as a bad number")
            else:
                eq(p.returncode, 1, "%s: daemon error, not a crash: %s" % (label, p.stderr))
                expect(b"-32009" in p.stderr or b"-32001" in p.stderr,
                       "%s: bad-input error: %s" % (label, p.stderr.decode()))
                if label in ("truncated_json", "garbage", "deep", "big_broken_json",
                             "big_truncated_json"):
                    expect(b"byte" in p.stderr or b"offset" in p.stderr,
                           "%s: error names the byte offset: %s" % (label, p.stderr.decode()))
        # the daemon and the earlier capture are untouched
        again = d.ctl_json("analyze", "temporal", str(keep["id"]))
        expect(again["ranks"], "earlier capture still analyses")
        eq(d.ctl_json("info", str(keep["id"]))["state"], "ready", "earlier capture intact")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def import_from_a_pipe_and_a_stalled_pipe():
    d = Daemon("limits.io_timeout = 1s\n").start()
    try:
        f = trace_files("simple_add")[0]
        p = subprocess.run("gzip -dc %s | %s --socket %s --json import -" % (f, GPUPROFCTL, d.sock),
                           shell=True, capture_output=True)
        eq(p.returncode, 0, "import from stdin: %s" % p.stderr.decode())
        eq(json.loads(p.stdout)["state"], "ready", "pipe import")
        # a client passes a pipe and never writes to it: the job times out
        r, w = os.pipe()
        with Conn(d.sock) as c:
            t0 = time.time()
            rep = c.call("capture.import", {"fd": 0}, fds=[r])
            expect(error_code(rep) in (-32005, -32011), "stalled input fails: %r" % rep)
            expect(time.time() - t0 < 10, "within the io timeout")
        os.close(r)
        os.close(w)
        # a write-only fd is refused as input
        wo = os.open(os.path.join(d.tmp, "wo"), os.O_WRONLY | os.O_CREAT)
        with Conn(d.sock) as c:
            rep = c.call("capture.import", {"fd": 0}, fds=[wo])
        os.close(wo)
        eq(error_code(rep), -32006, "wrong-mode fd")
        with Conn(d.sock) as c:
            eq(error_code(c.call("capture.import", {})), -32006, "no fd at all")
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def imported_captures_survive_restart():
    d = Daemon().start()
    try:
        info = d.ctl_json("import", *trace_files("trace_filter"), "--name", "two-ranks")
        before = d.ctl_json("analyze", "idle", str(info["id"]))
        eq(d.stop(), 0, "stop")
        d.start()
        after_info = d.ctl_json("info", str(info["id"]))
        eq(after_info["import"]["ranks"], info["import"]["ranks"], "ranks kept")
        eq(d.ctl_json("analyze", "idle", str(info["id"])), before, "same analysis after restart")
        # analysis parameters are validated
        p = d.ctl("analyze", "idle", str(info["id"]), "rank=7")
        eq(p.returncode, 1, "unknown rank")
        expect(b"-32602" in p.stderr, p.stderr.decode())
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()



@test
def decoded_timelines_are_cached_between_analyses():
    """analysis.cache_bytes: an import leaves its timeline in the cache, so
    analyses of it neither load the capture nor decode its timeline (same
    numbers as decoding, hits in status); a capture too large for the
    budget is decoded for each request; a deleted capture's timeline is
    dropped; after a restart the first analysis decodes and the next reuse."""
    d = Daemon().start()
    try:
        ids = [str(d.ctl_json("import", *trace_files(n))["id"]) for n in ("alexnet", "trace_filter")]
        ac = d.ctl_json("status")["analysis_cache"]
        eq((ac["entries"], ac["hits"], ac["misses"]), (2, 0, 0), "imports primed the cache")
        first = d.ctl_json("analyze", "temporal", ids[0])
        idle1 = d.ctl_json("analyze", "idle", ids[1])
        d.ctl("analyze", "comm", ids[0], "--json", check=None)  # no NCCL: an error, still a use
        ac = d.ctl_json("status")["analysis_cache"]
        eq((ac["hits"], ac["misses"]), (3, 0), "every analysis used the imported timeline")
        expect(0 < ac["bytes"] <= ac["budget_bytes"], "within budget: %r" % ac)
        d.ctl("delete", ids[0])
        eq(d.ctl_json("status")["analysis_cache"]["entries"], 1,
           "the deleted capture's timeline dropped")
        eq(d.stop(), 0, "clean stop")
        d.start()  # same state directory: captures persisted, cache empty
        eq(d.ctl_json("analyze", "idle", ids[1]), idle1, "decoded after the restart: same")
        eq(d.ctl_json("analyze", "idle", ids[1]), idle1, "then cached: same")
        ac = d.ctl_json("status")["analysis_cache"]
        eq((ac["entries"], ac["hits"], ac["misses"]), (1, 1, 1), "decoded once, reused once")
        expect(first["ranks"], "temporal answered")
    finally:
        d.cleanup()
    d = Daemon("analysis.cache_bytes = 64K\nanalysis.scratch_bytes = 0\n").start()
    try:  # a budget smaller than any timeline; no scratch blocks kept
        cid = str(d.ctl_json("import", *trace_files("alexnet"))["id"])
        a = d.ctl_json("analyze", "kernels", cid)
        eq(d.ctl_json("analyze", "kernels", cid), a, "same result, decoded again")
        ac = d.ctl_json("status")["analysis_cache"]
        eq((ac["entries"], ac["hits"], ac["misses"], ac["too_large"]), (0, 0, 2, 3),
           "nothing kept over the budget")
        sc = d.ctl_json("status")["analysis_scratch"]
        eq((sc["cap_bytes"], sc["bytes"]), (0, 0), "analysis.scratch_bytes = 0: %r" % sc)
    finally:
        d.cleanup()


@test
def an_idle_daemon_gives_the_heap_back():
    """memory.idle_trim: once no job has run for that long, the free pages
    the imports and analyses left in the allocator's arenas go back to the
    system (malloc_trim); the captures and analyses carry on as before. 0
    turns it off."""
    d = Daemon("memory.idle_trim = 300ms\n").start()
    try:
        cid = str(d.ctl_json("import", *trace_files("nccl_parser_config"))["id"])
        before = d.ctl_json("analyze", "temporal", cid)
        deadline = time.time() + 15
        while True:
            st = d.ctl_json("status")
            if st["memory"]["idle_trims"] >= 1 or time.time() > deadline:
                break
            time.sleep(0.1)
        eq(st["jobs"]["running"], 0, "idle")
        expect(st["memory"]["idle_trims"] >= 1, "trimmed once idle: %r" % st["memory"])
        if "asan_allocated_bytes" not in st["memory"]:  # glibc's allocator
            expect(st["memory"]["idle_trims_released"] >= 1,
                   "pages given back: %r" % st["memory"])
        # the import and the analysis are two jobs: on a loaded machine the
        # first trim can fall between them and a second one after the
        # analysis; count from when the last idle period has surely ended
        time.sleep(0.7)
        trims = d.ctl_json("status")["memory"]["idle_trims"]
        time.sleep(1)
        eq(d.ctl_json("status")["memory"]["idle_trims"], trims,
           "no job since: no further trim")
        eq(d.ctl_json("analyze", "temporal", cid), before, "same answer after the trim")
    finally:
        d.cleanup()
    d = Daemon("memory.idle_trim = 0\n").start()
    try:
        d.ctl_json("import", *trace_files("alexnet"))
        time.sleep(1)
        eq(d.ctl_json("status")["memory"]["idle_trims"], 0, "memory.idle_trim = 0: never")
    finally:
        d.cleanup()


@test
def a_large_reply_reaches_a_client_that_reads():
    """A reply larger than limits.max_output_buffer (+ the 1 MiB message
    size) goes to a client that reads it; the limit is for a client that
    does not read (its backlog), not for one large answer."""
    n = 60000
    ev = []
    for i in range(n):
        t = 1000 + i * 20
        ev.append('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,'
                  '"ts":%d,"dur":4,"args":{"correlation":%d}}' % (t, i + 1))
        ev.append('{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d,"dur":6,'
                  '"args":{"correlation":%d,"stream":7,"device":0}}' % (i % 7, t + 9, i + 1))
    d = Daemon("limits.max_output_buffer = 16K\n").start()
    try:
        cid = str(json.loads(import_bytes(d, ('{"traceEvents":[%s]}' % ",".join(ev)).encode(),
                                          "big.json").stdout)["id"])
        p = d.ctl("--json", "analyze", "launch", cid)
        expect(len(p.stdout) > (1 << 20) + 16 * 1024, "reply of %d bytes" % len(p.stdout))
        r = json.loads(p.stdout)
        eq(len(r["ranks"][0]["launches"]["correlation"]), n, "every launch in the reply")
        eq(d.ctl_json("version")["protocol"], 1, "the connection and daemon carry on")
    finally:
        d.cleanup()

@test
def formats_inside_gzip_are_named():
    # What a gzip holds is recognised after inflating it: a second gzip
    # layer or an Nsight SQLite export, not "unexpected character".
    import sqlite3
    d = Daemon().start()
    try:
        db = os.path.join(d.tmp, "report.sqlite")
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        con.commit()
        con.close()
        small = b'{"traceEvents":[{"name":"k","ph":"X","ts":1,"dur":2,"cat":"kernel"}]}'
        big = gzip.decompress(open(trace_files("nccl_parser_config")[0], "rb").read())
        cases = {
            "gzip_in_gzip": (gzip.compress(gzip.compress(small)), "gzip file inside a gzip"),
            # large enough to be inflated on the second thread
            "big_gzip_in_gzip": (gzip.compress(gzip.compress(big)), "gzip file inside a gzip"),
            "gzipped_sqlite": (gzip.compress(open(db, "rb").read()),
                               "Nsight SQLite export compressed with gzip"),
        }
        for label, (data, want) in cases.items():
            p = import_bytes(d, data, label)
            eq(p.returncode, 1, "%s: refused: %s" % (label, p.stderr))
            expect(want.encode() in p.stderr and b"decompress it" in p.stderr,
                   "%s: says what was found: %s" % (label, p.stderr.decode()))
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def list_and_info_of_an_import():
    # list shows an import's events (it stores no records), info prints the
    # window's nanoseconds exactly (past 2^53: a double rounds them).
    d = Daemon().start()
    try:
        info = d.ctl_json("import", *trace_files("alexnet"))
        events = info["import"]["events"]
        expect(events > 0, "events imported")
        rows = [l.split() for l in d.ctl("list", check=0).stdout.decode().splitlines()]
        eq(rows[0][-2], "EVENTS", "header")
        row = [r for r in rows[1:] if r[0] == str(info["id"])][0]
        # ... DURATION EVENTS SIZE, the size in two words ("117.0 KiB")
        eq(row[-3], str(events), "list shows the import's events")
        text = d.ctl("info", str(info["id"]), check=0).stdout.decode()
        w = info["window"]
        expect(w["start_ns"] > 2 ** 53, "a window where doubles round")
        expect("window:            %d .. %d ns" % (w["start_ns"], w["end_ns"]) in text,
               "exact window:\n%s" % text)
        expect("events:            %d" % events in text, "info shows events:\n%s" % text)
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
