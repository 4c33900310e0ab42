// SPDX-License-Identifier: MIT
/* Human output: sizes, durations, aligned tables, generic JSON rendering. */
#include "cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *fmt_bytes(char *buf, double bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	size_t u = 0;

	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, 32, "%.0f B", bytes);
	else
		snprintf(buf, 32, "%.1f %s", bytes, units[u]);
	return buf;
}

const char *fmt_duration_ns(char *buf, double ns)
{
	double s = ns / 1e9;

	if (ns < 1e3)
		snprintf(buf, 32, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, 32, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, 32, "%.1fms", ns / 1e6);
	else if (s < 60)
		snprintf(buf, 32, "%.2fs", s);
	else if (s < 3600)
		snprintf(buf, 32, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(buf, 32, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
	return buf;
}

double json_num(const cJSON *obj, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

const char *json_str(const cJSON *obj, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

struct table {
	size_t ncols, nrows, cap;
	char **cells; /* row-major; row 0 holds the headers */
};

struct table *table_new(size_t ncols, const char *const *headers)
{
	struct table *t = calloc(1, sizeof(*t));

	if (!t)
		abort();
	t->ncols = ncols;
	t->cells = calloc(ncols, sizeof(char *));
	if (!t->cells)
		abort();
	for (size_t i = 0; i < ncols; i++)
		t->cells[i] = strdup(headers[i]);
	t->nrows = t->cap = 1;
	return t;
}

void table_add(struct table *t, ...)
{
	va_list ap;

	if (t->nrows == t->cap) {
		t->cap *= 2;
		t->cells = realloc(t->cells, t->cap * t->ncols * sizeof(char *));
		if (!t->cells)
			abort();
	}
	va_start(ap, t);
	for (size_t i = 0; i < t->ncols; i++) {
		const char *s = va_arg(ap, const char *);
		t->cells[t->nrows * t->ncols + i] = strdup(s ? s : "");
	}
	va_end(ap);
	t->nrows++;
}

void table_print(const struct table *t)
{
	size_t width[16] = {0};

	for (size_t r = 0; r < t->nrows; r++)
		for (size_t c = 0; c < t->ncols && c < 16; c++) {
			const char *s = t->cells[r * t->ncols + c];
			size_t n = strlen(s) - (r == 0 && s[0] == '>');
			if (n > width[c])
				width[c] = n;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		char line[1024];
		size_t len = 0;
		for (size_t c = 0; c < t->ncols && c < 16 && len < sizeof(line); c++) {
			const char *s = t->cells[r * t->ncols + c];
			bool right = t->cells[c][0] == '>';
			if (r == 0 && right)
				s++;
			len += (size_t)snprintf(line + len, sizeof(line) - len,
						right ? "%*s  " : "%-*s  ", (int)width[c], s);
		}
		if (len >= sizeof(line))
			len = sizeof(line) - 1;
		/* No trailing blanks after the last (often empty) column. */
		while (len > 0 && line[len - 1] == ' ')
			len--;
		line[len] = '\0';
		puts(line);
	}
}

void table_free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

/*
 * Pretty-print JSON text without parsing its numbers: the daemon writes
 * 64-bit integers (nanosecond timestamps) exactly, and a round trip through
 * cJSON's doubles would round them. Only whitespace is added.
 */
int print_json_text(const char *json)
{
	int depth = 0;
	bool in_str = false;
	for (const char *p = json; *p; p++) {
		char ch = *p;
		if (in_str) {
			unsigned char u = (unsigned char)ch;
			/* JSON lets DEL and the C1 controls through raw; a
			 * terminal takes U+009B for CSI: print them escaped */
			if (u < 0x20 || u == 0x7f) {
				printf("\\u%04x", u);
			} else if (u == 0xc2 && (unsigned char)p[1] >= 0x80 &&
				   (unsigned char)p[1] <= 0x9f) {
				printf("\\u%04x", (unsigned char)*++p);
			} else {
				putchar(ch);
				if (ch == '\\' && p[1])
					putchar(*++p);
				else if (ch == '"')
					in_str = false;
			}
			continue;
		}
		switch (ch) {
		case '"':
			in_str = true;
			putchar(ch);
			break;
		case '{':
		case '[':
			putchar(ch);
			if (p[1] == (ch == '{' ? '}' : ']')) {
				putchar(*++p);
				break;
			}
			printf("\n%*s", 2 * ++depth, "");
			break;
		case '}':
		case ']':
			depth--;
			printf("\n%*s%c", 2 * (depth > 0 ? depth : 0), "", ch);
			break;
		case ',':
			printf(",\n%*s", 2 * depth, "");
			break;
		case ':':
			fputs(": ", stdout);
			break;
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			break;
		default:
			putchar(ch);
		}
	}
	putchar('\n');
	return EXIT_OK;
}

/* A scalar as text into buf (32+ bytes) or a pointer to its string. */
static const char *scalar_text(const cJSON *v, char *buf, size_t len)
{
	if (cJSON_IsString(v))
		return v->valuestring;
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v) ? "true" : "false";
	if (cJSON_IsNull(v))
		return "-";
	if (cJSON_IsNumber(v)) {
		double d = v->valuedouble;
		if (d == floor(d) && fabs(d) < 1e15)
			snprintf(buf, len, "%.0f", d);
		else /* no exponent: "9.694e+05" reads badly */
			fmt_num(buf, len, d, false);
		return buf;
	}
	return NULL;
}

static bool all_scalars(const cJSON *obj)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, obj) if (cJSON_IsObject(c) || cJSON_IsArray(c)) return false;
	return true;
}

/* An array of flat objects is a table whose columns are the first one's keys. */
static bool print_array_table(const cJSON *arr)
{
	const cJSON *first = arr->child, *row, *col;
	const char *hdr[16];
	size_t n = 0;

	if (!cJSON_IsObject(first) || !all_scalars(first))
		return false;
	cJSON_ArrayForEach(col, first) if (n < 16) hdr[n++] = col->string;
	if (n == 0)
		return false;
	struct table *t = table_new(n, hdr);
	cJSON_ArrayForEach(row, arr)
	{
		char bufs[16][32];
		const char *cells[16] = {0};
		for (size_t i = 0; i < n; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, hdr[i]);
			cells[i] = v ? scalar_text(v, bufs[i], sizeof(bufs[i])) : "";
		}
		/* table_add takes exactly ncols cells: pass 16, extra ignored. */
		table_add(t, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6],
			  cells[7], cells[8], cells[9], cells[10], cells[11], cells[12], cells[13],
			  cells[14], cells[15]);
	}
	table_print(t);
	table_free(t);
	return true;
}

void print_json_human(const cJSON *item, int indent)
{
	const cJSON *c;
	char buf[32];

	cJSON_ArrayForEach(c, item)
	{
		const char *key = c->string ? c->string : "-";
		const char *s = scalar_text(c, buf, sizeof(buf));

		if (s) {
			printf("%*s%s: %s\n", indent, "", key, s);
		} else if (cJSON_IsArray(c) && cJSON_GetArraySize(c) == 0) {
			printf("%*s%s: (none)\n", indent, "", key);
		} else if (cJSON_IsArray(c) && all_scalars(c)) {
			printf("%*s%s:", indent, "", key);
			const cJSON *e;
			cJSON_ArrayForEach(e, c) printf(" %s", scalar_text(e, buf, sizeof(buf)));
			putchar('\n');
		} else {
			printf("%*s%s:\n", indent, "", key);
			if (!(cJSON_IsArray(c) && print_array_table(c)))
				print_json_human(c, indent + 2);
		}
	}
}
