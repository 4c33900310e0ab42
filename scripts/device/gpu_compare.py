# SPDX-License-Identifier: MIT
"""The judgements of scripts/device/gpu_checks.sh, on the JSON and folded
files that gpuprofctl wrote, so that they can be tested without a GPU
(tests/device/test_gpu_compare.py). Each subcommand appends one line per
target to a results file (tab-separated: name, value, target, verdict with
verdict PASS, FAIL, SKIP, or INFO for a behaviour observed rather than a
target met) and prints its details on stdout.

  gpu_compare.py kernels  --results R --program OUT --kernels KJSON --folded GPUTIME.folded
                          [--join INFO.json] [--tag T]
  gpu_compare.py analyses --results R --dir DIR [--tag T]
  gpu_compare.py parity   --results R --live-kernels J --live-temporal J --live-idle J
                          --import-kernels J --import-temporal J --import-idle J
                          [--trace TRACE] [--steps-live K] [--steps-import K] [--tag T]
                          [--live-critpath CP.json --import-critpath CP.json
                           [--sync-expected yes|no]]
  gpu_compare.py pyframes --results R --folded LAUNCHES.folded --kernel-regex RE
                          [--python-regex RE] [--min N] [--tag T]
  gpu_compare.py pc       --results R --folded STALLS.folded [--program-samples N]
                          [--kernel-regex RE] [--sass yes|no] [--tag T]
  gpu_compare.py cost     --results R --file REAL_CUDA.out [--target-ns N] [--judge yes|no]
  gpu_compare.py ratio    --results R --file F --metric M --base LABEL --test LABEL
                          --min-pct P [--as ratio|slowdown] [--judge yes|no|info]
                          [--floor LABEL] --name NAME
  gpu_compare.py graph    --results R --program OUT --kernels KJSON [--tag T]
  gpu_compare.py events   --results R --program OUT --records N --chrome EXPORT.json
                          --critpath CP.json [--tag T]
  gpu_compare.py added    --results R --file F --metric M --base LABEL --test LABEL
                          --name NAME [--judge yes|no]     shown, not judged
  gpu_compare.py summary  --results R       prints SUMMARY; exit 1 when a target FAILed

cost, ratio and added pair the runs by round (the "round R ..." lines
the scripts write, else each label's count of runs): a figure is the
median over the rounds of the per-round difference or ratio, shown with
its range and, for cost and ratio, the noise floor (the library loaded but
off against the same base). The configurations' labels and what each
isolates come from cupti_variants.txt beside this script.

Kernel names are compared as the captures show them: demangled (program
output's mangled names go through c++filt), whitespace removed."""

import argparse
import collections
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

# GPU rows of a Kineto / Chrome trace, as the importer reads them
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def add(results, name, value, target, verdict):
    line = "\t".join(str(x).replace("\t", " ").replace("\n", " ") for x in
                     (name, value, target, verdict))
    with open(results, "a") as f:
        f.write(line + "\n")
    print("%-5s %s: %s (target %s)" % (verdict, name, value, target))


class InputError(ValueError):
    """An input file missing, empty or not JSON: the command that wrote it
    failed (an analysis refused, a capture with no GPU activity). main()
    turns it into a FAIL line that says which file and why."""


def load_json(path):
    op = gzip.open if path.endswith(".gz") else open
    try:
        with op(path, "rt") as f:
            text = f.read()
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise InputError("cannot read %s: %s" % (path, getattr(e, "strerror", None) or e))
    if not text.strip():
        raise InputError("%s is empty (the command writing it failed: see the step's log)" % path)
    try:
        return json.loads(text)
    except ValueError as e:
        raise InputError("%s is not JSON (%s)" % (path, e))


def norm(name):
    return re.sub(r"\s+", "", name)


def demangle(names):
    """name -> demangled name, through c++filt where it is installed."""
    out = {n: n for n in names}
    mangled = [n for n in names if n.startswith("_Z")]
    tool = shutil.which("c++filt")
    if mangled and tool:
        p = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                           text=True, timeout=30)
        if p.returncode == 0:
            for n, d in zip(mangled, p.stdout.splitlines()):
                out[n] = d
    return out


def folded_lines(path):
    """(frames, weight) of each line; C++ frames hold spaces, the weight
    follows the last one."""
    with open(path, errors="replace") as f:
        for line in f:
            frames, _, w = line.rstrip("\n").rpartition(" ")
            if frames and w.isdigit():
                yield frames.split(";"), int(w)


def kernel_rows(kjson):
    """{normalized name: (shown name, count, sum_us)} of a kernels analysis."""
    rows = {}
    for r in load_json(kjson).get("kernels", []):
        k = norm(r["name"])
        shown, c, s = rows.get(k, (r["name"], 0, 0.0))
        rows[k] = (shown, c + r["count"], s + r["sum_us"])
    return rows


def program_lines(path, word):
    """The "WORD NAME launches C [total_ns S]" lines a program printed."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) >= 4 and w[0] == word and w[2] == "launches":
                total = int(w[5]) if len(w) >= 6 and w[4] == "total_ns" else None
                out.append((w[1], int(w[3]), total))
    return out


def cmd_kernels(a):
    """Known kernels of a program: counts, folded gpu-time against the
    kernels analysis (and the program's own totals where it knows them),
    and how much of their GPU time sits on a launching stack."""
    want = program_lines(a.program, "kernel")
    if not want:
        add(a.results, a.tag + ": kernel counts", "program printed no kernels", "equal", "FAIL")
        return
    shown = demangle([n for n, _, _ in want])
    rows = kernel_rows(a.kernels)
    gpu_ns = collections.Counter()
    stacked_ns = collections.Counter()
    for frames, w in folded_lines(a.folded):
        top = frames[-1]
        if not top.endswith("_[G]"):
            continue
        k = norm(top[:-4])
        gpu_ns[k] += w
        if len(frames) > 2:  # comm;...;kernel: a launching stack under it
            stacked_ns[k] += w
    counts_ok = time_ok = True
    cvals, tvals = [], []
    on_stack = total = 0
    for name, n, total_ns in want:
        k = norm(shown[name])
        if k not in rows:  # no c++filt: the capture's row of that identifier
            m = re.match(r"_Z(\d+)", name)
            ident = name[m.end():m.end() + int(m.group(1))] if m else None
            cand = [r for r in rows if ident and base(r) == ident]
            if len(cand) == 1:
                k = cand[0]
        _, got, sum_us = rows.get(k, (None, 0, 0.0))
        print("kernel %s: launched %d, captured %d, kernels sum %.3f us, folded gpu-time %d ns%s"
              % (shown[name], n, got, sum_us, gpu_ns[k],
                 "" if total_ns is None else ", program's total %d ns" % total_ns))
        counts_ok &= got == n
        cvals.append("%d/%d" % (got, n))
        ref = sum_us * 1000 if total_ns is None else total_ns
        dev = abs(gpu_ns[k] - ref) / ref * 100 if ref else (0.0 if not gpu_ns[k] else 100.0)
        if total_ns is not None:  # the analysis must agree with the program too
            dev = max(dev, abs(sum_us * 1000 - total_ns) / total_ns * 100 if total_ns else 0)
        time_ok &= ref > 0 and dev <= 0.1
        tvals.append("%.3f%%" % dev)
        on_stack += stacked_ns[k]
        total += gpu_ns[k]
    add(a.results, a.tag + ": kernel counts", " ".join(cvals), "equal to launches",
        "PASS" if counts_ok else "FAIL")
    add(a.results, a.tag + ": folded gpu-time per kernel", "max dev " + max(tvals, key=lambda s: float(s[:-1])),
        "<= 0.1% of the kernels sum" + ("" if want[0][2] is None else " and the program's"),
        "PASS" if time_ok else "FAIL")
    share = on_stack / total * 100 if total else 0.0
    join = ""
    if a.join:
        c = load_json(a.join).get("cupti", {})
        join = " (intervals %s, no call %s, no launch %s)" % (
            c.get("intervals"), c.get("no_call"), c.get("no_launch"))
        print("join" + join)
    add(a.results, a.tag + ": kernel GPU time on launching stacks", "%.2f%%%s" % (share, join),
        ">= 99%", "PASS" if share >= 99 else "FAIL")


ANALYSES = ("temporal", "idle", "kernels", "overlap", "launch", "queue", "sequences",
            "critical-path", "comm")


def cmd_analyses(a):
    """Every analysis answered: DIR/NAME.rc, NAME.out, NAME.err per analysis;
    comm may refuse a capture without communication kernels, saying so."""
    ok, bad = 0, []
    for name in ANALYSES:
        try:
            rc = int(open("%s/%s.rc" % (a.dir, name)).read().strip() or 1)
            err = open("%s/%s.err" % (a.dir, name), errors="replace").read()
        except (OSError, ValueError):
            rc, err = None, "not run"
        if rc == 0 or (name == "comm" and rc == 1 and "no communication kernels" in err):
            ok += 1
        else:
            bad.append(name)
            print("analysis %s: rc %s: %s" % (name, rc, err.strip()[:300]))
    add(a.results, a.tag + ": analyses on the live capture",
        "%d/%d%s" % (ok, len(ANALYSES), " (failed: %s)" % ",".join(bad) if bad else ""),
        "all 9 run", "PASS" if not bad else "FAIL")


def trace_means(path):
    """{normalized name: (count, mean us)} of a trace's GPU rows, from the
    file's own decimal microseconds (the importer's HTA rounding left out)."""
    ev = load_json(path)
    ev = ev.get("traceEvents", []) if isinstance(ev, dict) else ev
    acc = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS and e.get("dur") is not None:
            k = norm(e.get("name", ""))
            c, s = acc.get(k, (0, 0.0))
            acc[k] = (c + 1, s + float(e["dur"]))
    return {k: (c, s / c) for k, (c, s) in acc.items()}


def first_rank(j):
    ranks = [r for r in load_json(j).get("ranks", []) if not r.get("no_gpu_activity")]
    return ranks[0] if ranks else None


def idle_pct(idle_json, span_us):
    """{(stream, category): idle time as % of the rank's span}."""
    out = {}
    r = first_rank(idle_json)
    for s in (r or {}).get("streams", []):
        for c in s.get("categories", []):
            out[(s["stream"], c["idle_category"])] = c["idle_time_us"] / span_us * 100 if span_us else 0
    return out


def base(name):
    return re.split(r"[(<]", name, 1)[0]


SYNC_EDGE = "critical_path_sync_dependency"


def sync_edges(cp):
    """(sync-dependency edges in the graph, on the path, path length us)
    of an analyze critical_path answer."""
    g = cp.get("graph", {})
    on_path = sum(1 for e in cp.get("critical_edges", []) if e.get("type") == SYNC_EDGE)
    return g.get("edges_by_type", {}).get(SYNC_EDGE, 0), on_path, cp.get("path", {}).get("length_us", 0.0)


def parity_sync(a):
    """Cross-stream and host syncs per step: the sync-dependency edges of
    the two critical-path graphs, per step, equal (each comes from one
    wait the program made: a stream waiting on an event, a host waiting
    on an event, a stream or the device). The path lengths are shown: the
    live window holds the quiet second before the steps and the time after
    them, the trace only the steps, so they are not comparable as they are."""
    name = a.tag + ": sync-dependency edges per step"
    try:
        el, pl, ll = sync_edges(load_json(a.live_critpath))
        ei, pi, li = sync_edges(load_json(a.import_critpath))
    except (OSError, ValueError) as e:  # the analysis failed: its file is empty
        add(a.results, name, "no critical path on one side (%s)" % e, "equal", "FAIL")
        return
    kl, ki = a.steps_live, a.steps_import
    value = "live %g, import %g (%d / %d steps; on the critical path %d / %d; path %.0f / %.0f us)" % (
        el / kl, ei / ki, kl, ki, pl, pi, ll, li)
    print("sync edges: " + value)
    if a.sync_expected == "no":
        add(a.results, name, value + "; the trace has no sync rows", "equal", "SKIP")
    else:
        add(a.results, name, value, "equal, > 0", "PASS" if el and el * ki == ei * kl else "FAIL")


def cmd_parity(a):
    """A live capture against an imported trace of the same work (per step):
    kernel counts, per-kernel mean GPU time, temporal and idle, and the
    sync-dependency edges of their critical-path graphs where given."""
    if a.live_critpath and a.import_critpath:
        parity_sync(a)
    live, imp = kernel_rows(a.live_kernels), kernel_rows(a.import_kernels)
    kl, ki = a.steps_live, a.steps_import
    # names: exact (whitespace aside); unmatched ones of the same base name
    # and per-step count paired (demanglers differ in details)
    pairs = {k: k for k in live if k in imp}
    only_l = [k for k in live if k not in imp]
    only_i = [k for k in imp if k not in live]
    for k in list(only_l):
        cand = [m for m in only_i if base(m) == base(k) and imp[m][1] * kl == live[k][1] * ki]
        if len(cand) == 1:
            pairs[k] = cand[0]
            only_l.remove(k)
            only_i.remove(cand[0])
            print("paired by base name: %s | %s" % (live[k][0], imp[cand[0]][0]))
    mism = [(live[k][0], live[k][1] / kl, imp[m][1] / ki) for k, m in pairs.items()
            if live[k][1] * ki != imp[m][1] * kl]
    for k in only_l:
        mism.append((live[k][0], live[k][1] / kl, 0))
    for m in only_i:
        mism.append((imp[m][0], 0, imp[m][1] / ki))
    for n, x, y in mism:
        print("count per step differs: %s: live %g, import %g" % (n, x, y))
    add(a.results, a.tag + ": kernel counts per step", "%d names, %d differ" % (
        len(pairs) + len(only_l) + len(only_i), len(mism)), "equal per name",
        "PASS" if pairs and not mism else "FAIL")

    # mean GPU time: the live side exact, the import's from the trace file
    # itself where given (the analyses see HTA's whole-us rounding)
    means = trace_means(a.trace) if a.trace else None
    total_live = sum(live[k][2] for k in pairs) or 1.0
    worst, worst_all, devs = (0.0, "-"), (0.0, "-"), []
    for k, m in pairs.items():
        name, c, s = live[k]
        lm = s / c if c else 0
        if means is not None and m in means:
            im = means[m][1]
        else:
            im = imp[m][2] / imp[m][1] if imp[m][1] else 0
        dev = abs(lm - im) / im * 100 if im else (0.0 if not lm else 100.0)
        share = s / total_live * 100
        devs.append((share, dev))
        print("mean %-60.60s live %10.3f us  import %10.3f us  dev %6.2f%%  share %5.1f%%"
              % (name, lm, im, dev, share))
        if dev > worst_all[0]:
            worst_all = (dev, name)
        if share >= a.min_share and dev > worst[0]:
            worst = (dev, name)
    major = sum(1 for s, _ in devs if s >= a.min_share)
    weighted = sum(s * d for s, d in devs) / (sum(s for s, _ in devs) or 1)
    add(a.results, a.tag + ": per-kernel mean GPU time", "max dev %.2f%% over %d kernels >= %g%% of GPU "
        "time (%s); all: max %.2f%%, time-weighted %.2f%%" % (worst[0], major, a.min_share,
                                                              worst[1][:60], worst_all[0], weighted),
        "<= %g%%" % a.tol_pct, "PASS" if major and worst[0] <= a.tol_pct else "FAIL")

    # temporal and idle
    tl, ti = first_rank(a.live_temporal), first_rank(a.import_temporal)
    if not tl or not ti:
        add(a.results, a.tag + ": temporal", "no GPU rank on one side", "<= %g pp" % a.tol_pp, "FAIL")
        return
    d = {k: abs(tl[k] - ti[k]) for k in ("idle_time_pctg", "compute_time_pctg",
                                          "non_compute_time_pctg")}
    print("temporal live: idle %.2f%% compute %.2f%% non-compute %.2f%% span %.0f us" % (
        tl["idle_time_pctg"], tl["compute_time_pctg"], tl["non_compute_time_pctg"], tl["kernel_time_us"]))
    print("temporal import: idle %.2f%% compute %.2f%% non-compute %.2f%% span %.0f us" % (
        ti["idle_time_pctg"], ti["compute_time_pctg"], ti["non_compute_time_pctg"], ti["kernel_time_us"]))
    add(a.results, a.tag + ": temporal", "idle %.2f vs %.2f%%, compute %.2f vs %.2f%% (max diff %.2f pp)" % (
        tl["idle_time_pctg"], ti["idle_time_pctg"], tl["compute_time_pctg"], ti["compute_time_pctg"],
        max(d.values())), "<= %g pp" % a.tol_pp, "PASS" if max(d.values()) <= a.tol_pp else "FAIL")
    il = idle_pct(a.live_idle, tl["kernel_time_us"])
    ii = idle_pct(a.import_idle, ti["kernel_time_us"])
    if not il or not ii:
        add(a.results, a.tag + ": idle", "no idle rows on one side", "<= %g pp" % a.tol_pp, "FAIL")
        return
    worst = (0.0, "-")
    for key in sorted(set(il) | set(ii), key=str):
        x, y = il.get(key, 0.0), ii.get(key, 0.0)
        print("idle stream %s %-12s live %6.2f%%  import %6.2f%% of the span" % (key[0], key[1], x, y))
        if abs(x - y) >= worst[0]:
            worst = (abs(x - y), "stream %s %s" % key)
    streams = "%d/%d streams" % (len({s for s, _ in il}), len({s for s, _ in ii}))
    add(a.results, a.tag + ": idle per stream and category", "max diff %.2f pp (%s; %s)" % (
        worst[0], worst[1], streams), "<= %g pp of the span" % a.tol_pp,
        "PASS" if worst[0] <= a.tol_pp else "FAIL")


def is_py(frame):
    return frame.endswith("_[p]")


def cmd_pyframes(a):
    """Launches of the kernels matching --kernel-regex: how many have Python
    frames under their kernel frame, how many a frame matching
    --python-regex; the heaviest such stacks, Python frames and kernel."""
    kre, pre = re.compile(a.kernel_regex), re.compile(a.python_regex)
    total = with_py = with_fn = 0
    stacks = collections.Counter()
    for frames, w in folded_lines(a.folded):
        top = frames[-1]
        if not top.endswith("_[G]") or not kre.search(top[:-4]):
            continue
        total += w
        py = [f for f in frames if is_py(f)]
        if py:
            with_py += w
            if any(pre.search(f[:-4]) for f in py):
                with_fn += w
            stacks[";".join(py[-6:] + [top[:80]])] += w
    for s, w in stacks.most_common(5):
        print("%7d %s" % (w, s))
    ok = total and with_py and with_fn >= a.min
    add(a.results, a.tag + ": Python frames above " + a.what + " launches",
        "%d of %d launches under Python frames, %d under /%s/" % (with_py, total, with_fn,
                                                                   a.python_regex),
        ">= %d under /%s/" % (a.min, a.python_regex), "PASS" if ok else "FAIL")


CUPTI_ERRORS = {1: "INVALID_PARAMETER", 2: "INVALID_DEVICE", 3: "INVALID_CONTEXT",
                7: "INVALID_OPERATION", 8: "OUT_OF_MEMORY", 9: "HARDWARE", 13: "NOT_READY",
                15: "NOT_INITIALIZED", 23: "DISABLED", 26: "HARDWARE_BUSY", 27: "NOT_SUPPORTED",
                35: "INSUFFICIENT_PRIVILEGES", 39: "MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
                43: "MIG_DEVICE_NOT_SUPPORTED"}


def pc_library(path):
    """The library's PC counters for the run (gpu_checks.sh saves the
    status entry of the program's pid: peer_list's or pc_closed's)."""
    if not path:
        return None
    try:
        return load_json(path) or None
    except (OSError, ValueError):
        return None


def pc_why_none(pl):
    """Why a run got no PC samples, from the library's counters."""
    if not pl:
        return "no PC counters from the library (pc not asked for, or it never connected)"
    err = ""
    if pl.get("errors"):
        e = pl.get("last_error", 0)
        err = "%d CUPTI errors, last %d (%s) from %s" % (
            pl["errors"], e, CUPTI_ERRORS.get(e, "?"), pl.get("last_error_call") or "?")
    if not pl.get("contexts_ever"):
        return "no CUDA context enabled for sampling (%s; refused %d)" % (
            err or "no error", pl.get("contexts_refused", 0))
    if not pl.get("getdata_calls"):
        return "GetData never called (%d drains)%s" % (pl.get("drains", 0), "; " + err if err else "")
    if not pl.get("pcs"):
        return ("CUPTI handed no PC in %d GetData calls (its totalSamples %d, non-user %d; "
                "%d PCs in the configured buffer; contexts %d ever, %d off)%s" % (
                    pl["getdata_calls"], pl.get("cupti_total_samples", 0),
                    pl.get("cupti_nonuser_samples", 0), pl.get("config_buffer_pcs", 0),
                    pl.get("contexts_ever", 0), pl.get("contexts_off", 0),
                    "; " + err if err else ""))
    return "the library read %d samples in %d PCs and sent %d (dropped %d)%s" % (
        pl.get("samples", 0), pl["pcs"], pl.get("sent", 0), pl.get("dropped", 0),
        "; " + err if err else "")


def cmd_pc(a):
    """PC samples in folded --weight stalls: their number (the program's own
    count where it knows it) and the share drawn with SASS text, which the
    daemon finds only when CUPTI's pcOffset is the offset in the function
    that nvdisasm -c prints."""
    kre = re.compile(a.kernel_regex) if a.kernel_regex else None
    total = sass = 0
    tops = collections.Counter()
    for frames, w in folded_lines(a.folded):
        if len(frames) < 3 or not frames[-1].endswith("_[g]"):
            continue
        kern, insn = frames[-3], frames[-2][:-4]
        if kre and not kre.search(kern):
            continue
        total += w
        if not re.fullmatch(r"\+0x[0-9a-f]+", insn):
            sass += w
        tops[";".join(frames[-3:])] += w
    for s, w in tops.most_common(5):
        print("%7d %s" % (w, s))
    want = a.program_samples
    ok = total > 0 and (want is None or total == want)
    pl = pc_library(a.library)
    add(a.results, a.tag + ": PC samples through the daemon", "%d%s%s" % (
        total, "" if want is None else " (the program sampled %d)" % want,
        "" if total else ": " + pc_why_none(pl)),
        "> 0" if want is None else "equal", "PASS" if ok else "FAIL")
    if pl:
        keys = ("samples sent dropped oom drains windows getdata_calls pcs cupti_total_samples "
                "cupti_nonuser_samples config_buffer_pcs names_held names_untracked "
                "contexts_ever contexts_off errors last_error last_error_call period_log2 "
                "enable_mode enables launch_ns getdata_ns").split()
        add(a.results, a.tag + ": the library's counters",
            " ".join("%s=%s" % (k, pl.get(k, "-")) for k in keys), "observed", "INFO")
    share = sass / total * 100 if total else 0.0
    if a.sass == "no":
        add(a.results, a.tag + ": pcOffset relative to the function (SASS found)", "%.1f%%" % share,
            "no nvdisasm", "SKIP")
    else:
        add(a.results, a.tag + ": pcOffset relative to the function (SASS found)",
            "%.1f%% of %d samples drawn with nvdisasm's instruction at that offset" % (share, total),
            ">= 95%", "PASS" if total and share >= 95 else "FAIL")


def med(xs):
    return statistics.median(xs) if xs else None


# The configurations of the library the cost checks run, their labels and
# what each isolates: one list for the scripts and these result lines.
VARIANTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cupti_variants.txt")
JUDGED, FLOOR = "cupti", "cupti-off"


def variants(path=VARIANTS):
    """[(label, steps, what, environment)] of cupti_variants.txt, in its order; [] when
    it cannot be read (the labels then name themselves)."""
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                if line.lstrip().startswith("#") or not line.strip():
                    continue
                w = [x.strip() for x in line.split("|")]
                if len(w) >= 4 and w[0]:
                    out.append((w[0], w[1].split(), w[3], w[2].split()))
    except OSError:
        pass
    return out


def labels_in_order(found, step, skip=()):
    """The labels found, those of the variants list first in its order."""
    listed = [v[0] for v in variants() if step in v[1]]
    rest = sorted(k for k in found if k not in listed)
    return [k for k in listed + rest if k in found and k not in skip]


def what_of(label):
    return {v[0]: v[2] for v in variants()}.get(label, label)


def idle_unsubscribes(path):
    """The libraries' idle unsubscribes that bench/gpu/real_cuda.sh's
    rounds report ("  cupti idle: unsubscribes N ..."), summed; None when
    the file has no such line (a daemon that does not count them)."""
    n = None
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if w[:3] == ["cupti", "idle:", "unsubscribes"] and len(w) > 3 and w[3].isdigit():
                n = (n or 0) + int(w[3])
    return n


def unsubscribing(label):
    """Whether the variant asks the library to let go of CUPTI between
    windows."""
    return any("GPUPROF_CUPTI_IDLE=unsubscribe" in v[3] for v in variants() if v[0] == label)


def paired(test, base, fn):
    """fn(test[r], base[r]) for each round r both ran, in round order."""
    rounds = sorted(set(test) & set(base), key=lambda r: (len(r), r))
    return [fn(test[r], base[r]) for r in rounds]


def spread(xs, fmt):
    """min..max of xs, as fmt."""
    return (fmt + ".." + fmt) % (min(xs), max(xs))


def against(x, floor):
    """Whether x lies outside the noise floor's range."""
    return "clear of the noise" if x < min(floor) or x > max(floor) else "within the noise"


def cost_runs(path):
    """{(MODE, API): {ROUND: (wall, cpu)}} of the per-run lines
    "MODE ROUND API ns_per_launch WALL cpu_ns_per_launch CPU"."""
    runs = collections.defaultdict(dict)
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 7 and w[3] == "ns_per_launch" and w[5] == "cpu_ns_per_launch":
                try:
                    runs[(w[0], w[2])][w[1]] = (float(w[4]), float(w[6]))
                except ValueError:
                    pass
    return runs


def cost_diff(runs, mode, api, base="with"):
    """(wall diffs, cpu diffs) of MODE - BASE, paired by round."""
    t, b = runs.get((mode, api), {}), runs.get((base, api), {})
    return (paired(t, b, lambda x, y: x[0] - y[0]), paired(t, b, lambda x, y: x[1] - y[1]))


def cmd_cost(a):
    """Per-run lines of bench/gpu/real_cuda.sh. Runs differ from process
    to process by as much as the effects, and drift over a round, so each
    figure is the median over the rounds of the per-round difference of a
    configuration and MODE with (the daemon's probes alone) in the same
    round, with the range of those differences and the noise floor: the
    same for cupti-off (the library loaded but off, which should add
    nothing), and whether the figure lies outside the floor's range. cupti (the library's defaults) is judged; the others are
    shown (what each part of the library costs)."""
    runs = cost_runs(a.file)
    modes = labels_in_order({m for m, _ in runs}, "cost", skip=("with", "without"))
    unsubs = idle_unsubscribes(a.file)
    found = False
    for api in ("rt", "drv"):
        if not runs.get(("with", api)):
            continue
        w, c = cost_diff(runs, "without", api, base="with")
        if w:  # without - with: the probes' cost is its negative
            print("%s: the launch probes add %.0f ns wall, %.0f ns cpu per launch (median of %d "
                  "rounds, %s ns)" % (api, -med(w), -med(c), len(w), spread([-x for x in w], "%.0f")))
        floor, _ = cost_diff(runs, FLOOR, api)
        fl = "; noise floor (library off - with) %.0f ns, %s over %d rounds" % (
            med(floor), spread(floor, "%.0f"), len(floor)) if floor else "; no noise floor (no cupti-off runs)"
        for mode in modes:
            w, c = cost_diff(runs, mode, api)
            if not w:
                continue
            found = True
            print("%s %s - with, per round: %s" % (api, mode, " ".join("%.0f" % x for x in w)))
            if a.judge == "no":
                verdict = "SKIP"
            elif mode != JUDGED:
                verdict = "INFO"
            else:
                verdict = "PASS" if med(w) <= a.target_ns else "FAIL"
            add(a.results, "launch cost beyond the probes, %s, %s" % (what_of(mode), api),
                "%.0f ns wall, %.0f ns cpu (median of %d rounds' differences to with, %s ns%s)" % (
                    med(w), med(c), len(w), spread(w, "%.0f"),
                    "" if mode == FLOOR else fl + (": " + against(med(w), floor) if floor else ""))
                + ("; the libraries never let the subscription go (%s)" % (
                    "no idle unsubscribe in any round" if unsubs == 0 else "not counted by this daemon")
                   if unsubscribing(mode) and not unsubs else ""),
                "<= %d ns" % a.target_ns, verdict)
    if not found:
        add(a.results, "launch cost beyond the probes", "no rounds with and without the library in "
            + a.file, "<= %d ns" % a.target_ns, "SKIP" if a.judge == "no" else "FAIL")


def metric_runs(path, metric):
    """{LABEL: {ROUND: X}} of the lines "LABEL METRIC X": the round is
    the latest "round R ..." line's, or where a file has none (files of
    older runs, interleaved one run of each label a round) the label's
    own count of runs."""
    runs = collections.defaultdict(dict)
    count = collections.Counter()
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) >= 2 and w[0] == "round" and w[1].isdigit():
                cur = w[1]
                continue
            if len(w) >= 3 and w[1] == metric:
                try:
                    x = float(w[2])
                except ValueError:
                    continue
                count[w[0]] += 1
                runs[w[0]][cur if cur is not None else str(count[w[0]])] = x
    return runs


def cmd_ratio(a):
    """Throughput lines "LABEL METRIC X" (and "round R ..." lines): the
    median over the rounds of TEST / BASE of the same round, with their
    range, and the noise floor: FLOOR / BASE the same way (the library
    loaded but off). "{what}" in NAME: what TEST isolates (the variants
    list)."""
    a.name = a.name.replace("{what}", what_of(a.test))
    runs = metric_runs(a.file, a.metric)
    b, t = runs.get(a.base, {}), runs.get(a.test, {})

    def pcts_of(test):
        # per round, test as a percentage of the base (rounds without a base figure left out)
        return [p for p in paired(test, b, lambda x, y: x / y * 100 if y else None) if p is not None]

    pcts = pcts_of(t)
    if not pcts:
        # a line only shown stays shown: its runs failing is not a target missed
        add(a.results, a.name, "no rounds with both %s and %s runs of %s" % (a.base, a.test, a.metric),
            ">= %g%%" % a.min_pct, {"no": "SKIP", "info": "INFO"}.get(a.judge, "FAIL"))
        return
    pct = med(pcts)
    print("%s: %s / %s per round: %s" % (a.metric, a.test, a.base, " ".join("%.2f%%" % p for p in pcts)))
    detail = "median of %d rounds' ratios, %s; medians %s %.1f vs %s %.1f" % (
        len(pcts), spread(pcts, "%.2f%%"), a.test, med(list(t.values())), a.base, med(list(b.values())))
    if a.floor and a.floor != a.test:
        fl = pcts_of(runs.get(a.floor, {}))
        detail += "; noise floor (%s / %s) %.2f%%, %s: %s" % (
            a.floor, a.base, med(fl), spread(fl, "%.2f%%"), against(pct, fl)) \
            if fl else "; no noise floor (no %s runs)" % a.floor
    if a.as_ == "slowdown":
        value, target = "%.2f%% slower (%s)" % (100 - pct, detail), "<= %g%%" % (100 - a.min_pct)
    else:
        value, target = "%.2f%% (%s)" % (pct, detail), ">= %g%%" % a.min_pct
    verdict = {"no": "SKIP", "info": "INFO"}.get(a.judge, "PASS" if pct >= a.min_pct else "FAIL")
    add(a.results, a.name, value, target, verdict)


def cmd_graph(a):
    """What a CUDA graph launch gives with GRAPH_TRACE on: graph records and
    whether its nodes' kernels still arrive one by one."""
    g = None
    with open(a.program, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[0] == "graph" and w[1] == "count":
                g = int(w[2])
    nodes = program_lines(a.program, "graph_node_kernel")
    rows = kernel_rows(a.kernels)
    if g is None:
        add(a.results, a.tag + ": GRAPH_TRACE vs per-node records", "the program launched no graph",
            "observed", "SKIP")
        return
    launches = rows.get(norm("Graph Launch"), (None, 0, 0))[1]
    shown = demangle([n for n, _, _ in nodes])
    got = sum(rows.get(norm(shown[n]), (None, 0, 0))[1] for n, _, _ in nodes)
    want = sum(c for _, c, _ in nodes)
    if not nodes:
        seen = "%d graph records for %d graph launches" % (launches, g)
    elif got == want:
        seen = "%d graph records for %d launches, and all %d node kernels one by one: GRAPH_TRACE adds, " \
            "does not replace" % (launches, g, want)
    elif got == 0:
        seen = "%d graph records for %d launches, no node kernel (0 of %d): GRAPH_TRACE replaces them" % (
            launches, g, want)
    else:
        seen = "%d graph records for %d launches, %d of %d node kernels" % (launches, g, got, want)
    add(a.results, a.tag + ": GRAPH_TRACE vs per-node records", seen, "observed", "INFO")


def cmd_events(a):
    """CUDA event records and the waits on them in a live capture: the
    records that arrived (N, the capture's or the daemon's count) against
    the program's "events records R waits W synchronizes S" line; each
    wait of the program (Stream Wait Event, Event Sync rows of the Chrome
    export) linked to the correlation id of a cudaEventRecord row; and
    sync-dependency edges in the critical-path graph (at least one per
    wait) and on the critical path itself."""
    want = None
    with open(a.program, errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 7 and w[0] == "events" and w[1] == "records":
                want = (int(w[2]), int(w[4]), int(w[6]))
    if want is None:
        for n in ("event records", "waits linked to their cudaEventRecord",
                  "sync-dependency edges on the critical path"):
            add(a.results, "%s: %s" % (a.tag, n), "the program printed no events line", "-", "FAIL")
        return
    rec, waits, syncs = want
    add(a.results, a.tag + ": event records", "%d of %d" % (a.records, rec), "equal",
        "PASS" if a.records == rec else "FAIL")
    ev = load_json(a.chrome)
    ev = ev.get("traceEvents", []) if isinstance(ev, dict) else ev
    records = {e.get("args", {}).get("correlation") for e in ev if e.get("name") == "cudaEventRecord"}
    rows = collections.Counter()
    for e in ev:
        n = e.get("name")
        if n not in ("Stream Wait Event", "Event Sync"):
            continue
        c = e.get("args", {}).get("wait_on_cuda_event_record_corr_id", -1)
        rows[(n, c is not None and c != -1 and c in records)] += 1
    linked = (rows[("Stream Wait Event", True)], rows[("Event Sync", True)])
    unlinked = rows[("Stream Wait Event", False)] + rows[("Event Sync", False)]
    print("wait rows: %s; cudaEventRecord rows %d" % (dict(rows), len(records)))
    add(a.results, a.tag + ": waits linked to their cudaEventRecord",
        "stream waits %d of %d, event synchronizes %d of %d, unlinked rows %d" % (
            linked[0], waits, linked[1], syncs, unlinked),
        "every wait of the program linked",
        "PASS" if linked[0] >= waits and linked[1] >= syncs else "FAIL")
    try:
        in_graph, on_path, length = sync_edges(load_json(a.critpath))
    except (OSError, ValueError) as e:
        in_graph, on_path, length = 0, 0, 0.0
        print("no critical path: %s" % e)
    # Whether the longest path runs through a wait depends on the timing
    # (and only the first max_edges of its edges are listed): shown, not
    # judged; the graph must have an edge for every wait.
    add(a.results, a.tag + ": sync-dependency edges in the critical-path graph",
        "%d in the graph, %d among the path's listed edges (length %.0f us)" % (
            in_graph, on_path, length),
        ">= %d in the graph (one per wait)" % (waits + syncs),
        "PASS" if in_graph >= waits + syncs else "FAIL")


def cmd_added(a):
    """Lines "LABEL METRIC X": what TEST adds to BASE, the median of the
    rounds' differences (paired as cmd_ratio pairs them), shown."""
    runs = metric_runs(a.file, a.metric)
    b, t = runs.get(a.base, {}), runs.get(a.test, {})
    d = paired(t, b, lambda x, y: x - y)
    if not d:
        add(a.results, a.name, "no %s/%s runs of %s" % (a.base, a.test, a.metric), "shown", "SKIP")
        return
    add(a.results, a.name, "%+.0f ns (median of %d rounds' differences, %s; medians %s %.0f, %s %.0f %s)" % (
        med(d), len(d), spread(d, "%+.0f"), a.test, med(list(t.values())), a.base, med(list(b.values())),
        a.metric), "shown", "INFO" if a.judge == "yes" else "SKIP")


def cmd_summary(a):
    rows = []
    try:
        with open(a.results, errors="replace") as f:
            rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    except OSError:
        pass
    rows = [r + [""] * (4 - len(r)) for r in rows]
    info = [r for r in rows if r[3] == "INFO"]
    targets = [r for r in rows if r[3] != "INFO"]
    if info:
        print("CUPTI BEHAVIOURS")
        for n, v, _, _ in info:
            print("  %s: %s" % (n, v))
    print("SUMMARY")
    for n, v, t, verdict in targets:
        print("  %-4s %s: %s [target %s]" % (verdict, n, v, t))
    c = collections.Counter(r[3] for r in targets)
    print("  %d PASS, %d FAIL, %d SKIP" % (c["PASS"], c["FAIL"], c["SKIP"]))
    return 1 if c["FAIL"] else 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def sp(name, fn):
        s = sub.add_parser(name)
        s.add_argument("--results", required=True)
        s.add_argument("--tag", default="")
        s.set_defaults(fn=fn)
        return s
    s = sp("kernels", cmd_kernels)
    s.add_argument("--program", required=True)
    s.add_argument("--kernels", required=True)
    s.add_argument("--folded", required=True)
    s.add_argument("--join")
    s = sp("analyses", cmd_analyses)
    s.add_argument("--dir", required=True)
    s = sp("parity", cmd_parity)
    for k in ("kernels", "temporal", "idle"):
        s.add_argument("--live-" + k, required=True)
        s.add_argument("--import-" + k, required=True)
    s.add_argument("--trace")
    s.add_argument("--steps-live", type=int, default=1)
    s.add_argument("--steps-import", type=int, default=1)
    s.add_argument("--tol-pct", type=float, default=2.0)
    s.add_argument("--tol-pp", type=float, default=2.0)
    s.add_argument("--min-share", type=float, default=1.0,
                   help="kernels with at least this %% of the live GPU time are held to --tol-pct")
    s.add_argument("--live-critpath")
    s.add_argument("--import-critpath")
    s.add_argument("--sync-expected", choices=("yes", "no"), default="yes",
                   help="no: the trace was written without sync rows (the line SKIPs)")
    s = sp("pyframes", cmd_pyframes)
    s.add_argument("--folded", required=True)
    s.add_argument("--kernel-regex", required=True)
    s.add_argument("--python-regex", default=".")
    s.add_argument("--what", default="GEMM")
    s.add_argument("--min", type=int, default=1)
    s = sp("pc", cmd_pc)
    s.add_argument("--folded", required=True)
    s.add_argument("--program-samples", type=int)
    s.add_argument("--kernel-regex")
    s.add_argument("--sass", choices=("yes", "no"), default="yes")
    s.add_argument("--library", help="the program's pc_library from status (JSON)")
    s = sp("cost", cmd_cost)
    s.add_argument("--file", required=True)
    s.add_argument("--target-ns", type=int, default=1000)
    s.add_argument("--judge", choices=("yes", "no"), default="yes")
    s = sp("ratio", cmd_ratio)
    s.add_argument("--file", required=True)
    s.add_argument("--metric", required=True)
    s.add_argument("--base", required=True)
    s.add_argument("--test", required=True)
    s.add_argument("--min-pct", type=float, required=True)
    s.add_argument("--as", dest="as_", choices=("ratio", "slowdown"), default="ratio")
    s.add_argument("--floor", help="the label whose ratio to BASE is the noise floor (cupti-off)")
    s.add_argument("--judge", choices=("yes", "no", "info"), default="yes")
    s.add_argument("--name", required=True)
    s = sp("graph", cmd_graph)
    s.add_argument("--program", required=True)
    s.add_argument("--kernels", required=True)
    s = sp("events", cmd_events)
    s.add_argument("--program", required=True)
    s.add_argument("--records", type=int, required=True)
    s.add_argument("--chrome", required=True)
    s.add_argument("--critpath", required=True)
    s = sp("added", cmd_added)
    s.add_argument("--file", required=True)
    s.add_argument("--metric", required=True)
    s.add_argument("--base", required=True)
    s.add_argument("--test", required=True)
    s.add_argument("--name", required=True)
    s.add_argument("--judge", choices=("yes", "no"), default="yes",
                   help="no: timings of a stand-in (SKIP rather than INFO)")
    s = sp("summary", cmd_summary)
    a = p.parse_args(argv)
    if a.tag == "" and a.cmd not in ("summary", "cost", "ratio", "added"):
        a.tag = a.cmd
    try:
        return a.fn(a) or 0
    except InputError as e:
        # a result line under the step's own name, never a traceback: the
        # step's targets then say why they were not judged
        add(a.results, (a.tag or a.cmd) + ": inputs", str(e), "readable JSON", "FAIL")
        return 1


if __name__ == "__main__":
    sys.exit(main())
