#!/bin/sh
# SPDX-License-Identifier: MIT
# Browser tests of the SVGs (flame graph, diff, interactive heat map, the
# comm analysis's picture): headless Chromium driven by playwright-core.
#   run.sh RENDER_TOOL ARTIFACTS_DIR COMM_SVG_TOOL
# Skips (77) only when Chromium is missing and cannot be installed.
set -eu
tool=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
artifacts=$2
comm_tool=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
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
# normalized, A's 9 samples scale by 97/9 and add up to 97.00000000000001
printf 'm;p 1\nm;q 1\nm;r 7\n' > "$work/na.folded"
printf 'm;p 50\nm;q 47\n' > "$work/nb.folded"
# a comm result as comm_svg() reads it: 4 ranks, two tag pairs' windows
cat > "$work/comm.json" <<'EOT'
{"analysis":"comm","ranks":[
{"rank":0,"breakdown":{"union":{"ratios":{"compute":0.5,"comm":{"DP":0.1,"TP":0.1,"PP":0.05,"EP":0.02,"OTHER":0.03},"memory":0.05,"idle":0.15}}}},
{"rank":1,"breakdown":{"union":{"ratios":{"compute":0.45,"comm":{"DP":0.15,"TP":0.1},"memory":0.1,"idle":0.2}}}},
{"rank":2,"breakdown":{"union":{"ratios":{"compute":0.6,"comm":{"DP":0.1,"OTHER":0.1},"idle":0.2}}}},
{"rank":3,"breakdown":{"union":{"ratios":{"compute":0.3,"comm":{"PP":0.3},"memory":0.1,"idle":0.3}}}}],
"phase_windows":[{"from":"compute","to":"DP","windows_us":[5,8,13,21,34]},
{"from":"DP","to":"TP","windows_us":[2,3,5,7,11,13]}]}
EOT
"$tool" flame --title "Browser test" --subtitle "gpuprof" "$work/a.folded" > "$work/flame.svg"
"$tool" diff "$work/b.folded" "$work/a.folded" > "$work/diff.svg"
"$tool" diff --normalize "$work/na.folded" "$work/nb.folded" > "$work/diff-normalized.svg"
# 20 ms asked: the tests count that grid (the default coarsens this sparse capture)
"$tool" synth heat --bucket-ms 20 > "$work/heat.svg"
"$tool" synth heat --weight launches > "$work/heat-gpu.svg"
"$tool" synth heat --weight eu-stall > "$work/heat-eu.svg"
"$tool" synth heat --bucket-ms 20 --max-bytes 700 > "$work/heat-bounded.svg"
"$tool" synth heat49 > "$work/heat-49hz.svg"
"$comm_tool" "$work/comm.json" > "$work/comm.svg"
mkdir -p "$artifacts"
cp "$work"/*.svg "$artifacts/"
rc=0
node flame.test.js "$work/flame.svg" "$work/diff.svg" "$artifacts" || rc=1
node heatmap.test.js "$work/heat.svg" "$work/heat-gpu.svg" "$work/heat-eu.svg" "$work/heat-bounded.svg" \
	"$artifacts" || rc=1
node pictures.test.js "$work/comm.svg" "$work/heat-49hz.svg" "$work/diff-normalized.svg" \
	"$artifacts" || rc=1
exit $rc
