// SPDX-License-Identifier: MIT
/* The folded, iaprof and flamescope writers (output.h). */
#include "output.h"

#include "symtab.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffered writer: flushes to fn in 64 KiB chunks. */
struct wb {
	xe_write_fn fn;
	void *ctx;
	int err;
	size_t n;
	char buf[65536];
};

static void wb_flush(struct wb *w)
{
	if (!w->err && w->n)
		w->err = w->fn(w->ctx, w->buf, w->n);
	w->n = 0;
}

static void wb_put(struct wb *w, const char *s, size_t len)
{
	while (len && !w->err) {
		size_t k = sizeof(w->buf) - w->n < len ? sizeof(w->buf) - w->n : len;

		memcpy(w->buf + w->n, s, k);
		w->n += k;
		s += k;
		len -= k;
		if (w->n == sizeof(w->buf))
			wb_flush(w);
	}
}

static void wb_printf(struct wb *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void wb_printf(struct wb *w, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		wb_put(w, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* A frame name that keeps the folded line's shape: ';' would split the
 * frame and control characters the line (folded.h uses the same rule). */
static void wb_frame(struct wb *w, const char *s, size_t len, const char *dflt)
{
	if (!len) {
		wb_put(w, dflt, strlen(dflt));
		return;
	}
	for (size_t i = 0; i < len; i++) {
		char c = s[i] == ';' ? ':' : ((unsigned char)s[i] < 0x20 ? ' ' : s[i]);

		wb_put(w, &c, 1);
	}
}

/* CPU frame i (leaf first, as stored) of k: its name from the capture's
 * symbols when they cover the kernel's launch stack, else "0x..." in raw. */
static const char *cpu_frame(const struct xe_capdata *d, const struct xe_sec_kernel *k,
			     const struct xe_out_opts *o, uint16_t i, char raw[24], size_t *len)
{
	struct sym_frames fr;
	const char *s;

	if (o && o->syms && k->stack && sym_table_find(o->syms, k->pid, k->stack, &fr) &&
	    fr.nuser == k->nips && fr.nkernel == 0) {
		s = sym_table_name(o->syms, fr.names[i], len);
		if (*len)
			return s;
	}
	*len = (size_t)snprintf(raw, 24, "0x%" PRIx64, d->ips[k->ips_off + i]);
	return raw;
}

static bool want(const struct xe_out_opts *o, const struct xe_sec_kernel *k)
{
	return !o || !o->pid || (k && k->pid == o->pid);
}

/* Rows of one kernel (contiguous: the section sorts by kid), summed over
 * intervals per offset into sums (sorted by offset). Returns the count. */
struct offsum {
	uint32_t off;
	uint64_t cnt[XE_NREASONS];
};

static int cmp_off(const void *a, const void *b)
{
	const struct xe_row *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static size_t sum_kernel(const struct xe_row *rows, size_t n, struct xe_row *tmp,
			 struct offsum *sums)
{
	size_t m = 0;

	memcpy(tmp, rows, n * sizeof(*rows));
	qsort(tmp, n, sizeof(*tmp), cmp_off);
	for (size_t i = 0; i < n; i++) {
		if (!m || sums[m - 1].off != tmp[i].off) {
			memset(&sums[m], 0, sizeof(sums[m]));
			sums[m++].off = tmp[i].off;
		}
		for (int r = 0; r < XE_NREASONS; r++)
			sums[m - 1].cnt[r] += tmp[i].cnt[r];
	}
	return m;
}

static void folded_prefix(struct wb *w, const struct xe_capdata *d, const struct xe_sec_kernel *k,
			  const struct xe_out_opts *o)
{
	const char *s;
	size_t len;

	if (!k) {
		wb_printf(w, "[unattributed];0;-;[unknown file]_[G];[unattributed]_[G];");
		return;
	}
	if (o && o->cgroup) {
		s = xe_sec_str(d, k->cgroup, &len);
		wb_frame(w, s, len, "[no cgroup]");
		wb_put(w, ";", 1);
	}
	s = xe_sec_str(d, k->comm, &len);
	wb_frame(w, s, len, "[unknown]");
	wb_printf(w, ";%" PRIu32 ";", k->pid);
	/* CPU frames root first: the stack is stored leaf first. */
	for (uint16_t i = k->nips; i-- > 0;) {
		char raw[24];

		s = cpu_frame(d, k, o, i, raw, &len);
		wb_frame(w, s, len, "[unknown]");
		wb_put(w, ";", 1);
	}
	wb_put(w, "-;", 2);
	s = xe_sec_str(d, k->file, &len);
	wb_frame(w, s, len, "[unknown file]");
	wb_put(w, "_[G];", 5);
	s = xe_sec_str(d, k->name, &len);
	if (len)
		wb_frame(w, s, len, "");
	else
		wb_printf(w, "0x%" PRIx64, k->start);
	wb_put(w, "_[G];", 5);
}

static void insn_text(struct wb *w, xe_insn_fn insn, void *ictx, const struct xe_sec_kernel *k,
		      uint32_t off)
{
	const char *t = insn && k ? insn(ictx, k, off) : NULL;

	if (t)
		wb_frame(w, t, strlen(t), "[failed decode]");
	else
		wb_printf(w, "0x%" PRIx32, off);
}

int xe_write_folded(const struct xe_capdata *d, const struct xe_out_opts *o, xe_insn_fn insn,
		    void *insn_ctx, xe_write_fn fn, void *ctx, struct xe_out_totals *t)
{
	uint32_t n = d->h ? d->h->nrows : 0;
	struct xe_out_totals tot = {0};
	struct xe_row *tmp = malloc(sizeof(*tmp) * (n ? n : 1));
	struct offsum *sums = malloc(sizeof(*sums) * (n ? n : 1));
	struct wb *w = malloc(sizeof(*w));
	int r = -ENOMEM;

	if (!tmp || !sums || !w)
		goto out;
	w->fn = fn;
	w->ctx = ctx;
	w->err = 0;
	w->n = 0;
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i, kid = d->rows[i].kid;
		const struct xe_sec_kernel *k = xe_sec_kernel(d, kid);

		while (j < n && d->rows[j].kid == kid)
			j++;
		if ((kid && !want(o, k)) || (!kid && o && o->pid)) {
			i = j;
			continue;
		}
		size_t m = sum_kernel(&d->rows[i], j - i, tmp, sums);

		tot.kernels += kid != 0;
		for (size_t s = 0; s < m; s++) {
			for (int rr = 0; rr < XE_NREASONS; rr++) {
				if (!sums[s].cnt[rr])
					continue;
				folded_prefix(w, d, k, o);
				insn_text(w, insn, insn_ctx, k, sums[s].off);
				wb_printf(w, "_[g];%s_[g];0x%" PRIx32 "_[g] %" PRIu64 "\n",
					  xe_reason_names[rr], sums[s].off, sums[s].cnt[rr]);
				tot.lines++;
				tot.samples += sums[s].cnt[rr];
				if (!kid)
					tot.unattributed += sums[s].cnt[rr];
			}
		}
		i = j;
	}
	wb_flush(w);
	r = w->err;
out:
	if (t)
		*t = tot;
	free(tmp);
	free(sums);
	free(w);
	return r;
}

/* ---- iaprof ---- */

/* String ids for the iaprof stream: linear probing over (text) keys. */
struct strids {
	const char **s;
	size_t *len;
	uint32_t *id;
	size_t cap;
	uint32_t next;
};

static uint64_t fnv(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* Id of a string, printing its "string" line the first time (ids from 1;
 * iaprof's output). The text must outlive the table. */
static uint32_t str_id(struct strids *t, struct wb *w, const char *s, size_t len)
{
	size_t i = fnv(s, len) & (t->cap - 1);

	for (; t->s[i]; i = (i + 1) & (t->cap - 1))
		if (t->len[i] == len && !memcmp(t->s[i], s, len))
			return t->id[i];
	t->s[i] = s;
	t->len[i] = len;
	t->id[i] = ++t->next;
	wb_printf(w, "string\t%" PRIu32 "\t", t->next);
	for (size_t k = 0; k < len; k++) {
		char c = (s[k] == '\t' || (unsigned char)s[k] < 0x20) ? ' ' : s[k];

		wb_put(w, &c, 1);
	}
	wb_put(w, "\n", 1);
	return t->next;
}

/* k's CPU stack for iaprof, outermost frame first, ';'-joined (as in
 * iaprof's output); ';' inside a name becomes ':' so the frames stay apart. "" for
 * no kernel. malloc()ed; NULL on -ENOMEM. */
static char *stack_text(const struct xe_capdata *d, const struct xe_sec_kernel *k,
			const struct xe_out_opts *o)
{
	size_t cap = 1, n = 0, len;
	char raw[24], *t;
	const char *s;

	for (uint16_t f = k ? k->nips : 0; f-- > 0;) {
		cpu_frame(d, k, o, f, raw, &len);
		cap += len + 1;
	}
	t = malloc(cap);
	for (uint16_t f = k ? k->nips : 0; t && f-- > 0;) {
		s = cpu_frame(d, k, o, f, raw, &len);
		if (n)
			t[n++] = ';';
		for (size_t i = 0; i < len; i++)
			t[n++] = s[i] == ';' ? ':' : s[i];
	}
	if (t)
		t[n] = '\0';
	return t;
}

static int cmp_iv(const void *a, const void *b)
{
	const struct xe_row *x = a, *y = b;

	if (x->iv != y->iv)
		return x->iv < y->iv ? -1 : 1;
	if (x->kid != y->kid)
		return x->kid < y->kid ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

int xe_write_iaprof(const struct xe_capdata *d, const struct xe_out_opts *o, xe_insn_fn insn,
		    void *insn_ctx, xe_write_fn fn, void *ctx, struct xe_out_totals *t)
{
	uint32_t n = d->h ? d->h->nrows : 0, nk = d->h ? d->h->nkernels : 0;
	size_t scap = 64;
	struct xe_out_totals tot = {0};
	struct strids st = {0};
	/* Text of every string must stay put: kernels' texts live in the
	 * section; generated ones (stacks, offsets) in this arena. */
	char *arena = NULL, **stack_txt = NULL;
	struct xe_row *rows = NULL;
	struct wb *w = NULL;
	int r = -ENOMEM;

	while (scap < 4 * ((size_t)nk * 6 + n + 16))
		scap <<= 1;
	st.cap = scap;
	st.s = calloc(scap, sizeof(*st.s));
	st.len = calloc(scap, sizeof(*st.len));
	st.id = calloc(scap, sizeof(*st.id));
	rows = malloc(sizeof(*rows) * (n ? n : 1));
	stack_txt = calloc(nk + 1, sizeof(*stack_txt));
	arena = malloc(((size_t)n + nk + 1) * 80);
	w = malloc(sizeof(*w));
	if (!st.s || !st.len || !st.id || !rows || !stack_txt || !arena || !w)
		goto out;
	w->fn = fn;
	w->ctx = ctx;
	w->err = 0;
	w->n = 0;
	memcpy(rows, d->rows, sizeof(*rows) * n);
	qsort(rows, n, sizeof(*rows), cmp_iv);

	uint32_t first_iv = n ? rows[0].iv : 0, cur_iv = UINT32_MAX, cur_kid = UINT32_MAX;
	size_t apos = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct xe_row *rw = &rows[i];
		const struct xe_sec_kernel *k = xe_sec_kernel(d, rw->kid);
		size_t kpos = k ? (size_t)(k - d->k) : nk;

		if ((rw->kid && !want(o, k)) || (!rw->kid && o && o->pid))
			continue;
		if (rw->iv != cur_iv) {
			uint64_t ns = d->h->epoch_ns + (uint64_t)rw->iv * d->h->interval_ns;

			wb_printf(w, "interval\t%" PRIu32 "\t%.6f\n", rw->iv - first_iv, ns / 1e9);
			cur_iv = rw->iv;
			cur_kid = UINT32_MAX;
		}
		if (rw->kid != cur_kid) {
			const char *s;
			size_t len;
			uint32_t comm, stack, file, sym;

			if (!stack_txt[kpos] && !(stack_txt[kpos] = stack_text(d, k, o)))
				goto out;
			s = k ? xe_sec_str(d, k->comm, &len) : "[unattributed]";
			comm = str_id(&st, w, s, k ? len : strlen(s));
			stack = str_id(&st, w, stack_txt[kpos], strlen(stack_txt[kpos]));
			s = k ? xe_sec_str(d, k->file, &len) : "";
			file = str_id(&st, w, len && k ? s : "[unknown file]",
				      len && k ? len : strlen("[unknown file]"));
			s = k ? xe_sec_str(d, k->name, &len) : "";
			if (!k || !len) {
				s = arena + apos;
				len = (size_t)snprintf(arena + apos, 80, "0x%" PRIx64,
						       k ? k->start : 0);
				apos += len + 1;
			}
			sym = str_id(&st, w, s, len);
			wb_printf(w,
				  "kernel\t%#" PRIx64 "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32
				  "\t%" PRIu32 "\t%" PRIu32 "\n",
				  k ? k->start : 0, comm, k ? k->pid : 0, stack, file, sym);
			cur_kid = rw->kid;
			tot.kernels++;
		}
		const char *it = insn && k ? insn(insn_ctx, k, rw->off) : NULL;
		size_t ilen;

		if (!it) {
			it = arena + apos;
			ilen = (size_t)snprintf(arena + apos, 80, "0x%" PRIx32, rw->off);
			apos += ilen + 1;
		} else {
			ilen = strlen(it);
		}
		uint32_t iid = str_id(&st, w, it, ilen);
		uint64_t sum = 0;

		wb_printf(w, "eustall\t%#" PRIx32 "\t%" PRIu32, rw->off, iid);
		for (int rr = 0; rr < XE_NREASONS; rr++) {
			wb_printf(w, "\t%" PRIu32, rw->cnt[rr]);
			sum += rw->cnt[rr];
		}
		wb_put(w, "\n", 1);
		tot.lines++;
		tot.samples += sum;
		if (!rw->kid)
			tot.unattributed += sum;
	}
	wb_flush(w);
	r = w->err;
out:
	if (t)
		*t = tot;
	for (uint32_t i = 0; stack_txt && i <= nk; i++)
		free(stack_txt[i]);
	free(stack_txt);
	free(st.s);
	free(st.len);
	free(st.id);
	free(rows);
	free(arena);
	free(w);
	return r;
}
