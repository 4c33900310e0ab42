// SPDX-License-Identifier: MIT
/*
 * Drives the renderers from the command line for the Python tests and by
 * hand (no daemon):
 *   render_tool flame [--icicle] [--minwidth PX] [--title T] FILE|-
 *   render_tool diff [--normalize] A B
 *   render_tool synth folded|flame|heat|chrome|pprof|pprof-main|pprof-xe
 *   render_tool synth heat|heat49 [--weight samples|launches|gpu-time|eu-stall] [--max-bytes N]
 *                          [--bucket-ms N] [--no-kernel]
 * Output on stdout; a "key=value ..." summary on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamegraph.h"
#include "synth.h"

static int out_cb(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, stdout) == len ? 0 : -EIO;
}

static int usage(void)
{
	fprintf(stderr, "usage: render_tool flame|diff|synth ...\n");
	return 2;
}

static int read_file(struct fold_set *s, int side, const char *path)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY) : 0;
	if (fd < 0)
		return -errno;
	int r = fold_set_read_fd(s, side, fd, 1000);
	if (fd)
		close(fd);
	return r;
}

static int flame(int argc, char **argv, bool diff)
{
	struct flame_opts o = {.diff = diff};
	struct fold_set *s;
	int i = 2, side = 0, r;
	for (; i < argc && !strncmp(argv[i], "--", 2) && argv[i][2]; i++) {
		if (!strcmp(argv[i], "--icicle"))
			o.icicle = true;
		else if (!strcmp(argv[i], "--normalize"))
			o.normalize = true;
		else if (!strcmp(argv[i], "--minwidth") && i + 1 < argc)
			o.minwidth = atof(argv[++i]);
		else if (!strcmp(argv[i], "--title") && i + 1 < argc)
			o.title = argv[++i];
		else if (!strcmp(argv[i], "--subtitle") && i + 1 < argc)
			o.subtitle = argv[++i];
		else if (!strcmp(argv[i], "--countname") && i + 1 < argc)
			o.countname = argv[++i];
		else
			return usage();
	}
	if (argc - i != (diff ? 2 : 1) || fold_set_new(0, &s) < 0)
		return usage();
	for (; i < argc; i++, side++) {
		if ((r = read_file(s, side, argv[i])) < 0) {
			fprintf(stderr, "render_tool: %s: %s\n", argv[i], strerror(-r));
			return 1;
		}
	}
	struct flame_totals t;
	r = flame_render(s, &o, out_cb, NULL, &t);
	const struct fold_stats *st = fold_set_stats(s);
	fprintf(stderr,
		"r=%d frames=%llu pruned=%llu total=%llu depth=%u lines=%llu malformed=%llu "
		"too_long=%llu saturated=%llu\n",
		r, (unsigned long long)t.frames, (unsigned long long)t.pruned,
		(unsigned long long)t.total, t.depth,
		(unsigned long long)(st->lines[0] + st->lines[1]),
		(unsigned long long)st->malformed, (unsigned long long)st->too_long,
		(unsigned long long)st->saturated);
	fold_set_free(s);
	return r < 0 ? 1 : 0;
}

static int heat_args(int argc, char **argv, struct heatmap_opts *o)
{
	for (int i = 3; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--no-kernel")) {
			o->no_kernel = true;
			continue;
		}
		if (!v)
			return -EINVAL;
		if (!strcmp(argv[i], "--max-bytes"))
			o->max_bytes = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--bucket-ms"))
			o->bucket_ns = strtoull(v, NULL, 0) * 1000000;
		else if (!strcmp(argv[i], "--weight") && !strcmp(v, "launches"))
			o->weight = FOLDED_WEIGHT_LAUNCHES;
		else if (!strcmp(argv[i], "--weight") && !strcmp(v, "gpu-time"))
			o->weight = FOLDED_WEIGHT_GPU_TIME;
		else if (!strcmp(argv[i], "--weight") && !strcmp(v, "eu-stall"))
			o->eu_stall = true;
		else if (!strcmp(argv[i], "--weight") && !strcmp(v, "stalls"))
			o->weight = FOLDED_WEIGHT_STALLS; /* with synth_add_pc() */
		else if (strcmp(argv[i], "--weight") || strcmp(v, "samples"))
			return -EINVAL;
		i++;
	}
	return 0;
}

static int synth(const char *what, int argc, char **argv)
{
	struct capture *c = synth_capture();
	struct export_totals et = {0};
	int r = -EINVAL;
	if (!strcmp(what, "heat49")) { /* one thread at 49 Hz (synth.h) */
		capture_free(c);
		c = synth_49hz_capture();
		what = "heat";
	}
	if (!strcmp(what, "folded")) {
		r = folded_write(c, NULL, out_cb, NULL, NULL);
	} else if (!strcmp(what, "flame")) {
		struct fold_set *s;
		if (fold_set_new(0, &s) == 0 &&
		    (r = fold_set_add_capture(s, 0, c, NULL, NULL)) == 0)
			r = flame_render(s, NULL, out_cb, NULL, NULL);
		fold_set_free(s);
	} else if (!strcmp(what, "heat")) {
		struct heatmap_opts o = {.capture_id = c->id};
		struct heatmap_totals t;
		if ((r = heat_args(argc, argv, &o)) == 0 && o.eu_stall)
			synth_add_xe(c);
		if (r == 0 && o.weight == FOLDED_WEIGHT_STALLS)
			synth_add_pc(c);
		if (r == 0)
			r = heatmap_render(c, &o, out_cb, NULL, &t);
		fprintf(stderr,
			"r=%d samples=%llu columns=%llu rows=%llu max_cell=%llu bucket_ns=%llu "
			"min_count=%llu pruned=%llu nodes=%llu names=%llu data_bytes=%llu\n",
			r, (unsigned long long)t.samples, (unsigned long long)t.columns,
			(unsigned long long)t.rows, (unsigned long long)t.max_cell,
			(unsigned long long)t.bucket_ns, (unsigned long long)t.min_count,
			(unsigned long long)t.pruned, (unsigned long long)t.nodes,
			(unsigned long long)t.names, (unsigned long long)t.data_bytes);
	} else if (!strcmp(what, "chrome")) {
		r = chrome_export(c, NULL, out_cb, NULL, &et);
	} else if (!strcmp(what, "pprof")) {
		r = pprof_export(c, NULL, 10000000, out_cb, NULL, &et);
	} else if (!strcmp(what, "pprof-main")) { /* executable + lines */
		capture_free(c);
		c = synth_main_capture();
		r = pprof_export(c, NULL, 10000000, out_cb, NULL, &et);
	} else if (!strcmp(what, "pprof-pc")) { /* with NVIDIA PC samples */
		synth_add_pc(c);
		r = pprof_export(c, NULL, 10000000, out_cb, NULL, &et);
	} else if (!strcmp(what, "pprof-pc-cpu")) { /* the same, opening on CPU samples */
		synth_add_pc(c);
		r = pprof_export_typed(c, NULL, 10000000, "samples", out_cb, NULL, &et);
	} else if (!strcmp(what, "gpc-pc")) { /* the capture file (a fuzz seed) */
		void *buf;
		size_t len;

		synth_add_pc(c);
		if ((r = capture_encode(c, &buf, &len)) == 0) {
			r = fwrite(buf, 1, len, stdout) == len ? 0 : -EIO;
			free(buf);
		}
	} else if (!strcmp(what, "folded-pc")) {
		struct folded_opts o = {.weight = FOLDED_WEIGHT_STALLS};

		synth_add_pc(c);
		r = folded_write(c, &o, out_cb, NULL, NULL);
	} else if (!strcmp(what, "pprof-xe")) { /* with an EU-stall section */
		synth_add_xe(c);
		r = pprof_export(c, NULL, 10000000, out_cb, NULL, &et);
	}
	if (r < 0)
		fprintf(stderr, "render_tool: %s: %s\n", what, strerror(-r));
	capture_free(c);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "flame"))
		return flame(argc, argv, false);
	if (!strcmp(argv[1], "diff"))
		return flame(argc, argv, true);
	if (!strcmp(argv[1], "synth") && (argc == 3 || (argc > 3 && !strncmp(argv[2], "heat", 4))))
		return synth(argv[2], argc, argv);
	return usage();
}
