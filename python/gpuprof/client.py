# SPDX-License-Identifier: MIT
"""The client: one connection to gpuprofd and the CLI's verbs as methods."""

import ctypes
import datetime
import json
import os
import tempfile
from dataclasses import dataclass, field

from . import _lib

# JSON-RPC error codes (include/gpuprof/protocol.h, docs/protocol.md "Errors").
ERR_PARSE = -32700
ERR_INVALID_REQUEST = -32600
ERR_METHOD_NOT_FOUND = -32601
ERR_INVALID_PARAMS = -32602
ERR_INTERNAL = -32603
ERR_TOO_LARGE = -32001
ERR_PERMISSION = -32002
ERR_NOT_FOUND = -32003
ERR_BUSY = -32004
ERR_IO = -32005
ERR_BAD_FD = -32006
ERR_DAMAGED = -32007
ERR_UNAVAILABLE = -32008
ERR_BAD_INPUT = -32009
ERR_NO_DATA = -32010
ERR_TIMEOUT = -32011
ERR_SHUTTING_DOWN = -32012

MAX_FDS = 64  # GPUPROF_MAX_FDS_PER_MSG


class GpuprofError(Exception):
    """The daemon answered a request with a JSON-RPC error.

    code: the JSON-RPC code (one of the ERR_* constants); message: the
    daemon's one-line reason; data: the error's "data" member, parsed
    (None when absent); method: the request's method."""

    def __init__(self, method, code, message, data=None):
        super().__init__("%s: %s (code %d)" % (method, message, code))
        self.method = method
        self.code = code
        self.message = message
        self.data = data


@dataclass
class Folded:
    """Folded stacks of a capture ("frame;frame;... count" lines).

    text: the lines as the daemon wrote them; meta: the reply (stacks,
    samples, weight, bytes, symbolized, ...)."""

    text: str
    meta: dict = field(default_factory=dict)

    def counts(self):
        """{stack: count}, stack being the ';'-joined frames."""
        out = {}
        for line in self.text.splitlines():
            stack, _, n = line.rpartition(" ")
            if stack:
                out[stack] = out.get(stack, 0) + int(n)
        return out

    def __str__(self):
        return self.text


def _epoch_ns(dt):
    """An aware datetime as ns since the epoch, exactly (no float)."""
    d = dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    return (d.days * 86400 + d.seconds) * 10**9 + d.microseconds * 1000


def parse_duration_ms(value):
    """Milliseconds from "500ms", "5s", "2m", "1h", or a number of seconds."""
    if isinstance(value, bool):
        raise TypeError("a duration is a string or a number of seconds")
    if isinstance(value, (int, float)):
        if value <= 0:
            raise ValueError("duration must be positive: %r" % value)
        return max(1, int(round(value * 1000)))
    ms = ctypes.c_uint64()
    r = _lib._load().gpuprof_parse_duration_ms(str(value).encode(), ctypes.byref(ms))
    if r < 0:
        raise ValueError("not a duration: %r" % value)
    return ms.value


def _json(params):
    return None if params is None else json.dumps(params, allow_nan=False).encode()


def _fileno(f):
    return f if isinstance(f, int) else f.fileno()


class Client:
    """A connection to gpuprofd.

    socket: the daemon's socket path; None means $GPUPROF_SOCKET, else the
    compiled-in default. timeout: seconds a call may wait for its reply
    (None: as long as the daemon needs; a timed-out client must be closed).
    Not thread-safe: use one Client per thread. Use as a context manager or
    call close()."""

    _c = None  # the struct gpuprof_client *, None once closed

    def __init__(self, socket=None, timeout=None):
        lib = _lib._load()
        self._lib = lib
        self._c = None
        ptr = ctypes.c_void_p()
        path = None if socket is None else os.fsencode(socket)
        _lib.check_errno(lib.gpuprof_client_connect(path, ctypes.byref(ptr)),
                         "cannot connect to gpuprofd")
        self._c = ptr
        if timeout is not None:
            lib.gpuprof_client_set_timeout(self._c, max(1, int(timeout * 1000)))

    def close(self):
        if self._c is not None:
            self._lib.gpuprof_client_free(self._c)
            self._c = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    # -- the raw call ---------------------------------------------------
    def _handle(self, method, r, out):
        text = _lib.take_string(out.value)
        if r == -_lib.EREMOTEIO:
            data = self._lib.gpuprof_client_error_data(self._c)
            msg = self._lib.gpuprof_client_error_message(self._c)
            raise GpuprofError(method, self._lib.gpuprof_client_error_code(self._c),
                               msg.decode("utf-8", "replace") if msg else "",
                               json.loads(data) if data else None)
        _lib.check_errno(r, method)
        return json.loads(text) if text else None

    def _open(self):
        if self._c is None:
            raise ValueError("the client is closed")
        return self._c

    def call(self, method, params=None, fds=()):
        """Send one JSON-RPC request and return its result, parsed.

        fds (file objects or descriptors, at most 64) travel with the
        request; params name them by their index ("fd": 0). Raises
        GpuprofError for an error reply, OSError for a broken connection."""
        c = self._open()
        fds = [_fileno(f) for f in fds]
        if len(fds) > MAX_FDS:
            raise ValueError("at most %d descriptors per request" % MAX_FDS)
        arr = (ctypes.c_int * len(fds))(*fds) if fds else None
        out = ctypes.c_void_p()
        r = self._lib.gpuprof_client_call(c, method.encode(), _json(params), arr, len(fds),
                                          ctypes.byref(out))
        return self._handle(method, r, out)

    def call_with_output(self, method, params, out):
        """Run a method that writes its bulk output to a descriptor: out is
        a path (replaced only when the call succeeds), a file object or
        descriptor open for writing. Returns the reply."""
        if isinstance(out, (str, bytes, os.PathLike)):
            return self._to_path(method, params, out)
        c = self._open()
        res = ctypes.c_void_p()
        r = self._lib.gpuprof_call_with_output(c, method.encode(), _json(params or {}),
                                               _fileno(out), ctypes.byref(res))
        return self._handle(method, r, res)

    def _to_path(self, method, params, path):
        path = os.fspath(path)
        d = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".gpuprof-")
        try:
            with os.fdopen(fd, "wb") as f:
                reply = self.call_with_output(method, params, f)
            os.replace(tmp, path)
            tmp = None
            return reply
        finally:
            if tmp:
                os.unlink(tmp)

    def _read_output(self, method, params):
        """(text, reply) of a method writing to a descriptor."""
        with tempfile.TemporaryFile() as f:
            reply = self.call_with_output(method, params, f)
            f.seek(0)
            return f.read().decode("utf-8", "replace"), reply

    # -- daemon -----------------------------------------------------------
    def version(self):
        """{"version", "protocol"} of the daemon."""
        return self.call("version")

    def status(self):
        """The daemon's status (store, collectors, clients, jobs, ...)."""
        return self.call("status")

    # -- captures -----------------------------------------------------------
    def capture(self, pids=None, duration=None, last=None, name=None, wait=True, since=None,
                until=None):
        """Take a capture: record forward for `duration`, cut the `last`
        from the store ("10s", "500ms" or seconds), or cut the absolute
        window from `since` (exactly one of the three) to `until` (default
        now; with `last`: the last before `until`). since / until: the
        daemon's CLOCK_MONOTONIC ns (int, as a capture's info["window"]
        gives them) or timezone-aware datetimes (the daemon converts
        wall-clock times with its own offset); both of one kind. pids: a
        pid or a list (None: every process this peer may see). With wait
        (the default) the reply comes once the capture is ready. Returns
        its info."""
        if (duration is not None) + (last is not None) + (since is not None) != 1:
            raise ValueError("give exactly one of duration, last and since")
        if until is not None and duration is not None:
            raise ValueError("until ends a window in the past: not with duration")
        p = {}
        if pids is not None:
            p["pids"] = [int(x) for x in ([pids] if isinstance(pids, int) else pids)]
        if duration is not None:
            p["duration_ms"] = parse_duration_ms(duration)
        elif last is not None:
            p["last_ms"] = parse_duration_ms(last)
        times = {k: v for k, v in (("start_ns", since), ("end_ns", until)) if v is not None}
        if times:
            wall = {isinstance(v, datetime.datetime) for v in times.values()}
            if len(wall) != 1:
                raise ValueError("give since and until of one kind: ns ints or datetimes")
            for k, v in times.items():
                if isinstance(v, datetime.datetime):
                    if v.tzinfo is None:
                        raise ValueError("%s: a datetime with its time zone" % k)
                    v = _epoch_ns(v)
                elif isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise ValueError("%s: ns as an int >= 0, or a datetime" % k)
                p[k] = v
            p["clock"] = "realtime" if wall.pop() else "monotonic"
        p["wait"] = bool(wait)
        if name is not None:
            p["name"] = name
        return self.call("capture.start", p)

    def stop(self, id):
        """End a forward recording now; returns its info."""
        return self.call("capture.stop", {"id": int(id)})

    def list(self):
        """Info of every capture this peer may see, oldest first."""
        return self.call("capture.list")["captures"]

    def info(self, id):
        return self.call("capture.info", {"id": int(id)})

    def delete(self, id):
        return self.call("capture.delete", {"id": int(id)})

    def import_(self, files, rank=None, ranks=None, name=None):
        """Import trace files (Kineto JSON, plain or gzip; Nsight Systems
        SQLite exports) as one capture, one rank per file. files: a path,
        a file object, or a list of them; this process opens the paths
        and passes the descriptors (the daemon never opens a path). rank:
        the first file's rank (then +1), or ranks: one per file. Returns the
        new capture's info with its "import" member."""
        if isinstance(files, (str, bytes, os.PathLike, int)) or hasattr(files, "fileno"):
            files = [files]
        files = list(files)
        if not files or len(files) > MAX_FDS:
            raise ValueError("import 1 to %d files" % MAX_FDS)
        opened = []
        try:
            fds = []
            for f in files:
                if isinstance(f, (str, bytes, os.PathLike)):
                    fo = open(f, "rb")
                    opened.append(fo)
                    fds.append(fo.fileno())
                else:
                    fds.append(_fileno(f))
            p = {"fds": list(range(len(fds)))}
            if ranks is not None:
                p["ranks"] = [int(r) for r in ranks]
            elif rank is not None:
                p["ranks"] = [int(rank) + i for i in range(len(fds))]
            if name is not None:
                p["name"] = name
            return self.call("capture.import", p, fds)
        finally:
            for fo in opened:
                fo.close()

    # -- outputs ------------------------------------------------------------
    def folded(self, id, kernel=True, pid_frames=False, tid_frames=False, cgroup=False,
               lines=False, comm=None, pids=None, tids=None, start_ns=None, end_ns=None,
               from_ns=None, to_ns=None, weight=None):
        """Folded stacks of capture `id` (gpuprofctl folded). Returns a
        Folded: .text, .counts(), .meta (the reply)."""
        p = {"id": int(id), "kernel": bool(kernel), "pid": bool(pid_frames),
             "tid": bool(tid_frames)}
        if cgroup:
            p["cgroup"] = True
        if lines:
            p["lines"] = True
        for k, v in (("comm", comm), ("weight", weight)):
            if v is not None:
                p[k] = v
        for k, v in (("pids", pids), ("tids", tids)):
            if v is not None:
                p[k] = [int(x) for x in v]
        for k, v in (("start_ns", start_ns), ("end_ns", end_ns), ("from_ns", from_ns),
                     ("to_ns", to_ns)):
            if v is not None:
                p[k] = int(v)
        text, meta = self._read_output("capture.folded", p)
        return Folded(text, meta or {})

    def flamegraph(self, id, out, **params):
        """Write capture `id`'s flame graph SVG to out (a path or file);
        params as capture.flamegraph's (title, weight, icicle, ...)."""
        return self.call_with_output("capture.flamegraph", dict(params, id=int(id)), out)

    def heatmap(self, id, out, **params):
        return self.call_with_output("capture.heatmap", dict(params, id=int(id)), out)

    def export(self, id, out, format="chrome", **params):
        """Write capture `id` as Chrome trace JSON or pprof to out."""
        return self.call_with_output("capture.export",
                                     dict(params, id=int(id), format=format), out)

    def top(self, pids=None, window=None, limit=None):
        """The hottest GPU kernels of the last `window` (gpuprofctl top)."""
        p = {}
        if pids is not None:
            p["pids"] = [int(x) for x in pids]
        if window is not None:
            p["window_ms"] = parse_duration_ms(window)
        if limit is not None:
            p["limit"] = int(limit)
        return self.call("gpu.top", p)

    # -- analyses -----------------------------------------------------------
    def analyses(self):
        """The analyses and their parameters (analyze.list)."""
        return self.call("analyze.list")["analyses"]

    def analyze(self, name, id, rank=None, **params):
        """Run analysis `name` ("temporal", "idle", "critical-path", "comm",
        ...) on capture `id`; params are the analysis's own (docs/analyses.md).
        Returns the result as the daemon sends it (gpuprofctl --json)."""
        p = dict(params, id=int(id))
        if rank is not None:
            p["rank"] = int(rank)
        return self.call("analyze." + name.replace("-", "_"), p)

    # pandas views (gpuprof.frames); imported lazily so that the module
    # works without pandas.
    def temporal_breakdown(self, id, rank=None):
        """HTA's temporal breakdown DataFrame, one row per rank."""
        from . import frames
        return frames.temporal_breakdown(self.analyze("temporal", id, rank=rank))

    def idle_time_breakdown(self, id, ranks=None, consecutive_kernel_delay=30,
                            show_idle_interval_stats=False):
        """(idle_time_df, interval_stats_df or None) as HTA's; ranks: a
        list (None: every rank)."""
        from . import frames
        return frames.idle_time_breakdown(self, id, ranks, consecutive_kernel_delay,
                                          show_idle_interval_stats)

    def comm_comp_overlap(self, id, rank=None):
        """HTA's communication/computation overlap DataFrame."""
        from . import frames
        return frames.comm_comp_overlap(self.analyze("overlap", id, rank=rank))

    def critical_path(self, id, rank=0, annotation="", instance_id=0, **params):
        """The critical path of `rank` in the window of the instance_id-th
        annotation containing `annotation` ("" = the whole rank; an
        (i, j) tuple spans instances): a frames.CriticalPath with HTA's
        summary() and get_critical_path_breakdown()."""
        from . import frames
        if instance_id is not None:
            params["instance"] = (list(instance_id) if isinstance(instance_id, tuple)
                                  else instance_id)
        res = self.analyze("critical_path", id, rank=rank, annotation=annotation, **params)
        return frames.CriticalPath(res)

    def comm(self, id, rank=None, **params):
        """Communication metrics, one DataFrame row per (rank, iteration);
        the whole result in df.attrs["result"]."""
        from . import frames
        return frames.comm(self.analyze("comm", id, rank=rank, **params))
