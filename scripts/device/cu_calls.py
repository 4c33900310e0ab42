# SPDX-License-Identifier: MIT
"""Which libcuda entry points does a program call? Puts a tracefs uprobe on
every exported cu* function of the real libcuda.so.1, runs the command,
and prints the calls per function (investigation aid for the launch
probes' naming hooks; needs root and tracefs).
Usage: cu_calls.py LIBCUDA CMD..."""
import collections
import os
import struct
import subprocess
import sys

T = "/sys/kernel/tracing"
# fetchargs (x86-64) for the calls whose arguments are printed in order
ARGS = {
    "cuLibraryGetKernel": "out=%di lib=%si name=+0(%dx):string",
    "cuModuleGetFunction": "out=%di mod=%si name=+0(%dx):string",
    "cuKernelGetFunction": "out=%di kernel=%si",
    "cuLaunchKernelEx": "f=%si",
    "cuLaunchKernel": "f=%di",
    "cuGetProcAddress_v2": "sym=+0(%di):string ver=%si",
    "cuGetExportTable": "out=%di",
    "cuLibraryLoadData": "out=%di",
    "cuKernelGetAttribute": "attr=%si kernel=%dx",
    "cuFuncGetAttribute": "attr=%si f=%dx",
    "cuKernelSetAttribute": "attr=%di kernel=%dx",
    "cuOccupancyMaxActiveClusters": "f=%si",
}


def dynsyms(path):
    """[(name, file offset)] of the defined FUNC symbols in .dynsym"""
    d = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", d, 0x3A)
    phoff, = struct.unpack_from("<Q", d, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", d, 0x36)
    loads = []
    for i in range(phnum):
        p_type, _, p_off, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", d, phoff + i * phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_off, p_filesz))
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for s in secs:
        if s[1] != 11:  # SHT_DYNSYM
            continue
        strtab = secs[s[6]]
        for j in range(s[5] // 24):
            st_name, st_info, _, st_shndx, st_value, _ = struct.unpack_from("<IBBHQQ", d, s[4] + j * 24)
            if st_shndx == 0 or (st_info & 0xF) != 2:
                continue
            e = d.index(b"\0", strtab[4] + st_name)
            name = d[strtab[4] + st_name:e].decode()
            for va, off, sz in loads:
                if va <= st_value < va + sz:
                    out.append((name, st_value - va + off))
                    break
    return out


def w(path, s, append=False):
    """os.write: Python's append mode seeks, which tracefs refuses"""
    fd = os.open(os.path.join(T, path), os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC))
    try:
        os.write(fd, s.encode())
    finally:
        os.close(fd)


def main():
    lib = os.path.realpath(sys.argv[1])
    if not os.path.exists(T + "/uprobe_events"):
        subprocess.call(["mount", "-t", "tracefs", "nodev", T])
    syms = sorted({n: o for n, o in dynsyms(lib) if n.startswith(os.environ.get("CU_PREFIX", "cu"))}.items())
    w("tracing_on", "0")
    w("uprobe_events", "")
    names = {}
    for i, (n, off) in enumerate(syms):
        ev = "c%d" % i
        names[ev] = n
        try:
            w("uprobe_events", "p:gpdcu/%s %s:0x%x %s\n" % (ev, lib, off, ARGS.get(n, "")), True)
        except OSError as e:
            print("probe", n, e)
    w("buffer_size_kb", "65536")
    w("trace", "")
    w("events/gpdcu/enable", "1")
    w("tracing_on", "1")
    p = subprocess.run(sys.argv[2:])
    w("tracing_on", "0")
    counts = collections.Counter()
    seq = []
    with open(os.path.join(T, "trace")) as tr:
        for line in tr:
            # "comm-pid [cpu] flags ts: c12: (0x7f...)"
            f = line.split()
            if line.startswith("#") or len(f) < 6:
                continue
            i = next((i for i, t in enumerate(f) if t.endswith(":") and t[:-1] in names), None)
            ev = f[i][:-1] if i is not None else None
            if ev in names:
                counts[names[ev]] += 1
                if names[ev] in ARGS and names[ev] != "cuLaunchKernel":
                    seq.append("%s %s %s" % (f[0], names[ev], " ".join(f[i + 2:])))
    w("events/gpdcu/enable", "0")
    w("uprobe_events", "")
    print("rc", p.returncode, "probes", len(syms))
    procs = collections.Counter(x.split(" ", 2)[1] + " " + x.split("sym=")[1].split()[0]
                                for x in seq if "cuGetProcAddress" in x)
    print("cuGetProcAddress_v2 symbols:", " ".join(sorted(k.split()[1].strip('"') for k in procs)))
    for x in seq:
        if "cuGetProcAddress" not in x:
            print(x[:300])
    for n, c in sorted(counts.items(), key=lambda x: -x[1]):
        print("%8d %s" % (c, n))


main()
