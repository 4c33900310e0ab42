#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what gpuprof needs to build and test, from Debian 12 packages.
# Idempotent: does nothing (and needs no network) when all are present.
set -eu
PKGS="gcc make meson ninja-build pkg-config clang llvm bpftool binutils
libbpf-dev libelf-dev libdw-dev libdrm-dev libsystemd-dev libcjson-dev libuv1-dev
zlib1g-dev libxxhash-dev liblzma-dev xz-utils libisal-dev libsqlite3-dev systemtap-sdt-dev systemd util-linux python3 procps
libclang-rt-14-dev chromium chromium-driver golang-go libigc1 linux-perf g++
scdoc man-db bash-completion zsh libmicrohttpd-dev prometheus
libcurl4-openssl-dev austin python3-pandas
debhelper dh-python dpkg-dev lintian clang-format"
missing=""
# liblzma-dev: MiniDebugInfo (.gnu_debugdata) of stripped binaries; xz-utils
# builds one in tests/sym.
# libxxhash-dev: XXH64 of imported traces (the critical-path overlay checks
# its --trace file against it).
# libisal-dev: ISA-L's igzip, the importer's gzip inflate (zlib if absent).
# clang-format: scripts/format-check.sh (.clang-format).
# golang-go brings `go tool pprof`, which reads our pprof exports in the tests.
# libigc1 ships libiga64.so.1 (Intel's GPU disassembler, optional at run time);
# the IGA test disassembles with it.
# linux-perf is the oracle of the unwinding accuracy test (perf record
# --call-graph dwarf); g++ builds its C++ program.
# scdoc turns docs/man/*.scd into the man pages (the build skips them
# without it); man-db's man(1) is what systemd-analyze verify runs on the
# units' Documentation= pages, and renders them in the docs test;
# bash-completion gives the completion's install dir (its .pc) and zsh
# checks the zsh completion's syntax.
# austin samples Python 3.9/3.10 from outside: the independent sampler the
# Python-frame test compares with.
# libmicrohttpd-dev: the HTTP server of the metrics endpoint (metrics.listen);
# prometheus (which brings promtool) scrapes it in the metrics test.
# libcurl4-openssl-dev: the HTTP(S) client that pushes continuous profiles
# (daemon/push); the OpenSSL flavour, Debian's default libcurl.
# python3-pandas: the Python module's DataFrames (tests/integration/test_python.py).
# debhelper, dh-python, dpkg-dev and lintian build and check the Debian
# packages (debian/, tests/integration/test_deb.py).
# The browser tests need node and npm; any node will do (Debian's or another).
command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "gpuprof: missing packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "gpuprof: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >&2
