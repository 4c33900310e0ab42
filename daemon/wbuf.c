// SPDX-License-Identifier: MIT
/* The buffered writer (wbuf.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wbuf.h"

void wb_init(struct wbuf *w, wb_sink_fn fn, void *ctx)
{
	w->fn = fn;
	w->ctx = ctx;
	w->err = 0;
	w->total = 0;
	w->buf = w->chunk;
	w->len = 0;
	w->cap = sizeof(w->chunk);
}

int wb_init_mem(struct wbuf *w, size_t cap)
{
	wb_init(w, NULL, NULL);
	w->cap = cap ? cap : 4096;
	if (!(w->buf = malloc(w->cap)))
		return w->err = -ENOMEM;
	return 0;
}

int wb_flush(struct wbuf *w)
{
	if (w->fn && !w->err && w->len)
		w->err = w->fn(w->ctx, w->buf, w->len);
	if (w->fn)
		w->len = 0;
	return w->err;
}

/* Memory writer: room for n more bytes (doubling). */
static int grow(struct wbuf *w, size_t n)
{
	size_t nc = w->cap;
	char *p;

	if (w->len + n < w->len)
		return w->err = -ENOMEM;
	while (nc < w->len + n)
		nc = nc * 2 > nc ? nc * 2 : w->len + n;
	if (!(p = realloc(w->buf, nc)))
		return w->err = -ENOMEM;
	w->buf = p;
	w->cap = nc;
	return 0;
}

void *wb_room(struct wbuf *w, size_t n)
{
	if (w->err)
		return NULL;
	if (n > w->cap - w->len) {
		if (!w->fn) {
			if (grow(w, n))
				return NULL;
		} else if (wb_flush(w) || n > w->cap) {
			if (!w->err)
				w->err = -E2BIG;
			return NULL;
		}
	}
	return w->buf + w->len;
}

int wb_put(struct wbuf *w, const void *p, size_t n)
{
	void *at;

	if (w->err)
		return w->err;
	if (w->fn && n > w->cap - w->len) {
		if (wb_flush(w))
			return w->err;
		if (n > w->cap) { /* straight through, not in pieces */
			w->total += n;
			return w->err = w->fn(w->ctx, p, n);
		}
	}
	if (!(at = wb_room(w, n)))
		return w->err;
	memcpy(at, p, n);
	wb_advance(w, n);
	return 0;
}

int wb_puts(struct wbuf *w, const char *s)
{
	return wb_put(w, s, strlen(s));
}

int wb_printf(struct wbuf *w, const char *fmt, ...)
{
	char tmp[4096], *big;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return w->err = -EINVAL;
	if ((size_t)n < sizeof(tmp))
		return wb_put(w, tmp, (size_t)n);
	if (!(big = malloc((size_t)n + 1)))
		return w->err = -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	wb_put(w, big, (size_t)n);
	free(big);
	return w->err;
}

void *wb_take(struct wbuf *w, size_t *len)
{
	void *p = w->err ? NULL : w->buf;

	*len = p ? w->len : 0;
	if (!p)
		free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
	return p;
}

void wb_finish(struct wbuf *w)
{
	if (!w->fn && w->buf != w->chunk)
		free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}
