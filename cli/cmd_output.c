// SPDX-License-Identifier: MIT
/* gpuprofctl folded / analyze: results on fds and in JSON (renderers: cmd_render.c). */
#include "cli.h"
#include "help.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TIDS 64

struct folded_args {
	const char *out, *comm, *weight;
	bool kernel, pid, tid, cgroup, lines;
	int64_t tids[MAX_TIDS];
	size_t ntids;
	int64_t pids[MAX_TIDS];
	size_t npids;
	uint64_t from_ms, to_ms;
};

enum {
	OPT_KERNEL = 0x200,
	OPT_NO_KERNEL,
	OPT_PID_FRAMES,
	OPT_TID_FRAMES,
	OPT_COMM,
	OPT_TID,
	OPT_WEIGHT,
	OPT_PID,
	OPT_FROM,
	OPT_TO,
	OPT_CGROUP,
	OPT_LINES,
};

static int folded_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct folded_args *a = ctx;
	uint64_t v;

	switch (opt) {
	case 'o':
		a->out = arg;
		break;
	case OPT_KERNEL:
	case OPT_NO_KERNEL:
		a->kernel = opt == OPT_KERNEL;
		break;
	case OPT_PID_FRAMES:
		a->pid = true;
		break;
	case OPT_TID_FRAMES:
		a->tid = true;
		break;
	case OPT_CGROUP:
		a->cgroup = true;
		break;
	case OPT_LINES:
		a->lines = true;
		break;
	case OPT_COMM:
		a->comm = arg;
		break;
	case OPT_WEIGHT:
		if (strcmp(arg, "samples") && strcmp(arg, "launches") && strcmp(arg, "gpu-time") &&
		    strcmp(arg, "stalls"))
			return cli_usage_error(
				cli, "--weight is samples, launches, gpu-time or stalls, not '%s'",
				arg);
		a->weight = arg;
		break;
	case OPT_TID:
		if (!cli_parse_u64(arg, &v) || v == 0 || v > INT32_MAX)
			return cli_usage_error(cli, "invalid tid '%s'", arg);
		if (a->ntids == MAX_TIDS)
			return cli_usage_error(cli, "at most %d --tid", MAX_TIDS);
		a->tids[a->ntids++] = (int64_t)v;
		break;
	case OPT_PID: {
		int r = cli_opt_pid(cli, arg, a->npids, MAX_TIDS, &a->pids[a->npids]);

		if (r != CLI_CONTINUE)
			return r;
		a->npids++;
		break;
	}
	case OPT_FROM:
	case OPT_TO:
		if (gpuprof_parse_duration_ms(arg, opt == OPT_FROM ? &a->from_ms : &a->to_ms) < 0)
			return cli_usage_error(cli, "invalid duration '%s'", arg);
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

/* The single capture ID operand at argv[first]. */
static int one_id(struct cli *cli, int argc, char **argv, int first, uint64_t *id)
{
	if (first >= argc)
		return cli_usage_error(cli, "missing capture ID");
	if (!cli_parse_u64(argv[first], id) || *id == 0)
		return cli_usage_error(cli, "invalid capture ID '%s'", argv[first]);
	return CLI_CONTINUE;
}

int cmd_folded(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"out", required_argument, NULL, 'o'},
		{"kernel", no_argument, NULL, OPT_KERNEL},
		{"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
		{"pid-frames", no_argument, NULL, OPT_PID_FRAMES},
		{"tid-frames", no_argument, NULL, OPT_TID_FRAMES},
		{"cgroup", no_argument, NULL, OPT_CGROUP},
		{"lines", no_argument, NULL, OPT_LINES},
		{"comm", required_argument, NULL, OPT_COMM},
		{"tid", required_argument, NULL, OPT_TID},
		{"weight", required_argument, NULL, OPT_WEIGHT},
		{"pid", required_argument, NULL, OPT_PID},
		{"from", required_argument, NULL, OPT_FROM},
		{"to", required_argument, NULL, OPT_TO},
		{},
	};
	struct folded_args a = {.kernel = true};
	uint64_t id;
	int first, fd, r;

	r = cli_parse(cli, argc, argv, "o:", opts, folded_opt, &a, &first);
	if (r != CLI_CONTINUE)
		return r;
	r = one_id(cli, argc, argv, first, &id);
	if (r != CLI_CONTINUE)
		return r;
	if (argc - first > 1)
		return cli_usage_error(cli, "unexpected argument '%s'", argv[first + 1]);
	r = cli_connect(cli);
	if (r)
		return r;
	struct cli_out out;
	r = cli_out_open(&out, a.out);
	if (r)
		return r;
	fd = out.fd;

	cJSON *p = cJSON_CreateObject();
	cJSON_AddBoolToObject(p, "kernel", a.kernel);
	cJSON_AddBoolToObject(p, "pid", a.pid);
	cJSON_AddBoolToObject(p, "tid", a.tid);
	if (a.cgroup)
		cJSON_AddTrueToObject(p, "cgroup");
	if (a.lines)
		cJSON_AddTrueToObject(p, "lines");
	if (a.comm)
		cJSON_AddStringToObject(p, "comm", a.comm);
	if (a.weight)
		cJSON_AddStringToObject(p, "weight", a.weight);
	if (a.ntids) {
		cJSON *tids = cJSON_AddArrayToObject(p, "tids");
		for (size_t i = 0; i < a.ntids; i++)
			cJSON_AddItemToArray(tids, cJSON_CreateNumber((double)a.tids[i]));
	}
	if (a.npids) {
		cJSON *pids = cJSON_AddArrayToObject(p, "pids");
		for (size_t i = 0; i < a.npids; i++)
			cJSON_AddItemToArray(pids, cJSON_CreateNumber((double)a.pids[i]));
	}
	if (a.from_ms)
		cJSON_AddNumberToObject(p, "from_ns", (double)a.from_ms * 1e6);
	if (a.to_ms)
		cJSON_AddNumberToObject(p, "to_ns", (double)a.to_ms * 1e6);
	/* --json: the method's result, where it cannot mix with the stacks */
	r = cli_write_folded(cli, id, fd, p, cli->json && !out.is_stdout);
	cJSON_Delete(p);
	return cli_out_close(&out, r);
}

/*
 * Options of analyze: --rank, the two files of the critical-path overlay,
 * and one per parameter of any analysis (analyses.c); then KEY=VALUE
 * operands. Each becomes a parameter; an option the named analysis does
 * not take is refused before anything is sent.
 */
enum {
	OPT_OVERLAY = 0x300,
	OPT_TRACE,
};

static const struct option analyze_own[] = {
	{"rank", required_argument, NULL, 'r'},
	{"overlay", required_argument, NULL, OPT_OVERLAY},
	{"trace", required_argument, NULL, OPT_TRACE},
	{},
};
#define N_ANALYZE_OWN (sizeof(analyze_own) / sizeof(analyze_own[0]) - 1)

struct analyze_args {
	const struct an_table *t;
	int64_t rank;
	const char *overlay, *trace;
	const char *fd_path, *fd_param; /* a parameter of type "fd": its file */
	cJSON *set;			/* the parameters the options set */
	int given[AN_MAX_OPTS];		/* the parameter options given, once each */
	size_t ngiven;
};

static int analyze_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct analyze_args *a = ctx;
	size_t i;

	switch (opt) {
	case 'r':
		return cli_opt_rank(cli, arg, &a->rank);
	case OPT_OVERLAY:
		a->overlay = arg;
		return CLI_CONTINUE;
	case OPT_TRACE:
		a->trace = arg;
		return CLI_CONTINUE;
	}
	if (opt < AN_OPT_BASE || opt >= AN_OPT_BASE + (int)a->t->n)
		return cli_usage_error(cli, "unexpected option");
	/* each option once: there are at most AN_MAX_OPTS */
	for (i = 0; i < a->ngiven && a->given[i] != opt; i++)
		;
	if (i == a->ngiven)
		a->given[a->ngiven++] = opt;
	return an_table_set(cli, a->t, opt, arg, a->set, &a->fd_path, &a->fd_param);
}

/* Each option given is a parameter of analysis name, where this build
 * knows it (a newer daemon's analysis gets them unchecked, and refuses
 * what it does not take). */
static int check_options(struct cli *cli, const struct analyze_args *a, const char *name)
{
	const cJSON *an = an_table_find(a->t, name);

	if (!an)
		return CLI_CONTINUE;
	for (size_t i = 0; i < a->ngiven; i++) {
		const cJSON *p = a->t->param[a->given[i] - AN_OPT_BASE];
		const cJSON *pn = cJSON_GetObjectItemCaseSensitive(p, "name");

		if (!an_takes(an, pn->valuestring, NULL))
			return cli_usage_error(cli,
					       "--%s is not an option of 'analyze %s' ('gpuprofctl "
					       "analyze list' shows each analysis's)",
					       a->t->opts[a->given[i] - AN_OPT_BASE].name, name);
	}
	if ((a->overlay || a->trace) && !an_takes(an, NULL, "fds"))
		return cli_usage_error(cli, "--%s is not an option of 'analyze %s'",
				       a->overlay ? "overlay" : "trace", name);
	if (!a->overlay != !a->trace)
		return cli_usage_error(cli, "--overlay FILE needs --trace ORIGINAL (the imported "
					    "trace file, streamed through the daemon)");
	return CLI_CONTINUE;
}

/* analyze list: the daemon's analyses and their options. */
static int list_analyses(struct cli *cli)
{
	char *res = NULL;
	int r = cli_connect(cli);

	if (r)
		return r;
	r = gpuprof_client_call(cli->client, "analyze.list", NULL, NULL, 0, &res);
	if (r < 0)
		return cli_call_failed(cli, "analyze.list", r);
	if (cli->json) {
		r = print_json_text(res);
	} else {
		cJSON *v = cli_parse_reply(res);

		an_print_list(v);
		cJSON_Delete(v);
		r = EXIT_OK;
	}
	free(res);
	return r;
}

/* The critical edges are a prefix of the path's (max_edges, 1000 unless
 * asked): a person reading the table must not take it for the whole path. */
static void print_edges_shown(const cJSON *v)
{
	const cJSON *edges = cJSON_GetObjectItemCaseSensitive(v, "critical_edges");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(v, "path");
	char shown[32], all[32];

	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "critical_edges_truncated")))
		return;
	fmt_num(shown, sizeof(shown), cJSON_GetArraySize(edges), false);
	fmt_num(all, sizeof(all), json_num(path, "edges", 0), false);
	printf("\nshowing %s of %s critical edges; --max-edges N to see more\n", shown, all);
}

/* An analysis's result as tables: by the printer of its kind, else the
 * generic one. */
static void print_result(const cJSON *v, bool wide)
{
	static const struct {
		const char *analysis;
		void (*print)(const cJSON *result);
	} printers[] = {
		{"comm", print_comm},
	};
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(v, "analysis");

	for (size_t i = 0; i < sizeof(printers) / sizeof(printers[0]); i++)
		if (cJSON_IsString(name) && !strcmp(name->valuestring, printers[i].analysis)) {
			printers[i].print(v);
			return;
		}
	print_result_tables(v, wide);
	print_edges_shown(v);
}

/*
 * An analysis with a manual of its own ("analyze comm") shows it for
 * --help: the first operand, options and their arguments skipped, names it.
 */
static void manual_of(struct cli *cli, int argc, char **argv, const struct option *opts)
{
	char name[96];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-') {
			snprintf(name, sizeof(name), "analyze %s", a);
			if (help_find(name))
				cli->cmd = help_find(name)->name;
			return;
		}
		if (!strcmp(a, "--"))
			return;
		/* "--opt VALUE" and "-r VALUE" take the next word; "--opt=VALUE",
		 * "-rVALUE" do not */
		if (a[1] == '-' && !strchr(a, '=')) {
			for (const struct option *o = opts; o->name; o++)
				if (!strcmp(a + 2, o->name) && o->has_arg == required_argument)
					i++;
		} else if (a[1] == 'r' && !a[2]) {
			i++;
		}
	}
}

/* {"id": ID, KEY: VALUE...} from the operands after the id; NULL on a bad pair. */
static cJSON *id_and_extras(struct cli *cli, uint64_t id, int argc, char **argv, int from)
{
	cJSON *p = cJSON_CreateObject();

	for (int i = from; i < argc; i++) {
		if (!cli_add_kv_param(p, argv[i])) {
			cli_usage_error(cli, "expected KEY=VALUE, got '%s'", argv[i]);
			cJSON_Delete(p);
			return NULL;
		}
	}
	cJSON_DeleteItemFromObjectCaseSensitive(p, "id");
	cJSON_AddNumberToObject(p, "id", (double)id);
	return p;
}

/* Move every parameter of from into to, replacing those of the same name. */
static void merge_params(cJSON *to, cJSON *from)
{
	cJSON *v;

	while ((v = from->child)) {
		cJSON_DetachItemViaPointer(from, v);
		cJSON_DeleteItemFromObjectCaseSensitive(to, v->string);
		cJSON_AddItemToObject(to, v->string, v);
	}
}

/* "analyze.NAME" into method, NAME checked; "critical-path" and
 * "critical_path" both name analyze.critical_path. */
static int method_of(struct cli *cli, const char *name, char *method, size_t len)
{
	for (const char *s = name; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return cli_usage_error(cli, "invalid analysis name '%s'", name);
	if (!*name || strlen(name) > 64)
		return cli_usage_error(cli, "invalid analysis name '%s'", name);
	snprintf(method, len, "analyze.%s", name);
	for (char *m = method; *m; m++)
		if (*m == '-')
			*m = '_';
	return CLI_CONTINUE;
}

/* The request's descriptors: the overlay's trace in and file out, or the
 * file of a parameter of type "fd". */
static int open_files(struct analyze_args *a, cJSON *p, struct cli_out *ov, int fds[2],
		      size_t *nfds)
{
	int r;

	if (a->overlay) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "overlay");
		cJSON_AddBoolToObject(p, "overlay", true);
		cJSON_DeleteItemFromObjectCaseSensitive(p, "fds");
		cJSON *fa = cJSON_AddArrayToObject(p, "fds");
		cJSON_AddItemToArray(fa, cJSON_CreateNumber(0));
		cJSON_AddItemToArray(fa, cJSON_CreateNumber(1));
		fds[0] = open(a->trace, O_RDONLY | O_CLOEXEC);
		if (fds[0] < 0)
			return cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", a->trace,
					strerror(errno));
		r = cli_out_open(ov, a->overlay);
		if (r) {
			close(fds[0]);
			fds[0] = -1;
			return r;
		}
		fds[1] = ov->fd;
		*nfds = 2;
	} else if (a->fd_path) {
		r = cli_out_open(ov, a->fd_path);
		if (r)
			return r;
		cJSON_DeleteItemFromObjectCaseSensitive(p, a->fd_param);
		cJSON_AddNumberToObject(p, a->fd_param, 0);
		fds[0] = ov->fd;
		*nfds = 1;
	}
	return 0;
}

/* The daemon refused the overlay's --trace: say what to do about it. */
static void trace_hint(struct cli *cli, const char *trace, uint64_t id)
{
	const char *m = gpuprof_client_error_message(cli->client);

	if (m && strstr(m, "cannot be verified"))
		fprintf(stderr,
			"gpuprofctl: --trace %s: re-import it, or add --trust-trace to "
			"overlay it unchecked\n",
			trace);
	else
		fprintf(stderr,
			"gpuprofctl: --trace %s cannot be overlaid on capture %llu: give "
			"the file that capture was imported from\n",
			trace, (unsigned long long)id);
}

static int analyze_call(struct cli *cli, struct analyze_args *a, const char *method, uint64_t id,
			cJSON *p)
{
	struct cli_out ov = {.fd = -1};
	int r, fds[2] = {-1, -1};
	size_t nfds = 0;
	char *params = NULL, *res = NULL;

	r = open_files(a, p, &ov, fds, &nfds);
	if (r)
		return r;
	if (a->rank >= 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "rank");
		cJSON_AddNumberToObject(p, "rank", (double)a->rank);
	}
	params = cJSON_PrintUnformatted(p);
	r = cli_connect(cli);
	if (r)
		goto out;
	r = gpuprof_client_call(cli->client, method, params, nfds ? fds : NULL, nfds, &res);
	if (r < 0) {
		bool bad_trace = a->trace && r == -EREMOTEIO &&
				 gpuprof_client_error_code(cli->client) == GPUPROF_ERR_BAD_INPUT;

		r = cli_call_failed(cli, method, r);
		if (bad_trace)
			trace_hint(cli, a->trace, id);
		goto out;
	}
	if (cli->json) {
		print_json_text(res);
	} else {
		cJSON *v = cli_parse_reply(res);
		print_result(v, cli->wide);
		cJSON_Delete(v);
	}
	r = EXIT_OK;
out:
	if (a->overlay && fds[0] >= 0)
		close(fds[0]);
	if (nfds)
		r = cli_out_close(&ov, r);
	free(res);
	free(params);
	return r;
}

int cmd_analyze(struct cli *cli, int argc, char **argv)
{
	struct option opts[N_ANALYZE_OWN + AN_MAX_OPTS + 1];
	struct an_table t;
	struct analyze_args a = {.t = &t, .rank = -1};
	char method[96];
	uint64_t id;
	int first, r;
	cJSON *p = NULL;

	r = an_table_load(&t, analyze_own);
	if (r != CLI_CONTINUE)
		goto out;
	memcpy(opts, analyze_own, N_ANALYZE_OWN * sizeof(opts[0]));
	memcpy(opts + N_ANALYZE_OWN, t.opts, (t.n + 1) * sizeof(opts[0]));
	a.set = cJSON_CreateObject();
	manual_of(cli, argc, argv, opts);
	r = cli_parse(cli, argc, argv, "r:", opts, analyze_opt, &a, &first);
	if (r != CLI_CONTINUE)
		goto out;
	if (first >= argc) {
		r = cli_usage_error(cli, "missing analysis NAME");
		goto out;
	}
	if (!strcmp(argv[first], "list") && argc - first == 1 && !a.ngiven) {
		r = list_analyses(cli);
		goto out;
	}
	if ((r = method_of(cli, argv[first], method, sizeof(method))) != CLI_CONTINUE ||
	    (r = check_options(cli, &a, argv[first])) != CLI_CONTINUE ||
	    (r = one_id(cli, argc, argv, first + 1, &id)) != CLI_CONTINUE)
		goto out;
	p = id_and_extras(cli, id, argc, argv, first + 2);
	if (!p) {
		r = EXIT_USAGE;
		goto out;
	}
	merge_params(p, a.set);
	r = analyze_call(cli, &a, method, id, p);
out:
	cJSON_Delete(p);
	cJSON_Delete(a.set);
	an_table_free(&t);
	return r;
}
