// SPDX-License-Identifier: MIT
/*
 * Text from the daemon made safe for a terminal. Capture names, process
 * names, kernel names from imported traces and error messages are other
 * people's bytes: printed raw, an ESC or a C1 CSI starts an escape sequence
 * (retitle the window, rewrite earlier lines, on some terminals answer back
 * into the input), a CR overwrites what was printed. Human output shows
 * every such byte as a visible \xNN instead.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 character at s (1..4) that is printable (not a
 * C0/C1 control or DEL), 0 otherwise. */
static size_t printable_char(const unsigned char *s, size_t len)
{
	unsigned c = s[0], cp, min;
	size_t n;
	if (c < 0x80)
		return c >= 0x20 && c != 0x7f;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	if (len < n)
		return 0;
	cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff || cp <= 0x9f)
		return 0;
	return n;
}

bool cli_text_safe(const char *s)
{
	size_t len = strlen(s);
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		size_t n = printable_char(p + i, len - i);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

char *cli_escape(const char *s)
{
	size_t len = strlen(s);
	char *o = malloc(len * 4 + 1);
	if (!o)
		return NULL;
	const unsigned char *p = (const unsigned char *)s;
	size_t k = 0;
	for (size_t i = 0; i < len;) {
		size_t n = printable_char(p + i, len - i);
		if (n) {
			memcpy(o + k, p + i, n);
			k += n, i += n;
		} else {
			k += (size_t)sprintf(o + k, "\\x%02x", p[i]);
			i++;
		}
	}
	o[k] = '\0';
	return o;
}

void cli_escape_tree(cJSON *item)
{
	for (cJSON *it = item; it; it = it->next) {
		char **sp[2] = {it->string && !(it->type & cJSON_StringIsConst) ? &it->string
										: NULL,
				cJSON_IsString(it) ? &it->valuestring : NULL};
		for (int i = 0; i < 2; i++) {
			char *e;
			if (!sp[i] || !*sp[i] || cli_text_safe(*sp[i]) || !(e = cli_escape(*sp[i])))
				continue;
			/* cJSON frees its strings with its own hooks: give it one of those */
			char *c = cJSON_malloc(strlen(e) + 1);
			if (c) {
				strcpy(c, e);
				cJSON_free(*sp[i]);
				*sp[i] = c;
			}
			free(e);
		}
		if (it->child)
			cli_escape_tree(it->child);
	}
}

cJSON *cli_parse_reply(const char *text)
{
	cJSON *o = text ? cJSON_Parse(text) : NULL;
	if (o)
		cli_escape_tree(o);
	return o;
}
