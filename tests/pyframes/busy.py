# SPDX-License-Identifier: MIT
"""CPU-bound Python with known call chains, for the live tests of Python
frames in sampled stacks (tests/integration/test_pyframes_live.py), which
find the lines below by the "# line:" marks. Usage: busy.py SECONDS MODE,
MODE one of chain, threads, zlib, json; or busy.py 0 launch LIBCUDA: load
that (fake) CUDA driver through ctypes, print "ready", and on "go" from
stdin name a kernel and launch it 30 times from launch_a and 50 from launch_b, print "done"
and exit when stdin closes. Prints "ready" once running."""
import json
import sys
import threading
import time
import zlib


def hot(n):
    s = 0
    for i in range(n):  # line: hot
        s += i * i
    return s


def middle():
    return hot(20000)  # line: middle


def outer(end):
    while time.time() < end:
        middle()  # line: outer


def t_hot(n):
    s = 1
    for i in range(n):  # line: t_hot
        s = (s * 7 + i) % 1000003
    return s


def t_outer(end):
    while time.time() < end:
        t_hot(20000)  # line: t_outer


def z_caller(end):
    data = bytes(range(256)) * 40000
    while time.time() < end:
        zlib.compress(data, 9)  # line: z_caller


def j_caller(end):
    obj = [{"k%d" % i: [i, str(i), i * 0.5]} for i in range(20000)]
    while time.time() < end:
        json.dumps(obj)  # line: j_caller


def launch_one(cu, fn):
    return cu.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None)  # line: launch_one


def launch_a(cu, fn):
    for _ in range(30):
        launch_one(cu, fn)  # line: launch_a


def launch_b(cu, fn):
    for _ in range(50):
        launch_one(cu, fn)  # line: launch_b


def launches(lib):
    import ctypes
    cu = ctypes.CDLL(lib)
    cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    fn = ctypes.c_void_p()
    print("ready", flush=True)
    if sys.stdin.readline().strip() == "go":
        # named once the daemon's probes are in (after "go")
        if cu.cuModuleGetFunction(ctypes.byref(fn), None, b"py_kernel") != 0:
            sys.exit("cuModuleGetFunction failed")
        launch_a(cu, fn)
        launch_b(cu, fn)
        print("done", flush=True)
    sys.stdin.read()


def main():
    end = time.time() + float(sys.argv[1])
    mode = sys.argv[2]
    if mode == "launch":
        launches(sys.argv[3])
        return
    print("ready", flush=True)
    if mode == "chain":
        outer(end)
    elif mode == "threads":
        t = threading.Thread(target=t_outer, args=(end,), name="worker")
        t.start()
        outer(end)
        t.join()
    elif mode == "zlib":
        z_caller(end)
    elif mode == "json":
        j_caller(end)


if __name__ == "__main__":
    main()
