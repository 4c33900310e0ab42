// SPDX-License-Identifier: MIT
/*
 * perf-PID.map files: "START SIZE name" per line, hex numbers (with or
 * without 0x), written by JITs (Python 3.12+ -X perf, node --perf-basic-prof,
 * the JVM with perf-map-agent). The file is untrusted text: lines that do
 * not parse are skipped, counts and name lengths are capped.
 */
#include "sym_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define JIT_MAX_BYTES (256u << 20)
#define JIT_MAX_NAME 1024

static int jit_cmp(const void *a, const void *b)
{
	const struct jitsym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int digits = 0;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (digits >= 16)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	if (!digits || s == end || *s != ' ')
		return false;
	*v = x;
	*p = s + 1;
	return true;
}

int jitmap_parse(const char *text, size_t len, struct jitmap **ret)
{
	struct jitmap *j = calloc(1, sizeof(*j));
	size_t cap = 0, bcap = 0;
	const char *p = text, *end = text + len;

	if (!j)
		return -ENOMEM;
	while (p < end && j->n < SYM_MAX_JIT_SYMS) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q = p;
		uint64_t start, size;
		p = nl ? nl + 1 : end;
		if (!parse_hex(&q, le, &start) || !parse_hex(&q, le, &size) || !size ||
		    start + size < start)
			continue;
		size_t nlen = (size_t)(le - q);
		if (nlen && q[nlen - 1] == '\r')
			nlen--;
		if (nlen > JIT_MAX_NAME)
			nlen = JIT_MAX_NAME;
		if (j->n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct jitsym *ns = realloc(j->syms, nc * sizeof(*ns));
			if (!ns)
				goto nomem;
			j->syms = ns;
			cap = nc;
		}
		if (j->blob_len + nlen + 1 > bcap) {
			size_t nc = bcap ? bcap : 4096;
			while (nc < j->blob_len + nlen + 1)
				nc *= 2;
			char *nb = realloc(j->blob, nc);
			if (!nb)
				goto nomem;
			j->blob = nb;
			bcap = nc;
		}
		memcpy(j->blob + j->blob_len, q, nlen);
		j->blob[j->blob_len + nlen] = '\0';
		j->syms[j->n] = (struct jitsym){start, size, (uint32_t)j->blob_len, (uint32_t)j->n};
		j->blob_len += nlen + 1;
		j->n++;
	}
	if (j->n)
		qsort(j->syms, j->n, sizeof(*j->syms), jit_cmp);
	*ret = j;
	return 0;
nomem:
	jitmap_free(j);
	return -ENOMEM;
}

int jitmap_read(int fd, struct jitmap **ret)
{
	char *buf;
	size_t len;
	int r = sym_read_all(fd, JIT_MAX_BYTES, &buf, &len);
	if (r < 0)
		return r;
	r = jitmap_parse(buf, len, ret);
	free(buf);
	return r;
}

void jitmap_free(struct jitmap *j)
{
	if (!j)
		return;
	free(j->syms);
	free(j->blob);
	free(j);
}

const char *jitmap_lookup(const struct jitmap *j, uint64_t addr)
{
	size_t lo = 0, hi = j ? j->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (j->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The latest entry starting at or below addr that covers it; code is
	 * reused, so look back a little past entries that end before addr. */
	const struct jitsym *best = NULL;
	for (size_t i = lo, k = 0; i > 0 && k < 16; i--, k++) {
		const struct jitsym *s = &j->syms[i - 1];
		if (addr - s->start < s->size && (!best || s->seq > best->seq))
			best = s;
	}
	return best ? j->blob + best->name : NULL;
}
