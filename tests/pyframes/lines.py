# SPDX-License-Identifier: MIT
# Prints, for every code object of a few sources, its first line, its line
# table (hex) and the line of every instruction offset as this interpreter
# computes it, for test_pyframes' check of the line-table decoders:
#   C <co_firstlineno> <table hex>
#   L <byte offset> <line, -1 for none>
import dis
import sys
import threading

SRC = '''
def plain(a, b):
    c = a + b
    return c


def loops(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i
        else:
            total -= (
                i
                * 2
            )
    while total > 100:
        total //= 2
    return total


def far(x):
    y = x
''' + "\n" * 300 + '''
    y += 1
''' + "\n" * 40 + '''
    return [z * y for z in range(x)
            if z]


@staticmethod
def deco(x):
    try:
        return 1 / x
    except ZeroDivisionError:
        return lambda q: (q,
                          x)
    finally:
        x = None


class K:
    def method(self):
        def inner():
            return self
        return inner
'''


def codes(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from codes(c)


def expected_39(co):
    starts = list(dis.findlinestarts(co))
    out = {}
    line = co.co_firstlineno
    it = iter(starts)
    nxt = next(it, None)
    for off in range(0, len(co.co_code), 2):
        while nxt is not None and nxt[0] <= off:
            line = nxt[1]
            nxt = next(it, None)
        out[off] = line
    return out


def expected(co):
    if sys.version_info < (3, 10):
        return expected_39(co)
    out = {}
    for start, end, line in co.co_lines():
        for off in range(start, end, 2):
            out[off] = -1 if line is None else line
    return out


def main():
    sources = [compile(SRC, "<lines>", "exec")]
    with open(threading.__file__) as f:
        sources.append(compile(f.read(), threading.__file__, "exec"))
    for top in sources:
        for co in codes(top):
            table = co.co_lnotab if sys.version_info < (3, 10) else co.co_linetable
            print("C %d %s" % (co.co_firstlineno, table.hex() or "-"))
            for off, line in sorted(expected(co).items()):
                print("L %d %d" % (off, line))


main()
