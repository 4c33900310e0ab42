// SPDX-License-Identifier: MIT
/*
 * Folded-stack reader (flamegraph.h). Any folded file must be safe to feed
 * here: lines are bounded (FOLD_MAX_LINE), frames per line too, counts
 * saturate, the whole text is bounded by max_bytes, and anything that does
 * not look like "stack count" is counted and skipped rather than failing
 * the render. Bytes are kept as they are (non-UTF-8 included); the SVG
 * writer makes them safe.
 */
#include "flamegraph.h"
#include "render_int.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_MAX_BYTES (1ull << 30)

int fold_set_new(uint64_t max_bytes, struct fold_set **ret)
{
	struct fold_set *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->part = malloc(FOLD_MAX_LINE);
	if (!s->part) {
		free(s);
		return -ENOMEM;
	}
	s->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
	*ret = s;
	return 0;
}

void fold_set_free(struct fold_set *s)
{
	if (!s)
		return;
	free(s->text);
	free(s->lines);
	free(s->part);
	free(s);
}

const struct fold_stats *fold_set_stats(const struct fold_set *s)
{
	return &s->st;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * "count" as flamegraph.pl accepts it: digits with an optional fraction
 * (rounded). false when it is not a number.
 */
static bool parse_count(struct fold_set *s, const char *p, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	bool sat = false;
	size_t i = 0;
	if (!len || !is_digit(p[0]))
		return false;
	for (; i < len && is_digit(p[i]); i++) {
		unsigned d = (unsigned)(p[i] - '0');
		if (v > (FOLD_COUNT_MAX - d) / 10)
			sat = true;
		else
			v = v * 10 + d;
	}
	if (i < len && p[i] == '.') {
		bool up = i + 1 < len && is_digit(p[i + 1]) && p[i + 1] >= '5';
		for (i++; i < len && is_digit(p[i]); i++)
			;
		if (up && v < FOLD_COUNT_MAX)
			v++;
	}
	if (i != len)
		return false;
	if (sat) {
		v = FOLD_COUNT_MAX;
		s->st.saturated++;
	}
	*out = v;
	return true;
}

static int add_line(struct fold_set *s, int side, const char *p, size_t len)
{
	while (len && (p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (!len)
		return 0; /* blank lines are not errors */
	size_t sp = len;
	while (sp && p[sp - 1] != ' ' && p[sp - 1] != '\t')
		sp--;
	uint64_t count;
	if (!sp || !parse_count(s, p + sp, len - sp, &count)) {
		s->st.malformed++;
		return 0;
	}
	size_t sl = sp - 1;
	while (sl && (p[sl - 1] == ' ' || p[sl - 1] == '\t'))
		sl--;
	size_t depth = 1;
	for (size_t i = 0; i < sl; i++)
		depth += p[i] == ';';
	if (!sl || depth > FOLD_MAX_DEPTH) {
		s->st.malformed++;
		return 0;
	}
	if (!count)
		return 0;
	if (s->tlen + sl > s->max_bytes)
		return -EFBIG;
	if (s->tlen + sl > s->tcap) {
		size_t nc = s->tcap ? s->tcap : (1u << 16);
		while (nc < s->tlen + sl)
			nc *= 2;
		char *nt = realloc(s->text, nc);
		if (!nt)
			return -ENOMEM;
		s->text = nt;
		s->tcap = nc;
	}
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 1024;
		struct fline *nl = realloc(s->lines, nc * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		s->lines = nl;
		s->cap = nc;
	}
	memcpy(s->text + s->tlen, p, sl);
	s->lines[s->n++] =
		(struct fline){s->tlen, (uint32_t)sl, (uint32_t)depth, (uint8_t)side, count};
	s->tlen += sl;
	s->st.lines[side]++;
	s->st.total[side] = sat_add(s->st.total[side], count);
	return 0;
}

int fold_set_feed(struct fold_set *s, int side, const void *buf, size_t len)
{
	const char *p = buf, *end = p + len;
	int r;
	if (side < 0 || side > 1)
		return -EINVAL;
	s->st.bytes += len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (s->skipping) {
			/* the rest of a line already counted as too long */
		} else if (!s->plen && nl && n <= FOLD_MAX_LINE) {
			if ((r = add_line(s, side, p, n)) < 0)
				return r;
		} else if (s->plen + n > FOLD_MAX_LINE) {
			s->st.too_long++;
			s->plen = 0;
			s->skipping = true;
		} else {
			memcpy(s->part + s->plen, p, n);
			s->plen += n;
			if (nl) {
				r = add_line(s, side, s->part, s->plen);
				s->plen = 0;
				if (r < 0)
					return r;
			}
		}
		if (nl)
			s->skipping = false;
		p += n + (nl != NULL);
	}
	return 0;
}

int fold_set_end(struct fold_set *s, int side)
{
	int r = 0;
	if (s->plen && !s->skipping)
		r = add_line(s, side, s->part, s->plen);
	s->plen = 0;
	s->skipping = false;
	return r;
}

int fold_set_read_fd(struct fold_set *s, int side, int fd, int timeout_ms)
{
	enum { CHUNK = 1 << 16 };
	char *buf = malloc(CHUNK);
	int r = 0;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			int pr = poll(&pfd, 1, timeout_ms > 0 ? timeout_ms : -1);
			if (pr == 0) {
				r = -ETIMEDOUT;
				break;
			}
			if (pr < 0 && errno != EINTR) {
				r = -errno;
				break;
			}
			continue;
		}
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0) {
			r = fold_set_end(s, side);
			break;
		}
		if ((r = fold_set_feed(s, side, buf, (size_t)n)) < 0)
			break;
	}
	free(buf);
	return r;
}

struct cap_feed {
	struct fold_set *s;
	int side;
};

static int cap_feed_cb(void *ctx, const void *buf, size_t len)
{
	struct cap_feed *f = ctx;
	return fold_set_feed(f->s, f->side, buf, len);
}

int fold_set_add_capture(struct fold_set *s, int side, const struct capture *c,
			 const struct folded_opts *o, struct folded_totals *t)
{
	struct cap_feed f = {s, side};
	int r = folded_write(c, o, cap_feed_cb, &f, t);
	return r < 0 ? r : fold_set_end(s, side);
}

/*
 * Frame-wise order: ';' sorts below every other byte, so all stacks under a
 * frame path are contiguous and a parent's name sorts before a longer
 * sibling that extends it ("a" < "a b" < "a;x" would split "a" bytewise).
 */
static int stack_cmp(const void *x, const void *y, void *arg)
{
	const struct fline *a = x, *b = y;
	const unsigned char *t = arg, *p = t + a->off, *q = t + b->off;
	size_t n = a->len < b->len ? a->len : b->len;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != q[i]) {
			unsigned u = p[i] == ';' ? 0 : p[i] + 1u, v = q[i] == ';' ? 0 : q[i] + 1u;
			return u < v ? -1 : 1;
		}
	}
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->side - b->side;
}

void fold_set_sort(struct fold_set *s)
{
	qsort_r(s->lines, s->n, sizeof(*s->lines), stack_cmp, s->text);
}
