#!/bin/sh
# SPDX-License-Identifier: MIT
# Give BINARY a MiniDebugInfo section and strip it, in place, as gdb's manual
# describes (https://sourceware.org/gdb/onlinedocs/gdb/MiniDebugInfo.html):
# the function symbols .dynsym lacks, in an xz-compressed ELF, as
# .gnu_debugdata. Exit 77 when a tool is missing.
set -eu
bin=$1
for t in nm objcopy strip xz awk sort comm; do
	command -v "$t" >/dev/null 2>&1 || { echo "missing $t" >&2; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D "$bin" --format=posix --defined-only | awk '{ print $1 }' | sort >"$tmp/dynsyms"
nm "$bin" --format=posix --defined-only |
	awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort >"$tmp/funcsyms"
comm -13 "$tmp/dynsyms" "$tmp/funcsyms" >"$tmp/keep_symbols"
objcopy --only-keep-debug "$bin" "$tmp/debug"
objcopy -S --remove-section .gdb_index --remove-section .comment \
	--keep-symbols="$tmp/keep_symbols" "$tmp/debug" "$tmp/mini_debuginfo"
strip --strip-all -R .comment "$bin"
xz "$tmp/mini_debuginfo"
objcopy --add-section .gnu_debugdata="$tmp/mini_debuginfo.xz" "$bin"
