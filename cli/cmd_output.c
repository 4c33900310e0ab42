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
		if (strcmp(arg, "samples") && strcmp(arg, "launches") && strcmp(arg, "gpu-time"))
			return cli_usage_error(cli,
					       "--weight is samples, launches or gpu-time, not '%s'",
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

/* Options of analyze: --rank, --svg, the critical-path options, then
 * KEY=VALUE. Each becomes a parameter; the analysis refuses those it does
 * not take. */
struct render_args {
	const char *out, *svg;
	int64_t rank;
	const char *annotation, *instance, *overlay, *trace;
	bool all_events, trust_trace;
	int64_t max_edges; /* -1: the daemon's default */
	cJSON *edits;	   /* --edit, as edit objects */
	uint32_t scoped;   /* bit i: option scoped[i] given */
};

enum {
	OPT_ANNOTATION = 0x300,
	OPT_INSTANCE,
	OPT_OVERLAY,
	OPT_TRACE,
	OPT_EDIT,
	OPT_ALL_EVENTS,
	OPT_MAX_EDGES,
	OPT_TRUST_TRACE,
	OPT_SVG,
};

/* The options only one analysis takes (its own parameters), refused for
 * the others before anything is sent. */
static const struct {
	int opt;
	const char *name, *analysis;
} scoped[] = {
	{OPT_ANNOTATION, "--annotation", "critical_path"},
	{OPT_INSTANCE, "--instance", "critical_path"},
	{OPT_OVERLAY, "--overlay", "critical_path"},
	{OPT_TRACE, "--trace", "critical_path"},
	{OPT_EDIT, "--edit", "critical_path"},
	{OPT_ALL_EVENTS, "--overlay-all-events", "critical_path"},
	{OPT_MAX_EDGES, "--max-edges", "critical_path"},
	{OPT_TRUST_TRACE, "--trust-trace", "critical_path"},
	{OPT_SVG, "--svg", "comm"},
};

/*
 * --edit SPEC: [kind:KIND | match:REGEX | REGEX] then *FACTOR or =MICROSECONDS
 * at the end, e.g. "kind:comm*0.5", "kind:launch_delay=5", "^aten::mm$*0.8".
 * The last '*' or '=' followed by a number splits it, so regexes may hold both.
 */
static cJSON *parse_edit(const char *spec)
{
	const char *op = NULL;
	char *end, *sel;
	double v = 0;
	cJSON *e;

	for (const char *q = spec; *q; q++) {
		if (*q != '*' && *q != '=')
			continue;
		v = strtod(q + 1, &end);
		if (end != q + 1 && !*end)
			op = q;
	}
	if (!op || op == spec)
		return NULL;
	sel = strndup(spec, (size_t)(op - spec));
	e = cJSON_CreateObject();
	if (!sel || !e) {
		free(sel);
		cJSON_Delete(e);
		return NULL;
	}
	if (!strncmp(sel, "kind:", 5))
		cJSON_AddStringToObject(e, "kind", sel + 5);
	else
		cJSON_AddStringToObject(e, "match", strncmp(sel, "match:", 6) ? sel : sel + 6);
	cJSON_AddNumberToObject(e, *op == '*' ? "scale" : "set_us", v);
	free(sel);
	return e;
}

static int render_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct render_args *a = ctx;
	cJSON *e;

	for (size_t i = 0; i < sizeof(scoped) / sizeof(scoped[0]); i++)
		if (scoped[i].opt == opt)
			a->scoped |= 1u << i;
	switch (opt) {
	case 'o':
		a->out = arg;
		break;
	case 'r':
		return cli_opt_rank(cli, arg, &a->rank);
	case OPT_ANNOTATION:
		a->annotation = arg;
		break;
	case OPT_INSTANCE:
		a->instance = arg;
		break;
	case OPT_OVERLAY:
		a->overlay = arg;
		break;
	case OPT_TRACE:
		a->trace = arg;
		break;
	case OPT_SVG:
		a->svg = arg;
		break;
	case OPT_ALL_EVENTS:
		a->all_events = true;
		break;
	case OPT_TRUST_TRACE:
		a->trust_trace = true;
		break;
	case OPT_MAX_EDGES: {
		uint64_t v;

		if (!cli_parse_u64(arg, &v) || v > 10000000)
			return cli_usage_error(cli, "invalid --max-edges '%s' (0 to 10000000)",
					       arg);
		a->max_edges = (int64_t)v;
		break;
	}
	case OPT_EDIT:
		e = parse_edit(arg);
		if (!e)
			return cli_usage_error(cli,
					       "invalid --edit '%s' (SELECTOR*FACTOR or "
					       "SELECTOR=MICROSECONDS)",
					       arg);
		if (!a->edits)
			a->edits = cJSON_CreateArray();
		cJSON_AddItemToArray(a->edits, e);
		break;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
	return CLI_CONTINUE;
}

/* --instance I or I:J into params.instance. */
static bool add_instance(cJSON *p, const char *s)
{
	uint64_t a, b;
	const char *colon = strchr(s, ':');
	char first[32];

	if (!colon)
		return cli_parse_u64(s, &a) && a < 1000000000 &&
		       cJSON_AddNumberToObject(p, "instance", (double)a);
	if ((size_t)(colon - s) >= sizeof(first))
		return false;
	memcpy(first, s, (size_t)(colon - s));
	first[colon - s] = 0;
	if (!cli_parse_u64(first, &a) || !cli_parse_u64(colon + 1, &b) || b < a || b >= 1000000000)
		return false;
	cJSON *arr = cJSON_AddArrayToObject(p, "instance");
	cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)a));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)b));
	return true;
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

int cmd_analyze(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{"rank", required_argument, NULL, 'r'},
		{"annotation", required_argument, NULL, OPT_ANNOTATION},
		{"instance", required_argument, NULL, OPT_INSTANCE},
		{"overlay", required_argument, NULL, OPT_OVERLAY},
		{"trace", required_argument, NULL, OPT_TRACE},
		{"overlay-all-events", no_argument, NULL, OPT_ALL_EVENTS},
		{"edit", required_argument, NULL, OPT_EDIT},
		{"max-edges", required_argument, NULL, OPT_MAX_EDGES},
		{"trust-trace", no_argument, NULL, OPT_TRUST_TRACE},
		{"svg", required_argument, NULL, OPT_SVG},
		{},
	};
	struct render_args a = {.rank = -1, .max_edges = -1};
	char method[96];
	uint64_t id;
	int first, r, in_fd = -1, fds[2] = {-1, -1};
	struct cli_out ov = {.fd = -1};
	size_t nfds = 0;

	manual_of(cli, argc, argv, opts);
	r = cli_parse(cli, argc, argv, "r:", opts, render_opt, &a, &first);
	if (r != CLI_CONTINUE) {
		cJSON_Delete(a.edits);
		return r;
	}
	if (first >= argc)
		return cli_usage_error(cli, "missing analysis NAME");
	const char *name = argv[first];
	for (const char *s = name; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return cli_usage_error(cli, "invalid analysis name '%s'", name);
	if (!*name || strlen(name) > 64)
		return cli_usage_error(cli, "invalid analysis name '%s'", name);
	snprintf(method, sizeof(method), "analyze.%s", name);
	/* "critical-path" and "critical_path" both name analyze.critical_path */
	for (char *m = method; *m; m++)
		if (*m == '-')
			*m = '_';
	for (size_t i = 0; i < sizeof(scoped) / sizeof(scoped[0]); i++)
		if ((a.scoped >> i & 1) &&
		    strcmp(method + strlen("analyze."), scoped[i].analysis)) {
			cJSON_Delete(a.edits);
			return cli_usage_error(cli, "%s is an option of 'analyze %s'",
					       scoped[i].name, scoped[i].analysis);
		}
	if (!a.overlay != !a.trace) {
		cJSON_Delete(a.edits);
		return cli_usage_error(cli, "--overlay FILE needs --trace ORIGINAL (the imported "
					    "trace file, streamed through the daemon)");
	}
	r = one_id(cli, argc, argv, first + 1, &id);
	if (r != CLI_CONTINUE)
		return r;
	cJSON *p = id_and_extras(cli, id, argc, argv, first + 2);
	if (!p) {
		cJSON_Delete(a.edits);
		return EXIT_USAGE;
	}
	if (a.annotation) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "annotation");
		cJSON_AddStringToObject(p, "annotation", a.annotation);
	}
	if (a.instance) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "instance");
		if (!add_instance(p, a.instance)) {
			cJSON_Delete(p);
			cJSON_Delete(a.edits);
			return cli_usage_error(cli, "invalid --instance '%s' (I or I:J)",
					       a.instance);
		}
	}
	if (a.edits) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "edits");
		cJSON_AddItemToObject(p, "edits", a.edits);
		a.edits = NULL;
	}
	if (a.all_events)
		cJSON_AddBoolToObject(p, "overlay_all_events", true);
	if (a.trust_trace)
		cJSON_AddBoolToObject(p, "overlay_unverified", true);
	if (a.max_edges >= 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "max_edges");
		cJSON_AddNumberToObject(p, "max_edges", (double)a.max_edges);
	}
	if (a.overlay) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "overlay");
		cJSON_AddBoolToObject(p, "overlay", true);
		cJSON_DeleteItemFromObjectCaseSensitive(p, "fds");
		cJSON *fa = cJSON_AddArrayToObject(p, "fds");
		cJSON_AddItemToArray(fa, cJSON_CreateNumber(0));
		cJSON_AddItemToArray(fa, cJSON_CreateNumber(1));
		in_fd = open(a.trace, O_RDONLY | O_CLOEXEC);
		if (in_fd < 0) {
			cJSON_Delete(p);
			return cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", a.trace,
					strerror(errno));
		}
		r = cli_out_open(&ov, a.overlay);
		if (r) {
			close(in_fd);
			cJSON_Delete(p);
			return r;
		}
		fds[0] = in_fd;
		fds[1] = ov.fd;
		nfds = 2;
	} else if (a.svg) {
		/* the SVG on "fd": 0 */
		r = cli_out_open(&ov, a.svg);
		if (r) {
			cJSON_Delete(p);
			return r;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(p, "fd");
		cJSON_AddNumberToObject(p, "fd", 0);
		fds[0] = ov.fd;
		nfds = 1;
	}
	if (a.rank >= 0) {
		cJSON_DeleteItemFromObjectCaseSensitive(p, "rank");
		cJSON_AddNumberToObject(p, "rank", (double)a.rank);
	}
	char *params = cJSON_PrintUnformatted(p), *res = NULL;
	cJSON_Delete(p);
	r = cli_connect(cli);
	if (r)
		goto out;
	r = gpuprof_client_call(cli->client, method, params, nfds ? fds : NULL, nfds, &res);
	if (r < 0) {
		bool bad_trace = a.trace && r == -EREMOTEIO &&
				 gpuprof_client_error_code(cli->client) == GPUPROF_ERR_BAD_INPUT;
		const char *m = bad_trace ? gpuprof_client_error_message(cli->client) : NULL;

		r = cli_call_failed(cli, method, r);
		if (m && strstr(m, "cannot be verified"))
			fprintf(stderr,
				"gpuprofctl: --trace %s: re-import it, or add --trust-trace to "
				"overlay it unchecked\n",
				a.trace);
		else if (bad_trace)
			fprintf(stderr,
				"gpuprofctl: --trace %s cannot be overlaid on capture %llu: give "
				"the file that capture was imported from\n",
				a.trace, (unsigned long long)id);
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
	if (in_fd >= 0)
		close(in_fd);
	if (nfds)
		r = cli_out_close(&ov, r);
	free(res);
	free(params);
	return r;
}
