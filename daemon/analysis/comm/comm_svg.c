// SPDX-License-Identifier: MIT
/*
 * One standalone SVG from a comm result: left, the union time breakdown per
 * rank as 100 % stacked bars; right, the empirical CDF of phase windows per
 * tag pair (needs the result's windows_us arrays: windows=true). Drawn from
 * the JSON so the picture can never disagree with the numbers.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_int.h"

struct sbuf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void sb(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k >= 0 && (size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		size_t nc = b->cap * 2 + (size_t)(k > 0 ? k : 0) + 4096;
		char *q = realloc(b->p, nc);

		if (!q) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = nc;
	}
}

static const char *const seg_name[] = {"compute", "DP",	   "TP",     "PP",
				       "EP",	  "OTHER", "memory", "idle"};
static const char *const seg_color[] = {"#4e79a7", "#e15759", "#f28e2b", "#59a14f",
					"#b07aa1", "#9c755f", "#76b7b2", "#d3d3d3"};

static double get(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	double x = cj_value(v);

	return isnan(x) ? 0 : x;
}

/*
 * The legend under the bars, laid out from the labels' widths: a fixed
 * pitch fitted short names but let "compute" run into the next swatch.
 * CHAR_EM bounds a label's width: wide sans-serif fonts (DejaVu Sans)
 * take up to about 0.65 em a character on these names. An item that would
 * pass x1 starts a new row.
 */
#define CHAR_EM 0.7

static void legend(struct sbuf *b, double x0, double x1, double y)
{
	const double font = 10, swatch = 10, pad = 3, gap = 12, row = 16;
	double x = x0;

	sb(b, "<g class=\"legend\">\n");
	for (int s = 0; s < 8; s++) {
		double tw = CHAR_EM * font * (double)strlen(seg_name[s]);
		double iw = swatch + pad + tw;

		if (x > x0 && x + iw > x1) {
			x = x0;
			y += row;
		}
		sb(b,
		   "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"%s\"/>"
		   "<text x=\"%g\" y=\"%g\" font-size=\"%g\">%s</text>\n",
		   x, y, swatch, swatch, seg_color[s], x + swatch + pad, y + 9, font, seg_name[s]);
		x += iw + gap;
	}
	sb(b, "</g>\n");
}

static void bars(struct sbuf *b, const cJSON *ranks)
{
	int n = cJSON_GetArraySize(ranks), i = 0;
	const double x0 = 60, y0 = 50, h = 300, bw = n ? (360.0 / n) : 0;
	const cJSON *r;

	sb(b, "<text x=\"60\" y=\"30\" font-size=\"14\">Time breakdown per rank (union)</text>\n");
	sb(b, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", x0, y0, x0,
	   y0 + h);
	for (int k = 0; k <= 4; k++)
		sb(b, "<text x=\"%g\" y=\"%g\" font-size=\"10\" text-anchor=\"end\">%d%%</text>\n",
		   x0 - 4, y0 + h - h * k / 4 + 3, 25 * k);
	cJSON_ArrayForEach(r, ranks)
	{
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(r, "breakdown"), "union"),
			"ratios");
		const cJSON *cm = cJSON_GetObjectItemCaseSensitive(u, "comm");
		double v[8] = {get(u, "compute"), get(cm, "DP"), get(cm, "TP"),
			       get(cm, "PP"),	  get(cm, "EP"), get(cm, "OTHER"),
			       get(u, "memory"),  get(u, "idle")};
		double y = y0 + h, x = x0 + 4 + i * bw;

		for (int s = 0; s < 8; s++) {
			double hh = (v[s] > 0 ? v[s] : 0) * h;

			if (hh <= 0)
				continue;
			y -= hh;
			sb(b,
			   "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\">"
			   "<title>rank %d %s %.2f%%</title></rect>\n",
			   x, y, bw * 0.8, hh, seg_color[s], (int)get(r, "rank"), seg_name[s],
			   100 * v[s]);
		}
		sb(b,
		   "<text x=\"%.1f\" y=\"%g\" font-size=\"10\" text-anchor=\"middle\">%d</text>\n",
		   x + bw * 0.4, y0 + h + 14, (int)get(r, "rank"));
		i++;
	}
	legend(b, x0, x0 + 360, y0 + h + 26);
}

static void cdf(struct sbuf *b, const cJSON *wins)
{
	const double x0 = 520, y0 = 50, w = 360, h = 300;
	double lo = INFINITY, hi = -INFINITY;
	const cJSON *p, *v;
	int k = 0;

	sb(b, "<text x=\"%g\" y=\"30\" font-size=\"14\">Phase windows, CDF (us)</text>\n", x0);
	sb(b,
	   "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"black\"/>\n",
	   x0, y0, w, h);
	cJSON_ArrayForEach(p, wins)
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(p, "windows_us"))
	{
		lo = v->valuedouble < lo ? v->valuedouble : lo;
		hi = v->valuedouble > hi ? v->valuedouble : hi;
	}
	if (!isfinite(lo)) {
		sb(b, "<text x=\"%g\" y=\"%g\" font-size=\"12\">no phase windows</text>\n", x0 + 10,
		   y0 + 20);
		return;
	}
	if (hi <= lo)
		hi = lo + 1;
	sb(b,
	   "<text x=\"%g\" y=\"%g\" font-size=\"10\">%.4g</text>"
	   "<text x=\"%g\" y=\"%g\" font-size=\"10\" text-anchor=\"end\">%.4g</text>\n",
	   x0, y0 + h + 14, lo, x0 + w, y0 + h + 14, hi);
	cJSON_ArrayForEach(p, wins)
	{
		const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, "windows_us");
		int n = cJSON_GetArraySize(arr), i = 0;
		const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "from"));
		const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "to"));

		if (!n)
			continue;
		sb(b, "<polyline fill=\"none\" stroke=\"%s\" points=\"", seg_color[1 + k % 7]);
		cJSON_ArrayForEach(v, arr)
		{
			double x = x0 + (v->valuedouble - lo) / (hi - lo) * w;

			sb(b, "%.1f,%.1f %.1f,%.1f ", x, y0 + h - h * i / n, x,
			   y0 + h - h * (i + 1) / n);
			i++;
		}
		sb(b,
		   "\"/>\n<text x=\"%g\" y=\"%g\" font-size=\"10\" fill=\"%s\">%s → %s (%d)</text>\n",
		   x0 + w + 6, y0 + 12 + 12 * k, seg_color[1 + k % 7], f ? f : "?", t ? t : "?", n);
		k++;
	}
}

int comm_svg(const cJSON *result, char **svg, size_t *len)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(result, "analysis");
	struct sbuf b = {0};

	if (!cJSON_IsString(a) || strcmp(a->valuestring, "comm"))
		return -EINVAL;
	sb(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"420\" "
	       "font-family=\"sans-serif\">\n");
	bars(&b, cJSON_GetObjectItemCaseSensitive(result, "ranks"));
	cdf(&b, cJSON_GetObjectItemCaseSensitive(result, "phase_windows"));
	sb(&b, "</svg>\n");
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*svg = b.p;
	*len = b.n;
	return 0;
}
