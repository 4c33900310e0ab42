// SPDX-License-Identifier: MIT
/*
 * Python frames spliced into native user stacks, per sample (pyreg.h), and
 * the one path from a BPF record's stack copy to the stored user stack that
 * every collector with Python frames takes (pyreg_user_stack()).
 */
#include "pyreg_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyframes.h"
#include "pystack_abi.h"
#include "unwind/unwind.h"
#include "ustack_abi.h"

#define MAX_SPLICE 256 /* Python frames interpreted per sample */
/* Native frames unwound per record: bpf_get_stack()'s 127 of every record
 * type, and the unwinder's [truncated] mark */
#define NATIVE_MAX 128

/* The frame id of a frame BPF read: cached per process by (code, its
 * ident, instruction), else resolved through the reader and interned. 0
 * when it cannot be named (freed code object, process gone). */
static uint32_t frame_id(struct pyreg *r, struct pyp *p, const struct pyf_frame *f)
{
	uint64_t k = (f->code >> 4) ^ ((uint64_t)(uint32_t)f->instr * 0x9e3779b97f4a7c15ull);
	struct pyp_code *c;
	const char *qual, *file;
	int line, e;

	if (!p->codes) {
		if (r->bytes + PYREG_CODE_SLOTS * sizeof(*p->codes) > r->o.budget_bytes)
			return 0;
		p->codes = calloc(PYREG_CODE_SLOTS, sizeof(*p->codes));
		if (!p->codes)
			return 0;
		r->bytes += PYREG_CODE_SLOTS * sizeof(*p->codes);
	}
	c = &p->codes[(k * 0x9e3779b97f4a7c15ull) >> 54 & (PYREG_CODE_SLOTS - 1)];
	if (c->id && c->code == f->code && c->instr == f->instr && c->ident == f->ident)
		return c->id;
	e = pyf_resolve_seen(p->pf, f->code, f->ident, f->instr, &qual, &file, &line);
	if (e < 0) {
		if (e == -ESTALE)
			p->replaced++;
		else
			p->unresolved++;
		return 0;
	}
	*c = (struct pyp_code){.code = f->code,
			       .ident = f->ident,
			       .instr = f->instr,
			       .id = pyreg_intern(r, qual, file, line)};
	return c->id;
}

static bool in_eval(const struct pyp *p, uint64_t pc)
{
	for (unsigned i = 0; i < p->neval; i++)
		if (pc >= p->eval[i][0] && pc < p->eval[i][1])
			return true;
	return false;
}

struct run {
	unsigned start, end; /* frames [start, end), leaf first */
	uint64_t marker;     /* 0: none (pair in order) */
};

/* Group frames into the runs of each activation (leaf first). */
static unsigned make_runs(const struct pyf_frame *f, unsigned n, struct run *runs, unsigned max)
{
	unsigned nr = 0, start = 0;

	for (unsigned i = 0; i < n && nr < max; i++)
		if (f[i].flags & PYF_FRAME_ENTRY || i + 1 == n) {
			runs[nr++] = (struct run){.start = start,
						  .end = i + 1,
						  .marker = f[i].flags & PYF_FRAME_ENTRY
								    ? f[i].marker
								    : 0};
			start = i + 1;
		}
	return nr;
}

/* Counts past max, so the caller can tell the stack was cut. */
static unsigned put(uint64_t *out, unsigned k, unsigned max, uint64_t v)
{
	if (k < max)
		out[k] = v;
	return k + 1;
}

/* A run's frames; the outermost run read gets a [truncated] frame beyond
 * it when BPF stopped reading before the chain's end. */
static unsigned put_run(struct pyreg *r, struct pyp *p, const struct pyf_frame *f,
			const struct run *run, bool cut, uint64_t *out, unsigned k, unsigned max)
{
	for (unsigned i = run->start; i < run->end; i++) {
		uint32_t id = frame_id(r, p, &f[i]);

		if (id)
			k = put(out, k, max, PYREG_IP_FLAG | id);
	}
	if (cut)
		k = put(out, k, max, PYREG_IP_FLAG | PYREG_ID_TRUNCATED);
	return k;
}

/*
 * Which run native frame i (an evaluator activation, stack [lo, hi)) ran:
 * the next run in order, unless that run's marker places it in another
 * activation further out (the activation at i had not linked its frames
 * yet: a sample in its prologue). -1: none.
 */
static int run_for(const struct run *runs, unsigned nr, unsigned next, uint64_t lo, uint64_t hi,
		   bool have_cfa)
{
	if (next >= nr)
		return -1;
	if (!have_cfa || !runs[next].marker)
		return (int)next;
	return runs[next].marker >= lo && runs[next].marker < hi ? (int)next : -1;
}

unsigned pyreg_splice(struct pyreg *r, uint32_t pid, const uint64_t *ips, const uint64_t *cfas,
		      unsigned nu, uint64_t sp, const struct pystack_node *nodes, unsigned nn,
		      unsigned flags, uint64_t *out, unsigned max)
{
	struct pyf_frame f[MAX_SPLICE];
	struct run runs[MAX_SPLICE];
	struct pyp *p = r ? pyreg_sample_proc(r, pid, nn > 0) : NULL;
	unsigned nf, nr, next = 0, k = 0;
	uint64_t lo = sp;
	bool cut = flags & PYSTACK_F_TRUNCATED;

	if (!p) {
		nu = nu < max ? nu : max;
		memcpy(out, ips, nu * sizeof(*out));
		return nu;
	}
	nf = pyf_from_nodes(p->pf, nodes, nn, f, MAX_SPLICE);
	nr = make_runs(f, nf, runs, MAX_SPLICE);
	for (unsigned i = 0; i < nu; i++) {
		uint64_t hi = cfas ? cfas[i] : 0;
		int ri = -1;

		/* below the leaf, frames are return addresses */
		if (in_eval(p, i ? ips[i] - 1 : ips[i]))
			ri = run_for(runs, nr, next, lo, hi, cfas != NULL);
		if (ri >= 0) {
			k = put_run(r, p, f, &runs[ri], cut && (unsigned)ri + 1 == nr, out, k, max);
			next = (unsigned)ri + 1;
		} else if (ips[i] == UNWIND_IP_TRUNCATED && next < nr) {
			/* the native stack could not be followed out to the
			 * remaining activations: keep their Python frames
			 * beyond the mark */
			k = put(out, k, max, ips[i]);
			for (; next < nr; next++)
				k = put_run(r, p, f, &runs[next], cut && next + 1 == nr, out, k,
					    max);
		} else {
			k = put(out, k, max, ips[i]);
		}
		lo = hi;
	}
	if (k > max) { /* longer than a stored stack: cut at the root */
		out[max - 1] = UNWIND_IP_TRUNCATED;
		k = max;
	}
	return k;
}

unsigned pyreg_user_stack(struct pyreg *r, struct unwinder *u, const struct pyreg_sample *s,
			  uint64_t *out, unsigned max, bool *fp_fallback)
{
	uint64_t nat[NATIVE_MAX], cfas[NATIVE_MAX];
	struct pystack_node nodes[PYSTACK_MAX_NODES];
	unsigned n = 0, nn = s->nnodes <= PYSTACK_MAX_NODES ? s->nnodes : 0;
	bool unwound = u && s->us->flags & USTACK_F_REGS;
	struct timespec t0, t1;
	unsigned out_n;

	if (fp_fallback)
		*fp_fallback = u && !unwound && s->nips;
	if (unwound) {
		struct unwind_regs regs = {.ip = s->us->ip, .sp = s->us->sp, .bp = s->us->bp};

		/* A length the record does not hold unwinds from the
		 * registers alone (a [truncated] stack), never past the
		 * record. */
		unwind_user_cfas(u, s->pid, &regs, s->stack,
				 s->us->len <= s->stack_avail ? s->us->len : 0, nat, cfas,
				 NATIVE_MAX, &n);
	} else {
		n = s->nips < NATIVE_MAX ? s->nips : NATIVE_MAX;
		memcpy(nat, s->ips, (size_t)n * sizeof(uint64_t));
	}
	/* nodes copied out: a record gives no alignment guarantee */
	if (nn)
		clock_gettime(CLOCK_MONOTONIC, &t0);
	memcpy(nodes, s->nodes, (size_t)nn * PYSTACK_NODE_BYTES);
	out_n = pyreg_splice(r, s->pid, nat, unwound ? cfas : NULL, n, s->us->sp, nodes, nn,
			     s->pyflags, out, max);
	if (nn) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		r->splice_ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
				(uint64_t)t1.tv_nsec - (uint64_t)t0.tv_nsec;
		r->spliced++;
		if (s->pyflags & PYSTACK_F_SUBINTERP)
			r->spliced_sub++;
	}
	return out_n;
}
