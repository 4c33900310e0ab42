#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The dynamic symbols libgpuprof-client defines must be exactly the
functions declared in include/gpuprof/client.h, each listed by name under
global: in the version script and carrying its version node."""
import fnmatch
import re
import subprocess
import sys

lib, sym_file, header = sys.argv[1:4]

text = open(sym_file).read()
text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
m = re.search(r'(\w[\w.]*)\s*\{\s*global:(.*?)local:(.*?)\}', text, re.S)
if not m:
    sys.exit('cannot parse version script ' + sym_file)
node = m.group(1)
patterns = [p.strip() for p in m.group(2).split(';') if p.strip()]

hdr = open(header).read()
hdr = re.sub(r'/\*.*?\*/', '', hdr, flags=re.S)
declared = set(re.findall(r'\b(gpuprof_\w+)\s*\(', hdr))

out = subprocess.run(['nm', '-D', '--defined-only', lib], check=True,
                     capture_output=True, text=True).stdout
exported = {}
for line in out.splitlines():
    parts = line.split()
    if len(parts) < 3 or parts[1] == 'A':  # 'A': the version node itself
        continue
    name, _, version = parts[2].partition('@@')
    if not version:
        name, _, version = parts[2].partition('@')
    exported[name] = version

errors = []
for p in patterns:
    if any(c in p for c in '*?['):
        errors.append('pattern in global: of %s (list each symbol): %s' % (sym_file, p))
    elif p not in exported:
        errors.append('listed in %s but not exported: %s' % (sym_file, p))
for name in sorted(set(exported) - declared):
    errors.append('exported but not declared in client.h: ' + name)
for name in sorted(declared - set(exported)):
    errors.append('declared in client.h but not exported: ' + name)
for name, version in sorted(exported.items()):
    if not any(fnmatch.fnmatchcase(name, p) for p in patterns):
        errors.append('exported but not matched by global: in %s: %s' % (sym_file, name))
    if version != node:
        errors.append('%s has version %r, want %r' % (name, version, node))
for e in errors:
    print(e, file=sys.stderr)
print('%d symbols checked, %d problems' % (len(exported), len(errors)))
sys.exit(1 if errors else 0)
