// SPDX-License-Identifier: MIT
/* The command table: name, handler, summary and manual of every command. */
#include "help.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static int cmd_help(struct cli *cli, int argc, char **argv);

#define COMMON_FOOTER                                                                 \
	"\nGLOBAL OPTIONS (before or after the command)\n"                            \
	"  --socket PATH    daemon socket (default $GPUPROF_SOCKET, else\n"           \
	"                   /run/gpuprof/gpuprofd.sock)\n"                            \
	"  --json           print the daemon's result as JSON on stdout\n"            \
	"  --timeout DUR    give up waiting for a reply after DUR (500ms, 30s, 2m)\n" \
	"  --wide           human tables as wide as their contents (default: cut\n"   \
	"                   and split to fit 100 columns)\n"                          \
	"  -h, --help       show this help\n"                                         \
	"\nEXIT STATUS\n"                                                             \
	"  0 success; 1 the daemon returned an error (or the connection broke);\n"    \
	"  2 usage error; 3 cannot connect to the daemon; 4 local I/O error.\n"

static const struct command commands[] = {
	{"status", cmd_status, "show the daemon, its store and its collectors",
	 "gpuprofctl status\n\n"
	 "Show the daemon's version, pid and uptime, the ring store's usage, the\n"
	 "clients and jobs, and one line per collector with its state, event and\n"
	 "drop counters and, when it is not attached, the reason.\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl status\n"
	 "  gpuprofctl status --json | jq .collectors\n",
	 "status"},
	{"version", cmd_version, "show the client and daemon versions",
	 "gpuprofctl version\n\n"
	 "Print gpuprofctl's version, then ask the daemon for its own and its\n"
	 "protocol version.\n",
	 "version"},
	{"capture", cmd_capture, "take a capture of one or more processes",
	 "gpuprofctl capture --pid PID [--pid PID]...\n"
	 "                   (--duration DUR | --last DUR [--until T] | --since T [--until T])\n"
	 "                   [--name NAME] [--no-wait] [--out FILE]\n\n"
	 "Cut a capture out of the daemon's stream: --last takes what the store\n"
	 "already holds for the past DUR, --duration records forward for DUR,\n"
	 "--since takes the absolute window from T to --until (default: now).\n"
	 "--last counts back from when the daemon takes the request, which a\n"
	 "loaded machine may delay; --since and --until name the same records\n"
	 "whenever the request arrives, while the ring still holds them.\n"
	 "By default the command waits until the capture is complete and prints\n"
	 "its info; while --duration records, a terminal's stderr shows a countdown.\n"
	 "\nTIMES (T)\n"
	 "  NS                   the daemon's CLOCK_MONOTONIC in ns, as a capture's\n"
	 "                       window shows them (gpuprofctl --json info ID:\n"
	 "                       window.start_ns, window.end_ns)\n"
	 "  @SECONDS[.F]         wall-clock seconds since the epoch (date +@%s.%N)\n"
	 "  YYYY-MM-DDTHH:MM:SS[.F]Z, ...+HH:MM\n"
	 "                       wall-clock ISO 8601, with its zone (date -Ins)\n"
	 "  The daemon converts wall-clock times with its own clock offset; give\n"
	 "  --since and --until on one clock. A window may not end in the\n"
	 "  future, start after it ends, span more than 24h, or end before the\n"
	 "  oldest record the daemon's ring holds (a window partly older is cut\n"
	 "  from what it holds; info's evicted_in_window counts what it lost).\n"
	 "\nOPTIONS\n"
	 "  -p, --pid PID        the process to capture (required; repeat for\n"
	 "                       more, at most 64)\n"
	 "  -d, --duration DUR   record forward for DUR (e.g. 10s)\n"
	 "  -l, --last DUR       take the last DUR from the store (e.g. 30s); with\n"
	 "                       --until, the DUR before T\n"
	 "      --since T        take the window that starts at T\n"
	 "      --until T        end the window at T instead of now\n"
	 "  -n, --name NAME      label the capture\n"
	 "      --no-wait        return at once with the recording capture's id\n"
	 "  -o, --out FILE       then write its folded stacks to FILE\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl capture --pid 4242 --duration 10s --name warmup\n"
	 "  gpuprofctl capture --pid 4242 --last 30s --out stacks.folded\n"
	 "  gpuprofctl capture --pid 4242 --since 2026-11-28T07:30:00Z --until @1764315030\n"
	 "  gpuprofctl capture --pid 4242 --since 5000000000 --until 9000000000\n"
	 "  gpuprofctl capture --pid 4242 --last 10s --until 2026-11-28T08:30:10,5+01:00\n",
	 "capture.start, capture.folded"},
	{"list", cmd_list, "list captures",
	 "gpuprofctl list\n\n"
	 "List the captures you may see, oldest first: ID NAME KIND STATE OWNER\n"
	 "CREATED DURATION EVENTS SIZE. EVENTS counts a live capture's records and an\n"
	 "imported trace's events.\n",
	 "capture.list"},
	{"info", cmd_info, "show one capture",
	 "gpuprofctl info ID\n\n"
	 "Show a capture's details: window, processes, record counts by type,\n"
	 "file size, and the reason when it is damaged.\n",
	 "capture.info"},
	{"delete", cmd_delete, "delete a capture",
	 "gpuprofctl delete ID...\n\n"
	 "Remove captures and their files. A recording capture is stopped and\n"
	 "discarded.\n",
	 "capture.delete"},
	{"folded", cmd_folded, "write a capture's folded stacks",
	 "gpuprofctl folded ID [--out FILE] [--kernel|--no-kernel] [--pid-frames]\n"
	 "                  [--tid-frames] [--cgroup] [--lines] [--comm NAME] [--tid TID]...\n"
	 "                  [--pid PID]... [--from DUR] [--to DUR]\n"
	 "                  [--weight samples|launches|gpu-time|stalls]\n\n"
	 "Write the capture's samples as folded stacks (one \"frame;frame;... count\"\n"
	 "line per stack, the input of flamegraph.pl and speedscope) to FILE or,\n"
	 "without --out, to stdout.\n"
	 "\nOPTIONS\n"
	 "  -o, --out FILE     write to FILE instead of stdout\n"
	 "      --kernel       include kernel frames (default)\n"
	 "      --no-kernel    leave kernel frames out\n"
	 "      --pid-frames   start each stack with a frame naming the process\n"
	 "      --tid-frames   start each stack with a frame naming the thread\n"
	 "      --cgroup       start each stack with the launching process's cgroup v2\n"
	 "                     path (\"/system.slice/a.service\"), before the command\n"
	 "                     name, so a shared GPU splits by container; for\n"
	 "                     launches and gpu-time, others read \"[no cgroup]\"\n"
	 "      --lines        add the source line to user frames that have one,\n"
	 "                     \"func (file.c:42)\" (from DWARF, recorded when the\n"
	 "                     capture was symbolized: config symbols.lines)\n"
	 "      --comm NAME    keep only threads whose command name is NAME\n"
	 "      --tid TID      keep only this thread (repeat for more)\n"
	 "      --pid PID      keep only this process (repeat for more)\n"
	 "      --from DUR     skip samples before DUR into the capture (e.g. 1500ms)\n"
	 "      --to DUR       skip samples after DUR into the capture\n"
	 "      --weight W     what a count is: samples (CPU samples, default),\n"
	 "                     launches (GPU kernel launches: the launching stack\n"
	 "                     topped by a KERNEL_[G] frame), gpu-time (ns of GPU\n"
	 "                     time: each driver-side job interval split over the\n"
	 "                     launches it carried, matched by pid and submission\n"
	 "                     order; a job with no launch stays on its submitting\n"
	 "                     stack as ENGINE_[G]; a capture without job intervals\n"
	 "                     counts launches instead), stalls (NVIDIA PC samples:\n"
	 "                     the kernel's launching stack, KERNEL_[G],\n"
	 "                     sass_instruction_[g] (an offset such as +0x1a0 without\n"
	 "                     SASS text) and stall_reason_[g])\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl folded 3 | flamegraph.pl > cpu.svg\n"
	 "  gpuprofctl flamegraph 3 --weight launches --out launches.svg   # GPU kernels in blue\n"
	 "  gpuprofctl folded 3 --weight gpu-time | flamegraph.pl > gputime.svg\n"
	 "  gpuprofctl folded 3 --weight stalls | flamegraph.pl > stalls.svg\n"
	 "  gpuprofctl folded 3 --weight launches --cgroup   # launches per container\n"
	 "  gpuprofctl folded 3 --no-kernel --tid-frames --out app.folded\n"
	 "  gpuprofctl folded 3 --lines | flamegraph.pl > lines.svg   # one frame per line\n",
	 "capture.folded"},
	{"top", cmd_gpu_top, "live table of the hottest GPU kernels and their call sites",
	 "gpuprofctl top [--pid PID]... [--window DURATION] [--interval DURATION]\n"
	 "               [--limit N] [--count N] [--json]\n\n"
	 "Show the GPU kernels launched most in the last --window (default 5s),\n"
	 "from the daemon's always-on store, with launches per second and the\n"
	 "call sites that launch them; redraws every --interval (default 1s) like\n"
	 "top(1) until interrupted. With --json: one snapshot, as JSON.\n"
	 "A CUDA kernel the launch probes know only by handle (0x..., named before\n"
	 "the daemon attached) shows under the name the CUPTI library reported\n"
	 "for its launches, when that process loads it.\n"
	 "\nOPTIONS\n"
	 "  -p, --pid PID        only this process (repeat for more)\n"
	 "  -w, --window DUR     how far back to count (\"5s\", \"500ms\")\n"
	 "  -i, --interval DUR   time between refreshes\n"
	 "  -n, --limit N        kernels shown (default 20)\n"
	 "  -c, --count N        stop after N refreshes\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl top --pid 4242\n"
	 "  gpuprofctl --json top --pid 4242 --window 10s\n",
	 "gpu.top"},
	{"import", cmd_import, "import trace files as one capture (one rank per file)",
	 "gpuprofctl import FILE... [--rank N] [--name NAME]\n\n"
	 "Hand trace files to the daemon, which parses them into one capture: every\n"
	 "FILE is one rank of it (several files make one multi-rank capture, as\n"
	 "'analyze comm' wants). Formats, told apart by their first bytes:\n"
	 "  - PyTorch profiler / Kineto or Chrome trace JSON, plain or gzip;\n"
	 "  - Nsight Systems SQLite exports (nsys export --type sqlite FILE.nsys-rep),\n"
	 "    uncompressed; one export gives one rank per (process, GPU) with GPU work.\n"
	 "gpuprofctl opens each file itself and passes the open descriptor: the\n"
	 "daemon never opens a path. FILE '-' reads stdin (alone, one file). At most\n"
	 "64 files. A terminal's stderr shows progress: bytes read, then finalizing.\n"
	 "\nOPTIONS\n"
	 "  -r, --rank N      rank of the first FILE, N+1 for the next, ...; a Kineto\n"
	 "                    trace's own distributedInfo rank wins; without either\n"
	 "                    Kineto ranks are 0, Nsight ones follow the highest yet\n"
	 "  -n, --name NAME   label the capture\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl import rank0.pt.trace.json.gz --name step42\n"
	 "  gpuprofctl import rank0.json.gz rank1.json.gz --name step42\n"
	 "  gpuprofctl import report.sqlite\n",
	 "capture.import"},
	{"analyze", cmd_analyze, "run an analysis on a capture",
	 "gpuprofctl analyze NAME ID [--rank R] [--PARAMETER VALUE]... [--json] [KEY=VALUE]...\n"
	 "gpuprofctl analyze list\n\n"
	 "Run the analysis NAME (e.g. temporal, idle, overlap, launch, queue,\n"
	 "kernels, sequences, critical-path, comm) on capture ID and print its\n"
	 "result. Each parameter of an analysis is an option of it, its name with\n"
	 "dashes: --num-kernels 20 is num_kernels=20; a flag alone is true\n"
	 "(--series), --series=false turns it off. 'analyze list' shows every\n"
	 "analysis with its options, their defaults and meaning, as the daemon\n"
	 "has them. KEY=VALUE pairs are passed as params too; VALUE is read as\n"
	 "JSON when it is valid JSON (numbers, true, [1,2]) and as a string\n"
	 "otherwise.\n"
	 "\nOPTIONS\n"
	 "  -r, --rank R   analyse only rank R of a multi-rank capture\n"
	 "\nCRITICAL-PATH OPTIONS (analyze critical-path; its parameters, and the\n"
	 "overlay's two files)\n"
	 "  --annotation NAME     window: instances of annotations whose name contains NAME\n"
	 "  --instance I[:J]      which instance(s), 0-based, inclusive (default 0)\n"
	 "  --edit SEL*X|SEL=US   what-if: scale, or set in µs, the events or delays\n"
	 "                        SEL: kind:cpu|gpu|kernel|comm|memory|launch_delay|\n"
	 "                        kernel_kernel_delay|all, match:REGEX or REGEX\n"
	 "                        (repeatable, applied in order)\n"
	 "  --overlay FILE        write the trace with the critical path marked (Perfetto,\n"
	 "                        chrome://tracing); needs --trace\n"
	 "  --trace ORIGINAL      the trace file that was imported, byte for byte\n"
	 "                        (streamed through; any other file is refused)\n"
	 "  --overlay-all-events  keep non-critical events in the overlay\n"
	 "  --trust-trace         overlay a capture imported before gpuprofd recorded\n"
	 "                        trace digests, unchecked (otherwise refused)\n"
	 "  --max-edges N         list at most N critical edges (default 1000)\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl analyze list\n"
	 "  gpuprofctl analyze idle 7 --rank 0 --interval-stats\n"
	 "  gpuprofctl analyze kernels 7 --num-kernels 20 --json\n"
	 "  gpuprofctl analyze critical-path 7 --rank 0 --annotation ProfilerStep --instance 1\n"
	 "  gpuprofctl analyze critical-path 7 --edit 'kind:comm*0.5' --edit 'kind:launch_delay=5'\n"
	 "  gpuprofctl analyze critical-path 7 --overlay cp.json --trace rank0.json.gz\n"
	 "\nSee 'gpuprofctl analyze comm --help' for the communication metrics.\n",
	 "analyze.NAME (analyze.critical_path, ...), analyze.list"},
	{"analyze comm", cmd_analyze, "communication metrics (DP/TP/PP/EP) across ranks",
	 "gpuprofctl analyze comm ID [--rank R] [--svg FILE] [--json] [KEY=VALUE]...\n\n"
	 "Communication metrics of capture ID (Kineto traces or Nsight Systems\n"
	 "exports imported with 'gpuprofctl import', one or many ranks): for every\n"
	 "(iteration, rank) the time split between compute, communication per\n"
	 "parallelism (DP, TP, PP, EP, OTHER), memory copies and idle; bandwidth,\n"
	 "bus bandwidth and link utilisation; volume; phase windows; compute/\n"
	 "communication overlap; and stragglers matched across ranks. Communication\n"
	 "kernels are NCCL/RCCL/HCCL/oneCCL/DeepEP kernels; each is tagged through\n"
	 "its process group (tags=, then group names, then the sizes tp/pp/dp/ep).\n"
	 "Iterations are the ProfilerStep#N annotations (iteration= to change),\n"
	 "every complete one, the last included (HTA's analyses drop it);\n"
	 "without any, each rank's GPU span is one iteration. Definitions and the\n"
	 "JSON schema: docs/analyses.md, \"Communication metrics\".\n"
	 "\nOPTIONS\n"
	 "  -r, --rank R         only rank R (default: every rank of the capture)\n"
	 "      --svg FILE       also have the daemon write an SVG to FILE: stacked bars\n"
	 "                       of the union breakdown per rank and the CDF of the\n"
	 "                       phase windows per tag pair\n"
	 "\nPARAMETERS (KEY=VALUE, or each as an option: --link-bandwidth 450e9,\n"
	 "--windows; VALUE is JSON when it parses, else a string; defaults from the\n"
	 "daemon's comm.params config key)\n"
	 "  link_bandwidth=B     B_hw, the link bandwidth per GPU and direction, in\n"
	 "                       bytes/s (400 Gbit/s = 50e9); default from the device\n"
	 "                       name (H100 450e9, A100 300e9, ...); unknown: the\n"
	 "                       utilisations print as '-'\n"
	 "  iteration=NAME       annotation marking iterations, exact name; a trailing\n"
	 "                       '*' matches a prefix (iteration='train_step*')\n"
	 "  iterations=all|hta   all (default): every complete step, the last one\n"
	 "                       included when it launches at least as many kernels as\n"
	 "                       the fewest earlier step; hta: without the last\n"
	 "                       ProfilerStep, as HTA's step filter\n"
	 "  tags=RULES           JSON list, first match wins: {\"match\":REGEX,\"tag\":T}\n"
	 "                       on the group's description or name (POSIX ERE, no case),\n"
	 "                       {\"ranks\":[0,1],\"tag\":T} exact group ranks,\n"
	 "                       {\"collective\":REGEX,\"tag\":T} on the type (AllReduce,\n"
	 "                       SendRecv, ...), per event: only that type's events\n"
	 "                       of the group move; T is DP, TP, PP, EP or OTHER\n"
	 "  tp=N pp=N dp=N ep=N  parallel sizes: a group whose ranks (or size) fit exactly\n"
	 "                       one of them in Megatron order is tagged so\n"
	 "  windows=true         keep every phase window in the JSON (windows_us)\n"
	 "  top=N                straggler instances listed (default 10)\n"
	 "\nOUTPUT (times in ms or us as the column says; shares are % of iteration time)\n"
	 "  header               ranks, iterations and their source, iteration time mean\n"
	 "                       and p99, the steps left out and why, B_hw and where it\n"
	 "                       came from\n"
	 "  Time breakdown       per rank and ALL: ITER ms = summed iteration time; then\n"
	 "                       an exact partition of it: COMPUTE (outside comm), DP..\n"
	 "                       OTHER (comm union split equally among the tags active\n"
	 "                       at each instant), MEMORY, IDLE; OVERLAP = share of the\n"
	 "                       comm union under compute. The 'simple sums' line gives\n"
	 "                       the specification's plain duration sums (may overlap),\n"
	 "                       the next its compute (T - comm union) and idle (T -\n"
	 "                       compute kernels - comm)\n"
	 "  Per iteration        per (rank, iteration), ms: TIME, comm sums per tag, the\n"
	 "                       specification's COMPUTE and IDLE (first 24 rows)\n"
	 "  Per collective type  EVENTS, NO SIZE, BYTES, TIME ms, SHARE of comm time\n"
	 "  Bandwidth and volume per tag: EVENTS, NO SIZE (events whose bytes are\n"
	 "                       unknown: counted in times, never in bytes), BYTES,\n"
	 "                       TIME ms, ALGBW GB/s = bytes / time, BUSBW GB/s with\n"
	 "                       nccl-tests factors, AVG/P95 UTIL per event and GLOBAL\n"
	 "                       UTIL = algbw / B_hw (fractions of B_hw)\n"
	 "  Phase windows        per (from, to) tag pair: gap in us between a run of one\n"
	 "                       tag's kernels and the next tag's first start (< 0 =\n"
	 "                       overlap): count, mean, p50, p95\n"
	 "  Process groups       key (PG name, or NCCL communicator id for nsys), its\n"
	 "                       description, size, tag and what decided the tag\n"
	 "                       (rule, name, sizes, default_pg, unmapped), events, and\n"
	 "                       the types a collective rule tagged otherwise\n"
	 "  Stragglers           per group: instances (k-th collective of the group on\n"
	 "                       each rank), start-spread p50/p95/max in us, and which\n"
	 "                       rank started last how often; ranks must share a clock\n"
	 "  reconciliation       comm kernel time = inside + outside iterations; union\n"
	 "                       <= sum; the union ratios sum to 1\n"
	 "Percentiles are numpy's default (linear between closest ranks).\n"
	 "Exit status 1 also when the daemon refuses: bad params, a rank not in the\n"
	 "capture, no communication kernels.\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl analyze comm 7\n"
	 "  gpuprofctl analyze comm 7 --rank 0 link_bandwidth=450e9\n"
	 "  gpuprofctl analyze comm 7 tp=8 dp=4 'tags=[{\"match\":\"expert\",\"tag\":\"EP\"}]'\n"
	 "  gpuprofctl analyze comm 7 --svg comm.svg iteration='train_step*'\n"
	 "  gpuprofctl --json analyze comm 7 | jq .straggler.top_instances\n",
	 "analyze.comm"},
	{"flamegraph", cmd_flamegraph, "render a flame graph SVG (or a heat map)",
	 "gpuprofctl flamegraph (ID | --folded FILE) --out FILE [OPTIONS] [KEY=VALUE]...\n"
	 "gpuprofctl flamegraph ID --heatmap --out FILE [--bucket-ms N] [--heatmap-max-bytes N]\n\n"
	 "Render an interactive flame graph SVG (click to zoom, Ctrl-F to search,\n"
	 "tooltips) in the daemon from a capture's CPU samples, or from any\n"
	 "folded-stack file (--folded; '-' reads stdin). Frames are coloured by\n"
	 "kind: CPU warm, kernel orange, NAME_[G] GPU blue, NAME_[g] light blue,\n"
	 "'-' separators grey; the colour of a name is the same in every graph.\n"
	 "\nOPTIONS\n"
	 "  -o, --out FILE        write the SVG to FILE ('-' for stdout)\n"
	 "      --folded FILE     read folded stacks from FILE instead of a capture\n"
	 "      --title T, --subtitle S, --countname NAME (default \"samples\")\n"
	 "      --minwidth PX     prune frames narrower than PX (default 0.1)\n"
	 "      --width PX        image width (default 1200)\n"
	 "      --icicle          top-down: the root at the top\n"
	 "      --no-kernel       leave kernel frames out\n"
	 "      --pid-frames, --tid-frames, --comm NAME   as for folded\n"
	 "      --start-ns A, --end-ns B   only samples in [A, B] (monotonic ns,\n"
	 "                        as the heat map's cells show them)\n"
	 "      --weight W        what a count is: samples (CPU, default), launches\n"
	 "                        (GPU launches, kernel frames NAME_[G]) or gpu-time (ns);\n"
	 "                        with --heatmap also eu-stall (Intel EU-stall rows)\n"
	 "      --heatmap         an interactive sub-second heat map instead\n"
	 "                        (seconds across, --bucket-ms rows down, default 20,\n"
	 "                        coarser to 200 when a 20 ms cell holds under 5):\n"
	 "                        click a start cell, then (shift-)click an end cell,\n"
	 "                        and that range's flame graph is drawn in the page\n"
	 "                        (\"Back to heat map\" returns); the --start-ns/--end-ns\n"
	 "                        command drawing the same graph is shown under it\n"
	 "      --heatmap-max-bytes N   bound on the stacks the heat map embeds\n"
	 "                        (default 4194304); past it buckets are coarsened\n"
	 "                        (to 200 ms at most) or frames with small counts\n"
	 "                        merged into their callers (cell totals stay exact),\n"
	 "                        and the page says so\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl flamegraph 3 --out cpu.svg --title 'step 42'\n"
	 "  gpuprofctl flamegraph --folded app.folded --icicle --out app.svg\n"
	 "  gpuprofctl flamegraph 3 --heatmap --out heat.svg\n"
	 "  gpuprofctl flamegraph 3 --heatmap --weight launches --heatmap-max-bytes 1000000 "
	 "--out gpu.svg\n",
	 "capture.flamegraph, capture.heatmap"},
	{"heatmap", cmd_heatmap, "render a sub-second heat map SVG",
	 "gpuprofctl heatmap ID --out FILE [--bucket-ms N] [--title T] [--weight W]\n"
	 "                  [--no-kernel] [--heatmap-max-bytes N]\n\n"
	 "Same as flamegraph --heatmap: an interactive SVG, one column per second,\n"
	 "one row per bucket (20 ms; on a sparse capture, such as one thread at\n"
	 "49 Hz, the first of 40, 100 or 200 ms whose busiest cell holds 5),\n"
	 "colour by samples (or --weight launches,\n"
	 "gpu-time, or eu-stall: the Intel EU-stall rows, kernel_[G];reason_[g]\n"
	 "frames). Click a start cell, then (shift-)click an end cell: the flame\n"
	 "graph of that time range is drawn in the page (zoom and search as in\n"
	 "flame graphs; \"Back to heat map\" returns), with the command that\n"
	 "renders the same graph (--start-ns/--end-ns). --heatmap-max-bytes bounds\n"
	 "the embedded stacks (default 4 MiB): buckets are coarsened or frames with\n"
	 "small counts merged into their callers, and the page says so.\n",
	 "capture.heatmap"},
	{"diff", cmd_diff, "render a differential flame graph of two profiles",
	 "gpuprofctl diff A B --out FILE [--normalize] [flamegraph options]\n\n"
	 "A and B are capture IDs or folded-stack files. Widths are B's; red\n"
	 "frames grew from A to B, blue ones shrank (deeper colour, larger change).\n"
	 "--normalize scales A's total to B's first, for profiles of different\n"
	 "lengths.\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl diff 3 4 --normalize --out diff.svg\n"
	 "  gpuprofctl diff before.folded after.folded --out diff.svg\n",
	 "capture.diff"},
	{"export", cmd_export, "export a capture as Chrome trace JSON or pprof",
	 "gpuprofctl export ID --format chrome|pprof --out FILE [--period-ns N] [--rank R]\n"
	 "                    [--weight samples|launches|gpu-time|stalls]\n\n"
	 "chrome: Trace Event JSON (CPU samples with stackFrames, launches, GPU\n"
	 "intervals, annotations) for ui.perfetto.dev and chrome://tracing.\n"
	 "pprof: gzipped profile.proto for go tool pprof, Pyroscope and Parca;\n"
	 "cpu/nanoseconds = samples x the sampling period (default: the\n"
	 "daemon's sampling.cpu_frequency; --period-ns overrides). Mappings carry\n"
	 "the objects' paths and GNU build ids; a capture with Intel Xe EU stalls\n"
	 "adds one sample type per stall reason (go tool pprof -sample_index=send);\n"
	 "NVIDIA PC samples add stall_samples/count: stall reason <- instruction <-\n"
	 "kernel <- launching stack, as folded --weight stalls, label stall_reason.\n"
	 "--weight W (pprof only): the profile opens (its default sample type) on\n"
	 "what folded --weight W counts: samples, launches, gpu, stall_samples.\n"
	 "An imported trace exports as chrome only: its events as they were kept,\n"
	 "one rank per file (--rank R when it holds several); importing the file\n"
	 "again gives the same events.\n"
	 "The --out FILE is replaced only when the export succeeds.\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl export 3 --format chrome --out trace.json\n"
	 "  gpuprofctl export 3 --format pprof --out cpu.pb.gz && go tool pprof -top cpu.pb.gz\n",
	 "capture.export"},
	{"flamescope", cmd_flamescope, "per-interval EU-stall breakdown of a capture (Intel Xe)",
	 "gpuprofctl flamescope ID [-i 100ms] [-p PID] [-o FILE]\n\n"
	 "Write the capture's EU-stall samples cut into intervals, one TSV line per\n"
	 "interval: t_ms, total, the ten stall reasons by name, the top kernel.\n"
	 "\nOPTIONS\n"
	 "  -i, --interval DUR    interval width (default 100ms)\n"
	 "  -p, --pid PID         only that process's kernels\n"
	 "  -o, --out FILE        write to FILE (default stdout)\n",
	 "xe.flamescope"},
	{"xe", cmd_xe,
	 "Intel Xe EU stalls: folded / iaprof output, pause / resume, batch dumps, zebins",
	 "gpuprofctl xe folded ID [-p PID] [--cgroup] [-o FILE]\n"
	 "gpuprofctl xe iaprof ID [-p PID] [-o FILE]\n"
	 "gpuprofctl xe pause [SECONDS] | gpuprofctl xe resume\n"
	 "gpuprofctl xe batch FILE|-\n"
	 "gpuprofctl xe zebin FILE|- [PID]\n\n"
	 "folded: instruction-level folded stacks (comm;pid;cpu frames;-;file_[G];\n"
	 "kernel_[G];insn_[g];stall_reason_[g];0xoffset_[g] count), the CPU frames\n"
	 "named from the capture's symbols; iaprof: iaprof's tab-separated format.\n"
	 "pause releases the EU-stall streams (default 60 s) so VTune or unitrace\n"
	 "can use the GPU; resume takes them back.\n"
	 "batch sends a batch-buffer dump (GPU memory and submissions, format in\n"
	 "docs/gpu-cs.md) to the daemon's command-stream parser, which adds the\n"
	 "kernel start pointers it finds to the EU-stall kernel table; needs root\n"
	 "or the daemon's admin group (access.admin_group).\n"
	 "zebin sends a NEO debug zebin (/tmp/dumped_zebin_module*.elf) as owned\n"
	 "by PID (default 0): its kernels join the kernel table and their binaries\n"
	 "are kept (64 MiB, oldest dropped) so folded / iaprof print the IGA text\n"
	 "of each instruction instead of its offset where libiga64 knows the GPU\n"
	 "(Debian 12: up to PVC); needs root or the daemon's admin group\n"
	 "(access.admin_group).\n",
	 "xe.folded, xe.iaprof, xe.pause, xe.resume, xe.batch, xe.zebin"},
	{"cupti", cmd_cupti, "NVIDIA: make a process's CUPTI library give CUPTI up",
	 "gpuprofctl cupti release [--wait DUR | --no-wait] PID\n\n"
	 "Ask the CUPTI injection library in process PID to stop collecting and\n"
	 "unsubscribe, so that a profiler started in that process next (the PyTorch\n"
	 "profiler) gets all of CUPTI. The process keeps running; its GPU timeline\n"
	 "stops until it restarts. Allowed for root, the daemon's admin group,\n"
	 "and the user whose process it is (whoever sees it in status).\n"
	 "\nOPTIONS\n"
	 "  --wait DUR   wait at most DUR (default 5s) until the library says it no\n"
	 "               longer holds the CUPTI subscription (status: subscribed\n"
	 "               false); exit 1 when it has not by then: a profiler started\n"
	 "               before that gets no GPU activity for the process's life\n"
	 "  --no-wait    only send the request\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl cupti release 4242     # then start torch.profiler in 4242\n"
	 "  gpuprofctl cupti release --wait 10s 4242\n",
	 "cupti.release"},
	{"help", cmd_help, "show help for a command",
	 "gpuprofctl help [COMMAND]\n\n"
	 "Show the overview, or the manual of COMMAND.\n",
	 NULL},
};

const struct command *help_find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

void help_print(FILE *f, const char *cmd)
{
	const struct command *c = cmd ? help_find(cmd) : NULL;

	if (c && strcmp(c->name, "help") != 0) {
		fprintf(f, "Usage: %s", c->usage);
		fputs(COMMON_FOOTER, f);
		return;
	}
	fputs("Usage: gpuprofctl [--socket PATH] [--json] [--timeout DUR] [--wide] COMMAND [ARGS]\n\n"
	      "Control gpuprofd, the always-on GPU/CPU profiling daemon: inspect it,\n"
	      "take captures, import traces, and run analyses and renderers.\n"
	      "\nCOMMANDS\n",
	      f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
	fputs("\n  -V, --version    show gpuprofctl's version\n", f);
	fputs(COMMON_FOOTER, f);
	fputs("\nEXAMPLES\n"
	      "  gpuprofctl status\n"
	      "  gpuprofctl capture --pid $(pidof python) --duration 10s\n"
	      "  gpuprofctl folded 1 | flamegraph.pl > cpu.svg\n"
	      "\nRun 'gpuprofctl help COMMAND' for a command's options.\n",
	      f);
}

/*
 * The command table as JSON, for the build: docs/man turns it into
 * gpuprofctl(1) and cli/completion into the bash and zsh completions, so
 * neither can drift from what `gpuprofctl help` prints.
 */
int help_describe(FILE *f)
{
	cJSON *root = cJSON_CreateObject(), *cmds;
	char *text;

	if (!root)
		return EXIT_LOCAL_IO;
	cJSON_AddStringToObject(root, "footer", COMMON_FOOTER);
	cmds = cJSON_AddArrayToObject(root, "commands");
	for (size_t i = 0; cmds && i < sizeof(commands) / sizeof(commands[0]); i++) {
		cJSON *c = cJSON_CreateObject();

		cJSON_AddItemToArray(cmds, c);
		cJSON_AddStringToObject(c, "name", commands[i].name);
		cJSON_AddStringToObject(c, "summary", commands[i].summary);
		cJSON_AddStringToObject(c, "usage", commands[i].usage);
	}
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return EXIT_LOCAL_IO;
	fputs(text, f);
	fputc('\n', f);
	free(text);
	return EXIT_OK;
}

/*
 * The command reference of docs/cli.md, from this table: an index and each
 * manual as the help prints it, so the two cannot drift apart
 * (scripts/cli_reference.py puts it into the file; a unit test checks it).
 */
static void help_markdown(FILE *f)
{
	const size_t n = sizeof(commands) / sizeof(commands[0]);

	fputs("| command | what it does | JSON-RPC method(s) |\n|---|---|---|\n", f);
	for (size_t i = 0; i < n; i++) {
		const char *m = commands[i].methods;

		/* the heading's anchor: "analyze comm" -> analyze-comm */
		fprintf(f, "| [`%s`](#gpuprofctl-", commands[i].name);
		for (const char *p = commands[i].name; *p; p++)
			fputc(*p == ' ' ? '-' : *p, f);
		fprintf(f, ") | %s | %s%s%s |\n", commands[i].summary, m ? "`" : "", m ? m : "—",
			m ? "`" : "");
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\n### gpuprofctl %s\n\n```\n%s```\n", commands[i].name,
			commands[i].usage);
}

/* Hidden --markdown: for the docs, not for a person at a terminal. */
static int help_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	(void)arg;
	if (opt != 'M')
		return cli_usage_error(cli, "unexpected option");
	*(bool *)ctx = true;
	return CLI_CONTINUE;
}

static int cmd_help(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"markdown", no_argument, NULL, 'M'},
		{},
	};
	bool markdown = false;
	int first, r;

	r = cli_parse(cli, argc, argv, "", opts, help_opt, &markdown, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (markdown) {
		if (first < argc)
			return cli_usage_error(cli, "--markdown takes no command");
		help_markdown(stdout);
		return EXIT_OK;
	}
	if (argc - first > 1)
		return cli_usage_error(cli, "too many arguments");
	if (first < argc && !help_find(argv[first]))
		return cli_usage_error(cli, "unknown command '%s'", argv[first]);
	help_print(stdout, first < argc ? argv[first] : NULL);
	return EXIT_OK;
}
