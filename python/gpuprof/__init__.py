# SPDX-License-Identifier: MIT
"""gpuprof: script gpuprofd from Python.

A pure-Python module over libgpuprof-client.so.0 (ctypes): the verbs of
gpuprofctl as methods of Client, results as dicts (what `gpuprofctl --json`
prints), errors as GpuprofError carrying the JSON-RPC code and message, and,
with pandas installed, the analyses as DataFrames shaped like Meta HTA's.
gpuprof.hta.TraceAnalysis stands in for HTA's class of the same name.

    import gpuprof
    with gpuprof.Client() as c:
        cap = c.import_(["rank0.json.gz"])
        print(c.temporal_breakdown(cap["id"]))

docs/python.md has the whole API.
"""

from .client import (ERR_BAD_FD, ERR_BAD_INPUT, ERR_BUSY, ERR_DAMAGED, ERR_INTERNAL,
                     ERR_INVALID_PARAMS, ERR_INVALID_REQUEST, ERR_IO, ERR_METHOD_NOT_FOUND,
                     ERR_NO_DATA, ERR_NOT_FOUND, ERR_PARSE, ERR_PERMISSION, ERR_SHUTTING_DOWN,
                     ERR_TIMEOUT, ERR_TOO_LARGE, ERR_UNAVAILABLE, Client, Folded, GpuprofError,
                     parse_duration_ms)

__all__ = ["Client", "Folded", "GpuprofError", "connect", "parse_duration_ms"] + [
    n for n in dir() if n.startswith("ERR_")]


def connect(socket=None, timeout=None):
    """Client(socket, timeout): a connection to gpuprofd."""
    return Client(socket, timeout)
