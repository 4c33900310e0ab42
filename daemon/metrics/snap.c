// SPDX-License-Identifier: MIT
/* Metrics snapshots: building them and rendering the exposition formats. */
#include "snap.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct msnap *msnap_new(void)
{
	return calloc(1, sizeof(struct msnap));
}

void msnap_free(struct msnap *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nsamples; i++)
		free(s->samples[i].labels);
	free(s->samples);
	free(s->fams);
	free(s);
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 32;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

void msnap_family(struct msnap *s, const char *name, enum msnap_type type, const char *unit,
		  const char *help)
{
	if (s->oom)
		return;
	if (!grow((void **)&s->fams, &s->fams_cap, s->nfams + 1, sizeof(*s->fams))) {
		s->oom = true;
		return;
	}
	s->fams[s->nfams++] = (struct msnap_family){.name = name,
						    .help = help,
						    .unit = unit,
						    .type = type,
						    .first = s->nsamples};
}

/* A growable text buffer; on allocation failure it stops growing and
 * remembers it. */
struct tbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void tb_put(struct tbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (!grow((void **)&b->p, &b->cap, b->len + n + 1, 1)) {
		b->oom = true;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void tb_str(struct tbuf *b, const char *s)
{
	tb_put(b, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp, min;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, cp = s[0] & 0x1f, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, cp = s[0] & 0x0f, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, cp = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Both formats escape backslash, double quote and newline in label
 * values; they must be UTF-8, so other bytes become U+FFFD. */
static void tb_escaped(struct tbuf *b, const char *v)
{
	const unsigned char *s = (const unsigned char *)v;
	size_t n = strlen(v);

	while (n) {
		size_t k = utf8_seq(s, n);

		if (k == 0) {
			tb_str(b, "\xef\xbf\xbd");
			k = 1;
		} else if (*s == '\\') {
			tb_str(b, "\\\\");
		} else if (*s == '"') {
			tb_str(b, "\\\"");
		} else if (*s == '\n') {
			tb_str(b, "\\n");
		} else {
			tb_put(b, (const char *)s, k);
		}
		s += k;
		n -= k;
	}
}

void msnap_add(struct msnap *s, double value, ...)
{
	struct tbuf lb = {0};
	va_list ap;
	const char *name;

	if (s->oom || !s->nfams)
		return;
	va_start(ap, value);
	while ((name = va_arg(ap, const char *))) {
		const char *v = va_arg(ap, const char *);

		if (lb.len)
			tb_str(&lb, ",");
		tb_str(&lb, name);
		tb_str(&lb, "=\"");
		tb_escaped(&lb, v ? v : "");
		tb_str(&lb, "\"");
	}
	va_end(ap);
	if (lb.oom ||
	    !grow((void **)&s->samples, &s->samples_cap, s->nsamples + 1, sizeof(*s->samples))) {
		free(lb.p);
		s->oom = true;
		return;
	}
	s->samples[s->nsamples++] = (struct msnap_sample){.labels = lb.p, .value = value};
	s->fams[s->nfams - 1].n++;
}

static void tb_value(struct tbuf *b, double v)
{
	char num[40];

	if (isnan(v)) {
		tb_str(b, "NaN");
		return;
	}
	if (isinf(v)) {
		tb_str(b, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* counters as integers (never "1e+15"), fractions in the shortest
	 * of two precisions that reads back exactly */
	if (v == floor(v) && fabs(v) < 1e18)
		snprintf(num, sizeof(num), "%.0f", v);
	else
		snprintf(num, sizeof(num), "%.15g", v);
	if (strtod(num, NULL) != v)
		snprintf(num, sizeof(num), "%.17g", v);
	tb_str(b, num);
}

/* HELP text: backslash and newline escaped (OpenMetrics: quotes too). */
static void tb_help(struct tbuf *b, const char *h, bool om)
{
	for (; *h; h++) {
		if (*h == '\\')
			tb_str(b, "\\\\");
		else if (*h == '\n')
			tb_str(b, "\\n");
		else if (*h == '"' && om)
			tb_str(b, "\\\"");
		else
			tb_put(b, h, 1);
	}
}

static void render_family(struct tbuf *b, const struct msnap *s, const struct msnap_family *f,
			  bool om)
{
	static const char *const suffixes[] =
		{[MSNAP_GAUGE] = "", [MSNAP_COUNTER] = "_total", [MSNAP_INFO] = "_info"};
	static const char *const types[] = {
		[MSNAP_GAUGE] = " gauge\n", [MSNAP_COUNTER] = " counter\n", [MSNAP_INFO] = " info\n"};
	/* 0.0.4 names a family by its samples' name (and has no info type);
	 * OpenMetrics by the name without the suffix its samples carry. */
	const char *suffix = suffixes[f->type];
	const char *fsuffix = om ? "" : suffix;
	const char *type = !om && f->type == MSNAP_INFO ? types[MSNAP_GAUGE] : types[f->type];

	tb_str(b, "# HELP ");
	tb_str(b, f->name);
	tb_str(b, fsuffix);
	tb_str(b, " ");
	tb_help(b, f->help, om);
	tb_str(b, "\n# TYPE ");
	tb_str(b, f->name);
	tb_str(b, fsuffix);
	tb_str(b, type);
	if (om && f->unit) {
		tb_str(b, "# UNIT ");
		tb_str(b, f->name);
		tb_str(b, " ");
		tb_str(b, f->unit);
		tb_str(b, "\n");
	}
	for (size_t i = f->first; i < f->first + f->n; i++) {
		const struct msnap_sample *sm = &s->samples[i];

		tb_str(b, f->name);
		tb_str(b, suffix);
		if (sm->labels && *sm->labels) {
			tb_str(b, "{");
			tb_str(b, sm->labels);
			tb_str(b, "}");
		}
		tb_str(b, " ");
		tb_value(b, sm->value);
		tb_str(b, "\n");
	}
}

int msnap_render(const struct msnap *s, bool om, char **out, size_t *len)
{
	struct tbuf b = {0};

	tb_put(&b, "", 0); /* an empty exposition is "" (0.0.4), not NULL */
	for (size_t i = 0; i < s->nfams; i++)
		if (s->fams[i].n)
			render_family(&b, s, &s->fams[i], om);
	if (om)
		tb_str(&b, "# EOF\n");
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
