# SPDX-License-Identifier: MIT
"""A stand-in for HTA's TraceAnalysis, backed by gpuprofd.

An HTA notebook changes its import line:

    # from hta.trace_analysis import TraceAnalysis
    from gpuprof.hta import TraceAnalysis
    analyzer = TraceAnalysis(trace_dir="traces/")
    df = analyzer.get_temporal_breakdown()

The traces are imported into the daemon once (one rank per file, as HTA
reads a directory); the analyses run there and come back as HTA-shaped
DataFrames (gpuprof.frames). Needs pandas.
"""

import os

from .client import Client


class TraceAnalysis:
    """trace_dir: a directory of Kineto traces (every regular file in it,
    sorted by name), or trace_files: a {rank: path} dict or list of paths.
    socket / client: the daemon to use. The capture stays in the daemon
    (self.capture_id) until delete() is called."""

    def __init__(self, trace_dir=None, trace_files=None, socket=None, client=None, name=None,
                 **_ignored):
        self.client = client or Client(socket)
        if trace_files is None:
            if trace_dir is None:
                raise ValueError("give trace_dir or trace_files")
            trace_files = sorted(os.path.join(trace_dir, f) for f in os.listdir(trace_dir)
                                 if os.path.isfile(os.path.join(trace_dir, f)))
        if isinstance(trace_files, dict):
            ranks = sorted(trace_files)
            info = self.client.import_([trace_files[r] for r in ranks], ranks=ranks, name=name)
        else:
            info = self.client.import_(list(trace_files), name=name)
        self.capture = info
        self.capture_id = info["id"]

    def delete(self):
        self.client.delete(self.capture_id)

    def get_temporal_breakdown(self, visualize=False):
        return self.client.temporal_breakdown(self.capture_id)

    def get_idle_time_breakdown(self, ranks=None, streams=None, visualize=False,
                                visualize_pctg=True, show_idle_interval_stats=False,
                                consecutive_kernel_delay=30):
        """(idle_time_df, interval_stats_df or None); HTA's default ranks
        is [0]. streams filters the rows, as HTA's argument."""
        idle, stats = self.client.idle_time_breakdown(
            self.capture_id, ranks if ranks is not None else [0], consecutive_kernel_delay,
            show_idle_interval_stats)
        if streams is not None:
            idle = idle[idle["stream"].isin(streams)].reset_index(drop=True)
            if stats is not None:
                stats = stats[stats["stream"].isin(streams)]
        return idle, stats

    def get_comm_comp_overlap(self, visualize=False):
        return self.client.comm_comp_overlap(self.capture_id)

    def critical_path_analysis(self, rank, annotation, instance_id, data_load_events=None):
        """(cp_graph, success) as HTA: cp_graph.summary() and
        cp_graph.get_critical_path_breakdown()."""
        extra = {"data_load_events": list(data_load_events)} if data_load_events else {}
        cp = self.client.critical_path(self.capture_id, rank=rank, annotation=annotation,
                                       instance_id=instance_id, **extra)
        return cp, True
