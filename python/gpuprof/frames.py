# SPDX-License-Identifier: MIT
"""pandas DataFrames of the analyses, shaped like Meta HTA's.

Column names, row order and rounding follow HTA 0.6.1's DataFrames (the
reference outputs this project's analyses are tested against), so code that
reads HTA's frames reads these. Values are the daemon's (docs/analyses.md);
HTA rounds percentages and idle times to 2 decimals, and so do these frames
(numpy's half-even rounding, as pandas' round() in HTA). The unrounded
result is kept in each frame's attrs["result"].

Imported only when a DataFrame is asked for: the rest of the module works
without pandas.
"""

import math

try:
    import pandas as pd
except ImportError as e:  # pragma: no cover - exercised by the tests
    raise ImportError("gpuprof's DataFrames need pandas (Debian: python3-pandas); "
                      "Client.analyze() returns the same results as dicts") from e


def _nan(v):
    return math.nan if v is None else v


def _frame(rows, columns, result, index=None):
    df = pd.DataFrame(rows, columns=columns, index=index)
    df.attrs["result"] = result
    return df


def temporal_breakdown(res):
    """HTA get_temporal_breakdown(): one row per rank with GPU activity."""
    cols = ["rank", "idle_time(us)", "compute_time(us)", "non_compute_time(us)",
            "kernel_time(us)", "idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"]
    rows = []
    for r in res["ranks"]:
        if r.get("no_gpu_activity"):
            continue
        rows.append([r["rank"], float(r["idle_time_us"]), float(r["compute_time_us"]),
                     float(r["non_compute_time_us"]), float(r["kernel_time_us"]),
                     r["idle_time_pctg"], r["compute_time_pctg"], r["non_compute_time_pctg"]])
    df = _frame(rows, cols, res)
    pct = ["idle_time_pctg", "compute_time_pctg", "non_compute_time_pctg"]
    df[pct] = df[pct].astype(float).round(2)
    return df


def idle_time_breakdown(client, id, ranks, delay, stats):
    """HTA get_idle_time_breakdown(): (idle_time_df, interval_stats_df or
    None), rows per rank, stream (in the trace's order) and category."""
    results = []
    if ranks is None:
        results.append(client.analyze("idle", id, consecutive_kernel_delay_us=delay,
                                      interval_stats=bool(stats)))
    else:
        for rank in ranks:
            results.append(client.analyze("idle", id, rank=rank,
                                          consecutive_kernel_delay_us=delay,
                                          interval_stats=bool(stats)))
    rows, srows, sindex = [], [], []
    for res in results:
        for r in res["ranks"]:
            for s in r.get("streams", []):
                for c in s["categories"]:
                    rows.append([r["rank"], s["stream"], c["idle_category"],
                                 float(c["idle_time_us"]), _nan(c["idle_time_ratio"])])
                    st = c.get("interval_stats")
                    if stats and st is not None:
                        sindex.append(c["idle_category"])
                        srows.append([r["rank"], s["stream"], float(st["count"])] +
                                     [_nan(st[k]) for k in ("mean_us", "std_us", "min_us",
                                                            "p25_us", "p50_us", "p75_us",
                                                            "max_us")])
    res = results[0] if len(results) == 1 else results
    df = _frame(rows, ["rank", "stream", "idle_category", "idle_time", "idle_time_ratio"], res)
    df[["idle_time", "idle_time_ratio"]] = df[["idle_time", "idle_time_ratio"]].astype(
        float).round(2)
    if not stats:
        return df, None
    sdf = _frame(srows, ["rank", "stream", "count", "mean", "std", "min", "25%", "50%", "75%",
                         "max"], res, index=pd.Index(sindex, name="idle_category"))
    num = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
    sdf[num] = sdf[num].astype(float).round(2)
    return df, sdf


def comm_comp_overlap(res):
    """HTA get_comm_comp_overlap(): rank, comp_comm_overlap_pctg (NaN
    without communication)."""
    rows = [[r["rank"], _nan(r.get("comp_comm_overlap_pctg"))] for r in res["ranks"]
            if not r.get("no_gpu_activity")]
    df = _frame(rows, ["rank", "comp_comm_overlap_pctg"], res)
    df["comp_comm_overlap_pctg"] = df["comp_comm_overlap_pctg"].astype(float).round(2)
    return df


class CriticalPath:
    """The result of a critical-path analysis, in the shape of HTA's
    CPGraph: summary() and get_critical_path_breakdown(). result: the
    daemon's reply (graph and path sizes, critical_edges, top_events, ...)."""

    BOUND_TYPES = ("cpu_bound", "gpu_compute_bound", "gpu_communication_bound",
                   "gpu_kernel_launch_overhead", "gpu_kernel_kernel_overhead", "data_loading")

    def __init__(self, result):
        self.result = result
        self.success = True

    def summary(self):
        """Percentage of the critical path's length per bound type (HTA's
        CPGraph.summary(): a Series indexed by bound_by)."""
        s = self.result["summary"]
        data = {b: s.get(b + "_pctg", 0.0) for b in self.BOUND_TYPES}
        out = pd.Series(data, name="duration", dtype=float)
        out.index.name = "bound_by"
        return out

    def get_critical_path_breakdown(self):
        """One row per critical edge in path order (HTA's columns): the
        edge's type and weight (duration, µs), its attributed event's index
        and name, stream (when the reply names it), bound_by. HTA's cat,
        pid and tid are symbol-table ids of its own DataFrame: NaN here.
        critical_edges stops at max_edges (the analysis parameter; see
        result["critical_edges_truncated"])."""
        streams = {e["event"]: e.get("stream") for e in self.result.get("top_events", [])}
        rows = []
        for e in self.result["critical_edges"]:
            ev = e.get("event")
            rows.append([_nan(ev), float(e["weight_us"]), e["type"], e.get("name"), math.nan,
                         math.nan, math.nan, _nan(streams.get(ev)) if ev is not None else math.nan,
                         _nan(ev), e.get("bound_by", "")])
        df = _frame(rows, ["event_idx", "duration", "type", "s_name", "cat", "pid", "tid",
                           "stream", "index", "bound_by"], self.result)
        for c in ("event_idx", "cat", "pid", "tid", "stream", "index"):
            df[c] = df[c].astype(float)
        return df

    @property
    def length_us(self):
        return self.result["path"]["length_us"]


def comm(res):
    """Communication metrics (analyze comm), one row per (rank,
    iteration): its time, the communication time per parallelism tag, the
    breakdown sums, bytes, bandwidth and overlap. HTA has no such frame;
    the column names are the result's keys (docs/analyses.md)."""
    tags = ["DP", "TP", "PP", "EP", "OTHER"]
    keys = ["all_comm_us", "compute_spec_us", "idle_spec_us", "compute_kernels_us",
            "memory_us", "idle_us", "compute_union_us", "idle_union_us"]
    cols = (["rank", "iteration", "start_us", "time_us", "comm_union_us"] +
            ["comm_%s_us" % t for t in tags] + keys +
            ["comm_bytes", "events", "events_bytes_unknown", "bw_Bps", "util", "overlap_ratio"])
    rows = []
    for r in res["ranks"]:
        for it in r.get("iteration_list", []):
            b = it.get("breakdown", {})
            rows.append([r["rank"], it["index"], it.get("start_us"), it.get("time_us"),
                         it.get("comm_union_us")] +
                        [b.get("comm_us", {}).get(t, 0) for t in tags] +
                        [b.get(k) for k in keys] +
                        [_nan(it.get("comm_bytes")), it.get("events"),
                         it.get("events_bytes_unknown"), _nan(it.get("bw_Bps")),
                         _nan(it.get("util")), _nan(it.get("overlap_ratio"))])
    return _frame(rows, cols, res)
