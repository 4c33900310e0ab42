/* SPDX-License-Identifier: MIT */
/* Internals shared by the renderers (not used outside daemon/render). */
#ifndef GPUPROF_RENDER_INT_H
#define GPUPROF_RENDER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamegraph.h"
#include "utf8.h"
#include "folded.h"
#include "wbuf.h"

struct capture;
struct sym_table;

/* One accepted folded line: the stack text (without the count) in text[]. */
struct fline {
	uint64_t off;
	uint32_t len;
	uint32_t depth;
	uint8_t side;
	uint64_t count;
};

struct fold_set {
	char *text;
	size_t tlen, tcap;
	struct fline *lines;
	size_t n, cap;
	char *part; /* a line split across feeds, FOLD_MAX_LINE bytes */
	size_t plen;
	bool skipping; /* inside a line already counted as too long */
	uint64_t max_bytes;
	struct fold_stats st;
};

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* Frame-wise sort of the lines (foldedin.c). */
void fold_set_sort(struct fold_set *s);

/* The renderers write through the daemon's buffered writer (wbuf.h),
 * whose sink is the caller's folded_write_fn. */
/* Text made safe for XML character data and attribute values: markup
 * characters escaped, invalid UTF-8 bytes and control characters replaced
 * by U+FFFD / ' '. max_chars > 0 truncates to that many characters, ending
 * in "..". */
int wb_xml(struct wbuf *w, const char *s, size_t len, size_t max_chars);
/* Same for a JSON string body (no quotes added). */
int wb_json(struct wbuf *w, const char *s, size_t len);
/* Length of the valid UTF-8 character at s (1..4) that XML also allows
 * (not U+FFFE or U+FFFF), 0 otherwise. */
static inline size_t xml_utf8_char(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n = utf8_char(s, len, &cp);

	return n && cp != 0xfffe && cp != 0xffff ? n : 0;
}

/* FNV-1a: deterministic colours and hashing of names. */
static inline uint64_t name_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* Fill colour of a frame (the GPU palette), "rgb(r,g,b)" into out[24]. */
void palette_color(const char *name, size_t len, bool kernel, char out[24]);

/*
 * Resolved frames of one (pid, stack) of a capture, root first: names from
 * the CAPSEC_SYMBOLS section, or "0x..." for frames it does not cover.
 * Kernel frames follow user frames (kernel[i] tells which); map[i] is the
 * section's mapping of a user frame (sym_table_map), 0 when unknown;
 * line[i] its "file:line" (linelen[i] 0 when the section has none).
 */
struct capframes {
	const struct capture *c;
	struct render_view view; /* what the peer may see */
	struct sym_table *syms;	 /* NULL without a usable section */
	size_t n;
	const char *name[2 * 127 + 2];
	size_t len[2 * 127 + 2];
	uint64_t ip[2 * 127 + 2];
	bool kernel[2 * 127 + 2];
	uint32_t map[2 * 127 + 2];
	const char *line[2 * 127 + 2];
	size_t linelen[2 * 127 + 2];
	char raw[2 * 127 + 2][20];
};

/* view: what the peer may see (NULL: everything); with kernel_hidden the
 * kernel frames of a stack come out as one RENDER_KERNEL_FRAME, ip 0. */
void capframes_init(struct capframes *f, const struct capture *c, const struct render_view *view);
void capframes_finish(struct capframes *f);
/* Resolve; returns the number of frames (0 for no/unknown stack). */
size_t capframes_get(struct capframes *f, uint32_t pid, uint32_t stack);
/* Unresolved user frames (leaf first, as stacks are stored) as "0x..." names,
 * root first; for stacks that are not in the capture's table. */
size_t capframes_raw(struct capframes *f, const uint64_t *ips, size_t n);

/*
 * Interning map from byte strings to dense ids 1..n (keys are copied).
 * For the exports' tables: strings, functions, locations, stack frames.
 */
struct bmap {
	uint32_t *slots; /* ids, 0 = empty */
	size_t cap;
	uint64_t *offs; /* per id - 1: key offset in arena (len in lens) */
	uint32_t *lens;
	uint64_t *hashes;
	size_t n, ncap;
	char *arena;
	size_t alen, acap;
};

void bmap_init(struct bmap *m);
void bmap_finish(struct bmap *m);
/* Id of key, adding it when new (*added set). 0 on -ENOMEM. */
uint32_t bmap_intern(struct bmap *m, const void *key, size_t len, bool *added);
const char *bmap_key(const struct bmap *m, uint32_t id, size_t *len);

#endif
