#!/bin/sh
# SPDX-License-Identifier: MIT
# Browser tests of the SVGs (flame graph, diff, interactive heat map):
# headless Chromium driven by playwright-core.
#   run.sh RENDER_TOOL ARTIFACTS_DIR
# Skips (77) only when Chromium is missing and cannot be installed.
set -eu
tool=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
artifacts=$2
here=$(cd "$(dirname "$0")" && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >&2 || true
	fi
	[ -x "$chromium" ] || { echo "skip: no $chromium"; exit 77; }
fi
command -v node >/dev/null || { echo "skip: no node"; exit 77; }
cd "$here"
if [ ! -d node_modules/playwright-core ]; then
	npm ci --no-audit --no-fund >&2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# 100 samples: 60 under matmul_tile, the search test's expectation
cat > "$work/a.folded" <<'EOT'
demo_workload;main;run_epoch;matmul_tile;fma_loop 45
demo_workload;main;run_epoch;matmul_tile 15
demo_workload;main;run_epoch;write_log;-;entry_SYSCALL_64;do_syscall_64;ksys_write 10
demo_workload;main;load_data;read_file 12
demo_workload;main;launch;cudaLaunchKernel;gemm_kernel_[G] 8
demo_workload;main;launch;cudaLaunchKernel;gemm_kernel_[G];stall_memory_[g] 5
demo_workload;main;<weird & "name"> 5
EOT
cat > "$work/b.folded" <<'EOT'
demo_workload;main;run_epoch;matmul_tile;fma_loop 30
demo_workload;main;run_epoch;write_log 25
demo_workload;main;load_data;read_file 12
EOT
"$tool" flame --title "Browser test" --subtitle "gpuprof" "$work/a.folded" > "$work/flame.svg"
"$tool" diff "$work/b.folded" "$work/a.folded" > "$work/diff.svg"
"$tool" synth heat > "$work/heat.svg"
"$tool" synth heat --weight launches > "$work/heat-gpu.svg"
"$tool" synth heat --weight eu-stall > "$work/heat-eu.svg"
"$tool" synth heat --max-bytes 700 > "$work/heat-bounded.svg"
mkdir -p "$artifacts"
cp "$work"/*.svg "$artifacts/"
rc=0
node flame.test.js "$work/flame.svg" "$work/diff.svg" "$artifacts" || rc=1
node heatmap.test.js "$work/heat.svg" "$work/heat-gpu.svg" "$work/heat-eu.svg" "$work/heat-bounded.svg" \
	"$artifacts" || rc=1
exit $rc
