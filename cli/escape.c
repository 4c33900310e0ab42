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
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 character at s (1..4) that is printable (not a
 * C0/C1 control or DEL), 0 otherwise. */
static size_t printable_char(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n = utf8_char(s, len, &cp);

	return n && cp >= 0x20 && (cp < 0x7f || cp > 0x9f) ? n : 0;
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
