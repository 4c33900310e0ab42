// SPDX-License-Identifier: MIT
/*
 * gpuprofctl flamegraph / diff / heatmap / export: the daemon renders, we
 * open the files and pass descriptors (the daemon never opens a path).
 * A source operand that is all digits is a capture id; anything else is a
 * folded-stack file (write ./123 for a file named 123).
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct render_args {
	const char *out, *folded, *format;
	cJSON *p; /* params being built */
	bool heatmap;
};

enum {
	OPT_TITLE = 0x300,
	OPT_SUBTITLE,
	OPT_COUNTNAME,
	OPT_MINWIDTH,
	OPT_WIDTH,
	OPT_ICICLE,
	OPT_NO_KERNEL,
	OPT_PID_FRAMES,
	OPT_TID_FRAMES,
	OPT_COMM,
	OPT_START,
	OPT_END,
	OPT_HEATMAP,
	OPT_BUCKET,
	OPT_FOLDED,
	OPT_NORMALIZE,
	OPT_FORMAT,
	OPT_PERIOD,
	OPT_HEAT_MAX,
	OPT_WEIGHT,
	OPT_RANK,
};

static const struct option flame_opts[] = {
	{"out", required_argument, NULL, 'o'},
	{"title", required_argument, NULL, OPT_TITLE},
	{"subtitle", required_argument, NULL, OPT_SUBTITLE},
	{"countname", required_argument, NULL, OPT_COUNTNAME},
	{"minwidth", required_argument, NULL, OPT_MINWIDTH},
	{"width", required_argument, NULL, OPT_WIDTH},
	{"icicle", no_argument, NULL, OPT_ICICLE},
	{"no-kernel", no_argument, NULL, OPT_NO_KERNEL},
	{"pid-frames", no_argument, NULL, OPT_PID_FRAMES},
	{"tid-frames", no_argument, NULL, OPT_TID_FRAMES},
	{"comm", required_argument, NULL, OPT_COMM},
	{"start-ns", required_argument, NULL, OPT_START},
	{"end-ns", required_argument, NULL, OPT_END},
	{"heatmap", no_argument, NULL, OPT_HEATMAP},
	{"bucket-ms", required_argument, NULL, OPT_BUCKET},
	{"folded", required_argument, NULL, OPT_FOLDED},
	{"normalize", no_argument, NULL, OPT_NORMALIZE},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"period-ns", required_argument, NULL, OPT_PERIOD},
	{"heatmap-max-bytes", required_argument, NULL, OPT_HEAT_MAX},
	{"weight", required_argument, NULL, OPT_WEIGHT},
	{"rank", required_argument, NULL, OPT_RANK},
	{},
};

static int num_opt(struct cli *cli, cJSON *p, const char *key, const char *arg, double scale)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (errno || end == arg || *end || v < 0)
		return cli_usage_error(cli, "invalid number '%s'", arg);
	cJSON_DeleteItemFromObjectCaseSensitive(p, key);
	cJSON_AddNumberToObject(p, key, v * scale);
	return CLI_CONTINUE;
}

static int render_opt(struct cli *cli, int opt, const char *arg, void *ctx)
{
	struct render_args *a = ctx;
	cJSON *p = a->p;
	switch (opt) {
	case 'o':
		a->out = arg;
		return CLI_CONTINUE;
	case OPT_TITLE:
		cJSON_AddStringToObject(p, "title", arg);
		return CLI_CONTINUE;
	case OPT_SUBTITLE:
		cJSON_AddStringToObject(p, "subtitle", arg);
		return CLI_CONTINUE;
	case OPT_COUNTNAME:
		cJSON_AddStringToObject(p, "countname", arg);
		return CLI_CONTINUE;
	case OPT_COMM:
		cJSON_AddStringToObject(p, "comm", arg);
		return CLI_CONTINUE;
	case OPT_MINWIDTH:
		return num_opt(cli, p, "minwidth", arg, 1);
	case OPT_WIDTH:
		return num_opt(cli, p, "width", arg, 1);
	case OPT_START:
		return num_opt(cli, p, "start_ns", arg, 1);
	case OPT_END:
		return num_opt(cli, p, "end_ns", arg, 1);
	case OPT_BUCKET:
		return num_opt(cli, p, "bucket_ns", arg, 1e6);
	case OPT_PERIOD:
		return num_opt(cli, p, "period_ns", arg, 1);
	case OPT_HEAT_MAX:
		return num_opt(cli, p, "max_bytes", arg, 1);
	case OPT_WEIGHT:
		cJSON_AddStringToObject(p, "weight", arg);
		return CLI_CONTINUE;
	case OPT_RANK: {
		int64_t rank;
		int r = cli_opt_rank(cli, arg, &rank);
		if (r == CLI_CONTINUE) {
			cJSON_DeleteItemFromObjectCaseSensitive(p, "rank");
			cJSON_AddNumberToObject(p, "rank", (double)rank);
		}
		return r;
	}
	case OPT_ICICLE:
		cJSON_AddTrueToObject(p, "icicle");
		return CLI_CONTINUE;
	case OPT_NO_KERNEL:
		cJSON_AddFalseToObject(p, "kernel");
		return CLI_CONTINUE;
	case OPT_PID_FRAMES:
		cJSON_AddTrueToObject(p, "pid");
		return CLI_CONTINUE;
	case OPT_TID_FRAMES:
		cJSON_AddTrueToObject(p, "tid");
		return CLI_CONTINUE;
	case OPT_NORMALIZE:
		cJSON_AddTrueToObject(p, "normalize");
		return CLI_CONTINUE;
	case OPT_HEATMAP:
		a->heatmap = true;
		return CLI_CONTINUE;
	case OPT_FOLDED:
		a->folded = arg;
		return CLI_CONTINUE;
	case OPT_FORMAT:
		a->format = arg;
		return CLI_CONTINUE;
	default:
		return cli_usage_error(cli, "unexpected option");
	}
}

static bool is_id(const char *s, uint64_t *id)
{
	return cli_parse_u64(s, id) && *id > 0;
}

/*
 * Run method with params p, output to a.out, inputs in_fds. With no input
 * the library passes (or pumps) the output itself; with inputs we pass all
 * descriptors at once, the output through a temporary file when it is not
 * a regular file (the daemon switches passed pipes to non-blocking).
 */
static int call_render(struct cli *cli, const char *method, cJSON *p, const char *outpath,
		       const int *in_fds, size_t nin)
{
	int out = -1, tmp = -1, r;
	struct cli_out of;
	char *res = NULL, *params = NULL;
	struct stat st;
	bool to_stdout = !strcmp(outpath, "-");

	r = cli_connect(cli);
	if (r)
		return r;
	r = cli_out_open(&of, outpath);
	if (r)
		return r;
	out = of.fd;
	if (!nin) {
		params = cJSON_PrintUnformatted(p);
		r = gpuprof_call_with_output(cli->client, method, params, out, &res);
	} else {
		int fds[3];
		int pass = out;
		if (fstat(out, &st) < 0 || !S_ISREG(st.st_mode)) {
			tmp = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
			if (tmp < 0) {
				r = cli_fail(EXIT_LOCAL_IO, "cannot create a temporary file: %s",
					     strerror(errno));
				goto out;
			}
			pass = tmp;
		}
		fds[0] = pass;
		cJSON *fa = cJSON_AddArrayToObject(p, "fds");
		for (size_t i = 0; i < nin; i++) {
			fds[i + 1] = in_fds[i];
			cJSON_AddItemToArray(fa, cJSON_CreateNumber((double)(i + 1)));
		}
		cJSON_AddNumberToObject(p, "fd", 0);
		params = cJSON_PrintUnformatted(p);
		r = gpuprof_client_call(cli->client, method, params, fds, nin + 1, &res);
		if (r == 0 && tmp >= 0) {
			char buf[65536];
			ssize_t n;
			lseek(tmp, 0, SEEK_SET);
			while ((n = read(tmp, buf, sizeof(buf))) > 0)
				if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
					break;
		}
	}
	if (r < 0) {
		r = cli_call_failed(cli, method, r);
		goto out;
	}
	r = EXIT_OK;
	if (cli->json && !to_stdout)
		r = print_json_text(res);
out:
	if (tmp >= 0)
		close(tmp);
	r = cli_out_close(&of, r);
	free(res);
	free(params);
	return r;
}

static int open_in(const char *path)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(STDIN_FILENO);
	if (fd < 0)
		cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path, strerror(errno));
	return fd;
}

/* Parse options and KEY=VALUE operands from first_kv on into a->p. */
static int parse(struct cli *cli, int argc, char **argv, struct render_args *a, int *first)
{
	a->p = cJSON_CreateObject();
	if (!a->p)
		return cli_fail(EXIT_LOCAL_IO, "out of memory");
	return cli_parse(cli, argc, argv, "o:", flame_opts, render_opt, a, first);
}

static int add_kvs(struct cli *cli, cJSON *p, int argc, char **argv, int from)
{
	for (int i = from; i < argc; i++)
		if (!cli_add_kv_param(p, argv[i]))
			return cli_usage_error(cli, "expected KEY=VALUE, got '%s'", argv[i]);
	return CLI_CONTINUE;
}

int cmd_flamegraph(struct cli *cli, int argc, char **argv)
{
	struct render_args a = {0};
	uint64_t id = 0;
	int first, r, in = -1, kv;

	r = parse(cli, argc, argv, &a, &first);
	if (r != CLI_CONTINUE)
		goto out;
	r = EXIT_USAGE;
	if (!a.out) {
		r = cli_usage_error(cli, "--out FILE is required ('-' for stdout)");
		goto out;
	}
	kv = first;
	if (!a.folded) {
		if (first >= argc || !is_id(argv[first], &id)) {
			r = cli_usage_error(cli, "expected a capture ID or --folded FILE");
			goto out;
		}
		kv = first + 1;
		cJSON_AddNumberToObject(a.p, "id", (double)id);
	} else if (a.heatmap) {
		r = cli_usage_error(cli, "--heatmap needs a capture, not --folded");
		goto out;
	}
	if ((r = add_kvs(cli, a.p, argc, argv, kv)) != CLI_CONTINUE)
		goto out;
	if (a.heatmap) {
		/* only the heat map's own params apply */
		cJSON *h = cJSON_CreateObject();
		static const char *const keep[] = {"id",     "bucket_ns", "title",
						   "weight", "kernel",	  "max_bytes"};
		for (size_t i = 0; i < sizeof(keep) / sizeof(*keep); i++) {
			cJSON *v = cJSON_DetachItemFromObjectCaseSensitive(a.p, keep[i]);
			if (v)
				cJSON_AddItemToObject(h, keep[i], v);
		}
		cJSON_Delete(a.p);
		a.p = h;
		r = call_render(cli, "capture.heatmap", a.p, a.out, NULL, 0);
		goto out;
	}
	if (a.folded && (in = open_in(a.folded)) < 0) {
		r = EXIT_LOCAL_IO;
		goto out;
	}
	r = call_render(cli, "capture.flamegraph", a.p, a.out, &in, in >= 0);
out:
	if (in >= 0)
		close(in);
	cJSON_Delete(a.p);
	return r;
}

int cmd_heatmap(struct cli *cli, int argc, char **argv)
{
	char *args[64];
	if (argc > 62)
		return cli_usage_error(cli, "too many arguments");
	memcpy(args, argv, (size_t)argc * sizeof(*args));
	args[argc] = "--heatmap";
	args[argc + 1] = NULL;
	return cmd_flamegraph(cli, argc + 1, args);
}

int cmd_diff(struct cli *cli, int argc, char **argv)
{
	struct render_args a = {0};
	int first, r, in[2] = {-1, -1};
	size_t nin = 0;

	r = parse(cli, argc, argv, &a, &first);
	if (r != CLI_CONTINUE)
		goto out;
	if (!a.out) {
		r = cli_usage_error(cli, "--out FILE is required ('-' for stdout)");
		goto out;
	}
	if (argc - first < 2) {
		r = cli_usage_error(cli, "expected two sources: A B (capture IDs or folded files)");
		goto out;
	}
	if ((r = add_kvs(cli, a.p, argc, argv, first + 2)) != CLI_CONTINUE)
		goto out;
	for (int side = 0; side < 2; side++) {
		const char *src = argv[first + side];
		uint64_t id;
		if (is_id(src, &id)) {
			cJSON_AddNumberToObject(a.p, side ? "b" : "a", (double)id);
		} else if ((in[nin++] = open_in(src)) < 0) {
			r = EXIT_LOCAL_IO;
			goto out;
		}
	}
	r = call_render(cli, "capture.diff", a.p, a.out, in, nin);
out:
	for (int i = 0; i < 2; i++)
		if (in[i] >= 0)
			close(in[i]);
	cJSON_Delete(a.p);
	return r;
}

int cmd_export(struct cli *cli, int argc, char **argv)
{
	struct render_args a = {0};
	uint64_t id;
	int first, r;

	r = parse(cli, argc, argv, &a, &first);
	if (r != CLI_CONTINUE)
		goto out;
	if (!a.out || !a.format) {
		r = cli_usage_error(cli, "--format chrome|pprof and --out FILE are required");
		goto out;
	}
	if (strcmp(a.format, "chrome") && strcmp(a.format, "pprof")) {
		r = cli_usage_error(cli, "unknown format '%s' (chrome or pprof)", a.format);
		goto out;
	}
	if (first >= argc || !is_id(argv[first], &id)) {
		r = cli_usage_error(cli, "missing capture ID");
		goto out;
	}
	if (argc - first > 1) {
		r = cli_usage_error(cli, "unexpected argument '%s'", argv[first + 1]);
		goto out;
	}
	/* export takes only its own params: drop what the shared options set */
	cJSON *p = cJSON_CreateObject();
	cJSON_AddNumberToObject(p, "id", (double)id);
	cJSON_AddStringToObject(p, "format", a.format);
	cJSON *per = cJSON_DetachItemFromObjectCaseSensitive(a.p, "period_ns");
	if (per)
		cJSON_AddItemToObject(p, "period_ns", per);
	cJSON *rank = cJSON_DetachItemFromObjectCaseSensitive(a.p, "rank");
	if (rank)
		cJSON_AddItemToObject(p, "rank", rank);
	/* pprof holds every weight as a sample type: --weight picks the one
	 * it opens on, the type that counts what `folded --weight` counts */
	cJSON *w = cJSON_DetachItemFromObjectCaseSensitive(a.p, "weight");
	if (w)
		cJSON_AddItemToObject(p, "weight", w);
	cJSON_Delete(a.p);
	a.p = p;
	if (w && strcmp(a.format, "pprof")) {
		r = cli_usage_error(cli, "--weight applies to --format pprof");
		goto out;
	}
	r = call_render(cli, "capture.export", a.p, a.out, NULL, 0);
out:
	cJSON_Delete(a.p);
	return r;
}
