// SPDX-License-Identifier: MIT
/*
 * The text of one folded line (folded.h): [cgroup;]comm[-pid[/tid]], user frames
 * root first, "-" and the kernel frames, the GPU kernel frame; names
 * sanitized so every line keeps its shape. Used by folded_write() and by
 * the per-record liner the heat map reads.
 */
#include "folded_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "symtab.h"

static int reserve(struct arena *a, size_t n)
{
	if (a->len + n <= a->cap)
		return 0;
	size_t nc = a->cap ? a->cap : (1u << 20);
	while (nc < a->len + n)
		nc *= 2;
	char *np = realloc(a->p, nc);
	if (!np)
		return -ENOMEM;
	a->p = np;
	a->cap = nc;
	return 0;
}

/* Append a name, sanitized; "[unknown]" for an empty one. */
static int put_name(struct arena *a, const char *s, size_t len)
{
	if (!len) {
		s = "[unknown]";
		len = 9;
	}
	if (reserve(a, len) < 0)
		return -ENOMEM;
	char *d = a->p + a->len;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		d[i] = ch == ';' ? ':' : ((unsigned char)ch < 0x20 || ch == 0x7f) ? ' ' : ch;
	}
	a->len += len;
	return 0;
}

static int put_raw(struct arena *a, const char *s, size_t len)
{
	if (reserve(a, len) < 0)
		return -ENOMEM;
	memcpy(a->p + a->len, s, len);
	a->len += len;
	return 0;
}

/*
 * A Python frame is named "qualname (short file)_[p]" (SYMTAB_PY_SUFFIX);
 * with lines, "qualname (file:line)_[p]" rather than the file twice.
 * 1 when s is no such name; else 0 (appended) or -ENOMEM.
 */
static int py_frame_with_line(struct ctx *x, const char *s, size_t len, uint32_t line)
{
	const char *sp = memchr(s, ' ', len), *l;
	size_t ll;

	if (!symtab_is_py_name(s, len) || !sp)
		return 1;
	l = sym_table_name(x->syms, line, &ll);
	if (put_name(&x->a, s, (size_t)(sp - s)) < 0 || put_raw(&x->a, " (", 2) < 0 ||
	    put_name(&x->a, l, ll) < 0 ||
	    put_raw(&x->a, ")" SYMTAB_PY_SUFFIX, 1 + SYMTAB_PY_SUFFIX_LEN) < 0)
		return -ENOMEM;
	return 0;
}

static int put_frame(struct ctx *x, const struct sym_frames *f, size_t i, uint64_t ip, bool user)
{
	char tmp[32];
	size_t len;
	int r;
	if (!f && user && ip == SYMTAB_IP_TRUNCATED)
		return put_raw(&x->a, SYMTAB_TRUNCATED_NAME, sizeof(SYMTAB_TRUNCATED_NAME) - 1);
	if (!f) {
		int n = snprintf(tmp, sizeof(tmp), "0x%" PRIx64, ip);
		return put_raw(&x->a, tmp, (size_t)n);
	}
	const char *s = sym_table_name(x->syms, f->names[i], &len);
	if (x->o->lines && f->lines && f->lines[i] &&
	    (r = py_frame_with_line(x, s, len, f->lines[i])) <= 0)
		return r;
	r = put_name(&x->a, s, len);
	if (r < 0 || !x->o->lines || !f->lines || !f->lines[i])
		return r;
	s = sym_table_name(x->syms, f->lines[i], &len);
	if (put_raw(&x->a, " (", 2) < 0 || put_name(&x->a, s, len) < 0 || put_raw(&x->a, ")", 1))
		return -ENOMEM;
	return 0;
}

static int gpu_frame(struct ctx *x, const struct agg *k);

/* The hook's instruction text for k (the function name NUL-terminated:
 * nvdisasm's names are matched whole, however long). */
static const char *hook_insn(struct ctx *x, const struct agg *k, const char *kn, size_t knlen)
{
	char buf[512], *name = knlen < sizeof(buf) ? buf : malloc(knlen + 1);
	const char *insn;

	if (!name)
		return NULL;
	memcpy(name, kn, knlen);
	name[knlen] = '\0';
	insn = x->insn(x->insn_ctx, k->pid, k->crc, name, k->pc);
	if (name != buf)
		free(name);
	return insn;
}

/* stalls: ";sass_instruction_[g];stall_reason_[g]" after the kernel frame:
 * the instruction's SASS text the capture kept (pcstall.h), else the
 * hook's, else "+0x1a0" */
static int stall_frames(struct ctx *x, const struct agg *k, const char *kn, size_t knlen)
{
	const char *insn = NULL, *rs;
	char tmp[24];
	size_t len = 0;
	int n;

	insn = pcstall_insn(&x->pcs, k->crc, k->name, k->pc, &len);
	if (!insn && x->insn && kn && (insn = hook_insn(x, k, kn, knlen)))
		len = strlen(insn);
	if (put_raw(&x->a, ";", 1) < 0)
		return -ENOMEM;
	if (insn) {
		if (put_name(&x->a, insn, len) < 0)
			return -ENOMEM;
	} else {
		n = snprintf(tmp, sizeof(tmp), "+0x%" PRIx32, k->pc);
		if (put_raw(&x->a, tmp, (size_t)n) < 0)
			return -ENOMEM;
	}
	rs = pcstall_reason(x->c, k->reason, &len);
	if (put_raw(&x->a, "_[g];", 5) < 0 || put_name(&x->a, rs, len) < 0 ||
	    put_raw(&x->a, "_[g]", 4) < 0)
		return -ENOMEM;
	return 0;
}

/* The line of one key, without its count, appended to the arena. */
int folded_build_line(struct ctx *x, const struct agg *k)
{
	const struct folded_opts *o = x->o;
	char tmp[48];
	size_t len;
	uint16_t nu = 0, nk = 0;
	struct sym_frames fr, *f = NULL;
	int n, r;

	if (o->cgroup) {
		const char *cg = k->cgroup ? capture_str(x->c, k->cgroup, &len) : NULL;

		if (!cg) {
			cg = "[no cgroup]";
			len = 11;
		}
		if (put_name(&x->a, cg, len) < 0 || put_raw(&x->a, ";", 1) < 0)
			return -ENOMEM;
	}
	const char *comm = capture_str(x->c, k->comm, &len);
	r = put_name(&x->a, comm ? comm : "", comm ? len : 0);
	if (r < 0)
		return r;
	if (o->tid)
		n = snprintf(tmp, sizeof(tmp), "-%" PRIu32 "/%" PRIu32, k->pid, k->tid);
	else if (o->pid)
		n = snprintf(tmp, sizeof(tmp), "-%" PRIu32, k->pid);
	else
		n = 0;
	if (n > 0 && put_raw(&x->a, tmp, (size_t)n) < 0)
		return -ENOMEM;

	const uint64_t *ips = k->stack ? capture_stack(x->c, k->stack, &nu, &nk) : NULL;
	if (!ips)
		nu = nk = 0;
	if (ips && sym_table_find(x->syms, k->pid, k->stack, &fr) && fr.nuser == nu &&
	    fr.nkernel == nk)
		f = &fr;
	for (size_t i = nu; i-- > 0;)
		if (put_raw(&x->a, ";", 1) < 0 || put_frame(x, f, i, ips[i], true) < 0)
			return -ENOMEM;
	if (!o->no_kernel && nk) {
		if (nu && put_raw(&x->a, ";-", 2) < 0)
			return -ENOMEM;
		if (o->view.kernel_hidden) { /* one frame, no names, no addresses */
			static const char kframe[] = ";" RENDER_KERNEL_FRAME;

			if (put_raw(&x->a, kframe, sizeof(kframe) - 1) < 0)
				return -ENOMEM;
		} else {
			for (size_t i = (size_t)nu + nk; i-- > nu;)
				if (put_raw(&x->a, ";", 1) < 0 ||
				    put_frame(x, f, i, ips[i], false) < 0)
					return -ENOMEM;
		}
	}
	return gpu_frame(x, k);
}

/* The GPU kernel frame that ends a launch's line, if any. */
static int gpu_frame(struct ctx *x, const struct agg *k)
{
	size_t len;

	if (!k->name)
		return 0;
	/* The GPU frame: the kernel name, up to the NUL that separates the
	 * launch geometry a launch collector may have appended. */
	const char *kn = capture_str(x->c, k->name, &len);
	const char *nul = kn ? memchr(kn, '\0', len) : NULL;
	if (nul)
		len = (size_t)(nul - kn);
	if (put_raw(&x->a, ";", 1) < 0 || put_name(&x->a, kn ? kn : "", kn ? len : 0) < 0 ||
	    put_raw(&x->a, "_[G]", 4) < 0)
		return -ENOMEM;
	return x->o->weight == FOLDED_WEIGHT_STALLS ? stall_frames(x, k, kn, len) : 0;
}
