#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Human output of every analysis fits a 100-column terminal.

Reference traces (../shared, GPUPROF_SHARED): HTA's two-rank trace_filter
(communication kernels, long kernel names) and alexnet (operator sequences,
a long critical path). Each analysis's human output must keep every line
within 100 columns, print no exponent ("9.694e+05") and end no line in
blanks; --wide lifts the limit; --json stays the daemon's result as is.
"""
import glob
import json
import os

from gpd import Daemon, Skip, eq, expect, main, test

SHARED = os.environ.get("GPUPROF_SHARED", "/work/shared")
TRACES = os.path.join(SHARED, "reference", "hta", "traces")

# (trace, analyze arguments after the capture id)
RUNS = [
    ("trace_filter", ["temporal"]),
    ("trace_filter", ["idle"]),
    ("trace_filter", ["idle", "interval_stats=true"]),
    ("trace_filter", ["kernels"]),
    ("trace_filter", ["overlap"]),
    ("trace_filter", ["launch"]),
    ("trace_filter", ["launch", "extended=true"]),
    ("trace_filter", ["queue"]),
    ("trace_filter", ["queue", "series=true"]),
    ("trace_filter", ["comm"]),
    ("trace_filter", ["critical-path", "--rank", "0"]),
    ("alexnet", ["sequences", "operator=aten::conv2d"]),
    ("alexnet", ["critical-path", "--edit", "kind:cpu*0.5"]),
]


def imported(d):
    ids = {}
    for name in ("trace_filter", "alexnet"):
        files = sorted(glob.glob(os.path.join(TRACES, name, "*.json.gz")))
        if not files:
            raise Skip("no reference trace %s under %s" % (name, TRACES))
        ids[name] = d.ctl_json("import", *files)["id"]
    return ids


def analyze(d, ids, trace, args, *flags):
    name, rest = args[0], args[1:]
    p = d.ctl(*flags, "analyze", name, str(ids[trace]), *rest, check=0)
    eq(p.returncode, 0, "analyze %s: %s" % (" ".join(args), p.stderr.decode()))
    return p.stdout.decode()


@test
def every_analysis_fits_100_columns():
    d = Daemon().start()
    try:
        ids = imported(d)
        bad = []
        for trace, args in RUNS:
            out = analyze(d, ids, trace, args)
            what = "%s on %s" % (" ".join(args), trace)
            expect(out.count("\n") > 3, "%s printed little: %r" % (what, out))
            for line in out.splitlines():
                if len(line) > 100:
                    bad.append("%s: %d columns: %s" % (what, len(line), line[:120]))
                if "e+0" in line or "e-0" in line:
                    bad.append("%s: an exponent: %s" % (what, line[:120]))
                if line != line.rstrip():
                    bad.append("%s: trailing blanks: %r" % (what, line[:120]))
        expect(not bad, "human output over 100 columns or with exponents:\n  " +
               "\n  ".join(bad[:20]))
        # headers are words with units, not the JSON's dotted keys
        out = analyze(d, ids, "trace_filter", ["temporal"])
        expect("non_compute_split." not in out, "dotted keys as headers:\n" + out)
        expect("COMM %" in out and "IDLE us" in out, "short headers with units:\n" + out)
        expect("600,058" in out, "thousands separators:\n" + out)
    finally:
        d.stop()
        d.cleanup()


@test
def wide_and_json():
    d = Daemon().start()
    try:
        ids = imported(d)
        # the kernel names the 100 columns cut, whole with --wide
        name = "void split_embedding_backward_codegen_rowwise_adagrad_unweighted"
        narrow = analyze(d, ids, "trace_filter", ["kernels"])
        wide = analyze(d, ids, "trace_filter", ["kernels"], "--wide")
        expect(name not in narrow, "a long name cut to fit:\n" + narrow)
        expect(name in wide, "--wide prints names whole:\n" + wide)
        expect(max(len(line) for line in wide.splitlines()) > 100, "--wide is wider")
        # --json is the daemon's result, whatever the human options
        for args in (["temporal"], ["kernels"], ["launch", "extended=true"]):
            params = {"id": ids["trace_filter"]}
            for kv in args[1:]:
                k, v = kv.split("=")
                params[k] = json.loads(v)
            want = d.call("analyze." + args[0], params)["result"]
            for flags in (["--json"], ["--json", "--wide"]):
                got = json.loads(analyze(d, ids, "trace_filter", args, *flags))
                eq(got, want, "%s %s" % (" ".join(flags), " ".join(args)))
    finally:
        d.stop()
        d.cleanup()


if __name__ == "__main__":
    main()
