// SPDX-License-Identifier: MIT
/*
 * Incremental JSON tokenizer. The hot paths are the string scan (16 bytes
 * at a time with SSE2 where the target has it, a table lookup per byte
 * otherwise; zero-copy when a string lies inside one chunk), numbers
 * (json_num.h: in the fast path digit runs counted with SSE2 and converted
 * without a per-digit loop; else one class-table lookup per byte, then one
 * pass that validates and converts) and the whitespace skip; everything else is a small state
 * machine that can stop at any byte and resume with the next chunk (tests
 * feed 1-byte chunks).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "jsontok.h"
#include "jsontok_num.h"

enum {
	ST_VALUE,	   /* a value must come */
	ST_VALUE_OR_CLOSE, /* after '[' */
	ST_KEY_OR_CLOSE,   /* after '{' */
	ST_KEY,		   /* after ',' in an object */
	ST_COLON,
	ST_COMMA_OR_CLOSE,
	ST_DONE,
};

enum { T_NONE, T_STR, T_STR_ESC, T_STR_U, T_NUM, T_WORD };

#define NUM_MAX 320

/* 1 = byte that ends the fast string scan: '"', '\\', control, non-ASCII. */
static const uint8_t str_stop[256] = {
	[0 ... 0x1f] = 1,
	['"'] = 1,
	['\\'] = 1,
	[0x80 ... 0xff] = 1,
};

/* Byte classes: one load per byte instead of a chain of compares. */
enum { C_NUM = 1, C_WORD = 2, C_WS = 4 };
static const uint8_t cls[256] = {
	['0' ... '9'] = C_NUM,	['-'] = C_NUM,		['+'] = C_NUM,
	['.'] = C_NUM,		['a' ... 'd'] = C_WORD, ['e'] = C_NUM | C_WORD,
	['f' ... 'z'] = C_WORD, ['A' ... 'D'] = C_WORD, ['E'] = C_NUM | C_WORD,
	['F' ... 'Z'] = C_WORD, [' '] = C_WS,		['\n'] = C_WS,
	['\r'] = C_WS,		['\t'] = C_WS,
};

/* First byte in [q, end) that is not JSON whitespace, or end. */
static inline const char *ws_skip(const char *q, const char *end)
{
#if defined(__SSE2__)
	const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n');
	const __m128i cr = _mm_set1_epi8('\r'), tb = _mm_set1_epi8('\t');

	while (end - q >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
		__m128i m =
			_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, sp), _mm_cmpeq_epi8(x, nl)),
				     _mm_or_si128(_mm_cmpeq_epi8(x, cr), _mm_cmpeq_epi8(x, tb)));
		unsigned bits = (unsigned)_mm_movemask_epi8(m) ^ 0xffffu;

		if (bits)
			return q + __builtin_ctz(bits);
		q += 16;
	}
#endif
	while (q < end && (cls[(uint8_t)*q] & C_WS))
		q++;
	return q;
}

/* First byte in [q, end) that stops the fast string scan, or end. */
static inline const char *str_scan(const char *q, const char *end)
{
#if defined(__SSE2__)
	/* '"', '\\', and (signed) < 0x20: control bytes and every byte >= 0x80 */
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
	const __m128i lim = _mm_set1_epi8(0x20);

	while (end - q >= 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
		__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
						      _mm_cmpeq_epi8(x, bslash)),
					 _mm_cmplt_epi8(x, lim));
		unsigned bits = (unsigned)_mm_movemask_epi8(m);

		if (bits)
			return q + __builtin_ctz(bits);
		q += 16;
	}
#endif
	while (q < end && !str_stop[(uint8_t)*q])
		q++;
	return q;
}

static int fail(struct json_tok *t, uint64_t off, int err, const char *what)
{
	snprintf(t->err, sizeof(t->err), "%s at byte %llu", what, (unsigned long long)off);
	t->err_offset = off;
	return err;
}

void json_tok_init(struct json_tok *t, const struct json_sax *sax, void *ctx, uint32_t max_depth,
		   uint32_t max_string)
{
	memset(t, 0, sizeof(*t));
	t->sax = sax;
	t->ctx = ctx;
	t->max_depth = max_depth && max_depth < JSON_MAX_DEPTH_HARD ? max_depth : 64;
	t->max_string = max_string ? max_string : 65536;
	t->state = ST_VALUE;
	t->fast = sax->begin && sax->end && sax->key && sax->value;
}

void json_tok_finish(struct json_tok *t)
{
	free(t->buf);
	t->buf = NULL;
	t->bcap = t->blen = 0;
}

static int buf_put(struct json_tok *t, const char *s, size_t n)
{
	if (!n)
		return 0;
	if (t->blen + n > t->max_string + (size_t)NUM_MAX) {
		t->tok_trunc = true;
		return 0;
	}
	if (t->blen + n > t->bcap) {
		size_t nc = t->bcap ? t->bcap * 2 : 256;
		char *b;

		while (nc < t->blen + n)
			nc *= 2;
		b = realloc(t->buf, nc);
		if (!b)
			return -ENOMEM;
		t->buf = b;
		t->bcap = nc;
	}
	memcpy(t->buf + t->blen, s, n);
	t->blen += n;
	return 0;
}

/* Append string content, honouring the max_string cap. */
static int str_put(struct json_tok *t, const char *s, size_t n)
{
	if (t->blen + n > t->max_string) {
		size_t room = t->max_string > t->blen ? t->max_string - t->blen : 0;

		t->tok_trunc = true;
		return room ? buf_put(t, s, room) : 0;
	}
	return buf_put(t, s, n);
}

static int put_cp(struct json_tok *t, uint32_t c)
{
	char u[4];
	size_t n;

	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | (c >> 6));
		u[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | (c >> 12));
		u[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (c >> 18));
		u[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		u[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	return str_put(t, u, n);
}

static int bad_utf8(struct json_tok *t)
{
	t->tok_bad = true;
	t->utf8_need = t->utf8_have = 0;
	return put_cp(t, 0xfffd);
}

/* One non-ASCII byte of a string: validate UTF-8 incrementally. */
static int utf8_byte(struct json_tok *t, uint8_t c)
{
	if (!t->utf8_need) {
		if (c >= 0xc2 && c <= 0xdf)
			t->utf8_need = 1;
		else if (c >= 0xe0 && c <= 0xef)
			t->utf8_need = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			t->utf8_need = 3;
		else
			return bad_utf8(t);
		t->utf8_seq[0] = c;
		t->utf8_have = 1;
		return 0;
	}
	if ((c & 0xc0) != 0x80) {
		int err = bad_utf8(t);

		return err < 0 ? err : utf8_byte(t, c); /* c may start a new one */
	}
	if (t->utf8_have == 1) {
		uint8_t b0 = t->utf8_seq[0];

		if ((b0 == 0xe0 && c < 0xa0) || (b0 == 0xed && c > 0x9f) ||
		    (b0 == 0xf0 && c < 0x90) || (b0 == 0xf4 && c > 0x8f))
			return bad_utf8(t);
	}
	t->utf8_seq[t->utf8_have++] = c;
	if (--t->utf8_need)
		return 0;
	return str_put(t, (const char *)t->utf8_seq, t->utf8_have);
}

static int emit_value(struct json_tok *t, const struct jv *v)
{
	t->state = t->depth ? ST_COMMA_OR_CLOSE : ST_DONE;
	return t->sax->value ? t->sax->value(t->ctx, v) : 0;
}

static int emit_string(struct json_tok *t, const char *s, size_t n, uint64_t off)
{
	int err;

	if (t->utf8_need) { /* string ended inside a sequence */
		err = bad_utf8(t);
		if (err < 0)
			return err;
		s = t->buf;
		n = t->blen;
	}
	if (t->in_key) {
		t->state = ST_COLON;
		err = t->sax->key ? t->sax->key(t->ctx, s, n, t->tok_trunc) : 0;
	} else {
		struct jv v = {.type = JV_STRING,
			       .s = s,
			       .n = n,
			       .truncated = t->tok_trunc,
			       .bad_utf8 = t->tok_bad};

		err = emit_value(t, &v);
	}
	t->tstate = T_NONE;
	t->blen = 0;
	t->tok_trunc = t->tok_bad = false;
	if (err < 0 && !t->err[0])
		fail(t, off, err, "rejected by the consumer");
	return err;
}

static int emit_scalar(struct json_tok *t, const char *s, size_t n, uint64_t off)
{
	struct jv v = {.s = s, .n = n};
	int err;

	t->tstate = T_NONE;
	t->blen = 0;
	if (t->tok_trunc)
		return fail(t, off, -EBADMSG, "number or literal too long");
	if (t->in_key)
		return fail(t, off, -EBADMSG, "object key is not a string");
	if (n && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) &&
	    !(n == 9 && !memcmp(s, "-Infinity", 9))) {
		if (!num_parse(s, n, &v))
			return fail(t, off, -EBADMSG, "invalid number");
		v.type = JV_NUMBER;
	} else if (n == 4 && !memcmp(s, "true", 4)) {
		v.type = JV_TRUE;
	} else if (n == 5 && !memcmp(s, "false", 5)) {
		v.type = JV_FALSE;
	} else if (n == 4 && !memcmp(s, "null", 4)) {
		v.type = JV_NULL;
	} else if ((n == 3 && !memcmp(s, "NaN", 3)) || (n == 8 && !memcmp(s, "Infinity", 8)) ||
		   (n == 9 && !memcmp(s, "-Infinity", 9))) {
		v.type = JV_NUMBER;
		v.special = v.is_float = true;
	} else {
		return fail(t, off, -EBADMSG, "invalid literal");
	}
	err = emit_value(t, &v);
	if (err < 0 && !t->err[0])
		fail(t, off, err, "rejected by the consumer");
	return err;
}

static inline bool is_ws(char c)
{
	return cls[(uint8_t)c] & C_WS;
}

static inline bool is_numch(char c)
{
	return cls[(uint8_t)c] & C_NUM;
}

static inline bool is_wordch(char c)
{
	return cls[(uint8_t)c] & C_WORD;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Continue a string token in the slow path (escapes, UTF-8, chunk edges).
 * Returns bytes consumed or < 0; sets *done when the closing quote was seen. */
static long str_slow(struct json_tok *t, const char *p, const char *end, uint64_t base, bool *done)
{
	const char *s = p;
	int err = 0;

	*done = false;
	while (p < end) {
		uint8_t c = (uint8_t)*p;

		if (t->tstate == T_STR_ESC) {
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
			const char *k = c ? strchr(from, c) : NULL;

			if (c == 'u') {
				p++;
				t->tstate = T_STR_U;
				t->uesc = 0;
				t->ucode = 0;
				continue;
			}
			if (!k)
				return fail(t, base + (uint64_t)(p - s), -EBADMSG,
					    "invalid string escape");
			p++;
			if (t->hi_surrogate) {
				t->hi_surrogate = 0;
				err = bad_utf8(t);
			}
			if (!err)
				err = str_put(t, &to[k - from], 1);
			t->tstate = T_STR;
		} else if (t->tstate == T_STR_U) {
			int h = hexval((char)c);

			if (h < 0)
				return fail(t, base + (uint64_t)(p - s), -EBADMSG,
					    "invalid \\u escape");
			p++;
			t->ucode = t->ucode << 4 | (uint32_t)h;
			if (++t->uesc < 4)
				continue;
			t->tstate = T_STR;
			if (t->ucode >= 0xd800 && t->ucode <= 0xdbff) {
				if (t->hi_surrogate)
					err = bad_utf8(t);
				t->hi_surrogate = t->ucode;
			} else if (t->ucode >= 0xdc00 && t->ucode <= 0xdfff) {
				if (t->hi_surrogate)
					err = put_cp(t, 0x10000 +
								((t->hi_surrogate - 0xd800) << 10) +
								(t->ucode - 0xdc00));
				else
					err = bad_utf8(t); /* lone low surrogate */
				t->hi_surrogate = 0;
			} else {
				if (t->hi_surrogate)
					err = bad_utf8(t);
				t->hi_surrogate = 0;
				if (!err)
					err = put_cp(t, t->ucode);
			}
		} else if (c == '\\') {
			if (t->utf8_need)
				err = bad_utf8(t);
			p++;
			t->tstate = T_STR_ESC;
		} else if (c == '"') {
			if (t->hi_surrogate) {
				t->hi_surrogate = 0;
				err = bad_utf8(t);
			}
			p++;
			*done = true;
			return err < 0 ? err : p - s;
		} else if (c >= 0x80) {
			p++;
			err = utf8_byte(t, c);
		} else {
			const char *q = p;

			if (t->hi_surrogate) {
				t->hi_surrogate = 0;
				err = bad_utf8(t);
			}
			if (t->utf8_need && !err)
				err = bad_utf8(t);
			/* Control characters pass through: Python's strict mode
			 * would reject them; we are lenient. */
			while (q < end && (!str_stop[(uint8_t)*q] || (uint8_t)*q < 0x20))
				q++;
			if (!err)
				err = str_put(t, p, q - p);
			p = q;
		}
		if (err < 0)
			return err;
	}
	return p - s;
}

/*
 * Scalar (number or literal) text [s, s+n) → v; false when invalid (the
 * generic path then reports the error). Same rules as emit_scalar().
 */
static inline bool scalar_classify(const char *s, size_t n, struct jv *v)
{
	v->s = s;
	v->n = n;
	if (s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) {
		v->type = JV_NUMBER;
		return num_parse(s, n, v); /* "-Infinity" never gets here */
	}
	if (n == 4 && !memcmp(s, "true", 4))
		v->type = JV_TRUE;
	else if (n == 5 && !memcmp(s, "false", 5))
		v->type = JV_FALSE;
	else if (n == 4 && !memcmp(s, "null", 4))
		v->type = JV_NULL;
	else
		return false; /* NaN, Infinity: rare, left to the generic path */
	return true;
}

/*
 * Fast path for the common case: between tokens, whole tokens inside this
 * chunk, ASCII strings without escapes, valid grammar. State lives in
 * locals; anything else (a token crossing the chunk end, escapes, UTF-8,
 * over-long strings, any grammar error) stops it *before* that token, with
 * nothing consumed, and the generic loop below takes over from exactly the
 * same position, so errors, offsets and limits are those of the generic
 * code. Returns where it stopped; a consumer error is returned in *errp
 * with the position after the token, as the generic path would report it.
 */
static const char *feed_fast(struct json_tok *t, const char *p, const char *end, int *errp)
{
	const struct json_sax *sax = t->sax;
	void *ctx = t->ctx;
	int state = t->state, err = 0;
	uint32_t depth = t->depth;
	const char *s0, *q;
	char c;

	for (;;) {
		if (p < end && (cls[(uint8_t)*p] & C_WS) && ++p < end && (cls[(uint8_t)*p] & C_WS))
			p = ws_skip(p, end);
		if (p == end)
			break;
		c = *p;
		switch (state) {
		case ST_COLON:
			if (c != ':')
				goto stop;
			p++;
			state = ST_VALUE;
			continue;
		case ST_COMMA_OR_CLOSE:
			if (c == ',') {
				p++;
				state = t->stack[depth - 1] == '{' ? ST_KEY : ST_VALUE;
				continue;
			}
			if (c == '}' || c == ']')
				goto close;
			goto stop;
		case ST_KEY_OR_CLOSE:
			if (c == '}')
				goto close;
			/* fall through */
		case ST_KEY:
			if (c != '"')
				goto stop;
			goto key;
		case ST_VALUE_OR_CLOSE:
			if (c == ']')
				goto close;
			goto value;
		case ST_VALUE:
			goto value;
		default:
			goto stop;
		}
	key:
		/* the input streams in once: a TLB or cache miss at each page
		 * the hardware prefetcher does not cross, otherwise (1 GB plain,
		 * one core: +4-15 %) */
		__builtin_prefetch(p + 2048);
		s0 = p + 1;
		q = str_scan(s0, end);
		if (q == end || *q != '"' || (size_t)(q - s0) > t->max_string)
			goto stop;
		p = q + 1;
		state = ST_COLON;
		if ((err = sax->key(ctx, s0, (size_t)(q - s0), false)) < 0)
			goto out;
		/* Kineto writes `"key": value`, compact writers `"key":value`:
		 * skip the state round trips */
		if (end - p > 2 && p[0] == ':' && p[1] == ' ' && !(cls[(uint8_t)p[2]] & C_WS)) {
			p += 2;
			c = *p;
			state = ST_VALUE;
			goto value;
		}
		if (end - p > 1 && p[0] == ':' && !(cls[(uint8_t)p[1]] & C_WS)) {
			c = *++p;
			state = ST_VALUE;
			goto value;
		}
		continue;
	value:
		if (c == '"') {
			struct jv v;

			s0 = p + 1;
			q = str_scan(s0, end);
			if (q == end || *q != '"' || (size_t)(q - s0) > t->max_string)
				goto stop;
			v = (struct jv){.type = JV_STRING, .s = s0, .n = (size_t)(q - s0)};
			p = q + 1;
			state = depth ? ST_COMMA_OR_CLOSE : ST_DONE;
			if ((err = sax->value(ctx, &v)) < 0)
				goto out;
			goto next_member;
		}
		if (c == '{' || c == '[') {
			if (depth >= t->max_depth)
				goto stop;
			t->stack[depth++] = (uint8_t)c;
			state = c == '{' ? ST_KEY_OR_CLOSE : ST_VALUE_OR_CLOSE;
			p++;
			if ((err = sax->begin(ctx, c)) < 0)
				goto out;
			continue;
		}
		{
			uint8_t k = cls[(uint8_t)c] & C_WORD ? C_WORD : C_NUM;
			struct jv v = {0};

#if defined(__SSE2__)
			if ((c == '-' || (c >= '0' && c <= '9')) && (q = num_fast(p, end, &v))) {
				p = q;
				state = depth ? ST_COMMA_OR_CLOSE : ST_DONE;
				if ((err = sax->value(ctx, &v)) < 0)
					goto out;
				goto next_member;
			}
			v = (struct jv){0};
#endif
			q = p + 1;
			if (!(c == '-' || (c >= '0' && c <= '9') || k == C_WORD) ||
			    (c == '-' && q < end && *q == 'I'))
				goto stop;
			while (q < end && (cls[(uint8_t)*q] & k))
				q++;
			if (q == end || q - p > NUM_MAX || !scalar_classify(p, (size_t)(q - p), &v))
				goto stop;
			p = q;
			state = depth ? ST_COMMA_OR_CLOSE : ST_DONE;
			if ((err = sax->value(ctx, &v)) < 0)
				goto out;
		}
	next_member:
		/* `, "key"` or `,"key"` inside an object: straight to the next
		 * key */
		if (end - p > 2 && p[0] == ',' && p[1] == ' ' && p[2] == '"' && depth &&
		    t->stack[depth - 1] == '{') {
			p += 2;
			state = ST_KEY;
			goto key;
		}
		if (end - p > 1 && p[0] == ',' && p[1] == '"' && depth &&
		    t->stack[depth - 1] == '{') {
			p++;
			state = ST_KEY;
			goto key;
		}
		continue;
	close:
		if (!depth || t->stack[depth - 1] != (uint8_t)(c == '}' ? '{' : '['))
			goto stop;
		depth--;
		p++;
		state = depth ? ST_COMMA_OR_CLOSE : ST_DONE;
		if ((err = sax->end(ctx, c == '}' ? '{' : '[')) < 0)
			goto out;
	}
stop:
out:
	t->state = state;
	t->depth = depth;
	*errp = err;
	return p;
}

int json_tok_feed(struct json_tok *t, const char *p, size_t n)
{
	const char *start = p, *end = p + n;
	int err = 0;

#define OFF() (t->offset + (uint64_t)(p - start))
	if (t->err[0])
		return -EBADMSG;
	while (p < end) {
		if (t->tstate == T_NONE && t->fast) {
			p = feed_fast(t, p, end, &err);
			if (err < 0) {
				fail(t, OFF(), err, "rejected by the consumer");
				goto out;
			}
			if (p == end)
				break;
		}
		/* Inside a number/literal carried over from an earlier chunk? */
		if (t->tstate == T_NUM || t->tstate == T_WORD) {
			const char *q = p;

			if (t->tstate == T_NUM && t->blen == 1 && t->buf[0] == '-' && *p == 'I')
				t->tstate = T_WORD; /* -Infinity */
			while (q < end && (t->tstate == T_NUM ? is_numch(*q) : is_wordch(*q)))
				q++;
			if (t->blen + (size_t)(q - p) > NUM_MAX)
				return fail(t, OFF(), -EBADMSG, "number or literal too long");
			if ((err = buf_put(t, p, q - p)) < 0)
				goto out;
			p = q;
			if (p == end)
				break;
			if ((err = emit_scalar(t, t->buf, t->blen, OFF())) < 0)
				goto out;
			continue;
		}
		if (t->tstate != T_NONE) {
			bool done;
			long k = str_slow(t, p, end, OFF(), &done);

			if (k < 0) {
				err = (int)k;
				goto out;
			}
			p += k;
			if (done && (err = emit_string(t, t->buf, t->blen, OFF())) < 0)
				goto out;
			continue;
		}

		char c = *p;

		if (is_ws(c)) {
			p++;
			while (p < end && is_ws(*p))
				p++;
			continue;
		}
		switch (t->state) {
		case ST_COLON:
			if (c != ':')
				return fail(t, OFF(), -EBADMSG, "expected ':'");
			p++;
			t->state = ST_VALUE;
			continue;
		case ST_COMMA_OR_CLOSE:
			if (c == ',') {
				p++;
				t->state = t->stack[t->depth - 1] == '{' ? ST_KEY : ST_VALUE;
				continue;
			}
			if (c != '}' && c != ']')
				return fail(t, OFF(), -EBADMSG,
					    "expected ',' or a closing bracket");
			goto close;
		case ST_DONE:
			return fail(t, OFF(), -EBADMSG, "trailing data after the JSON document");
		case ST_KEY_OR_CLOSE:
			if (c == '}')
				goto close;
			/* fall through */
		case ST_KEY:
			if (c != '"')
				return fail(t, OFF(), -EBADMSG, "expected a string key");
			break;
		case ST_VALUE_OR_CLOSE:
			if (c == ']')
				goto close;
			break;
		default:
			break;
		}
		/* A value (or key) starts here. */
		t->in_key = t->state == ST_KEY || t->state == ST_KEY_OR_CLOSE;
		if (c == '"') {
			const char *s0 = ++p, *q = str_scan(p, end);

			if (q < end && *q == '"') { /* whole ASCII string in this chunk */
				size_t len = q - s0;

				if (len > t->max_string) {
					len = t->max_string;
					t->tok_trunc = true;
				}
				p = q + 1;
				if ((err = emit_string(t, s0, len, OFF())) < 0)
					goto out;
				continue;
			}
			t->tstate = T_STR;
			t->blen = 0;
			if ((err = str_put(t, s0, q - s0)) < 0)
				goto out;
			p = q;
			continue;
		}
		if (c == '{' || c == '[') {
			if (t->depth >= t->max_depth)
				return fail(t, OFF(), -ELOOP, "nesting too deep");
			t->stack[t->depth++] = (uint8_t)c;
			t->state = c == '{' ? ST_KEY_OR_CLOSE : ST_VALUE_OR_CLOSE;
			p++;
			if (t->sax->begin && (err = t->sax->begin(t->ctx, c)) < 0) {
				fail(t, OFF(), err, "rejected by the consumer");
				goto out;
			}
			continue;
		}
		if (is_numch(c) || is_wordch(c)) {
			const char *q = p;

			t->tstate = (is_numch(c) && c != 'e' && c != 'E') ? T_NUM : T_WORD;
			t->blen = 0;
			if (c == '-' && p + 1 < end && p[1] == 'I')
				t->tstate = T_WORD, q = p + 1;
			while (q < end && (t->tstate == T_NUM ? is_numch(*q) : is_wordch(*q)))
				q++;
			if (q < end && q - p <= NUM_MAX) { /* whole token in this chunk */
				const char *s0 = p;

				p = q;
				if ((err = emit_scalar(t, s0, q - s0, OFF())) < 0)
					goto out;
			}
			continue; /* else the carry-over path above gathers it */
		}
		return fail(t, OFF(), -EBADMSG, "unexpected character");
	close:
		if (!t->depth || t->stack[t->depth - 1] != (uint8_t)(c == '}' ? '{' : '['))
			return fail(t, OFF(), -EBADMSG, "mismatched closing bracket");
		t->depth--;
		p++;
		t->state = t->depth ? ST_COMMA_OR_CLOSE : ST_DONE;
		if (t->sax->end && (err = t->sax->end(t->ctx, c == '}' ? '{' : '[')) < 0) {
			fail(t, OFF(), err, "rejected by the consumer");
			goto out;
		}
	}
out:
	t->offset += (uint64_t)(p - start);
	if (err < 0 && !t->err[0])
		fail(t, t->offset, err, "parse error");
	return err;
#undef OFF
}

int json_tok_end(struct json_tok *t)
{
	int err;

	if (t->err[0])
		return -EBADMSG;
	if (t->tstate == T_NUM || t->tstate == T_WORD) {
		err = emit_scalar(t, t->buf, t->blen, t->offset);
		if (err < 0)
			return err;
	}
	if (t->tstate != T_NONE)
		return fail(t, t->offset, -EBADMSG, "unterminated string at end of input");
	if (t->state != ST_DONE)
		return fail(t, t->offset, -EBADMSG,
			    t->offset ? "unexpected end of input" : "empty input");
	return 0;
}

void json_tok_resume(struct json_tok *t, const uint8_t *stack, uint32_t depth)
{
	memcpy(t->stack, stack, depth);
	t->depth = depth;
	t->state = ST_VALUE;
}

bool json_tok_at_elem(const struct json_tok *t, const uint8_t *stack, uint32_t depth)
{
	return !t->err[0] && t->tstate == T_NONE && t->state == ST_VALUE && t->depth == depth &&
	       depth && !memcmp(t->stack, stack, depth) && stack[depth - 1] == '[';
}

bool json_tok_after_elem(const struct json_tok *t, uint32_t depth)
{
	return !t->err[0] && t->tstate == T_NONE && t->state == ST_COMMA_OR_CLOSE &&
	       t->depth == depth && depth && t->stack[depth - 1] == '[';
}

void json_tok_skip(struct json_tok *t, uint64_t n)
{
	t->offset += n;
	t->state = ST_COMMA_OR_CLOSE;
}
