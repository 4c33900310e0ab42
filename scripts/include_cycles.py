#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fail when the daemon's parts include each other in a cycle.

A part is a top-level folder of daemon/ (its subfolders belong to it), or,
for the files directly in daemon/, the core (context, config, log, helpers)
but for the modules that sit beside it and build apart: the capture
registry, the jobs, hooks.c and main.c. Quoted includes are resolved as the
compiler does: the including file's folder first, then daemon/. A cycle is
printed with the includes that make it.

usage: include_cycles.py DAEMON_DIR
"""
import os
import re
import sys

BESIDE_CORE = {'capreg': 'capreg', 'capreg_int': 'capreg', 'capquota': 'capreg',
               'jobs': 'jobs', 'hooks': 'hooks', 'main': 'main'}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def part(daemon, path):
    rel = os.path.relpath(path, daemon)
    if os.sep in rel:
        return rel.split(os.sep)[0]
    return '.' + BESIDE_CORE.get(os.path.splitext(rel)[0], 'core')


def resolve(daemon, here, name):
    for base in (here, daemon):
        p = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(p):
            return p
    return None


def edges(daemon):
    out = {}
    for dp, _, files in os.walk(daemon):
        for f in files:
            if not f.endswith(('.c', '.h')):
                continue
            src = os.path.join(dp, f)
            with open(src, errors='replace') as fh:
                text = fh.read()
            for name in INCLUDE.findall(text):
                dst = resolve(daemon, dp, name)
                if not dst or not dst.startswith(daemon + os.sep):
                    continue
                a, b = part(daemon, src), part(daemon, dst)
                if a != b:
                    out.setdefault(a, {}).setdefault(b, []).append(
                        '%s includes "%s"' % (os.path.relpath(src, daemon), name))
    return out


def cycles(g):
    """Strongly connected components of more than one part (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def main():
    daemon = os.path.abspath(sys.argv[1])
    g = edges(daemon)
    bad = cycles(g)
    for comp in bad:
        print('include cycle between', ', '.join(comp))
        for a in comp:
            for b in comp:
                for why in g.get(a, {}).get(b, [])[:3]:
                    print('   ', why)
    if not bad:
        print('no include cycle between the daemon\'s parts (%d parts)' %
              len(set(g) | {b for v in g.values() for b in v}))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
