/* SPDX-License-Identifier: MIT */
/*
 * Speculative parsing of traceEvents pieces on a second thread
 * (kineto_spec.c): while the importer's thread parses piece i, the inflate
 * thread parses the whole events inside piece i + k into a private
 * segment; when the importer's thread reaches that piece it checks that
 * its own state at the segment's first byte is the one the segment
 * assumed and, if so, appends the segment (strings re-interned, indexes
 * shifted) instead of parsing those bytes. Otherwise it parses them
 * itself. Either way the timeline, warnings and errors are exactly those
 * of a serial parse.
 */
#ifndef GPUPROF_IMPORT_KINETO_SPEC_H
#define GPUPROF_IMPORT_KINETO_SPEC_H

#include "kineto.h"

/* Where the events are: the state a piece's parse starts from. Taken from
 * the importer's thread once it is inside the events array. */
struct kspec_ctx {
	uint32_t depth;		 /* containers around an event: 1 (bare array) or 2 */
	uint8_t stack[2];	 /* the tokenizer's open containers */
	uint8_t role[3], key[3]; /* the consumer's, depths 1..depth */
	uint32_t max_depth, max_string, max_events;
};

struct kseg;	     /* one piece's parse: events, counters, its new strings */
struct kspec_worker; /* the parsing thread's state, kept across pieces */
/* On the importer's thread: segment string id -> the importer's. */
struct kspec_map {
	uint32_t *id; /* 0 = not known yet (id 0, "", maps to 0) */
	uint32_t cap;
};

/* The state right now, when k / t are inside the events array (else false). */
bool kspec_ctx_take(struct kspec_ctx *c, const struct kimp *k, const struct json_tok *t);

struct kspec_worker *kspec_worker_new(void);
void kspec_worker_free(struct kspec_worker *w);
struct kseg *kseg_new(void);
void kseg_free(struct kseg *g);
/* Parse the whole events of p[0..n), from the first one that follows a
 * "}," to the last one followed by ",", into g (marked usable or not).
 * One thread at a time per worker; g is then read by the importer's. */
void kseg_run(struct kspec_worker *w, struct kseg *g, const struct kspec_ctx *c, const uint8_t *p,
	      size_t n);
/* Where g's bytes start and end within its piece; false when g is NULL or
 * not usable (then feed the piece as usual). */
bool kseg_span(const struct kseg *g, size_t *start, size_t *end);
/*
 * On the importer's thread, after feeding the piece up to the segment's
 * start: 1 when k / t were in the state the segment assumed and its events
 * are now appended (t skipped its bytes); 0 when not (nothing changed:
 * feed the rest of the piece); < 0 out of memory (k->err set).
 */
int kseg_adopt(struct kseg *g, const struct kspec_ctx *c, struct kspec_map *m, struct kimp *k,
	       struct json_tok *t);
void kspec_map_free(struct kspec_map *m);
/* kimp_intern() of a spec parse: note id's first use in the segment. */
int kspec_note(struct kimp *k, uint32_t id);

#endif /* GPUPROF_IMPORT_KINETO_SPEC_H */
