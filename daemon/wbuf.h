/* SPDX-License-Identifier: MIT */
/*
 * The daemon's one buffered writer. Bytes collect in a buffer and go to a
 * sink: either a function called with each full buffer (the renderers
 * writing through a folded_write_fn, jobs.h's fdout writing a client's
 * descriptor), or, with no function, a heap block that grows and that the
 * caller takes at the end (the timeline codec). Errors are sticky: after
 * the first, every call returns it and writes nothing.
 */
#ifndef GPUPROF_WBUF_H
#define GPUPROF_WBUF_H

#include <stddef.h>
#include <stdint.h>

/* Takes all len bytes: 0, or a negative errno (which the writer keeps). */
typedef int (*wb_sink_fn)(void *ctx, const void *buf, size_t len);

/* a function sink gets at most this much per call, but for a bigger put */
#define WB_CHUNK (1u << 16)

struct wbuf {
	wb_sink_fn fn; /* NULL: the bytes stay in buf, a heap block */
	void *ctx;
	int err;	 /* first error, sticky (negative errno) */
	uint64_t total;	 /* bytes put so far */
	char *buf;	 /* chunk, or the heap block without fn */
	size_t len, cap; /* bytes in buf, its size */
	char chunk[WB_CHUNK];
};

/* A writer into fn(ctx, ...). Embedded; nothing to free. */
void wb_init(struct wbuf *w, wb_sink_fn fn, void *ctx);
/* A writer into memory, with room for cap bytes to start with (0: it
 * grows from a few KiB). 0 or -ENOMEM; wb_take() or wb_finish() ends it. */
int wb_init_mem(struct wbuf *w, size_t cap);
int wb_put(struct wbuf *w, const void *p, size_t n);
int wb_puts(struct wbuf *w, const char *s);
/* Any length: a text longer than a stack buffer is formatted on the heap. */
int wb_printf(struct wbuf *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n contiguous bytes at the end of the buffer for the caller to fill,
 * then wb_advance(w, n); NULL after an error. With a function sink n is at
 * most WB_CHUNK. */
void *wb_room(struct wbuf *w, size_t n);
static inline void wb_advance(struct wbuf *w, size_t n)
{
	w->len += n;
	w->total += n;
}
/* Hand what is buffered to the sink (a no-op in memory); returns w->err. */
int wb_flush(struct wbuf *w);
/* Memory writer: the block (the caller frees it) and its length in *len;
 * NULL, and the block freed, after an error. The writer is then empty. */
void *wb_take(struct wbuf *w, size_t *len);
/* Memory writer: frees the block (after an error, or unwanted). */
void wb_finish(struct wbuf *w);

#endif /* GPUPROF_WBUF_H */
