# SPDX-License-Identifier: MIT
"""Python code run in a subinterpreter by a thread of the main one, for the
tests of Python frames in subinterpreters (test_pyframes, and
tests/integration/test_pyframes_live.py).

Usage: subinterp.py stop OUT [shared]: a worker thread runs, in a new
subinterpreter, s_outer -> s_mid -> s_hot, which writes the frames the
subinterpreter itself sees (sys._getframe) and blocks in time.sleep; the
main thread then writes the worker's frames in the main interpreter
(sys._current_frames: its call of run_string) and stops the process with
SIGSTOP. OUT gets "T <native tid>" and "F <name>\t<file>\t<line>" lines,
the subinterpreter's frames first.

subinterp.py busy SECONDS [shared]: the worker's s_outer -> s_mid -> s_hot
burns CPU in the subinterpreter for SECONDS ("# line:" marks), while the
main thread runs m_outer -> m_hot. Prints "ready" once both run.

"shared": the subinterpreter shares the main interpreter's GIL (3.12+'s
legacy configuration); by default it has its own where the version can
(3.12+). CPython 3.9-3.11 always share it."""
import os
import signal
import sys
import threading
import time

try:
    import _interpreters as interpreters  # 3.13+
except ImportError:
    import _xxsubinterpreters as interpreters  # 3.9-3.12

SUB = '''
import sys
import time

MODE, ARG = %r, %r


def name(code):
    return getattr(code, "co_qualname", code.co_name)


def report():
    """The caller's frames as this interpreter sees them; the caller blocks
    on the line that called this."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        out.append("F %%s\\t%%s\\t%%d\\n" %% (name(f.f_code), f.f_code.co_filename, f.f_lineno))
        f = f.f_back
    with open(ARG + ".sub", "w") as fh:
        fh.writelines(out)


def s_hot():
    if MODE == "stop":
        report(); time.sleep(1000)  # noqa: E702 (one line: where it blocks)
    s = 0
    for i in range(20000):  # line: s_hot
        s += i * i
    return s


def s_mid(end):
    while time.time() < end:
        s_hot()  # line: s_mid
        time.sleep(0)  # up to 3.11 the GIL is handed over only here


def s_outer(end):
    s_mid(end)  # line: s_outer


s_outer(time.time() + (float(ARG) if MODE == "busy" else 1000))
'''


def m_hot(n):
    s = 1
    for i in range(n):  # line: m_hot
        s = (s * 7 + i) % 1000003
    return s


def m_outer(end):
    while time.time() < end:
        m_hot(20000)  # line: m_outer
        # Up to 3.11, a thread asks the GIL's holder to drop it through its
        # own interpreter's eval breaker, which a holder running in another
        # interpreter never reads: each side gives the GIL up here.
        time.sleep(0)


def new_interp(shared):
    if sys.version_info >= (3, 13):
        return interpreters.create("legacy" if shared else "isolated")
    if sys.version_info >= (3, 12):
        return interpreters.create(isolated=not shared)
    return interpreters.create()


def run_in(interp, mode, arg):
    interpreters.run_string(interp, SUB % (mode, arg))  # line: run_in


def frames_of(f):
    while f is not None:
        code = f.f_code
        yield getattr(code, "co_qualname", code.co_name), code.co_filename, f.f_lineno
        f = f.f_back


def stop(out, shared):
    interp = new_interp(shared)
    worker = threading.Thread(target=run_in, args=(interp, "stop", out), daemon=True)
    worker.start()
    deadline = time.time() + 20
    while not os.path.exists(out + ".sub") and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the subinterpreter's thread into its sleep
    with open(out + ".sub") as f:
        sub = f.read()
    own = list(frames_of(sys._current_frames()[worker.ident]))
    with open(out + ".tmp", "w") as f:
        f.write("T %d\n" % worker.native_id)
        f.write(sub)
        for name, file, line in own:
            f.write("F %s\t%s\t%d\n" % (name, file, line))
    os.rename(out + ".tmp", out)
    os.kill(os.getpid(), signal.SIGSTOP)


def busy(seconds, shared):
    interp = new_interp(shared)
    end = time.time() + seconds
    worker = threading.Thread(target=run_in, args=(interp, "busy", str(seconds)))
    worker.start()
    print("ready", flush=True)
    m_outer(end)
    worker.join()


def main():
    shared = "shared" in sys.argv[3:]
    if sys.argv[1] == "stop":
        stop(sys.argv[2], shared)
    else:
        busy(float(sys.argv[2]), shared)


main()
