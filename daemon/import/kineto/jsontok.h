/* SPDX-License-Identifier: MIT */
/*
 * Incremental (push) JSON tokenizer, SAX style: feed it chunks of any size,
 * it calls back for every container, key and scalar. No DOM; memory is one
 * scratch buffer for a token split across chunks or holding escapes, capped
 * at max_string (+ a little) bytes. Accepts Python's NaN / Infinity /
 * -Infinity literals (json.load does); reports them as JV_NUMBER with
 * `special` set so the consumer can warn.
 */
#ifndef GPUPROF_IMPORT_JSONTOK_H
#define GPUPROF_IMPORT_JSONTOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jv_type { JV_STRING, JV_NUMBER, JV_TRUE, JV_FALSE, JV_NULL };

struct jv {
	enum jv_type type;
	const char *s; /* string contents (decoded) or number text; not NUL-terminated */
	size_t n;
	bool special;	/* number: NaN / Infinity / -Infinity */
	bool is_float;	/* number: has '.', 'e' or 'E' (or special) */
	bool truncated; /* string longer than max_string */
	bool bad_utf8;	/* invalid UTF-8 replaced by U+FFFD */
	/* Number fast path, filled while validating: when `simple` (no
	 * exponent, at most 19 digits in all), the value is
	 * (neg ? -1 : 1) * mant * 10^exp10 exactly, exp10 = -(fraction digits),
	 * ndig = digits counted (leading zeros included). Consumers skip a
	 * second parse of the text; the text stays authoritative. */
	bool simple;
	bool neg;
	uint8_t ndig;
	int32_t exp10;
	uint64_t mant;
};

/* Callbacks return 0 to go on, < 0 to stop the parse with that error. */
struct json_sax {
	int (*begin)(void *ctx, char type); /* '{' or '[' */
	int (*end)(void *ctx, char type);
	int (*key)(void *ctx, const char *s, size_t n, bool truncated);
	int (*value)(void *ctx, const struct jv *v);
};

#define JSON_MAX_DEPTH_HARD 1024

struct json_tok {
	const struct json_sax *sax;
	void *ctx;
	uint32_t max_depth;
	uint32_t max_string;

	uint64_t offset; /* bytes consumed so far (uncompressed stream) */
	uint32_t depth;
	uint8_t stack[JSON_MAX_DEPTH_HARD]; /* '{' or '[' */
	int state;			    /* expectation between tokens */
	int tstate;			    /* inside a token */
	bool in_key;			    /* the current string token is a key */
	bool fast;			    /* every callback set: feed_fast() may run */

	/* Token in progress across chunks / with escapes. */
	char *buf;
	size_t blen, bcap;
	bool tok_trunc, tok_bad;
	uint32_t uesc;	       /* \u hex digits gathered */
	uint32_t ucode;	       /* code point being gathered */
	uint32_t hi_surrogate; /* pending high surrogate, 0 = none */
	uint8_t utf8_need;     /* continuation bytes still expected */
	uint8_t utf8_have;
	uint8_t utf8_seq[4];

	char err[160];
	uint64_t err_offset;
};

void json_tok_init(struct json_tok *t, const struct json_sax *sax, void *ctx, uint32_t max_depth,
		   uint32_t max_string);
void json_tok_finish(struct json_tok *t);
/* Feed a chunk. Returns 0, or < 0 with t->err / t->err_offset set. */
int json_tok_feed(struct json_tok *t, const char *p, size_t n);
/* End of input: errors if the document is incomplete or empty. */
int json_tok_end(struct json_tok *t);

/*
 * Element boundaries of an array, for parsing pieces of one document on
 * several threads (kineto_spec.c). `stack` holds the `depth` open
 * containers ('{' or '['), the innermost an array.
 *   json_tok_resume: a fresh tokenizer (offset 0) placed where an element
 *     of that array starts, as right after a ','.
 *   json_tok_at_elem: t is exactly there (nothing half-read).
 *   json_tok_after_elem: t just finished an element of an array at depth.
 *   json_tok_skip: t, at_elem, takes n bytes holding whole elements as
 *     read (someone else parsed them): offset += n, now after an element.
 */
void json_tok_resume(struct json_tok *t, const uint8_t *stack, uint32_t depth);
bool json_tok_at_elem(const struct json_tok *t, const uint8_t *stack, uint32_t depth);
bool json_tok_after_elem(const struct json_tok *t, uint32_t depth);
void json_tok_skip(struct json_tok *t, uint64_t n);

#endif /* GPUPROF_IMPORT_JSONTOK_H */
