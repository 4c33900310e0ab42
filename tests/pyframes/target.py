# SPDX-License-Identifier: MIT
# The live target of test_pyframes: the main thread blocks in
# outer -> middle -> hot, a worker thread sleeps (GIL released) in
# w_outer -> map() -> w_mid -> w_inner, a third runs coroutines
# c_outer -> c_inner under asyncio (blocking in time.sleep), and a reporter thread writes what the interpreter
# itself sees of both (sys._current_frames) once both sit on their
# blocking lines, and of itself (holding the GIL), then stops the whole
# process with SIGSTOP, so the reader sees exactly the same frames.
# It also lists, for code objects that start with a prologue, the offsets
# at which a frame is still in it ("P" lines), each of which must read as
# the function's first line.
import asyncio
import dis
import os
import signal
import sys
import threading
import time

OUT = sys.argv[1]
MODULE_CODE = sys._getframe().f_code
gate = threading.Lock()
gate.acquire()  # never released: the main thread blocks on it


def w_inner():
    time.sleep(1000)


def w_mid(_):
    w_inner()


def w_outer():
    list(map(w_mid, [0]))  # through C: a second interpreter activation


async def c_inner():
    time.sleep(1000)


async def c_outer():
    await c_inner()


def hot():
    gate.acquire()


def middle():
    hot()


def outer():
    middle()


def p_closure():  # MAKE_CELL (3.11+)
    x = 1

    def p_inner():  # COPY_FREE_VARS (3.11+)
        return x
    return p_inner


def p_gen():  # GEN_START (3.10), RETURN_GENERATOR + POP_TOP (3.11+)
    yield 1


class PKlass:  # the body makes the __class__ cell (3.11+)
    def m(self):
        return super().m()


def prologue(code):
    """Offsets of a frame not started or still in code's prologue: -1,
    then every instruction before RESUME (3.11+) or, on 3.10, before the
    first one with a line."""
    offs = [-1]
    if sys.version_info < (3, 10):
        return offs  # co_lnotab gives every instruction a line
    lines = dict((s, l) for s, _, l in code.co_lines()) if hasattr(code, "co_lines") else {}
    for ins in dis.get_instructions(code):
        if ins.opname == "RESUME" or (sys.version_info < (3, 11) and lines.get(ins.offset)):
            break
        offs.append(ins.offset)
    return offs


def prologue_lines():
    codes = [p_closure.__code__, p_closure().__code__, p_gen.__code__, PKlass.m.__code__]
    codes += [c for c in MODULE_CODE.co_consts if getattr(c, "co_name", None) == "PKlass"]
    out = []
    for code in codes:
        gen = 1 if code.co_flags & 0x20 else 0
        out.append("P %d %d %d %s\n" % (id(code), code.co_firstlineno, gen,
                                         " ".join(map(str, prologue(code)))))
    return out


def frames_of(f):
    while f is not None:
        code = f.f_code
        yield getattr(code, "co_qualname", code.co_name), code.co_filename, f.f_lineno
        f = f.f_back


def at(frame, func):
    return (frame is not None and frame.f_code is func.__code__
            and frame.f_lineno == func.__code__.co_firstlineno + 1)


def reporter(main_ident, main_native, worker, coro):
    deadline = time.time() + 20
    while time.time() < deadline:
        cur = sys._current_frames()
        if (at(cur.get(main_ident), hot) and at(cur.get(worker.ident), w_inner)
                and at(cur.get(coro.ident), c_inner)):
            break
        time.sleep(0.01)
    cur = sys._current_frames()
    # this thread holds the GIL when it stops, at the os.kill line
    own = list(frames_of(sys._getframe()))
    with open(__file__) as src:
        kill_line = [i for i, l in enumerate(src, 1) if l.strip().endswith("# KILL")][0]
    own[0] = own[0][:2] + (kill_line,)
    with open(OUT + ".tmp", "w") as f:
        f.write("V %d\n" % sys.hexversion)
        f.writelines(prologue_lines())
        for native, frames in ((main_native, frames_of(cur[main_ident])),
                               (worker.native_id, frames_of(cur[worker.ident])),
                               (coro.native_id, frames_of(cur[coro.ident])),
                               (threading.get_native_id(), own)):
            f.write("T %d\n" % native)
            for name, file, line in frames:
                f.write("F %s\t%s\t%d\n" % (name, file, line))
    os.rename(OUT + ".tmp", OUT)
    # Sent to this very thread, so that it is the one that stops on this
    # line (os.kill would let the main thread take it, and this thread run
    # on and exit before the group stop completes).
    signal.pthread_kill(threading.get_ident(), signal.SIGSTOP)  # KILL


worker = threading.Thread(target=w_outer, daemon=True)
worker.start()
coro = threading.Thread(target=asyncio.run, args=(c_outer(),), daemon=True)
coro.start()
threading.Thread(target=reporter, daemon=True,
                 args=(threading.get_ident(), threading.get_native_id(), worker, coro)).start()
outer()
