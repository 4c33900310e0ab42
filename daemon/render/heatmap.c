// SPDX-License-Identifier: MIT
/*
 * FlameScope-style sub-second heat map (flamegraph.h): one column per
 * second of the capture, one row per bucket (20 ms) within that second,
 * colour by the count that fell there. Every cell carries its time range
 * (hm:s, hm:e: inclusive monotonic ns, the folded renderer's
 * start_ns/end_ns) and its count (hm:n), and the page embeds each cell's
 * stacks (heatdata.c), so choosing a start and an end cell draws the flame
 * graph of that range in place, with the same script as our flame graphs
 * (svg_js.h), and shows `gpuprofctl flamegraph ID --start-ns S --end-ns E`
 * for the same picture outside the page.
 */
#include "flamegraph.h"
#include "heatmap_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "svg_js.h"

#define NS_PER_S 1000000000ull
#define CELL_W 12      /* a column's width on a long capture */
#define CELL_MAX_W 48  /* and at most, on a short one */
#define GRID_MIN_W 600 /* what a short capture's columns widen to fill */
#define LABEL_MIN_W 40 /* between column labels: "1000s" at the page's font */
#define CELL_H 8       /* a row's height at the 50 rows of 20 ms buckets */
#define CELL_MAX_H 40  /* and at most, on coarser rows */
#define LEFT 60
#define TOP 50
#define FLAME_W 1200
#define FLAME_XPAD 10

int hm_js_str(struct wbuf *w, const char *s, size_t len)
{
	size_t from = 0;
	for (size_t i = 0; i < len && !w->err; i++) {
		char ch = s[i];
		if (ch != '<' && ch != '>' && ch != '&')
			continue;
		wb_json(w, s + from, i - from);
		wb_printf(w, "\\u%04x", (unsigned)ch);
		from = i + 1;
	}
	return wb_json(w, s + from, len - from);
}

/* sep (if not 0) and v in decimal: the data's numbers, without printf. */
static void put_num(struct wbuf *w, char sep, uint64_t v)
{
	char buf[24], *e = buf + sizeof(buf), *p = e;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	if (sep)
		*--p = sep;
	wb_put(w, p, (size_t)(e - p));
}

static const char *count_name(const struct heatmap_opts *o)
{
	if (o->eu_stall || o->weight == FOLDED_WEIGHT_STALLS)
		return "stall samples";
	return o->weight == FOLDED_WEIGHT_LAUNCHES   ? "launches"
	       : o->weight == FOLDED_WEIGHT_GPU_TIME ? "ns"
						     : "samples";
}

/* var HMD = {...}: the cells' stacks (heatmap_int.h has the layout). */
static void write_data(struct wbuf *w, const struct heatdata *d, const struct heatmap_opts *o)
{
	wb_printf(w,
		  "<script type=\"text/ecmascript\"><![CDATA[\nvar HMD={\"t0\":\"%llu\","
		  "\"bucket\":%llu,\"rows\":%llu,\"cols\":%llu,\"count\":\"%s\",\"min\":%llu,"
		  "\"pruned\":%llu,\n\"names\":[",
		  (unsigned long long)d->t0, (unsigned long long)d->bucket,
		  (unsigned long long)d->rows, (unsigned long long)d->cols, count_name(o),
		  (unsigned long long)d->min_count, (unsigned long long)d->pruned);
	for (size_t i = 0; i < d->nnames; i++) {
		size_t len;
		const char *s = bmap_key(&d->names, d->nameseq[i], &len);
		wb_puts(w, i ? ",\"" : "\"");
		hm_js_str(w, s + 1, len - 1);
		wb_puts(w, "\"");
	}
	wb_puts(w, "],\n\"colors\":[");
	for (size_t i = 0; i < d->nnames; i++) {
		size_t len;
		const char *s = bmap_key(&d->names, d->nameseq[i], &len);
		char fill[24];
		palette_color(s + 1, len - 1, s[0], fill);
		wb_printf(w, "%s\"%s\"", i ? "," : "", fill);
	}
	wb_puts(w, "],\n\"nodes\":[");
	for (size_t k = 1; k < d->nseq && !w->err; k++) {
		const struct hd_node *n = &d->node[d->seq[k]];
		put_num(w, k > 1 ? ',' : 0, d->newid[n->parent]);
		put_num(w, ',', d->newname[n->name] - 1);
	}
	wb_puts(w, "],\n\"cells\":[");
	for (size_t i = 0, first = 1; i < d->npairs && !w->err; first = 0) {
		uint64_t cell = d->pairs[i].key >> 32;
		size_t j = i;
		while (j < d->npairs && d->pairs[j].key >> 32 == cell)
			j++;
		wb_puts(w, first ? "\n" : ",\n");
		put_num(w, 0, cell);
		put_num(w, ',', j - i);
		for (; i < j; i++) {
			put_num(w, ',', d->newid[d->pairs[i].key & 0xffffffffu]);
			put_num(w, ',', d->pairs[i].count);
		}
	}
	wb_puts(w, "]};\n]]></script>\n");
}

/* The flame graph's controls, filled and placed by the script. */
static void write_flame_frame(struct wbuf *w, const char *countname)
{
	wb_printf(w,
		  "<g id=\"flame\" class=\"hide\" width=\"%d\" fg:total=\"0\" fg:xpad=\"%d\" "
		  "fg:icicle=\"0\" fg:countname=\"%s\">\n"
		  "<text id=\"back\" x=\"%d\" y=\"24\">&#8592; Back to heat map</text>\n"
		  "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"24\">Reset Zoom</text>\n"
		  "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
		  "<text id=\"details\" x=\"%d\" y=\"0\"> </text>\n"
		  "<text id=\"matched\" x=\"%d\" y=\"0\"> </text>\n"
		  "<g id=\"frames\"></g>\n</g>\n",
		  FLAME_W, FLAME_XPAD, countname, FLAME_XPAD, FLAME_XPAD + 170,
		  FLAME_W - FLAME_XPAD - 100, FLAME_XPAD, FLAME_W - FLAME_XPAD - 100);
}

static void write_note(struct wbuf *w, const struct heatdata *d, unsigned y)
{
	char a[64] = "", b[160] = "";
	if (d->bucket != d->bucket0)
		snprintf(a, sizeof(a), "buckets coarsened from %llu to %llu ms",
			 (unsigned long long)(d->bucket0 / 1000000),
			 (unsigned long long)(d->bucket / 1000000));
	if (d->pruned)
		snprintf(b, sizeof(b),
			 "%s%llu frames with less than %llu in all merged into their callers",
			 *a ? "; " : "", (unsigned long long)d->pruned,
			 (unsigned long long)d->min_count);
	wb_printf(w, "<text id=\"note\" x=\"%d\" y=\"%u\">", LEFT, y);
	if (*a || *b)
		wb_printf(w, "To fit the page's data bound: %s%s", a, b);
	wb_puts(w, "</text>\n");
}

/* A column's width: a capture of a few seconds would otherwise be a
 * narrow strip of cells with room for one column label. */
static unsigned cell_width(const struct heatdata *d)
{
	if (d->cols * CELL_W >= GRID_MIN_W)
		return CELL_W;
	return d->cols * CELL_MAX_W <= GRID_MIN_W ? CELL_MAX_W : (unsigned)(GRID_MIN_W / d->cols);
}

/* A row's height: coarser buckets (fewer rows) keep the grid about as
 * tall as the default's 50 rows. */
static unsigned cell_height(const struct heatdata *d)
{
	uint64_t h = 50 * CELL_H / d->rows;
	return h < CELL_H ? CELL_H : h > CELL_MAX_H ? CELL_MAX_H : (unsigned)h;
}

/* Seconds between column labels: 1, 2, 5, 10, 20, 50... whichever first
 * leaves LABEL_MIN_W between labels, so every column that fits one gets
 * one (a fixed 10 labelled only the first column of a short capture). */
static uint64_t label_step(unsigned cw)
{
	static const unsigned mant[] = {1, 2, 5};
	for (uint64_t scale = 1;; scale *= 10)
		for (unsigned i = 0; i < 3; i++)
			if (mant[i] * scale * cw >= LABEL_MIN_W)
				return mant[i] * scale;
}

static void write_grid(struct wbuf *w, const struct heatdata *d, uint64_t max_cell,
		       const char *countname)
{
	unsigned cw = cell_width(d), ch = cell_height(d);
	uint64_t step = label_step(cw);
	for (uint64_t row = 0; row < d->rows; row += d->rows / 5 ? d->rows / 5 : 1)
		wb_printf(w, "<text x=\"4\" y=\"%llu\">%llu</text>\n",
			  /* the baseline near the row's top: a tall row's
			   * label would otherwise sit by the next row's */
			  (unsigned long long)(TOP + row * ch + (ch < 10 ? ch : 10)),
			  (unsigned long long)(row * d->bucket / 1000000));
	for (uint64_t col = 0; col < d->cols; col += step)
		wb_printf(w, "<text class=\"col\" x=\"%llu\" y=\"%d\">%llus</text>\n",
			  (unsigned long long)(LEFT + col * cw), TOP - 4, (unsigned long long)col);
	wb_puts(w, "<g id=\"cells\">\n");
	for (uint64_t col = 0; col < d->cols && !w->err; col++) {
		for (uint64_t row = 0; row < d->rows; row++) {
			uint64_t n = d->cells[col * d->rows + row];
			uint64_t s = d->t0 + col * NS_PER_S + row * d->bucket;
			double v = max_cell ? (double)n / (double)max_cell : 0;
			int g = n ? (int)(235 - 200 * v) : 245;
			wb_printf(w,
				  "<rect x=\"%llu\" y=\"%llu\" width=\"%d\" height=\"%d\" "
				  "fill=\"rgb(%d,%d,%d)\" hm:s=\"%llu\" hm:e=\"%llu\" hm:n=\"%llu\">"
				  "<title>%llus +%llums: %llu %s</title></rect>\n",
				  (unsigned long long)(LEFT + col * cw),
				  (unsigned long long)(TOP + row * ch), cw - 1, ch - 1,
				  n ? 255 : 245, g, g, (unsigned long long)s,
				  (unsigned long long)(s + d->bucket - 1), (unsigned long long)n,
				  (unsigned long long)col,
				  (unsigned long long)(row * d->bucket / 1000000),
				  (unsigned long long)n, countname);
		}
	}
	wb_puts(w, "</g>\n");
}

int heatmap_render(const struct capture *c, const struct heatmap_opts *opts, folded_write_fn fn,
		   void *ctx, struct heatmap_totals *t)
{
	static const struct heatmap_opts defaults;
	const struct heatmap_opts *o = opts ? opts : &defaults;
	struct heatmap_totals tt = {0};
	struct heatdata *d = NULL;
	struct wbuf *w = NULL;
	int r = heatdata_build(c, o, &d);
	if (r < 0)
		goto out;
	r = -ENOMEM;
	if (!(w = malloc(sizeof(*w))))
		goto out;
	for (uint64_t k = 0; k < d->rows * d->cols; k++)
		if (d->cells[k] > tt.max_cell)
			tt.max_cell = d->cells[k];
	tt.samples = d->records;
	tt.rows = d->rows;
	tt.columns = d->cols;
	tt.bucket_ns = d->bucket;
	tt.min_count = d->min_count;
	tt.pruned = d->pruned;
	tt.nodes = d->nseq;
	tt.names = d->nnames;

	const char *countname = count_name(o);
	unsigned width = (unsigned)(LEFT + d->cols * cell_width(d) + 20),
		 height = (unsigned)(TOP + d->rows * cell_height(d) + 56);
	if (width < 720)
		width = 720; /* room for the title and the selection's command line */
	/* the command drawing a range's graph (none for EU stalls yet: the
	 * page then shows the range in ns) */
	static const char *const wopt[] = {"", " --weight launches", " --weight gpu-time",
					   " --weight stalls"};
	char cmd[128] = "";
	if (!o->eu_stall)
		snprintf(cmd, sizeof(cmd), "gpuprofctl flamegraph %llu --out range.svg%s%s",
			 (unsigned long long)o->capture_id, o->no_kernel ? " --no-kernel" : "",
			 (unsigned)o->weight < sizeof(wopt) / sizeof(wopt[0]) ? wopt[o->weight]
									      : "");
	wb_init(w, fn, ctx);
	wb_printf(w,
		  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		  "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		  "onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\" "
		  "xmlns:hm=\"urn:gpuprof:heatmap\" xmlns:fg=\"urn:gpuprof:flame\" hm:cmd=\"%s\" "
		  "hm:t0=\"%llu\" hm:bucket=\"%llu\">\n",
		  width, height, width, height, cmd, (unsigned long long)d->t0,
		  (unsigned long long)d->bucket);
	wb_puts(w, "<style type=\"text/css\">" SVG_CSS SVG_HEAT_CSS
		   "</style>\n<script type=\"text/ecmascript\"><![CDATA[" SVG_FG_JS SVG_HEAT_JS
		   "]]></script>\n");
	uint64_t before = w->total;
	write_data(w, d, o);
	tt.data_bytes = w->total - before;
	wb_printf(w,
		  "<rect id=\"bg\" width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		  "<text id=\"title\" x=\"%u\" y=\"24\">",
		  width / 2);
	const char *title = o->title && *o->title ? o->title : "Sub-second heat map";
	wb_xml(w, title, strlen(title), 0);
	wb_puts(w, "</text>\n<g id=\"heat\">\n");
	wb_printf(w, "<text x=\"4\" y=\"%d\">ms</text>\n", TOP - 4);
	write_grid(w, d, tt.max_cell, countname);
	write_note(w, d, (unsigned)(TOP + d->rows * cell_height(d) + 20));
	wb_puts(w, "</g>\n");
	write_flame_frame(w, countname);
	wb_printf(w,
		  "<text id=\"sel\" x=\"%d\" y=\"%u\">click a start cell, then an end cell</text>\n",
		  LEFT, height - 12);
	wb_puts(w, "</svg>\n");
	r = wb_flush(w);
out:
	if (t)
		*t = tt;
	heatdata_free(d);
	free(w);
	return r;
}
