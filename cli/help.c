// SPDX-License-Identifier: MIT
/* The command table: name, handler, summary and manual of every command. */
#include "help.h"

#include <string.h>

static int cmd_help(struct cli *cli, int argc, char **argv);

#define COMMON_FOOTER                                                                              \
	"\nGLOBAL OPTIONS (before or after the command)\n"                                         \
	"  --socket PATH    daemon socket (default $GPUPROF_SOCKET, else\n"                        \
	"                   /run/gpuprof/gpuprofd.sock)\n"                                         \
	"  --json           print the daemon's result as JSON on stdout\n"                         \
	"  --timeout DUR    give up waiting for a reply after DUR (500ms, 30s, 2m)\n"              \
	"  -h, --help       show this help\n"                                                      \
	"\nEXIT STATUS\n"                                                                          \
	"  0 success; 1 the daemon returned an error (or the connection broke);\n"                 \
	"  2 usage error; 3 cannot connect to the daemon; 4 local I/O error.\n"

static const struct command commands[] = {
	{"status", cmd_status, "show the daemon, its store and its collectors",
	 "gpuprofctl status\n\n"
	 "Show the daemon's version, pid and uptime, the ring store's usage, the\n"
	 "clients and jobs, and one line per collector with its state, event and\n"
	 "drop counters and, when it is not attached, the reason.\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl status\n"
	 "  gpuprofctl status --json | jq .collectors\n"},
	{"version", cmd_version, "show the client and daemon versions",
	 "gpuprofctl version\n\n"
	 "Print gpuprofctl's version, then ask the daemon for its own and its\n"
	 "protocol version.\n"},
	{"capture", cmd_capture, "take a capture of one or more processes",
	 "gpuprofctl capture --pid PID [--pid PID]... (--duration DUR | --last DUR)\n"
	 "                   [--name NAME] [--no-wait] [--out FILE]\n\n"
	 "Cut a capture out of the daemon's stream: --last takes what the store\n"
	 "already holds for the past DUR, --duration records forward for DUR.\n"
	 "By default the command waits until the capture is complete and prints\n"
	 "its info.\n"
	 "\nOPTIONS\n"
	 "  -p, --pid PID        the process to capture (required; repeat for\n"
	 "                       more, at most 64)\n"
	 "  -d, --duration DUR   record forward for DUR (e.g. 10s)\n"
	 "  -l, --last DUR       take the last DUR from the store (e.g. 30s)\n"
	 "  -n, --name NAME      label the capture\n"
	 "      --no-wait        return at once with the recording capture's id\n"
	 "  -o, --out FILE       then write its folded stacks to FILE\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl capture --pid 4242 --duration 10s --name warmup\n"
	 "  gpuprofctl capture --last 30s --out stacks.folded\n"},
	{"list", cmd_list, "list captures",
	 "gpuprofctl list\n\n"
	 "List the captures you may see, oldest first: ID NAME KIND STATE OWNER\n"
	 "CREATED DURATION RECORDS SIZE.\n"},
	{"info", cmd_info, "show one capture",
	 "gpuprofctl info ID\n\n"
	 "Show a capture's details: window, processes, record counts by type,\n"
	 "file size, and the reason when it is damaged.\n"},
	{"delete", cmd_delete, "delete a capture",
	 "gpuprofctl delete ID...\n\n"
	 "Remove captures and their files. A recording capture is stopped and\n"
	 "discarded.\n"},
	{"folded", cmd_folded, "write a capture's folded stacks",
	 "gpuprofctl folded ID [--out FILE] [--kernel|--no-kernel] [--pid-frames]\n"
	 "                  [--tid-frames] [--comm NAME] [--tid TID]...\n\n"
	 "Write the capture's samples as folded stacks (one \"frame;frame;... count\"\n"
	 "line per stack, the input of flamegraph.pl and speedscope) to FILE or,\n"
	 "without --out, to stdout.\n"
	 "\nOPTIONS\n"
	 "  -o, --out FILE     write to FILE instead of stdout\n"
	 "      --kernel       include kernel frames (default)\n"
	 "      --no-kernel    leave kernel frames out\n"
	 "      --pid-frames   start each stack with a frame naming the process\n"
	 "      --tid-frames   start each stack with a frame naming the thread\n"
	 "      --comm NAME    keep only threads whose command name is NAME\n"
	 "      --tid TID      keep only this thread (repeat for more)\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl folded 3 | flamegraph.pl > cpu.svg\n"
	 "  gpuprofctl folded 3 --no-kernel --tid-frames --out app.folded\n"},
	{"import", cmd_import, "import trace files as captures",
	 "gpuprofctl import FILE... [--rank N] [--name NAME]\n\n"
	 "Hand trace files (PyTorch profiler / Kineto or Chrome trace JSON, plain\n"
	 "or .gz) to the daemon, which parses them into captures, one per FILE.\n"
	 "gpuprofctl opens each file itself and passes the open descriptor: the\n"
	 "daemon never opens a path. Progress is shown on a terminal's stderr.\n"
	 "\nOPTIONS\n"
	 "  -r, --rank N      rank of the first FILE (the next ones get N+1, ...);\n"
	 "                    default: taken from the trace\n"
	 "  -n, --name NAME   label the captures\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl import rank0.pt.trace.json.gz --name step42\n"},
	{"analyze", cmd_analyze, "run an analysis on a capture",
	 "gpuprofctl analyze NAME ID [--rank R] [--json] [KEY=VALUE]...\n\n"
	 "Run the analysis NAME (e.g. temporal, idle, overlap, launch, queue,\n"
	 "kernels, sequences, critical-path, comm) on capture ID and print its\n"
	 "result. KEY=VALUE pairs are passed as extra params; VALUE is read as\n"
	 "JSON when it is valid JSON (numbers, true, [1,2]) and as a string\n"
	 "otherwise.\n"
	 "\nOPTIONS\n"
	 "  -r, --rank R   analyse only rank R of a multi-rank capture\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl analyze idle 7 --rank 0\n"
	 "  gpuprofctl analyze kernels 7 top=20 --json\n"},
	{"flamegraph", cmd_flamegraph, "render a capture as a flame graph SVG",
	 "gpuprofctl flamegraph ID --out FILE [KEY=VALUE]...\n\n"
	 "Render the capture's stacks as an interactive flame graph SVG into FILE\n"
	 "('-' for stdout). KEY=VALUE pairs are passed as extra params.\n"
	 "\nEXAMPLES\n"
	 "  gpuprofctl flamegraph 3 --out cpu.svg\n"},
	{"help", cmd_help, "show help for a command",
	 "gpuprofctl help [COMMAND]\n\n"
	 "Show the overview, or the manual of COMMAND.\n"},
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
	fputs("Usage: gpuprofctl [--socket PATH] [--json] [--timeout DUR] COMMAND [ARGS]\n\n"
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

static int cmd_help(struct cli *cli, int argc, char **argv)
{
	int first, r;

	r = cli_parse(cli, argc, argv, "", NULL, NULL, NULL, &first);
	if (r != CLI_CONTINUE)
		return r;
	if (argc - first > 1)
		return cli_usage_error(cli, "too many arguments");
	if (first < argc && !help_find(argv[first]))
		return cli_usage_error(cli, "unknown command '%s'", argv[first]);
	help_print(stdout, first < argc ? argv[first] : NULL);
	return EXIT_OK;
}
