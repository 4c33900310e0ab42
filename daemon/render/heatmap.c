// SPDX-License-Identifier: MIT
/*
 * FlameScope-style sub-second heat map (flamegraph.h): one column per
 * second of the capture, one row per bucket (20 ms) within that second,
 * colour by the CPU samples that fell there. Every cell carries its time
 * range (hm:s, hm:e: inclusive monotonic ns, the folded renderer's
 * start_ns/end_ns), so a selection maps to
 * `gpuprofctl flamegraph ID --start-ns S --end-ns E`.
 */
#include "flamegraph.h"
#include "render_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "svg_js.h"

#define NS_PER_S 1000000000ull
#define MAX_CELLS (4u << 20)
#define CELL_W 12
#define CELL_H 8
#define LEFT 60
#define TOP 50

int heatmap_render(const struct capture *c, const struct heatmap_opts *o, folded_write_fn fn,
		   void *ctx, struct heatmap_totals *t)
{
	uint64_t bucket = o && o->bucket_ns ? o->bucket_ns : 20000000ull;
	struct heatmap_totals tt = {0};
	uint64_t *cells = NULL, t0 = UINT64_MAX, t1 = 0;
	struct wbuf *w = NULL;
	int r = -EINVAL;

	if (bucket < 1000000 || bucket > NS_PER_S || NS_PER_S % bucket)
		goto out; /* rows must tile a second: 1 ms .. 1 s, dividing it */
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *rec = &c->recs[i];
		if (rec->type != STORE_REC_CPU_SAMPLE)
			continue;
		if (rec->ts_ns < t0)
			t0 = rec->ts_ns;
		if (rec->ts_ns > t1)
			t1 = rec->ts_ns;
	}
	r = -ENODATA;
	if (t0 == UINT64_MAX)
		goto out;
	/* columns start at the capture's window so seconds line up with it */
	if (c->t0_ns && c->t0_ns <= t0)
		t0 = c->t0_ns;
	uint64_t rows = NS_PER_S / bucket, cols = (t1 - t0) / NS_PER_S + 1;
	r = -E2BIG;
	if (cols > MAX_CELLS / rows)
		goto out;
	r = -ENOMEM;
	if (!(cells = calloc(rows * cols, sizeof(*cells))) || !(w = malloc(sizeof(*w))))
		goto out;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *rec = &c->recs[i];
		if (rec->type != STORE_REC_CPU_SAMPLE)
			continue;
		uint64_t d = rec->ts_ns - t0, k = d / NS_PER_S * rows + d % NS_PER_S / bucket;
		cells[k] = sat_add(cells[k], rec->aux32 ? rec->aux32 : 1);
		tt.samples++;
	}
	for (size_t k = 0; k < rows * cols; k++)
		if (cells[k] > tt.max_cell)
			tt.max_cell = cells[k];
	tt.rows = rows;
	tt.columns = cols;

	unsigned width = (unsigned)(LEFT + cols * CELL_W + 20),
		 height = (unsigned)(TOP + rows * CELL_H + 40);
	if (width < 720)
		width = 720; /* room for the title and the selection's command line */
	char cmd[96];
	snprintf(cmd, sizeof(cmd), "gpuprofctl flamegraph %llu --out range.svg",
		 (unsigned long long)(o ? o->capture_id : 0));
	wb_init(w, fn, ctx);
	wb_printf(w,
		  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		  "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		  "onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\" "
		  "xmlns:hm=\"urn:gpuprof:heatmap\" hm:cmd=\"%s\" hm:t0=\"%llu\" "
		  "hm:bucket=\"%llu\">\n",
		  width, height, width, height, cmd, (unsigned long long)t0,
		  (unsigned long long)bucket);
	wb_puts(w, "<style type=\"text/css\">" SVG_CSS "</style>\n<script type=\"text/ecmascript\">"
		   "<![CDATA[" SVG_HEAT_JS "]]></script>\n");
	wb_printf(w,
		  "<rect width=\"%u\" height=\"%u\" fill=\"white\"/>\n<text id=\"title\" "
		  "x=\"%u\" y=\"24\">",
		  width, height, width / 2);
	const char *title = o && o->title && *o->title ? o->title : "Sub-second heat map";
	wb_xml(w, title, strlen(title), 0);
	wb_printf(w,
		  "</text>\n<text x=\"%d\" y=\"%d\">ms</text><text id=\"sel\" x=\"%d\" "
		  "y=\"%u\">click a start cell, then an end cell</text>\n",
		  4, TOP - 4, LEFT, height - 12);
	for (uint64_t row = 0; row < rows; row += rows / 5 ? rows / 5 : 1)
		wb_printf(w, "<text x=\"4\" y=\"%llu\">%llu</text>\n",
			  (unsigned long long)(TOP + row * CELL_H + CELL_H),
			  (unsigned long long)(row * bucket / 1000000));
	for (uint64_t col = 0; col < cols; col += 10)
		wb_printf(w, "<text x=\"%llu\" y=\"%d\">%llus</text>\n",
			  (unsigned long long)(LEFT + col * CELL_W), TOP - 4,
			  (unsigned long long)col);
	wb_puts(w, "<g id=\"cells\">\n");
	for (uint64_t col = 0; col < cols && !w->err; col++) {
		for (uint64_t row = 0; row < rows; row++) {
			uint64_t n = cells[col * rows + row];
			uint64_t s = t0 + col * NS_PER_S + row * bucket;
			double v = tt.max_cell ? (double)n / (double)tt.max_cell : 0;
			int g = n ? (int)(235 - 200 * v) : 245;
			wb_printf(
			    w,
			    "<rect x=\"%llu\" y=\"%llu\" width=\"%d\" height=\"%d\" "
			    "fill=\"rgb(%d,%d,%d)\" hm:s=\"%llu\" hm:e=\"%llu\" hm:n=\"%llu\">"
			    "<title>%llus +%llums: %llu samples</title></rect>\n",
			    (unsigned long long)(LEFT + col * CELL_W),
			    (unsigned long long)(TOP + row * CELL_H), CELL_W - 1, CELL_H - 1,
			    n ? 255 : 245, g, g, (unsigned long long)s,
			    (unsigned long long)(s + bucket - 1), (unsigned long long)n,
			    (unsigned long long)col, (unsigned long long)(row * bucket / 1000000),
			    (unsigned long long)n);
		}
	}
	wb_puts(w, "</g>\n</svg>\n");
	r = wb_flush(w);
out:
	if (t)
		*t = tt;
	free(cells);
	free(w);
	return r;
}
