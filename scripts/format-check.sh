#!/bin/sh
# SPDX-License-Identifier: MIT
# Check that the C sources follow .clang-format: prints each file that
# clang-format would change (with the diff when -d is given) and exits 1 if
# there is one, 0 when all are clean. Changes nothing.
#
#   scripts/format-check.sh              # every tracked C file of the style's folders
#   scripts/format-check.sh -d FILE...   # these files, with the diffs
#
# CLANG_FORMAT names the binary (default clang-format; 14 or newer).
# bpf/vmlinux.h is generated and never checked.
set -eu

cd "$(dirname "$0")/.."
cf=${CLANG_FORMAT:-clang-format}
show_diff=0
if [ "${1:-}" = "-d" ]; then
	show_diff=1
	shift
fi
if ! command -v "$cf" >/dev/null 2>&1; then
	echo "format-check: $cf not found (apt-get install clang-format)" >&2
	exit 2
fi

if [ $# -eq 0 ]; then
	set -- $(git ls-files -- 'daemon/*.[ch]' 'bpf/*.[ch]' 'libclient/*.[ch]' 'cli/*.[ch]' \
		'common/*.[ch]' 'include/*.h' 'inject/*.[ch]' | grep -v '^bpf/vmlinux\.h$')
fi

bad=0
for f in "$@"; do
	if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
		bad=$((bad + 1))
		echo "$f"
		if [ "$show_diff" -eq 1 ]; then
			"$cf" --style=file "$f" | diff -u "$f" - || true
		fi
	fi
done
if [ "$bad" -gt 0 ]; then
	echo "format-check: $bad file(s) differ from .clang-format (clang-format -i FILE fixes one)" >&2
	exit 1
fi
echo "format-check: $# file(s) clean"
