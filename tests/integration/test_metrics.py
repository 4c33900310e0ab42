#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Prometheus endpoint (metrics.listen): Debian's real Prometheus
server scrapes two daemons, one with per-process series and one without,
while a CPU burner runs; the series are read back through Prometheus's
query API. promtool checks the exposition; other paths, methods, slow and
oversized clients get what they should and hold up neither the daemon nor
the scrape."""

import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from gpd import BUILD, Daemon, Skip, cgroup2_mount, eq, expect, main, need_sampler, test

WORKLOAD = os.path.join(BUILD, "tests", "workloads", "demo_workload")
GPU_APP = os.path.join(BUILD, "tests", "gpu", "gpu_app")
FAKE_CUDA = os.path.join(BUILD, "tests", "gpu", "cuda", "libcuda.so.1")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics_daemon(extra=""):
    port = free_port()
    conf = "metrics.listen = 127.0.0.1:%d\nsampling.cpu_frequency = 499\n%s" % (port, extra)
    return Daemon(conf).start(), port


def get(port, path="/metrics", method="GET", headers=None, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read().decode()
    finally:
        c.close()


def parse_text(body):
    """{(name, labels-string): value} of a text exposition."""
    out = {}
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, val = line.rpartition(" ")
        name, _, labels = key.partition("{")
        out[(name, labels.rstrip("}"))] = float(val)
    return out


class Prometheus:
    """prometheus on a free loopback port with a temp config and storage
    dir, scraping the given targets every second."""

    def __init__(self, jobs):
        expect(os.access(PROMETHEUS, os.X_OK), "Debian's prometheus is installed (scripts/deps.sh)")
        self.tmp = tempfile.mkdtemp(prefix="gpd-prom-")
        self.port = free_port()
        conf = os.path.join(self.tmp, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\nscrape_configs:\n")
            for job, port in jobs.items():
                f.write("  - job_name: %s\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:%d']\n" % (job, port))
        self.log = open(os.path.join(self.tmp, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + conf, "--storage.tsdb.path=" + os.path.join(self.tmp, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            expect(self.proc.poll() is None, "prometheus exited:\n" + self.read_log())
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError("prometheus not ready:\n" + self.read_log())

    def read_log(self):
        with open(os.path.join(self.tmp, "prometheus.log"), "rb") as f:
            return f.read().decode(errors="replace")

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
        eq(doc["status"], "success", "query %s" % params)
        return doc["data"]

    def query(self, q):
        """[(labels, value)] of an instant query."""
        return [(r["metric"], float(r["value"][1])) for r in self.api("query", query=q)["result"]]

    def wait_for(self, q, cond, what, timeout=20):
        deadline = time.time() + timeout
        res = []
        while time.time() < deadline:
            res = self.query(q)
            if cond(res):
                return res
            time.sleep(0.5)
        raise AssertionError("%s: %s gave %r\n%s" % (what, q, res, self.read_log()[-3000:]))

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def check_against_cpu_time(prom, pid, secs=6):
    """The burner's samples between two scrapes, as Prometheus stored
    them, against its CPU time over the same span (read from /proc every
    0.1 s and interpolated at the scrapes' timestamps)."""
    log = []
    t_end = time.time() + secs
    while time.time() < t_end:
        log.append((time.time(), cpu_seconds(pid)))
        time.sleep(0.1)
    q = 'gpuprof_process_cpu_samples_total{job="pp",pid="%d"}[%ds]' % (pid, secs)
    res = prom.api("query", query=q, time="%.3f" % log[-1][0])["result"]
    eq(len(res), 1, "one series for the burner")
    pts = [(float(t), float(v)) for t, v in res[0]["values"] if log[0][0] <= float(t) <= log[-1][0]]
    expect(len(pts) >= 3, "scrapes within the window: %r" % res)

    def cpu_at(t):
        for (t0, c0), (t1, c1) in zip(log, log[1:]):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0)
        raise AssertionError("time %f outside the log" % t)

    (ta, va), (tb, vb) = pts[0], pts[-1]
    expected = (cpu_at(tb) - cpu_at(ta)) * 499
    expect(expected > 100, "the burner ran: %.2f CPU s" % (expected / 499))
    ratio = (vb - va) / expected
    expect(0.7 < ratio < 1.3, "samples %d vs CPU time x 499 = %d (ratio %.2f)"
           % (vb - va, expected, ratio))


@test
def prometheus_scrapes_health_and_per_process_series():
    pp, pp_port = metrics_daemon("metrics.per_process = true\nmetrics.top = 3\n")
    plain = burner = prom = None
    try:
        plain, plain_port = metrics_daemon()
        need_sampler(pp)
        need_sampler(plain)
        burner = subprocess.Popen([WORKLOAD, "0"])
        prom = Prometheus({"pp": pp_port, "plain": plain_port})
        # both targets up: Prometheus parsed what we served (it asks for
        # OpenMetrics first, so that parser is the one that ran)
        prom.wait_for('up{job=~"pp|plain"}', lambda r: len(r) == 2 and all(v == 1 for _, v in r),
                      "both daemons scraped")
        for t in prom.api("targets")["activeTargets"]:
            eq(t["lastError"], "", "scrape error of %s" % t["labels"]["job"])
            eq(t["health"], "up", "health of %s" % t["labels"]["job"])
        q = 'gpuprof_process_cpu_samples_total{job="pp",pid="%d"}' % burner.pid
        res = prom.wait_for(q, lambda r: len(r) == 1 and r[0][1] > 50,
                            "the burner's own series, with samples")
        eq(res[0][0]["comm"], "demo_workload", "its comm label")
        expect(res[0][0]["cgroup"].startswith("/"), "its cgroup label: %r" % res[0][0])
        # the samples counter grows between scrapes
        first = prom.query('gpuprof_cpu_samples_total{job="pp"}')[0][1]
        prom.wait_for('gpuprof_cpu_samples_total{job="pp"}', lambda r: r and r[0][1] > first + 100,
                      "gpuprof_cpu_samples_total grows while the burner runs")
        # and its count matches the CPU time the kernel gave it: 499 a second
        check_against_cpu_time(prom, burner.pid)
        # top 3 plus other at most
        res = prom.query('gpuprof_process_cpu_samples_total{job="pp"}')
        expect(len(res) <= 4, "top 3 plus other: %r" % res)
        # (Prometheus drops empty labels: other's pid and cgroup)
        expect(any(m["comm"] == "other" and "pid" not in m for m, _ in res), "an other series")
        # from one snapshot: the series never count more than the total
        # (less once a process ends and its series goes)
        res = prom.query('sum(gpuprof_process_cpu_samples_total{job="pp"}) - on() '
                         'gpuprof_cpu_samples_total{job="pp"}')
        expect(len(res) == 1 and res[0][1] <= 0, "per-process sum <= total: %r" % res)
        # the daemon without per_process shows none, but the host total
        eq(prom.query('gpuprof_process_cpu_samples_total{job="plain"}'), [], "no per-process series")
        prom.wait_for('gpuprof_cpu_samples_total{job="plain"}', lambda r: r and r[0][1] > 50,
                      "the plain daemon counts samples too")
        # health, from the status result
        st = pp.ctl_json("status")
        res = prom.query('gpuprof_collector_state{job="pp",collector="cpu"} == 1')
        eq([m["state"] for m, _ in res], ["attached"], "the cpu collector's state")
        res = prom.query('gpuprof_store_slots{job="pp"}')
        eq(res[0][1], st["store"]["capacity"], "store slots as status says")
        res = prom.query('gpuprof_resident_memory_bytes{job="pp"}')
        expect(res and res[0][1] > 1 << 20, "RSS in bytes: %r" % res)
        res = prom.query('gpuprof_build_info{job="pp"}')
        eq(res[0][0]["version"], st["version"], "version label")
        # Prometheus took the OpenMetrics exposition: only there is
        # gpuprof_build an info family, and units are declared
        meta = prom.api("targets/metadata", match_target='{job="pp"}')
        types = {(m["metric"], m["type"], m.get("unit", "")) for m in meta}
        expect(("gpuprof_build", "info", "") in types, "info family: %r" % sorted(types)[:20])
        expect(("gpuprof_uptime_seconds", "gauge", "seconds") in types, "unit: %r" % sorted(types))
        expect(("gpuprof_cpu_samples", "counter", "") in types, "counter family: %r" % sorted(types))
    finally:
        if burner:
            burner.kill()
            burner.wait()
        if prom:
            prom.stop()
        daemons = [d for d in (pp, plain) if d]
        rcs = [d.stop() for d in daemons]
        for d in daemons:
            d.cleanup()
        eq(rcs, [0] * len(daemons), "clean stops with the endpoint")


@test
def exposition_passes_promtool_in_both_formats():
    d, port = metrics_daemon("metrics.per_process = true\nmetrics.per_process_gpu = true\n"
                             "metrics.bpf_stats = true\n")
    w = subprocess.Popen([WORKLOAD, "0"])
    try:
        time.sleep(1.5)
        status, hdr, body = get(port)
        eq(status, 200, "GET /metrics")
        eq(hdr["Content-Type"], "text/plain; version=0.0.4; charset=utf-8", "text format")
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=body.encode(), capture_output=True)
        eq((p.returncode, p.stdout.decode() + p.stderr.decode()), (0, ""), "promtool check metrics")
        s = parse_text(body)
        expect(("gpuprof_uptime_seconds", "") in s, "uptime")
        expect(0 < s[("gpuprof_metrics_snapshot_seconds", "")] < 1, "the loop's time for a scrape")
        eq((s.get(("gpuprof_graph_cache_bytes", "")), s.get(("gpuprof_graph_cache_hits_total", ""))),
           (0, 0), "the critical-path graph cache, empty: %s" % body[:3000])
        expect(any(k[0] == "gpuprof_bpf_program_run_seconds_total" for k in s),
               "BPF run time with metrics.bpf_stats: %s" % body[:3000])
        expect(any(k[0] == "gpuprof_process_gpu_launches_total" for k in s), "GPU per process")
        expect(s.get(("gpuprof_cupti_peers", "")) == 0 and
               ("gpuprof_cupti_drops_total", 'cause="rate"') in s, "the cupti families")
        status, hdr, om = get(port, headers={
            "Accept": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"})
        eq(hdr["Content-Type"], "application/openmetrics-text; version=1.0.0; charset=utf-8", "OM")
        expect(om.endswith("# EOF\n") and om.count("# EOF") == 1, "OpenMetrics ends in # EOF")
        expect("# TYPE gpuprof_cpu_samples counter\n" in om and "\ngpuprof_cpu_samples_total " in om,
               "OpenMetrics counter family without _total, samples with it")
        expect("# UNIT gpuprof_uptime_seconds seconds\n" in om, "units in OpenMetrics")
        expect("# TYPE gpuprof_cpu_samples_total counter\n" in body, "0.0.4 counters keep _total")
    finally:
        w.kill()
        w.wait()
        d.cleanup()


@test
def gpu_launches_per_process_exact():
    """gpu_app on the fake CUDA runtime (tests/gpu) launches 3n+3 kernels
    in a cgroup of its own: its series counts exactly those, labelled with
    its comm and cgroup, and so does the host total."""
    d, port = metrics_daemon("metrics.per_process_gpu = true\n")
    cg = None
    app = None
    try:
        g = [c for c in d.ctl_json("status")["collectors"] if c["name"] == "gpu"][0]
        if g["state"] != "attached" and os.geteuid() != 0:
            raise Skip("GPU launch probes need root: " + g["reason"])
        eq(g["state"], "attached", "GPU launch probes as root: %r" % g)
        mnt = cgroup2_mount()
        if not mnt:
            raise Skip("no cgroup2 mount (cgroup v1-only host)")
        rel = "/gpuprof-metrics-test-%d" % os.getpid()
        os.mkdir(mnt + rel)
        cg = mnt + rel

        def enter():
            with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                f.write("0\n")
        app = subprocess.Popen([GPU_APP, "cuda", FAKE_CUDA, "100", "--hold"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, preexec_fn=enter)
        eq(app.stdout.readline().split()[:1], ["ready"], "gpu_app started")
        deadline = time.time() + 10
        while time.time() < deadline:  # until the daemon has probes on it
            libs = [l for l in [c for c in d.ctl_json("status")["collectors"]
                                if c["name"] == "gpu"][0]["libraries"]
                    if os.path.samefile(l["path"], FAKE_CUDA) and l["processes"] >= 1
                    and l["probes"] >= 1 and not l.get("attaching")]
            if libs:
                break
            time.sleep(0.05)
        app.stdin.write("go\n")
        app.stdin.flush()
        eq(app.stdout.readline().strip(), "done", "gpu_app launched")
        series = 'gpuprof_process_gpu_launches_total{pid="%d",comm="gpu_app",cgroup="%s"}' % (
            app.pid, rel)
        deadline = time.time() + 10
        while time.time() < deadline:
            s = parse_text(get(port)[2])
            key = (series.partition("{")[0], series.partition("{")[2].rstrip("}"))
            if s.get(key) == 303:
                break
            time.sleep(0.3)
        eq(s.get(key), 303, "its launches: 100 + 2 x 100 + 3\n%s" % [
            k for k in s if "gpu_launches" in k[0]])
        # (other tests on the host may launch too)
        expect(s[("gpuprof_gpu_launches_total", "")] >= 303, "the host's launches")
        expect(not any(k[0] == "gpuprof_process_cpu_samples_total" for k in s),
               "no CPU series without metrics.per_process")
    finally:
        if app:
            app.stdin.close()
            app.wait(10)
        if cg:
            for _ in range(100):  # the last task's exit is noticed asynchronously
                try:
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.01)
        d.cleanup()


@test
def other_paths_methods_and_head():
    d, port = metrics_daemon()
    try:
        eq(get(port, "/nope")[0], 404, "unknown path")
        eq(get(port, "/metrics/x")[0], 404, "no prefix match")
        status, _, body = get(port, "/")
        eq(status, 200, "index")
        expect("/metrics" in body, "points at /metrics: %r" % body)
        status, hdr, _ = get(port, method="POST")
        eq(status, 405, "POST")
        eq(hdr.get("Allow"), "GET, HEAD", "Allow header")
        eq(get(port, method="DELETE")[0], 405, "DELETE")
        status, _, body = get(port, method="HEAD")
        eq((status, body), (200, ""), "HEAD")
        for accept, om in (("application/openmetrics-text;q=0,text/plain;version=0.0.4", False),
                           ("text/plain;q=0.5, Application/OpenMetrics-Text; version=1.0.0", True),
                           ("*/*", False)):
            _, hdr, body = get(port, headers={"Accept": accept})
            eq(hdr["Content-Type"].startswith("application/openmetrics-text"), om, accept)
            eq(body.endswith("# EOF\n"), om, accept)
        status, _, body = get(port, "/metrics?x=1")
        eq(status, 200, "a query string is ignored")
        expect("gpuprof_process_" not in body, "no per-process series by default")
    finally:
        d.cleanup()


@test
def slow_and_oversized_clients_hold_up_nothing():
    d, port = metrics_daemon()
    slow = []
    try:
        # clients that send half a request and wait
        for _ in range(3):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(s)
        # one whose headers pass the per-connection memory bound
        big = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            big.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
        except OSError:
            pass  # the server may close before reading it all
        try:
            ans = big.recv(4096)
        except OSError:
            ans = b""
        expect(not ans.startswith(b"HTTP/1.1 200"), "oversized headers refused: %r" % ans[:100])
        big.close()
        t0 = time.time()
        st = d.ctl_json("status")
        expect(time.time() - t0 < 2, "status answers at once")
        eq(st["clients"]["connected"] >= 1, True, "status")
        status, _, body = get(port, timeout=5)
        eq(status, 200, "a scrape beside the slow clients")
        expect("gpuprof_store_slots" in body, "a real exposition")
    finally:
        for s in slow:
            s.close()
        eq(d.stop(), 0, "clean stop")
        d.cleanup()


@test
def unix_socket_and_bad_addresses():
    tmp = tempfile.mkdtemp(prefix="gpd-metrics-")
    path = os.path.join(tmp, "metrics.sock")
    d = Daemon("metrics.listen = %s\n" % path).start()
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        expect(data.startswith(b"HTTP/1.0 200") or data.startswith(b"HTTP/1.1 200"), data[:200])
        expect(b"\ngpuprof_store_slots " in data, "exposition over the Unix socket")
        eq(d.stop(), 0, "clean stop")
        expect(not os.path.exists(path), "socket removed at stop")
    finally:
        d.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    # a name is not resolved (the unit test tries the other bad forms)
    d = Daemon("metrics.listen = localhost:9464\n")
    try:
        d.start(wait=False)
        eq(d.proc.wait(20), 1, "a bad metrics.listen stops the daemon at start")
        expect("metrics.listen 'localhost:9464'" in d.read_log(), "says why: %s" % d.read_log()[-500:])
    finally:
        d.cleanup()
    # IPv6 loopback
    port = free_port()
    d = Daemon("metrics.listen = [::1]:%d\n" % port)
    try:
        d.start()
        c = http.client.HTTPConnection("::1", port, timeout=10)
        c.request("GET", "/metrics")
        eq(c.getresponse().status, 200, "IPv6 loopback")
        c.close()
        expect("not a loopback" not in d.read_log(), "no warning for loopback")
    finally:
        d.cleanup()
    # any address: served, with a warning in the log
    port = free_port()
    d = Daemon("metrics.listen = 0.0.0.0:%d\n" % port)
    try:
        d.start()
        eq(get(port)[0], 200, "0.0.0.0")
        expect("0.0.0.0:%d is not a loopback address" % port in d.read_log(), d.read_log()[-800:])
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
