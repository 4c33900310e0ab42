# SPDX-License-Identifier: MIT
"""CPU-bound Python with known call chains, for the live tests of Python
frames in sampled stacks (tests/integration/test_pyframes_live.py), which
find the lines below by the "# line:" marks. Usage: busy.py SECONDS MODE,
MODE one of chain, threads, zlib, json, async; busy.py SECONDS deep DEPTH (a
chain DEPTH Python frames deep); or busy.py SECONDS mix OUT (an
in-process sampler writes its stacks to OUT); or busy.py 0 launch LIBCUDA: load
that (fake) CUDA driver through ctypes, print "ready", and on "go" from
stdin name a kernel and launch it 30 times from launch_a and 50 from launch_b, print "done"
and exit when stdin closes. Prints "ready" once running."""
import asyncio
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


async def coro_b(n):
    return hot(n)  # line: coro_b


async def coro_a(end):
    while time.time() < end:
        await coro_b(20000)  # line: coro_a
        await asyncio.sleep(0)  # the loop's turn: the idle task could run


async def idle_waiter(ev):
    await ev.wait()  # suspended for the whole run


async def amain(end):
    """coro_a runs as a task of its own while amain awaits it and
    idle_waiter awaits an event: only coro_a -> coro_b runs."""
    ev = asyncio.Event()
    idle = asyncio.create_task(idle_waiter(ev))
    await asyncio.create_task(coro_a(end))
    ev.set()
    await idle


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


def mix_a():
    return hot(4000)


def mix_c():
    return hot(6000)


def mix_b():
    return mix_c() + hot(2000)


def mix(end, out):
    """A stationary mix of chains, and an in-process sampler: a thread that
    reads the main thread's frames every millisecond (sys._current_frames(),
    the interpreter's own view) and writes each stack, root first, as
    name:line frames, to out."""
    main_id = threading.get_ident()
    seen = {}
    # the sampler asks for the GIL after each 1 ms sleep; the main thread
    # gives it up within 0.1 ms of being asked (the default is 5 ms: a
    # coarse, uneven view), at its next eval-breaker check
    sys.setswitchinterval(0.0001)

    def sampler():
        while time.time() < end:
            f = sys._current_frames().get(main_id)
            names = []
            while f is not None:
                names.append("%s:%d" % (f.f_code.co_name, f.f_lineno))
                f = f.f_back
            key = ";".join(reversed(names))
            seen[key] = seen.get(key, 0) + 1
            time.sleep(0.001)
    t = threading.Thread(target=sampler, name="sampler")
    t.start()
    while time.time() < end:
        mix_a()
        mix_b()
    t.join()
    with open(out, "w") as f:
        for k, n in seen.items():
            f.write("%s %d\n" % (k, n))


def deep(depth, end):
    if depth > 1:
        return deep(depth - 1, end)
    while time.time() < end:
        hot(20000)


def main():
    end = time.time() + float(sys.argv[1])
    mode = sys.argv[2]
    if mode == "deep":
        sys.setrecursionlimit(10000)
        print("ready", flush=True)
        # the chain below deep: <module>, main, then DEPTH frames of deep
        deep(int(sys.argv[3]) - 2, end)
        return
    if mode == "mix":
        print("ready", flush=True)
        mix(end, sys.argv[3])
        return
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
    elif mode == "async":
        asyncio.run(amain(end))  # line: async_main


if __name__ == "__main__":
    main()
