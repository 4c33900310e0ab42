# SPDX-License-Identifier: MIT
"""Stacks from `perf script` and from gpuprof's folded output, brought to one
comparable form: a tuple of user function names, outermost first.

Used by test_unwind_accuracy.py, where perf (`perf record --call-graph
dwarf`) is the oracle for gpuprof's user-stack unwinding. Pure functions,
tested there on canned text (no perf, no root needed).

The comparable form ("a normalized stack"):

* user frames only: perf's kernel frames (dso `[kernel.kallsyms]`, or any
  address in the upper half) and gpuprof's (after the `-` separator, or
  all of them with `--no-kernel`) are dropped;
* a frame is the function's symbol name, never an offset: perf's
  `sym+0x1f` (the `symoff` field) and gpuprof's fallback `lib.so+0x1a2b`
  (an address no symbol covers) are cut to the symbol, or to UNKNOWN when
  there is none;
* every frame a tool could not name is UNKNOWN: perf's `[unknown]`,
  gpuprof's `[unknown]` and `object+0xOFF`; so is a frame in a special
  mapping (`[vdso]`), which gpuprof names by the mapping alone and perf by
  the vDSO's symbols;
* symbol versions are dropped (`__libc_start_main@@GLIBC_2.34`), and
  `@plt` is kept (a PLT stub is a different place than its target);
* inline frames are not expanded on either side (perf runs with
  `--no-inline`, and inline entries perf prints anyway, `(inlined)`, are
  dropped): both tools then name the function whose machine code holds the
  address, from the symbol table;
* names are compared mangled (perf `--no-demangle`, the daemon with
  `symbols.demangle = false`), so demangler formatting never counts;
* names that label the same address of the same object (glibc's
  `__GI___qsort_r` and `qsort_r`) are the same function: SymbolAliases maps
  each to one representative.
"""

import os
import re
import subprocess

UNKNOWN = "[unknown]"
TRUNCATED = "[truncated]"
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_KERNEL_SPLIT = 0xffff800000000000


def strip_version(name):
    """`foo@@GLIBC_2.34` -> `foo`; `foo@plt` stays (perf's PLT stub names)."""
    base, at, ver = name.partition("@")
    if not at or ver == "plt":
        return name
    return base


def perf_frame_name(sym):
    """One perf `sym` field -> a frame name (offset cut, unknown mapped)."""
    sym = sym.strip()
    if not sym or sym == UNKNOWN:
        return UNKNOWN
    sym = _OFFSET.sub("", sym)
    return strip_version(sym) if sym else UNKNOWN


def our_frame_name(name):
    """One gpuprof folded frame -> a frame name. The symbolizer's fallback
    for an address no symbol covers is `basename+0xOFF`, `[unknown]` for one
    in no mapping, and the mapping's name for a special mapping (`[vdso]`)
    (docs/symbolization.md): all are UNKNOWN. The unwinder's own mark,
    `[truncated]`, stays what it is."""
    if not name or _OFFSET.search(name) or (
            name.startswith("[") and name.endswith("]") and name != TRUNCATED):
        return UNKNOWN
    return strip_version(name)


def parse_perf_script(text):
    """`perf script -F comm,tid,ip,sym,dso` (optionally with symoff) output
    -> list of samples (comm, tid, frames, dsos): frames outermost first,
    user frames only, already passed through perf_frame_name; dsos the
    object path of each frame (None when perf gives none).

    A sample is a header line (`comm tid`, comm may hold spaces) followed by
    indented callchain lines `ADDR SYM (DSO)`, leaf first, ended by a blank
    line or the next header."""
    samples = []
    cur = None

    def flush():
        if cur is not None:
            comm, tid, frames, dsos = cur
            frames.reverse()
            dsos.reverse()
            samples.append((comm, tid, tuple(frames), tuple(dsos)))

    for line in text.splitlines():
        if not line.strip():
            flush()
            cur = None
            continue
        if not line[0].isspace():
            flush()
            head = line.rstrip().rstrip(":").split()
            tid = int(head[-1]) if head and head[-1].isdigit() else -1
            comm = " ".join(head[:-1]) if tid >= 0 else " ".join(head)
            cur = (comm, tid, [], [])
            continue
        if cur is None:
            continue
        body = line.strip()
        if body.endswith("(inlined)"):
            continue  # perf's DWARF inline expansion; gpuprof names the physical function
        addr_s, _, rest = body.partition(" ")
        try:
            addr = int(addr_s, 16)
        except ValueError:
            continue
        dso = None
        if rest.endswith(")") and " (" in rest:
            rest, _, dso = rest.rpartition(" (")
            dso = dso[:-1]
        elif rest.startswith("(") and rest.endswith(")"):
            rest, dso = "", rest[1:-1]
        if addr >= _KERNEL_SPLIT or (dso and dso.startswith("[kernel")) or (
                dso and dso.endswith(".ko")):
            continue
        # a special mapping's frames ([vdso], [vsyscall]): gpuprof names
        # them by the mapping only, so neither side's name counts
        special = bool(dso) and dso.startswith("[") and dso.endswith("]")
        cur[2].append(UNKNOWN if special else perf_frame_name(rest))
        cur[3].append(None if dso in (None, "") or special else dso)
    flush()
    return samples


def parse_folded(text):
    """gpuprof folded text (`comm;f1;...;leaf COUNT`, fetched with
    `--no-kernel`) -> {(root, frames): count}: root is the comm (or
    comm-PID / comm-TID) frame, frames the user frames through
    our_frame_name. A `-` separator and the kernel frames after it are
    dropped in case the output has them."""
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            raise ValueError("folded line without a count: %r" % line)
        parts = stack.split(";")
        root, frames = parts[0], parts[1:]
        if "-" in frames:
            frames = frames[:frames.index("-")]
        key = (root, tuple(our_frame_name(f) for f in frames))
        out[key] = out.get(key, 0) + int(count)
    return out


def cut_at_anchor(frames, anchors):
    """The stack from its outermost anchor (main, a thread's start routine)
    down to the leaf, and whether it had one. Frames above the anchor
    (_start, __libc_start_call_main, start_thread, clone3) are named
    differently by different symbol sources and are not under test."""
    for i, f in enumerate(frames):
        if f in anchors:
            return tuple(frames[i:]), True
    return tuple(frames), False


class SymbolAliases:
    """Names that label one address of one object map to one representative
    (the smallest name, so both tools' choices meet). Built from `nm` of
    each object and of its separate debug file (/usr/lib/debug/.build-id),
    the same symbol sources perf and gpuprof read. A name defined at more
    than one place (a static `cmp` in two files) is left alone."""

    def __init__(self, paths, debug_dir="/usr/lib/debug"):
        self.map = {}
        at = {}     # (path, addr) -> names
        where = {}  # name -> {(path, addr)}
        for path in sorted(set(p for p in paths if p and os.path.isfile(p))):
            for f in [path] + self._debug_files(path, debug_dir):
                for addr, name in self._nm(f):
                    loc = (path, addr)
                    at.setdefault(loc, set()).add(name)
                    where.setdefault(name, set()).add(loc)
        for name, locs in where.items():
            if len(locs) == 1:
                self.map[name] = min(at[next(iter(locs))])

    @staticmethod
    def _debug_files(path, debug_dir):
        p = subprocess.run(["readelf", "-n", path], capture_output=True, text=True)
        m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout)
        if not m:
            return []
        bid = m.group(1)
        f = os.path.join(debug_dir, ".build-id", bid[:2], bid[2:] + ".debug")
        return [f] if os.path.isfile(f) else []

    @staticmethod
    def _nm(path):
        syms = []
        for args in (["nm", "--defined-only"], ["nm", "--defined-only", "-D"]):
            p = subprocess.run(args + [path], capture_output=True, text=True)
            for line in p.stdout.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "TtWwiI":
                    syms.append((int(parts[0], 16), strip_version(parts[2])))
        return syms

    def canon(self, name):
        return self.map.get(name, name)

    def stack(self, frames):
        return tuple(self.canon(f) for f in frames)
