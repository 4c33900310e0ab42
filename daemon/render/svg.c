// SPDX-License-Identifier: MIT
/*
 * Output helpers shared by the renderers: escaping for XML and JSON that
 * accepts any bytes (frame names come from other people's binaries and
 * files), and the palette.
 */
#include "render_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "symtab.h"

static const char REPL[] = "\xef\xbf\xbd"; /* U+FFFD */

static size_t count_chars(const unsigned char *p, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; n++) {
		size_t k = xml_utf8_char(p + i, len - i);
		i += k ? k : 1;
	}
	return n;
}

int wb_xml(struct wbuf *w, const char *s, size_t len, size_t max_chars)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t limit = SIZE_MAX, chars = 0;
	bool cut = false;
	if (max_chars && count_chars(p, len) > max_chars) {
		limit = max_chars > 2 ? max_chars - 2 : 0;
		cut = true;
	}
	for (size_t i = 0; i < len && chars < limit && !w->err; chars++) {
		size_t k = xml_utf8_char(p + i, len - i);
		unsigned char c = p[i];
		if (!k)
			wb_put(w, REPL, 3), k = 1;
		else if (c == '&')
			wb_put(w, "&amp;", 5);
		else if (c == '<')
			wb_put(w, "&lt;", 4);
		else if (c == '>')
			wb_put(w, "&gt;", 4);
		else if (c == '"')
			wb_put(w, "&quot;", 6);
		else if (c == '\'')
			wb_put(w, "&#39;", 5);
		else if (c < 0x20 || c == 0x7f)
			wb_put(w, " ", 1);
		else
			wb_put(w, p + i, k);
		i += k;
	}
	if (cut)
		wb_put(w, "..", 2);
	return w->err;
}

int wb_json(struct wbuf *w, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len && !w->err;) {
		size_t k = xml_utf8_char(p + i, len - i);
		unsigned char c = p[i];
		if (!k) {
			wb_put(w, "\\ufffd", 6);
			k = 1;
		} else if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			wb_put(w, e, 2);
		} else if (c < 0x20 || c == 0x7f) {
			wb_printf(w, "\\u%04x", c);
		} else {
			wb_put(w, p + i, k);
		}
		i += k;
	}
	return w->err;
}

static bool has_suffix(const char *s, size_t len, const char *suf)
{
	size_t n = strlen(suf);
	return len >= n && !memcmp(s + len - n, suf, n);
}

/*
 * The GPU palette. Colours are a function of the name only (a hash, not a
 * random draw), so the same frame, e.g. a stall reason, has the same colour
 * in every graph and across captures.
 *   CPU frames         warm (flamegraph.pl's "hot" range)
 *   kernel frames      orange (after the '-' separator, or "_[k]")
 *   "_[G]" GPU kernels blue;  "_[g]" GPU-side frames light blue
 *   "_[p]" Python frames green (SYMTAB_PY_SUFFIX)
 *   "-" separators     grey
 */
void palette_color(const char *name, size_t len, bool kernel, char out[24])
{
	uint64_t h = name_hash(name, len);
	double v1 = (double)(h & 0xffff) / 65535.0, v2 = (double)((h >> 16) & 0xffff) / 65535.0,
	       v3 = (double)((h >> 32) & 0xffff) / 65535.0;
	int r, g, b;
	if (len == 1 && name[0] == '-') {
		r = g = b = 200;
	} else if (has_suffix(name, len, "_[G]")) {
		r = (int)(40 + 50 * v1), g = (int)(100 + 60 * v2), b = (int)(200 + 55 * v3);
	} else if (symtab_is_py_name(name, len)) {
		r = (int)(50 + 60 * v1), g = (int)(170 + 60 * v2), b = (int)(60 + 50 * v3);
	} else if (has_suffix(name, len, "_[g]")) {
		r = (int)(140 + 40 * v1), g = (int)(190 + 40 * v2), b = (int)(230 + 25 * v3);
	} else if (kernel || has_suffix(name, len, "_[k]")) {
		r = (int)(200 + 55 * v3), g = (int)(120 + 60 * v1), b = (int)(30 + 30 * v2);
	} else {
		r = (int)(205 + 50 * v3), g = (int)(230 * v1), b = (int)(55 * v2);
	}
	snprintf(out, 24, "rgb(%d,%d,%d)", r, g, b);
}
