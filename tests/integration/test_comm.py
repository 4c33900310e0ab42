#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Communication metrics through the real daemon and gpuprofctl: the 2-rank
Kineto trace_filter, nccl_parser_config and the nsys exports import (nsys by
magic), analyze comm reconciles with the raw kernel times, --svg writes an
SVG through a client fd, config defaults and params reach the analysis."""

import glob
import os
import re
import sqlite3
import tempfile
import xml.etree.ElementTree as ET

from gpd import SHARED, Daemon, eq, expect, main, test

REF = os.path.join(SHARED, "reference")
TRACES = os.path.join(REF, "hta", "traces")
NSYS = os.path.join(REF, "nsys", "mfu_2gpu_before.sqlite")


def nsys_comm_kernel_us(path):
    """Σ NCCL kernel time straight from the export, per device."""
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT k.deviceId, SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName WHERE s.value LIKE 'nccl%' "
        "GROUP BY k.deviceId ORDER BY k.deviceId").fetchall()
    db.close()
    return [ns / 1000.0 for _, ns in rows]


def check_reconciled(res, what):
    rec = res["reconciliation"]
    expect(rec["tags_sum_to_total"], what + ": per-tag sums add up: %r" % rec)
    expect(rec["union_le_sum"], what + ": union <= sum")
    expect(abs(rec["union_ratio_sum"] - 1) < 1e-9, what + ": union ratios sum to 1")
    expect(abs(rec["sum_ratio_sum"] - 1) < 1e-9, what + ": sum ratios sum to 1")
    total = sum(res["bandwidth"][t]["time_us"] for t in ("DP", "TP", "PP", "EP", "OTHER"))
    expect(abs(total - rec["comm_time_in_iterations_us"]) < 1e-3, what + ": bandwidth times")
    for r in res["ranks"]:
        u = r["breakdown"]["union"]
        s = sum(u["comm_us"].values()) + u["compute_us"] + u["memory_us"] + u["idle_us"]
        expect(abs(s - u["iteration_time_us"]) < 1e-3, what + ": union partitions time")


@test
def kineto_two_ranks_and_svg():
    d = Daemon().start()
    try:
        files = sorted(glob.glob(os.path.join(TRACES, "trace_filter", "*")))
        info = d.ctl_json("import", *files)
        eq(len(info["import"]["ranks"]), 2, "two ranks")
        res = d.ctl_json("analyze", "comm", str(info["id"]))
        eq(res["analysis"], "comm")
        eq(res["nranks"], 2)
        check_reconciled(res, "trace_filter")
        # 5 SendRecv kernels per rank and step, no collective args: sizes
        # unknown; both steps of each rank count (HTA drops the second)
        eq(res["bandwidth"]["OTHER"]["events"], 20)
        eq(res["bandwidth"]["OTHER"]["events_bytes_unknown"], 20)
        eq(res["bandwidth"]["OTHER"]["total_bytes"], None, "no size known: null, not 0")
        eq(res["volume"]["OTHER"]["bytes"], None)
        eq(res["unmapped_groups"], ["(unknown)"])
        eq(res["iterations"]["source"], "ProfilerStep#N")
        eq(res["iterations"]["policy"], "all")
        eq(res["iterations"]["rank_iterations"], 4)
        eq(res["iterations"]["left_out"], [])
        eq(res["reconciliation"]["comm_kernel_time_us"], 775252)
        eq(res["bandwidth"]["OTHER"]["time_us"], 775252)
        eq(len(res["straggler"]["groups"]), 1, "one group matched across ranks")
        eq(res["straggler"]["groups"][0]["instances"], 10, "10 stragglers")
        eq(res["types"]["SendRecv"]["events"], 20)
        # HTA's choice on request: the last step of each rank left out, said why
        hta = d.ctl_json("analyze", "comm", str(info["id"]), "iterations=hta")
        eq(hta["iterations"]["policy"], "hta")
        eq(hta["reconciliation"]["comm_kernel_time_us"], 363354)
        eq(hta["reconciliation"]["comm_time_left_out_us"], 775252 - 363354)
        eq(hta["straggler"]["groups"][0]["instances"], 5)
        eq(sorted(x["rank"] for x in hta["iterations"]["left_out"]), [0, 1])
        expect(all("iterations=hta" in x["reason"] for x in hta["iterations"]["left_out"]),
               "reason: %r" % hta["iterations"]["left_out"])
        p = d.ctl("analyze", "comm", str(info["id"]), "iterations=hta", check=0)
        out = p.stdout.decode()
        expect("left out: rank 1" in out and "left out 411.898 ms" in out, out)
        eq([ln for ln in out.splitlines() if len(ln) > 100], [], "within 100 columns")
        with tempfile.TemporaryDirectory() as tmp:
            svg = os.path.join(tmp, "comm.svg")
            p = d.ctl("analyze", "comm", str(info["id"]), "--svg", svg)
            eq(p.returncode, 0, p.stderr.decode())
            out = p.stdout.decode()
            expect("Time breakdown" in out and "Bandwidth" in out and "Phase windows" in out,
                   "human tables: " + out)
            expect("Per iteration" in out and "Per collective type" in out, "breakdowns: " + out)
            part = out[out.index("simple sums"):out.index("Bandwidth and volume")]
            wide = [ln for ln in part.splitlines() if len(ln) > 100]
            eq(wide, [], "the new sections fit 100 columns")
            expect("SendRecv" in part, "per-type row: " + part)
            root = ET.parse(svg).getroot()
            expect(root.tag.endswith("svg"), "an SVG document")
            expect(len(root.findall(".//{http://www.w3.org/2000/svg}rect")) > 2, "bars drawn")
        # params reach the analysis: a mapping rule turns OTHER into PP
        res = d.ctl_json("analyze", "comm", str(info["id"]),
                         'tags=[{"collective":"SendRecv","tag":"PP"}]', "link_bandwidth=50e9")
        eq(res["bandwidth"]["PP"]["events"], 20, "mapped by collective")
        eq(res["groups"][0]["type_tags"], {"SendRecv": {"tag": "PP", "events": 20}})
        eq(res["link_bandwidth_source"], "param")
        p = d.ctl("analyze", "comm", str(info["id"]), "iterations=some")
        eq(p.returncode, 1, "iterations is all or hta")
        expect(b"-32602" in p.stderr and b"iterations" in p.stderr, p.stderr.decode())
        p = d.ctl("analyze", "comm", str(info["id"]), "bogus=1")
        eq(p.returncode, 1, "unknown param rejected")
        expect(b"-32602" in p.stderr, p.stderr.decode())
        eq(d.stop(), 0, "clean stop")
    finally:
        d.cleanup()


@test
def nccl_args_give_bytes_and_tags():
    d = Daemon(config='comm.params = {"link_bandwidth": 100e9}\n').start()
    try:
        files = sorted(glob.glob(os.path.join(TRACES, "nccl_parser_config", "*")))
        info = d.ctl_json("import", *files)
        res = d.ctl_json("analyze", "comm", str(info["id"]))
        check_reconciled(res, "nccl_parser_config")
        dp = res["bandwidth"]["DP"]
        eq(dp["events_bytes_unknown"], 0, "every kernel sized from its args")
        # every step: the third (dropped by HTA's filter) is complete
        eq(res["iterations"]["count"], 3)
        eq(dp["time_us"], 46876.493)
        eq(dp["total_bytes"], 307323096)
        eq(res["reconciliation"]["comm_kernel_time_us"], 46876.493)
        eq(res["types"]["AllReduce"]["events"], 15)
        eq(res["types"]["Broadcast"]["events"], 6)
        # the raw reply text: µs from integer ns, every digit
        p = d.ctl("--json", "analyze", "comm", str(info["id"]), check=0)
        text = p.stdout.decode()
        expect(re.search(r'"start_us":\s*4458676639291\.351[,\s}]', text),
               "exact start_us in the reply text")
        # a collective rule moves that type only, per event
        res = d.ctl_json("analyze", "comm", str(info["id"]),
                         'tags=[{"collective":"Broadcast","tag":"PP"}]')
        eq(res["bandwidth"]["PP"]["events"], 6)
        eq(res["bandwidth"]["PP"]["time_us"], 114.334)
        eq(res["bandwidth"]["DP"]["events"], 15)
        res = d.ctl_json("analyze", "comm", str(info["id"]), "iterations=hta",
                         'tags=[{"collective":"AllReduce","tag":"TP"}]')
        eq(res["bandwidth"]["TP"]["events"], 10)
        eq(res["bandwidth"]["TP"]["time_us"], 24211.804)
        eq(res["bandwidth"]["DP"]["events"], 4)
        eq(res["bandwidth"]["DP"]["time_us"], 77.246)
        eq(res["groups"][0]["desc"], "default_pg")
        eq(res["link_bandwidth_source"], "config")
        eq(res["link_bandwidth_Bps"], 100e9)
        expect(abs(dp["global_avg_util"] - dp["algbw_Bps"] / 100e9) < 1e-12, "util")
    finally:
        d.cleanup()


@test
def nsys_export_imports_by_magic():
    d = Daemon().start()
    try:
        info = d.ctl_json("import", NSYS)
        eq(info["import"]["ranks"], [0, 1], "one rank per process/device")
        eq(info["import"]["files"][0]["format"], "nsys")
        res = d.ctl_json("analyze", "comm", str(info["id"]))
        check_reconciled(res, "nsys")
        want = nsys_comm_kernel_us(NSYS)
        got = res["reconciliation"]["comm_kernel_time_us"]
        expect(abs(got - sum(want)) < 1e-3, "nsys comm time %r vs sqlite %r" % (got, want))
        for r, w in zip(res["ranks"], want):
            t = sum(r["bandwidth"][k]["time_us"] for k in r["bandwidth"])
            expect(abs(t - w) < 1e-3, "rank %d: %r vs %r" % (r["rank"], t, w))
        eq(res["iterations"]["source"], "none: each rank's GPU span is one iteration")
        # PyTorch's nccl:all_to_all range names the SendRecv kernels
        types = {i["type"] for i in res["straggler"]["top_instances"]}
        eq(types, {"AllToAll"})
        # other analyses run on nsys captures too
        t = d.ctl_json("analyze", "temporal", str(info["id"]))
        eq(len(t["ranks"]), 2)
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
