/* SPDX-License-Identifier: MIT */
/* gpuprofctl internals: the command table, option parsing and printing. */
#ifndef GPUPROFCTL_CLI_H
#define GPUPROFCTL_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <gpuprof/client.h>

/* Exit statuses, documented in `gpuprofctl --help` and docs/cli.md. */
enum {
	EXIT_OK = 0,
	EXIT_REMOTE = 1, /* the daemon answered with an error, or the request broke */
	EXIT_USAGE = 2,
	EXIT_CONNECT = 3,  /* cannot connect to the daemon */
	EXIT_LOCAL_IO = 4, /* cannot open/read/write a local file */
};

/* cli_parse() result meaning "go on with the command". */
#define CLI_CONTINUE (-1)

struct cli {
	const char *socket; /* --socket, else $GPUPROF_SOCKET, else the default */
	bool json;
	bool wide; /* --wide: human tables as wide as their contents */
	int timeout_ms;
	const char *cmd; /* name of the running command, for messages */
	struct gpuprof_client *client;
};

struct command {
	const char *name;
	int (*run)(struct cli *cli, int argc, char **argv);
	const char *summary; /* one line for `gpuprofctl help` */
	const char *usage;   /* the command's manual: synopsis, options, examples */
	const char *methods; /* the JSON-RPC methods it calls (docs/cli.md); NULL: none */
};

/*
 * getopt_long over a command's argv (argv[0] is the command) with the global
 * options mixed in. handle() gets every command option; it returns
 * CLI_CONTINUE or an exit status. Returns CLI_CONTINUE with *first set to
 * the first operand, or an exit status (EXIT_OK after --help).
 */
int cli_parse(struct cli *cli, int argc, char **argv, const char *shortopts,
	      const struct option *opts,
	      int (*handle)(struct cli *cli, int opt, const char *arg, void *ctx), void *ctx,
	      int *first);

/* Print "gpuprofctl: CMD: message" and a pointer to help; returns EXIT_USAGE. */
int cli_usage_error(struct cli *cli, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "gpuprofctl: message"; returns status. */
int cli_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Connect once (cli->client). Returns EXIT_OK or EXIT_CONNECT (message printed). */
int cli_connect(struct cli *cli);
/* Report a failed library call on method; returns the exit status. */
int cli_call_failed(struct cli *cli, const char *method, int err);

/* Parse a capture id / a positive integer; false if invalid. */
bool cli_parse_u64(const char *s, uint64_t *v);
/* The --rank option's value (0..INT32_MAX) into *rank: CLI_CONTINUE, or a
 * usage error naming the value. */
int cli_opt_rank(struct cli *cli, const char *arg, int64_t *rank);
/* One more --pid value (1..INT32_MAX) into *pid, n of at most max given so
 * far: CLI_CONTINUE, or a usage error naming the value or the limit. */
int cli_opt_pid(struct cli *cli, const char *arg, size_t n, size_t max, int64_t *pid);

/*
 * Parse "key=value" into params: value is taken as JSON when it parses as
 * such (numbers, true, [1,2], "quoted"), else as a string.
 */
bool cli_add_kv_param(cJSON *params, const char *kv);

/* Print JSON text pretty to stdout (--json). Returns an exit status. */
int print_json_text(const char *json);
/* Print any JSON result for humans: key: value lines, tables for lists. */
void print_json_human(const cJSON *item, int indent);
/* Nested results (analyses) as key: value lines and tables (print_tables.c),
 * within 100 columns unless wide. */
void print_result_tables(const cJSON *root, bool wide);

/* A number for a person (print_tables.c): integers grouped "1,234,567" (id:
 * as written, "4242"), fractions to 3-4 significant digits, no exponent. */
void fmt_num(char *buf, size_t len, double v, bool id);
/* "12.3 MiB", "512 B". buf must hold 32 bytes. */
const char *fmt_bytes(char *buf, double bytes);
/* "1.50s", "250ms", "2m05s", "1h02m". buf must hold 32 bytes. */
const char *fmt_duration_ns(char *buf, double ns);

/* Aligned text tables. A header starting with '>' is right-aligned. */
struct table;
struct table *table_new(size_t ncols, const char *const *headers);
void table_add(struct table *t, ...); /* exactly ncols const char * cells */
void table_print(const struct table *t);
void table_free(struct table *t);

/*
 * Terminal safety of daemon-provided text (escape.c): human output shows
 * control characters (C0, DEL, C1) and bytes that are not UTF-8 as "\xNN".
 * cli_escape() returns a malloc'ed copy (NULL: no memory);
 * cli_parse_reply() parses a result and escapes every string and key in it,
 * for the human printers (not for --json, which prints the reply as JSON).
 */
bool cli_text_safe(const char *s);
char *cli_escape(const char *s);
void cli_escape_tree(cJSON *item);
cJSON *cli_parse_reply(const char *text);

/* JSON member lookups that tolerate absent members. */
double json_num(const cJSON *obj, const char *key, double dflt);
const char *json_str(const cJSON *obj, const char *key, const char *dflt);

/* Commands, one handler each (cmd_*.c). */
int cmd_status(struct cli *cli, int argc, char **argv);
int cmd_version(struct cli *cli, int argc, char **argv);
int cmd_capture(struct cli *cli, int argc, char **argv);
int cmd_list(struct cli *cli, int argc, char **argv);
int cmd_info(struct cli *cli, int argc, char **argv);
int cmd_delete(struct cli *cli, int argc, char **argv);
int cmd_folded(struct cli *cli, int argc, char **argv);
int cmd_flamegraph(struct cli *cli, int argc, char **argv); /* cmd_render.c */
int cmd_heatmap(struct cli *cli, int argc, char **argv);
int cmd_diff(struct cli *cli, int argc, char **argv);
int cmd_export(struct cli *cli, int argc, char **argv);
int cmd_analyze(struct cli *cli, int argc, char **argv);
/* analyze comm's tables (print_comm.c). */
void print_comm(const cJSON *result);
int cmd_import(struct cli *cli, int argc, char **argv);
int cmd_flamescope(struct cli *cli, int argc, char **argv); /* cmd_xe.c */
int cmd_xe(struct cli *cli, int argc, char **argv);
int cmd_cupti(struct cli *cli, int argc, char **argv);
int cmd_gpu_top(struct cli *cli, int argc, char **argv);

/*
 * Every --out FILE (outfile.c). cli_out_open(): "-" or NULL is stdout;
 * a regular or new FILE gets a temporary file beside it (same directory,
 * the existing file's mode or 0644 under the umask; a symlink is followed),
 * a FIFO or device is opened as is; a file we cannot replace without
 * changing its owner or links, or in a directory we may not write, is
 * written in place and cut to length on success. Pass o->fd to the daemon, then
 * cli_out_close(o, status): with EXIT_OK the temporary file replaces FILE
 * (for stdout on a terminal: is copied to it with controls escaped),
 * else it is removed and FILE is left as it was. Both return an exit
 * status (messages printed).
 */
struct cli_out {
	int fd;
	bool is_stdout;
	const char *path; /* as given, for messages */
	char *target;	  /* path with a symlink resolved */
	char *tmp;	  /* the temporary file, NULL when writing directly */
	bool in_place;	  /* an existing file written without O_TRUNC (see outfile.c) */
	bool tty;	  /* stdout is a terminal: fd is a temporary file, copied escaped */
};
int cli_out_open(struct cli_out *o, const char *path);
int cli_out_close(struct cli_out *o, int status);

/*
 * Long requests (progress.c). cli_call_progress() sends method with params
 * (and fds, passed with the request) and waits for its reply, honouring
 * --timeout. While it waits, and only when stderr is a terminal
 * (cli_progress_wanted()), draw(ctx, line, len) fills one status line,
 * redrawn in place every 200 ms and erased before returning (or on SIGINT
 * and SIGTERM, which then end the process as by default). Returns 0
 * with *res (malloc'ed result text, the caller frees), -EREMOTEIO after
 * printing the daemon's error, or another negative errno (nothing
 * printed: see cli_call_failed()).
 */
typedef void (*cli_progress_fn)(void *ctx, char *line, size_t len);
int cli_call_progress(struct cli *cli, const char *method, const char *params, const int *fds,
		      size_t nfds, cli_progress_fn draw, void *ctx, char **res);
bool cli_progress_wanted(void);
void cli_progress_clear(void);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t cli_now_ms(void);

/* Shared by capture --out and folded: run capture.folded into out_fd. */
/* print_result: print the method's result JSON on stdout (--json with --out FILE). */
int cli_write_folded(struct cli *cli, uint64_t id, int out_fd, cJSON *params, bool print_result);
/* Print one capture's info as "key: value" lines. */
void print_capture_info(const cJSON *info, const char *raw);

/*
 * The analyses' parameters as options of analyze (analyses.c), from
 * gpuprofd's analysis table as built. an_table_load() makes one long option
 * per parameter of any analysis (val AN_OPT_BASE + i), leaving out those
 * the command's own options (own, ending with a NULL name) stand for;
 * CLI_CONTINUE or an exit status. an_table_free() undoes it.
 */
#define AN_OPT_BASE 0x1000
#define AN_MAX_OPTS 64
struct an_table {
	cJSON *root;
	const cJSON *list; /* analyze.list's "analyses" */
	struct option opts[AN_MAX_OPTS + 1];
	const cJSON *param[AN_MAX_OPTS]; /* the parameter of opts[i] */
	size_t n;
};
int an_table_load(struct an_table *t, const struct option *own);
void an_table_free(struct an_table *t);
/* The analysis called name ("critical-path" or "critical_path"), or NULL. */
const cJSON *an_table_find(const struct an_table *t, const char *name);
/* Whether analysis takes a parameter of that name and type (NULL: any). */
bool an_takes(const cJSON *analysis, const char *name, const char *type);
/* Option val's arg into params by the parameter's type (a usage error
 * naming the option when it does not convert); a parameter of type "fd"
 * only gives its file and name, for the caller to open once it knows the
 * analysis. CLI_CONTINUE or an exit status. */
int an_table_set(struct cli *cli, const struct an_table *t, int val, const char *arg, cJSON *params,
		 const char **fd_path, const char **fd_param);
/* analyze.list's result as text: each analysis and its options. */
void an_print_list(const cJSON *result);

#endif
