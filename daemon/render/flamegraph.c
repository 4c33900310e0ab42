// SPDX-License-Identifier: MIT
/*
 * Flame graph SVG (flamegraph.h). The lines are sorted frame-wise and
 * merged in one pass with a stack of open frames, as flamegraph.pl does:
 * no tree and no hash table, and frames narrower than minwidth are dropped
 * when they close, so memory is the input plus what is drawn. For a diff
 * both sides are merged together: x advances by B's counts (width by B)
 * while a second cursor accumulates A's (scaled when normalizing), so each
 * frame knows A and B at once.
 */
#include "flamegraph.h"
#include "render_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_js.h"

#define FRAME_H 16
#define FONT_SIZE 12
#define FONT_WIDTH 0.59
#define XPAD 10
#define YPAD1 (FONT_SIZE * 3)
#define YPAD2 (FONT_SIZE * 2 + 10)

struct node {
	const char *name;
	uint32_t len;
	uint32_t depth; /* 0: the root "all" */
	uint64_t x, w;	/* in counts */
	double a;	/* diff: A's count (scaled) */
	bool kernel;
};

struct open {
	const char *name;
	uint32_t len;
	bool kernel;
	uint64_t x;
	double ax;
};

struct merge {
	const struct flame_opts *o;
	double scale_px; /* px per count */
	double minw;	 /* in counts */
	struct node *nodes;
	size_t n, cap;
	uint64_t pruned;
	uint32_t depth;
};

static int emit(struct merge *m, const struct open *f, uint32_t depth, uint64_t x, double ax)
{
	uint64_t w = x - f->x;
	if (!w || (double)w < m->minw) {
		m->pruned++;
		return 0;
	}
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 4096;
		struct node *nn = realloc(m->nodes, nc * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		m->nodes = nn;
		m->cap = nc;
	}
	m->nodes[m->n++] = (struct node){f->name, f->len, depth, f->x, w, ax - f->ax, f->kernel};
	if (depth > m->depth)
		m->depth = depth;
	return 0;
}

static int merge_lines(struct merge *m, struct fold_set *s, double ascale, uint64_t *total)
{
	static const char all[] = "all";
	struct open *st = malloc((FOLD_MAX_DEPTH + 1) * sizeof(*st));
	const char **fs = malloc(FOLD_MAX_DEPTH * sizeof(*fs));
	uint32_t *fl = malloc(FOLD_MAX_DEPTH * sizeof(*fl));
	uint64_t x = 0;
	double ax = 0;
	size_t nopen = 1;
	int r = -ENOMEM;
	if (!st || !fs || !fl)
		goto out;
	st[0] = (struct open){all, 3, false, 0, 0};
	for (size_t i = 0; i < s->n; i++) {
		const struct fline *l = &s->lines[i];
		const char *p = s->text + l->off, *end = p + l->len;
		size_t nf = 0;
		while (nf < FOLD_MAX_DEPTH) {
			const char *semi = memchr(p, ';', (size_t)(end - p));
			const char *e = semi ? semi : end;
			fs[nf] = p;
			fl[nf++] = (uint32_t)(e - p);
			if (!semi)
				break;
			p = semi + 1;
		}
		/* open frame k + 1 is line frame k */
		size_t common = 0;
		while (common < nf && common + 1 < nopen && st[common + 1].len == fl[common] &&
		       !memcmp(st[common + 1].name, fs[common], fl[common]))
			common++;
		while (nopen > common + 1) {
			nopen--;
			if ((r = emit(m, &st[nopen], (uint32_t)nopen, x, ax)) < 0)
				goto out;
		}
		for (size_t k = common; k < nf; k++, nopen++) {
			const struct open *par = &st[nopen - 1];
			bool kern = par->kernel || (par->len == 1 && par->name[0] == '-');
			st[nopen] = (struct open){fs[k], fl[k], kern, x, ax};
		}
		if (!m->o->diff || l->side == 1)
			x = sat_add(x, l->count);
		else
			ax += (double)l->count * ascale;
	}
	while (nopen > 0) {
		nopen--;
		if ((r = emit(m, &st[nopen], (uint32_t)nopen, x, ax)) < 0)
			goto out;
	}
	*total = x;
	r = 0;
out:
	free(st);
	free(fs);
	free(fl);
	return r;
}

static void fmt_count(char *buf, size_t n, double v)
{
	if (v == floor(v) && fabs(v) < 9e15)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.2f", v);
}

static void write_header(struct wbuf *w, const struct flame_opts *o, unsigned width,
			 unsigned height, uint64_t total, const char *countname)
{
	const char *title = o->title  ? o->title
			    : o->diff ? "Differential Flame Graph"
				      : (o->icicle ? "Icicle Graph" : "Flame Graph");
	wb_printf(w,
		  "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		  "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		  "onload=\"init(evt)\" xmlns=\"http://www.w3.org/2000/svg\" "
		  "xmlns:fg=\"urn:gpuprof:flame\" fg:total=\"%llu\" fg:icicle=\"%d\" "
		  "fg:xpad=\"%d\" fg:countname=\"",
		  width, height, width, height, (unsigned long long)total, o->icicle, XPAD);
	wb_xml(w, countname, strlen(countname), 0);
	wb_puts(w, "\">\n<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" "
		   "x2=\"0\"><stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop "
		   "stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient></defs>\n");
	wb_puts(w, "<style type=\"text/css\">" SVG_CSS "</style>\n<script type=\"text/ecmascript\">"
		   "<![CDATA[" SVG_FLAME_JS "]]></script>\n");
	wb_printf(w,
		  "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#background)\"/>\n",
		  width, height);
	wb_printf(w, "<text id=\"title\" x=\"%u\" y=\"%d\">", width / 2, FONT_SIZE * 2);
	wb_xml(w, title, strlen(title), 0);
	wb_puts(w, "</text>\n");
	if (o->subtitle && *o->subtitle) {
		wb_printf(w, "<text id=\"subtitle\" x=\"%u\" y=\"%d\">", width / 2, FONT_SIZE * 3);
		wb_xml(w, o->subtitle, strlen(o->subtitle), 0);
		wb_puts(w, "</text>\n");
	}
	wb_printf(w,
		  "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		  "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n"
		  "<text id=\"search\" x=\"%u\" y=\"%d\">Search</text>\n"
		  "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n",
		  XPAD, height - YPAD2 / 2, XPAD, FONT_SIZE * 2, width - XPAD - 100, FONT_SIZE * 2,
		  width - XPAD - 100, height - YPAD2 / 2);
}

/*
 * B's count minus A's for a diff frame. Normalizing scales A's counts by a
 * ratio that is rarely exact in binary, so a frame whose scaled A sums to
 * its B (the root always does) can come out a few ulps off: such a
 * difference is rounding, not a change, and is drawn neutral rather than
 * as a faint "-0.00".
 */
static double frame_delta(const struct node *n)
{
	double b = (double)n->w, d = b - n->a;
	double mag = b > n->a ? b : n->a;
	return fabs(d) <= mag * 1e-9 ? 0 : d;
}

static void write_frame(struct wbuf *w, const struct merge *m, const struct node *n,
			unsigned height, uint64_t total, double maxdelta, const char *countname)
{
	const struct flame_opts *o = m->o;
	double px = XPAD + (double)n->x * m->scale_px, pw = (double)n->w * m->scale_px;
	double y = o->icicle ? YPAD1 + (double)n->depth * FRAME_H
			     : (double)height - YPAD2 - (double)(n->depth + 1) * FRAME_H;
	char fill[24], cnt[40], num[40];
	if (o->diff) {
		double d = frame_delta(n), v = maxdelta > 0 ? fabs(d) / maxdelta : 0;
		int c = (int)(210 - 210 * v);
		if (d > 0)
			snprintf(fill, sizeof(fill), "rgb(255,%d,%d)", c, c);
		else if (d < 0)
			snprintf(fill, sizeof(fill), "rgb(%d,%d,255)", c, c);
		else
			snprintf(fill, sizeof(fill), "rgb(250,250,250)");
	} else {
		palette_color(n->name, n->len, n->kernel, fill);
	}
	wb_puts(w, "<g><title>");
	wb_xml(w, n->name, n->len, 0);
	fmt_count(cnt, sizeof(cnt), (double)n->w);
	wb_printf(w, " (%s %s, %.2f%%", cnt, countname, 100.0 * (double)n->w / (double)total);
	if (o->diff) {
		double d = frame_delta(n);
		/* rounding only: A is B's count, as it would be exactly */
		fmt_count(num, sizeof(num), d == 0 ? (double)n->w : n->a);
		fmt_count(cnt, sizeof(cnt), d);
		wb_printf(w, "; A %s, %s%s", num, d > 0 ? "+" : "", cnt);
		if (n->a > 0)
			wb_printf(w, " (%+.2f%%)", 100.0 * d / n->a);
	}
	wb_printf(w,
		  ")</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		  "fg:x=\"%llu\" fg:w=\"%llu\"/><text x=\"%.2f\" y=\"%.1f\">",
		  px, y, pw, FRAME_H - 1, fill, (unsigned long long)n->x, (unsigned long long)n->w,
		  px + 3, y + 10.5);
	size_t chars = (size_t)(pw / (FONT_SIZE * FONT_WIDTH));
	if (chars >= 3)
		wb_xml(w, n->name, n->len, chars);
	wb_puts(w, "</text></g>\n");
}

int flame_render(struct fold_set *s, const struct flame_opts *opts, folded_write_fn fn, void *ctx,
		 struct flame_totals *t)
{
	static const struct flame_opts defaults;
	const struct flame_opts *o = opts ? opts : &defaults;
	struct merge m = {.o = o};
	struct flame_totals tt = {0};
	struct wbuf *w = NULL;
	unsigned width = o->width ? o->width : 1200;
	double minwidth = o->minwidth > 0 ? o->minwidth : 0.1;
	const char *countname = o->countname && *o->countname ? o->countname : "samples";
	uint64_t total = o->diff ? s->st.total[1] : s->st.total[0] + s->st.total[1];
	double ascale = 1;
	int r;

	if (width < 2 * XPAD + 10 || width > 100000)
		return -EINVAL;
	if (!total) {
		r = -ENODATA;
		goto out;
	}
	if (o->diff && o->normalize && s->st.total[0])
		ascale = (double)s->st.total[1] / (double)s->st.total[0];
	m.scale_px = (double)(width - 2 * XPAD) / (double)total;
	m.minw = minwidth / m.scale_px;
	fold_set_sort(s);
	if ((r = merge_lines(&m, s, ascale, &total)) < 0)
		goto out;
	m.scale_px = (double)(width - 2 * XPAD) / (double)total;
	double maxdelta = 0;
	for (size_t i = 0; o->diff && i < m.n; i++) {
		double d = fabs(frame_delta(&m.nodes[i]));
		if (d > maxdelta)
			maxdelta = d;
	}
	unsigned height = (m.depth + 1) * FRAME_H + YPAD1 + YPAD2;
	r = -ENOMEM;
	if (!(w = malloc(sizeof(*w))))
		goto out;
	wb_init(w, fn, ctx);
	write_header(w, o, width, height, total, countname);
	wb_puts(w, "<g id=\"frames\">\n");
	for (size_t i = 0; i < m.n && !w->err; i++)
		write_frame(w, &m, &m.nodes[i], height, total, maxdelta, countname);
	wb_puts(w, "</g>\n</svg>\n");
	r = wb_flush(w);
	tt.frames = m.n;
	tt.pruned = m.pruned;
	tt.total = total;
	tt.depth = m.depth;
out:
	if (t)
		*t = tt;
	free(w);
	free(m.nodes);
	return r;
}
