// SPDX-License-Identifier: MIT
/*
 * Human rendering of a nested JSON result (analyses): scalars as
 * "key: value" lines, and every array of objects as tables. A table's rows
 * are the array's elements, its columns their scalar members (nested
 * objects flattened), preceded by one identifying column per enclosing
 * array element (its first scalar member, e.g. rank, stream), so
 * "ranks[].streams[].categories[]" becomes rows keyed by rank, stream and
 * idle category.
 *
 * Made for a 100-column terminal: a nested object's members form a table
 * of their own (one concern each: "summary", "interval_stats"), headers are
 * short words with the unit last ("IDLE us", "COMM %"), numbers carry
 * thousands separators and a precision that suits their size (never an
 * exponent), long names are cut, and a table still too wide is split into
 * several with the identifying columns repeated. --wide lifts the width
 * limit; long tables are cut at a row limit either way, and --json gives
 * everything, unchanged.
 */
#include "cli.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 48
#define MAX_DEPTH 8
#define ROW_LIMIT 40
#define SCREEN 100   /* columns */
#define TEXT_MIN 16  /* a name column is not cut below this */
#define WRAP_LINES 6 /* lines of a long list of scalars */

struct ptable {
	char *title;
	char *cols[MAX_COLS]; /* member paths, "a.b" */
	size_t ncols;
	size_t nid;   /* the first nid columns identify a row */
	char **cells; /* nrows * MAX_COLS, formatted */
	size_t nrows, cap, total;
};

struct tables {
	struct ptable *t;
	size_t n;
};

struct anc {
	const char *key;
	char val[64];
};

/* ---- numbers and words --------------------------------------------- */

/* Display columns of UTF-8 text (escape.c made controls visible). */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Bytes of s that fill at most cols columns. */
static size_t prefix_bytes(const char *s, size_t cols)
{
	size_t i = 0, n = 0;

	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80 && n++ == cols)
			break;
	}
	return i;
}

/* The last member name of a path: "summary.count" -> "count". */
static const char *leaf(const char *path)
{
	const char *d = strrchr(path, '.');

	return d ? d + 1 : path;
}

/* Members that name something (a rank, a stream, a pid) print as written:
 * "23", not "23.00" or "1,234". */
static bool is_id_key(const char *path)
{
	static const char *const ids[] = {"rank",	 "stream",   "pid",	  "tid",   "id",
					  "device",	 "instance", "iteration", "index", "step",
					  "correlation", "event",    NULL};
	const char *k = leaf(path);
	size_t n = strlen(k);

	for (size_t i = 0; ids[i]; i++)
		if (!strcmp(k, ids[i]))
			return true;
	return (n > 3 && !strcmp(k + n - 3, "_id")) || (n > 6 && !strcmp(k + n - 6, "_index")) ||
	       (n > 6 && !strcmp(k + n - 6, "_event"));
}

/* "1234567.5" -> "1,234,567.5" (into out, len bytes). */
static void group_digits(const char *in, char *out, size_t len)
{
	const char *p = in, *dot;
	size_t o = 0, digits;

	if (*p == '-' && o + 1 < len)
		out[o++] = *p++;
	dot = strchr(p, '.');
	digits = dot ? (size_t)(dot - p) : strlen(p);
	for (size_t i = 0; i < digits && o + 2 < len; i++) {
		if (i && (digits - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = p[i];
	}
	snprintf(out + o, len - o, "%s", dot ? dot : "");
}

/* Drop the zeros a fixed precision left at the end: "4.50" -> "4.5". */
static void trim_zeros(char *s)
{
	char *e;

	if (!strchr(s, '.'))
		return;
	e = s + strlen(s) - 1;
	while (*e == '0')
		*e-- = '\0';
	if (*e == '.')
		*e = '\0';
}

/* A number for a person: exact integers grouped, fractions with three or
 * four significant digits, never an exponent (--json keeps every digit). */
void fmt_num(char *buf, size_t len, double v, bool id)
{
	char tmp[400];
	double a = fabs(v);

	if (!isfinite(v)) {
		snprintf(buf, len, "-");
		return;
	}
	if (id && v == floor(v) && a < 1e15) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	if (v == floor(v) || a >= 1000) {
		snprintf(tmp, sizeof(tmp), "%.0f", v);
	} else if (a >= 100) {
		snprintf(tmp, sizeof(tmp), "%.1f", v);
	} else if (a >= 1) {
		snprintf(tmp, sizeof(tmp), "%.2f", v);
	} else {
		/* three significant digits, as a plain decimal */
		int dec = 2 - (int)floor(log10(a));

		snprintf(tmp, sizeof(tmp), "%.*f", dec > 9 ? 9 : dec, v);
	}
	trim_zeros(tmp);
	if (!strcmp(tmp, "-0"))
		snprintf(tmp, sizeof(tmp), "0");
	group_digits(tmp, buf, len);
}

static void scalar(const cJSON *v, const char *key, char *buf, size_t len)
{
	if (cJSON_IsString(v))
		snprintf(buf, len, "%s", v->valuestring);
	else if (cJSON_IsBool(v))
		snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNumber(v))
		fmt_num(buf, len, v->valuedouble, key && is_id_key(key));
	else
		snprintf(buf, len, "-");
}

/* A header from a member path: words upper case, shortened, the unit
 * last: "non_compute_split.communication_time_pctg" under the group
 * "non_compute_split" -> "COMM %"; "cpu_duration_us.mean" -> "CPU DUR
 * MEAN us". */
static void header(const char *path, char *out, size_t len)
{
	static const char *const abbrev[][2] = {
		{"communication", "comm"}, {"computation", "comp"}, {"compute", "comp"},
		{"duration", "dur"},	   {"relative", "rel"},	    {"length", "len"},
		{"percentage", "%"},	   {"pctg", "%"},	    {"pct", "%"},
		{"average", "avg"},	   {"maximum", "max"},	    {"minimum", "min"},
		{"kernels", "kern"},	   {"kernel", "kern"},	    {"number", "n"},
		{"outliers", "outl"},
	};
	char words[16][48], unit[48] = "";
	size_t nw = 0, o = 0;
	const char *p = path;

	while (*p && nw < 16) {
		size_t n = strcspn(p, "._");
		char w[48];

		snprintf(w, sizeof(w), "%.*s", (int)(n < 47 ? n : 47), p);
		p += n + (p[n] != '\0');
		if (!w[0])
			continue;
		for (size_t i = 0; i < sizeof(abbrev) / sizeof(abbrev[0]); i++)
			if (!strcmp(w, abbrev[i][0]))
				snprintf(w, sizeof(w), "%s", abbrev[i][1]);
		if (!strcmp(w, "us") || !strcmp(w, "ns") || !strcmp(w, "ms") || !strcmp(w, "%") ||
		    !strcmp(w, "bytes"))
			snprintf(unit, sizeof(unit), "%s", w);
		else
			snprintf(words[nw++], sizeof(words[0]), "%s", w);
	}
	for (size_t i = 0; i < nw; i++) {
		/* "IDLE TIME us" says no more than "IDLE us" */
		if (unit[0] && !strcmp(words[i], "time") && nw > 1)
			continue;
		for (const char *c = words[i]; *c && o + 2 < len; c++)
			out[o++] = (char)(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c);
		if (o + 1 < len)
			out[o++] = ' ';
	}
	if (o && !unit[0])
		o--;
	snprintf(out + o, len - o, "%s", unit);
}

/* ---- collecting ---------------------------------------------------- */

static bool is_scalar(const cJSON *v)
{
	return !cJSON_IsObject(v) && !cJSON_IsArray(v);
}

static bool is_object_array(const cJSON *v)
{
	return cJSON_IsArray(v) && v->child && cJSON_IsObject(v->child);
}

static struct ptable *table_for(struct tables *ts, const char *title)
{
	for (size_t i = 0; i < ts->n; i++)
		if (!strcmp(ts->t[i].title, title))
			return &ts->t[i];
	struct ptable *n = realloc(ts->t, (ts->n + 1) * sizeof(*n));
	if (!n)
		return NULL;
	ts->t = n;
	struct ptable *t = &ts->t[ts->n++];
	memset(t, 0, sizeof(*t));
	t->title = strdup(title);
	return t;
}

static int col_index(struct ptable *t, const char *name)
{
	for (size_t i = 0; i < t->ncols; i++)
		if (!strcmp(t->cols[i], name))
			return (int)i;
	if (t->ncols == MAX_COLS)
		return -1;
	t->cols[t->ncols] = strdup(name);
	return (int)t->ncols++;
}

static void set_cell(struct ptable *t, char **row, const char *col, const char *val)
{
	int i = col_index(t, col);
	if (i >= 0 && !row[i])
		row[i] = strdup(val);
}

/* Scalars of obj (nested objects flattened with a dotted prefix) into row. */
static void fill(struct ptable *t, char **row, const cJSON *obj, const char *prefix)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, obj)
	{
		char name[256], buf[400];
		snprintf(name, sizeof(name), "%.120s%.120s", prefix, c->string);
		if (is_scalar(c)) {
			scalar(c, name, buf, sizeof(buf));
			set_cell(t, row, name, buf);
		} else if (cJSON_IsObject(c)) {
			char p[260];
			snprintf(p, sizeof(p), "%s.", name);
			fill(t, row, c, p);
		}
	}
}

static size_t own_scalars(const cJSON *obj)
{
	size_t n = 0;
	const cJSON *c;
	cJSON_ArrayForEach(c, obj) n += is_scalar(c) || cJSON_IsObject(c);
	return n;
}

static bool has_child_tables(const cJSON *obj)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, obj) if (is_object_array(c)) return true;
	return false;
}

static void add_row(struct ptable *t, const cJSON *el, const struct anc *anc, size_t nanc)
{
	t->total++;
	if (t->nrows >= ROW_LIMIT)
		return;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **n = realloc(t->cells, cap * MAX_COLS * sizeof(char *));
		if (!n)
			return;
		t->cells = n;
		t->cap = cap;
	}
	char **row = t->cells + t->nrows * MAX_COLS;
	memset(row, 0, MAX_COLS * sizeof(char *));
	for (size_t i = 0; i < nanc; i++)
		set_cell(t, row, anc[i].key, anc[i].val);
	fill(t, row, el, "");
	if (!t->nrows) /* the ancestors' ids and the row's own first member */
		t->nid = nanc + 1 < t->ncols ? nanc + 1 : t->ncols;
	t->nrows++;
}

static void walk(struct tables *ts, const cJSON *arr, const char *title, struct anc *anc,
		 size_t nanc)
{
	const cJSON *el;
	cJSON_ArrayForEach(el, arr)
	{
		if (!cJSON_IsObject(el))
			continue;
		/* An element that is only an identifier plus child tables gets no
		 * table of its own: its identifier shows in the child tables. */
		bool own = own_scalars(el) > 1 || !has_child_tables(el);
		struct ptable *t = own ? table_for(ts, title) : NULL;
		if (t)
			add_row(t, el, anc, nanc);
		if (nanc + 1 >= MAX_DEPTH)
			continue;
		/* identify this element to its children by its first scalar */
		const cJSON *id = el->child;
		while (id && !is_scalar(id))
			id = id->next;
		size_t n2 = nanc;
		if (id) {
			anc[n2].key = id->string;
			scalar(id, id->string, anc[n2].val, sizeof(anc[n2].val));
			n2++;
		}
		const cJSON *c;
		cJSON_ArrayForEach(c, el)
		{
			if (!is_object_array(c))
				continue;
			char sub[256];
			snprintf(sub, sizeof(sub), "%s.%s", title, c->string);
			walk(ts, c, sub, anc, n2);
		}
	}
}

/* ---- printing ------------------------------------------------------ */

/* Right-aligned: numbers as fmt_num() writes them, and "-". */
static bool numeric(const char *s)
{
	bool digit = false;

	if (!s || !*s || !strcmp(s, "-"))
		return true;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			digit = true;
		else if (!strchr(",.-", *s))
			return false;
	}
	return digit;
}

/* One table of the columns cols[0..n) of t, at widths w (0: as wide as
 * its cells). */
static void print_cols(const struct ptable *t, const char *title, const size_t *cols, size_t n,
		       bool wide)
{
	char hdr[MAX_COLS][96];
	size_t w[MAX_COLS], total = 0;
	bool text[MAX_COLS];

	printf("\n%s:\n", title);
	for (size_t i = 0; i < n; i++) {
		size_t c = cols[i];

		header(i < t->nid ? leaf(t->cols[c]) : t->cols[c], hdr[i], sizeof(hdr[i]));
		w[i] = width(hdr[i]);
		text[i] = false;
		for (size_t r = 0; r < t->nrows; r++) {
			const char *v = t->cells[r * MAX_COLS + c];
			if (v && width(v) > w[i])
				w[i] = width(v);
			text[i] |= v && !numeric(v);
		}
		total += 2 + w[i];
	}
	/* Cut the widest name column until the table fits. */
	while (!wide && total > SCREEN) {
		size_t best = n;
		for (size_t i = 0; i < n; i++)
			if (text[i] && w[i] > TEXT_MIN && (best == n || w[i] > w[best]))
				best = i;
		if (best == n)
			break;
		size_t cut = total - SCREEN, room = w[best] - TEXT_MIN;
		size_t hw = width(hdr[best]);
		if (cut > room)
			cut = room;
		if (w[best] - cut < hw)
			cut = w[best] > hw ? w[best] - hw : 0;
		if (!cut)
			break;
		w[best] -= cut;
		total -= cut;
	}
	/* Blanks that pad a cell are written only once something follows
	 * them: no line ends in blanks. */
	size_t pend = 0;
	for (size_t i = 0; i < n; i++) {
		printf("%*s%s", (int)(pend + 2), "", hdr[i]);
		pend = w[i] - width(hdr[i]);
	}
	putchar('\n');
	for (size_t r = 0; r < t->nrows; r++) {
		pend = 0;
		for (size_t i = 0; i < n; i++) {
			const char *v = t->cells[r * MAX_COLS + cols[i]];
			size_t vw;

			v = v ? v : "";
			vw = width(v);
			if (!*v) {
				pend += 2 + w[i];
			} else if (!text[i]) {
				printf("%*s%s", (int)(pend + 2 + w[i] - vw), "", v);
				pend = 0;
			} else if (vw > w[i]) {
				printf("%*s%.*s…", (int)(pend + 2), "",
				       (int)prefix_bytes(v, w[i] - 1), v);
				pend = 0;
			} else {
				printf("%*s%s", (int)(pend + 2), "", v);
				pend = w[i] - vw;
			}
		}
		putchar('\n');
	}
	if (t->total > t->nrows)
		printf("  ... %zu more rows (--json for all)\n", t->total - t->nrows);
}

/* The columns' widths as printed: at most SCREEN in all unless wide
 * (print_cols() cuts names; this only splits). */
static size_t col_width(const struct ptable *t, size_t c, bool id)
{
	char h[96];
	size_t w;

	header(id ? leaf(t->cols[c]) : t->cols[c], h, sizeof(h));
	w = width(h);
	for (size_t r = 0; r < t->nrows; r++) {
		const char *v = t->cells[r * MAX_COLS + c];
		size_t vw = v ? width(v) : 0;
		if (v && !numeric(v) && vw > TEXT_MIN)
			vw = TEXT_MIN > w ? TEXT_MIN : w;
		if (vw > w)
			w = vw;
	}
	return 2 + w;
}

/* Title "ranks.streams" + group "summary" -> "ranks > streams: summary". */
static void make_title(const char *title, const char *group, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = title; *p && o + 4 < len; p++) {
		if (*p == '.') {
			memcpy(out + o, " > ", 3);
			o += 3;
		} else {
			out[o++] = *p == '_' ? ' ' : *p;
		}
	}
	out[o] = '\0';
	if (group && *group) {
		snprintf(out + o, len - o, ": %s", group);
		for (char *p = out + o; *p; p++)
			if (*p == '_' || *p == '.')
				*p = ' ';
	}
}

/* Columns ids + part, split into tables that fit the screen. */
static void print_part(const struct ptable *t, const char *group, const size_t *part, size_t n,
		       bool wide)
{
	size_t cols[MAX_COLS], idw = 0, i = 0;
	char title[300];

	make_title(t->title, group, title, sizeof(title));
	for (size_t c = 0; c < t->nid; c++) {
		cols[c] = c;
		idw += col_width(t, c, true);
	}
	while (i < n) {
		size_t k = t->nid, w = idw;
		bool more = i > 0;
		do {
			w += col_width(t, part[i], false);
			cols[k++] = part[i++];
		} while (i < n && (wide || w + col_width(t, part[i], false) <= SCREEN));
		if (more && strlen(title) + 12 < sizeof(title))
			strcat(title, " (continued)");
		print_cols(t, title, cols, k, wide);
	}
	if (!n)
		print_cols(t, title, cols, t->nid, wide);
}

/* The member a column belongs to: "summary" for "summary.mean.x", "" for
 * the row's own scalars. */
static size_t group_len(const char *path)
{
	const char *d = strchr(path, '.');

	return d ? (size_t)(d - path) : 0;
}

/* One table per concern: the row's own members, then each nested object's
 * (one with a single member stays with the row's own). */
static void print_table(const struct ptable *t, bool wide)
{
	size_t part[MAX_COLS], n = 0;
	bool done[MAX_COLS] = {false};

	for (size_t c = t->nid; c < t->ncols; c++) {
		size_t g = group_len(t->cols[c]), members = 0;
		for (size_t d = t->nid; d < t->ncols && g; d++)
			members += group_len(t->cols[d]) == g &&
				   !strncmp(t->cols[d], t->cols[c], g);
		if (!g || members < 2) {
			part[n++] = c;
			done[c] = true;
		}
	}
	if (n || t->nid == t->ncols)
		print_part(t, NULL, part, n, wide);
	for (size_t c = t->nid; c < t->ncols; c++) {
		char group[128];
		size_t g = group_len(t->cols[c]);

		if (done[c])
			continue;
		n = 0;
		for (size_t d = c; d < t->ncols; d++)
			if (!done[d] && group_len(t->cols[d]) == g &&
			    !strncmp(t->cols[d], t->cols[c], g)) {
				part[n++] = d;
				done[d] = true;
			}
		snprintf(group, sizeof(group), "%.*s", (int)(g < 127 ? g : 127), t->cols[c]);
		/* headers without the group's name: it is in the title */
		struct ptable sub = *t;
		char *cols[MAX_COLS];
		for (size_t i = 0; i < t->ncols; i++)
			cols[i] = t->cols[i];
		for (size_t i = 0; i < n; i++)
			cols[part[i]] = t->cols[part[i]] + g + 1;
		memcpy(sub.cols, cols, sizeof(cols));
		print_part(&sub, group, part, n, wide);
	}
}

/* "key: a b c ..." wrapped at the screen's width, WRAP_LINES lines at most
 * unless wide. */
static void print_words(const char *lead, const cJSON *arr, const char *single, bool wide)
{
	char buf[400];
	size_t col, lines = 1, left = 0;
	const cJSON *e = arr ? arr->child : NULL;
	const char *s = single;

	fputs(lead, stdout);
	col = width(lead);
	for (;;) {
		const char *word;
		size_t len;

		if (arr) {
			while (e && !is_scalar(e))
				e = e->next;
			if (!e)
				break;
			scalar(e, lead, buf, sizeof(buf));
			word = buf;
			len = strlen(buf);
			e = e->next;
		} else {
			while (*s == ' ')
				s++;
			if (!*s)
				break;
			word = s;
			len = strcspn(s, " ");
			s += len;
		}
		if (col + 1 + width(word) > SCREEN && col > 4 && !wide) {
			if (lines == WRAP_LINES) {
				left = 1;
				for (; arr && e; e = e->next)
					left += is_scalar(e);
				break;
			}
			fputs("\n   ", stdout);
			col = 3;
			lines++;
		}
		/* a word longer than a line is cut at the screen's edge */
		if (!wide && col + 1 + width(word) > SCREEN) {
			size_t room = SCREEN - col - 1;
			printf(" %.*s…", (int)prefix_bytes(word, room - 1), word);
			col = SCREEN;
			continue;
		}
		printf(" %.*s", (int)len, word);
		col += 1 + width(word);
	}
	if (left)
		printf("\n    ... %zu more (--wide or --json for all)", left);
	if (arr && !arr->child)
		fputs(" (none)", stdout);
	putchar('\n');
}

static void print_scalars(const cJSON *obj, const char *prefix, bool wide)
{
	const cJSON *c;
	char buf[400], lead[300];

	cJSON_ArrayForEach(c, obj)
	{
		snprintf(lead, sizeof(lead), "%.120s%.120s:", prefix, c->string);
		if (is_scalar(c)) {
			scalar(c, c->string, buf, sizeof(buf));
			print_words(lead, NULL, buf, wide);
		} else if (cJSON_IsArray(c) && !is_object_array(c)) {
			print_words(lead, c, NULL, wide);
		} else if (cJSON_IsObject(c) && !has_child_tables(c)) {
			char p[256];
			snprintf(p, sizeof(p), "%.120s%.120s.", prefix, c->string);
			print_scalars(c, p, wide);
		}
	}
}

void print_result_tables(const cJSON *root, bool wide)
{
	struct tables ts = {0};
	struct anc anc[MAX_DEPTH];
	if (!cJSON_IsObject(root)) {
		print_json_human(root, 0);
		return;
	}
	print_scalars(root, "", wide);
	const cJSON *c;
	cJSON_ArrayForEach(c, root)
	{
		if (is_object_array(c))
			walk(&ts, c, c->string, anc, 0);
		else if (cJSON_IsObject(c) && has_child_tables(c)) {
			const cJSON *g;
			cJSON_ArrayForEach(g, c)
			{
				char title[256];
				snprintf(title, sizeof(title), "%s.%s", c->string, g->string);
				if (is_object_array(g))
					walk(&ts, g, title, anc, 0);
			}
		}
	}
	for (size_t i = 0; i < ts.n; i++) {
		print_table(&ts.t[i], wide);
		for (size_t k = 0; k < ts.t[i].nrows * MAX_COLS; k++)
			free(ts.t[i].cells[k]);
		for (size_t k = 0; k < ts.t[i].ncols; k++)
			free(ts.t[i].cols[k]);
		free(ts.t[i].cells);
		free(ts.t[i].title);
	}
	free(ts.t);
}
