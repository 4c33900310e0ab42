// SPDX-License-Identifier: MIT
/*
 * Human rendering of a nested JSON result (analyses): scalars as
 * "key: value" lines, and every array of objects as one table. A table's
 * rows are the array's elements, its columns their scalar members (nested
 * objects flattened as "a.b"), preceded by one identifying column per
 * enclosing array element (its first scalar member, e.g. rank, stream), so
 * "ranks[].streams[].categories[]" becomes one table with columns rank,
 * stream, idle_category, ... Long tables are cut at a row limit with a
 * note; --json gives everything.
 */
#include "cli.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 32
#define MAX_DEPTH 8
#define ROW_LIMIT 40

struct ptable {
	char *title;
	char *cols[MAX_COLS];
	size_t ncols;
	char **cells; /* nrows * MAX_COLS */
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

static void scalar(const cJSON *v, char *buf, size_t len)
{
	if (cJSON_IsString(v))
		snprintf(buf, len, "%s", v->valuestring);
	else if (cJSON_IsBool(v))
		snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNull(v))
		snprintf(buf, len, "-");
	else if (v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 1e15)
		snprintf(buf, len, "%.0f", v->valuedouble);
	else
		snprintf(buf, len, "%.4g", v->valuedouble);
}

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
		char name[256], buf[64];
		snprintf(name, sizeof(name), "%.120s%.120s", prefix, c->string);
		if (is_scalar(c)) {
			scalar(c, buf, sizeof(buf));
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
	cJSON_ArrayForEach(c, obj)
		n += is_scalar(c) || cJSON_IsObject(c);
	return n;
}

static bool has_child_tables(const cJSON *obj)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, obj)
		if (is_object_array(c))
			return true;
	return false;
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
		if (t) {
			t->total++;
			if (t->nrows < ROW_LIMIT) {
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
				t->nrows++;
			}
		}
		if (nanc + 1 >= MAX_DEPTH)
			continue;
		/* identify this element to its children by its first scalar */
		const cJSON *id = el->child;
		while (id && !is_scalar(id))
			id = id->next;
		size_t n2 = nanc;
		if (id) {
			anc[n2].key = id->string;
			scalar(id, anc[n2].val, sizeof(anc[n2].val));
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

static bool numeric(const char *s)
{
	char *end;
	if (!s || !*s)
		return false;
	strtod(s, &end);
	return *end == '\0';
}

static void print_table(const struct ptable *t)
{
	size_t w[MAX_COLS];
	printf("\n%s:\n", t->title);
	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = strlen(t->cols[c]);
		for (size_t r = 0; r < t->nrows; r++) {
			const char *v = t->cells[r * MAX_COLS + c];
			if (v && strlen(v) > w[c])
				w[c] = strlen(v) > 60 ? 60 : strlen(v);
		}
	}
	for (size_t c = 0; c < t->ncols; c++)
		printf("%s%-*s", c ? "  " : "  ", (int)w[c], t->cols[c]);
	putchar('\n');
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t c = 0; c < t->ncols; c++) {
			const char *v = t->cells[r * MAX_COLS + c];
			v = v ? v : "";
			if (numeric(v))
				printf("  %*s", (int)w[c], v);
			else
				printf("  %-*.*s", (int)w[c], 60, v);
		}
		putchar('\n');
	}
	if (t->total > t->nrows)
		printf("  ... %zu more rows (--json for all)\n", t->total - t->nrows);
}

static void print_scalars(const cJSON *obj, const char *prefix)
{
	const cJSON *c;
	char buf[64];
	cJSON_ArrayForEach(c, obj)
	{
		if (is_scalar(c)) {
			scalar(c, buf, sizeof(buf));
			printf("%s%s: %s\n", prefix, c->string, buf);
		} else if (cJSON_IsArray(c) && !is_object_array(c)) {
			printf("%s%s:", prefix, c->string);
			const cJSON *e;
			cJSON_ArrayForEach(e, c)
			{
				if (is_scalar(e)) {
					scalar(e, buf, sizeof(buf));
					printf(" %s", buf);
				}
			}
			printf("%s\n", c->child ? "" : " (none)");
		} else if (cJSON_IsObject(c) && !has_child_tables(c)) {
			char p[256];
			snprintf(p, sizeof(p), "%.120s%.120s.", prefix, c->string);
			print_scalars(c, p);
		}
	}
}

void print_result_tables(const cJSON *root)
{
	struct tables ts = {0};
	struct anc anc[MAX_DEPTH];
	if (!cJSON_IsObject(root)) {
		print_json_human(root, 0);
		return;
	}
	print_scalars(root, "");
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
		print_table(&ts.t[i]);
		for (size_t k = 0; k < ts.t[i].nrows * MAX_COLS; k++)
			free(ts.t[i].cells[k]);
		for (size_t k = 0; k < ts.t[i].ncols; k++)
			free(ts.t[i].cols[k]);
		free(ts.t[i].cells);
		free(ts.t[i].title);
	}
	free(ts.t);
}
