// SPDX-License-Identifier: MIT
/*
 * The walk: from the registers and the stack copy BPF took, follow each
 * frame's CFI rule (uwrule.c) up the stack, and frame pointers where an
 * address has no CFI (JIT code, objects built without unwind tables).
 *
 * Rules every unwinder follows (elfutils, perf, the OpenTelemetry
 * profiler): a caller's row is looked up at return address - 1, because a
 * call can be the last instruction of a function -- except for the
 * interrupted frame and for the frame a signal interrupted, whose pc is
 * exact. The walk ends where CFI says the return address is undefined
 * (_start, a thread's clone) or reads 0; anything else that stops it early
 * marks the stack [truncated].
 */
#include "unwind_int.h"

#include "log.h"

#include <cjson/cJSON.h>
#include <dwarf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UW_DEFAULT_BUDGET (128u << 20)
#define UW_DEFAULT_FRAMES 127
/* Re-read a process's mappings when an address falls outside them, at most
 * this often (dlopen, exec, a reused pid). */
#define UW_REFRESH_NS (10ull * 1000000ull)
#define UW_STATUS_PROCS 16

enum step {
	STEP_OK,
	STEP_END,	 /* the outermost frame: stack complete */
	STEP_TRUNC_COPY, /* needs bytes beyond the copy */
	STEP_NORULE,	 /* nothing says how to find the caller */
	STEP_BAD,	 /* a rule led nowhere sensible */
	STEP_DEPTH,	 /* more frames than asked for */
};

struct walk {
	const uint8_t *stack;
	uint64_t lo, hi; /* the copy covers [lo, hi) */
	uint64_t ip, sp, bp;
	bool bp_known;
	uint64_t cfa; /* the frame being left, for DW_OP_call_frame_cfa */
	bool cfa_known;
	bool out_of_copy; /* a read failed above the copy (not a bad address) */
	uint64_t *cfas;	  /* optional: each frame's CFA (its caller's sp) */
};

static int rd(struct walk *w, uint64_t addr, uint64_t *v)
{
	if (w->hi - w->lo < 8 || addr < w->lo || addr > w->hi - 8) {
		if (addr >= w->hi)
			w->out_of_copy = true;
		return -1;
	}
	memcpy(v, w->stack + (addr - w->lo), 8);
	return 0;
}

static int reg_value(const struct walk *w, unsigned reg, uint64_t *v)
{
	if (reg == UW_REG_RSP)
		*v = w->sp;
	else if (reg == UW_REG_RBP && w->bp_known)
		*v = w->bp;
	else if (reg == UW_REG_RA)
		*v = w->ip;
	else
		return -1;
	return 0;
}

/* A small DWARF stack machine: the operations CFI expressions use on
 * x86-64 (PLT stubs, signal frames, realigned stacks). */
static int eval(struct walk *w, const Dwarf_Op *ops, size_t nops, bool push_cfa, uint64_t *out)
{
	uint64_t st[16], a, b;
	size_t sp = 0;

	/* A register's DW_CFA_expression starts with the CFA pushed. */
	if (push_cfa) {
		if (!w->cfa_known)
			return -1;
		st[sp++] = w->cfa;
	}
	for (size_t i = 0; i < nops; i++) {
		uint8_t op = ops[i].atom;

		if (sp >= 15)
			return -1;
		if (op >= DW_OP_lit0 && op <= DW_OP_lit31) {
			st[sp++] = op - DW_OP_lit0;
			continue;
		}
		if (op >= DW_OP_breg0 && op <= DW_OP_breg16) {
			if (reg_value(w, op - DW_OP_breg0, &a))
				return -1;
			st[sp++] = a + ops[i].number;
			continue;
		}
		switch (op) {
		case DW_OP_bregx:
			if (reg_value(w, (unsigned)ops[i].number, &a))
				return -1;
			st[sp++] = a + ops[i].number2;
			continue;
		case DW_OP_call_frame_cfa:
			if (!w->cfa_known)
				return -1;
			st[sp++] = w->cfa;
			continue;
		case DW_OP_const1u:
		case DW_OP_const1s:
		case DW_OP_const2u:
		case DW_OP_const2s:
		case DW_OP_const4u:
		case DW_OP_const4s:
		case DW_OP_const8u:
		case DW_OP_const8s:
		case DW_OP_constu:
		case DW_OP_consts:
			st[sp++] = ops[i].number;
			continue;
		case DW_OP_dup:
			if (!sp)
				return -1;
			st[sp] = st[sp - 1];
			sp++;
			continue;
		case DW_OP_plus_uconst:
			if (!sp)
				return -1;
			st[sp - 1] += ops[i].number;
			continue;
		case DW_OP_deref:
			if (!sp || rd(w, st[sp - 1], &st[sp - 1]))
				return -1;
			continue;
		case DW_OP_neg:
			if (!sp)
				return -1;
			st[sp - 1] = -st[sp - 1];
			continue;
		case DW_OP_not:
			if (!sp)
				return -1;
			st[sp - 1] = ~st[sp - 1];
			continue;
		default:
			break;
		}
		/* binary operations */
		if (sp < 2)
			return -1;
		b = st[--sp];
		a = st[sp - 1];
		switch (op) {
		case DW_OP_plus:
			a += b;
			break;
		case DW_OP_minus:
			a -= b;
			break;
		case DW_OP_mul:
			a *= b;
			break;
		case DW_OP_and:
			a &= b;
			break;
		case DW_OP_or:
			a |= b;
			break;
		case DW_OP_xor:
			a ^= b;
			break;
		case DW_OP_shl:
			a = b < 64 ? a << b : 0;
			break;
		case DW_OP_shr:
			a = b < 64 ? a >> b : 0;
			break;
		case DW_OP_shra:
			a = b < 64 ? (uint64_t)((int64_t)a >> b) : 0;
			break;
		case DW_OP_ge:
			a = (int64_t)a >= (int64_t)b;
			break;
		case DW_OP_gt:
			a = (int64_t)a > (int64_t)b;
			break;
		case DW_OP_le:
			a = (int64_t)a <= (int64_t)b;
			break;
		case DW_OP_lt:
			a = (int64_t)a < (int64_t)b;
			break;
		case DW_OP_eq:
			a = a == b;
			break;
		case DW_OP_ne:
			a = a != b;
			break;
		default:
			return -1; /* not used by CFI on x86-64 */
		}
		st[sp - 1] = a;
	}
	if (!sp)
		return -1;
	*out = st[sp - 1]; /* the result is the top of the stack */
	return 0;
}

/* Recover a register the caller had. 1: unknown (undefined, or could not
 * be read); 0: *v set; -1: a rule we cannot follow. */
static int recover(struct walk *w, const struct uw_loc *l, uint64_t same, bool same_known,
		   uint64_t *v)
{
	uint64_t a;

	switch (l->how) {
	case UW_UNDEF:
		return 1;
	case UW_SAME:
		*v = same;
		return same_known ? 0 : 1;
	case UW_AT_CFA:
		return rd(w, w->cfa + (int64_t)l->off, v) ? 1 : 0;
	case UW_EXPR:
		if (eval(w, l->ops, l->nops, true, &a))
			return -1;
		if (l->value) {
			*v = a;
			return 0;
		}
		return rd(w, a, v) ? 1 : 0;
	default:
		return -1;
	}
}

static enum step step_cfi(struct walk *w, const struct uw_rule *r)
{
	uint64_t cfa, ra, bp;
	int k;

	if (r->cfa.how == UW_REG_OFF) {
		if (reg_value(w, r->cfa.reg, &cfa))
			return STEP_NORULE;
		cfa += (int64_t)r->cfa.off;
	} else if (r->cfa.how == UW_EXPR) {
		if (eval(w, r->cfa.ops, r->cfa.nops, false, &cfa))
			return w->out_of_copy ? STEP_TRUNC_COPY : STEP_NORULE;
	} else {
		return STEP_NORULE;
	}
	w->cfa = cfa;
	w->cfa_known = true;
	if (r->ra.how == UW_UNDEF)
		return STEP_END;
	k = recover(w, &r->ra, w->ip, true, &ra);
	if (k)
		return w->out_of_copy ? STEP_TRUNC_COPY : k < 0 ? STEP_NORULE : STEP_BAD;
	k = recover(w, &r->rbp, w->bp, w->bp_known, &bp);
	if (k < 0)
		return STEP_NORULE;
	if (ra == 0)
		return STEP_END;
	/* The stack grows down: a caller's frame is above its callee's. */
	if (cfa <= w->sp)
		return STEP_BAD;
	w->bp_known = k == 0;
	w->bp = bp;
	w->ip = ra;
	w->sp = cfa;
	return STEP_OK;
}

/* Frame pointers: [rbp] is the caller's rbp, [rbp + 8] the return address. */
static enum step step_fp(struct walk *w)
{
	uint64_t ra, bp;

	if (!w->bp_known || w->bp < w->sp)
		return STEP_NORULE;
	if (rd(w, w->bp + 8, &ra) || rd(w, w->bp, &bp))
		return w->out_of_copy ? STEP_TRUNC_COPY : STEP_NORULE;
	if (ra == 0)
		return STEP_END;
	w->sp = w->bp + 16;
	w->ip = ra;
	w->bp = bp;
	w->cfa_known = false;
	return STEP_OK;
}

/* How far past an entry point its code may run before calling on: the
 * entry stubs (_start of ld.so, of programs without CFI) are a few
 * instructions that set up the first call. */
#define UW_ENTRY_SPAN 64

static const struct uw_rule *rule_at(struct unwinder *u, struct uw_proc *p, uint64_t look,
				     bool *refreshed, bool *entry)
{
	const struct uw_map *m = uw_proc_find(p, look);
	uint64_t va;

	/* Outside every mapping: a library loaded since (dlopen) or a new
	 * program (exec). Re-read once per walk, and per unknown page at
	 * most every UW_REFRESH_NS, so a stray address cannot make every
	 * sample re-read. */
	if (!m && !*refreshed) {
		*refreshed = true;
		if (uw_proc_refresh(u, p, (look >> 12) != p->miss_page ? 0 : UW_REFRESH_NS)) {
			u->st.refresh_unknown++;
			m = uw_proc_find(p, look);
		}
		p->miss_page = look >> 12;
	}
	if (!m || !m->obj || !uw_obj_vaddr(m->obj, look - m->start + m->pgoff, &va))
		return NULL;
	m->obj->last_used = u->tick;
	*entry = m->obj->entry && va >= m->obj->entry && va - m->obj->entry < UW_ENTRY_SPAN;
	return uw_rule_get(u, m->obj, va);
}

static enum step walk(struct unwinder *u, struct uw_proc *p, struct walk *w, uint64_t *ips,
		      unsigned max, unsigned *n, bool fresh)
{
	/* Mappings read for this very walk (a new process) are as new as
	 * a re-read would be: an address outside them is garbage, not a
	 * library loaded since, and reading again would only double what
	 * a new process costs. */
	bool exact = true, refreshed = fresh;
	enum step s = STEP_OK;

	ips[(*n)++] = w->ip;
	while (*n < max) {
		bool sig = false, entry = false;
		const struct uw_rule *r =
			rule_at(u, p, exact ? w->ip : w->ip - 1, &refreshed, &entry);

		if (r && r->found && r->cfa.how != UW_BAD) {
			sig = r->signal;
			s = step_cfi(w, r);
			if (s == STEP_OK || s == STEP_END)
				p->frames_cfi++, u->st.frames_cfi++;
		} else if (entry) {
			/* An entry point without CFI (the dynamic loader's
			 * _start while it relocates a new program): the
			 * outermost frame, as the psABI's rbp = 0 there says. */
			s = STEP_END;
		} else {
			s = step_fp(w);
			if (s == STEP_OK)
				p->frames_fp++, u->st.frames_fp++;
		}
		if (s != STEP_OK)
			return s;
		if (w->cfas)
			w->cfas[*n - 1] = w->sp;
		exact = sig;
		ips[(*n)++] = w->ip;
	}
	return STEP_DEPTH;
}

static void count_time(struct unwinder *u, uint64_t ns)
{
	unsigned b = 0;

	while (b < 31 && (ns >> b) > 1)
		b++;
	u->st.ns_hist[b]++;
	u->st.ns_total += ns;
	u->st.ns_recent[u->st.samples % 1024] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static const char *const step_names[] = {"ok",	    "end",	 "stack copy exhausted",
					 "no rule", "bad frame", "depth"};

/* Where walks stop, for whoever debugs a profile (-v -v): the address and
 * its object, never stack contents. At most one line per 1000 stops. */
static void log_trunc(struct unwinder *u, const struct uw_proc *p, const struct walk *w,
		      enum step s)
{
	const struct uw_map *m = uw_proc_find(p, w->ip);

	if (u->st.truncated % 1000)
		return;
	log_debug("unwind: pid %u stopped (%s) at %#llx in %s+%#llx", p->pid, step_names[s],
		  (unsigned long long)w->ip, m && m->obj ? m->obj->name : "?",
		  (unsigned long long)(m ? w->ip - m->start + m->pgoff : 0));
}

int unwind_prepare(struct unwinder *u, uint32_t pid)
{
	struct uw_proc *p;

	u->tick++;
	u->busy = NULL;
	p = uw_proc_get(u, pid);
	if (!p)
		return -ESRCH;
	/* Known from before: it may have mapped what it was seen mapping
	 * (the runtime) since; read again unless just read. */
	u->busy = p;
	uw_proc_refresh(u, p, 1000000);
	u->busy = NULL;
	return 0;
}

int unwind_user(struct unwinder *u, uint32_t pid, const struct unwind_regs *regs, const void *stack,
		size_t len, uint64_t *ips, unsigned max, unsigned *n)
{
	return unwind_user_cfas(u, pid, regs, stack, len, ips, NULL, max, n);
}

int unwind_user_cfas(struct unwinder *u, uint32_t pid, const struct unwind_regs *regs,
		     const void *stack, size_t len, uint64_t *ips, uint64_t *cfas, unsigned max,
		     unsigned *n)
{
	uint64_t t0 = uw_now_ns();
	struct walk w = {
		.stack = stack,
		.lo = regs->sp,
		.hi = regs->sp + len,
		.ip = regs->ip,
		.sp = regs->sp,
		.bp = regs->bp,
		.bp_known = true,
		.cfas = cfas,
	};
	struct uw_proc *p;
	enum step s;

	*n = 0;
	if (max < 2)
		return UNWIND_TRUNCATED;
	if (max > u->max_frames + 1)
		max = u->max_frames + 1;
	for (unsigned i = 0; cfas && i < max; i++)
		cfas[i] = UINT64_MAX;
	if (w.hi < w.lo)
		w.hi = w.lo;
	u->st.samples++;
	u->st.bytes_copied += len;
	u->tick++;
	u->busy = NULL;
	p = uw_proc_get(u, pid);
	u->busy = p;
	if (!p) {
		ips[(*n)++] = regs->ip;
		s = STEP_NORULE;
		u->st.trunc_nomaps++;
		goto truncated;
	}
	p->samples++;
	if (u->bytes > u->budget)
		uw_trim(u, p);
	s = walk(u, p, &w, ips, max - 1, n, p->read_ns >= t0);
	if (s == STEP_END) {
		u->st.complete++;
		u->st.frames += *n;
		count_time(u, uw_now_ns() - t0);
		return UNWIND_COMPLETE;
	}
	p->truncated++;
	/* The pc was in a mapping made after the snapshot (a library loaded
	 * by a process that exited before its samples were drained). */
	if (s == STEP_NORULE && p->gone)
		u->st.trunc_nomaps++;
	else if (s == STEP_TRUNC_COPY)
		u->st.trunc_copy++;
	else if (s == STEP_NORULE)
		u->st.trunc_norule++;
	else if (s == STEP_BAD)
		u->st.trunc_bad++;
	else
		u->st.trunc_depth++;
	log_trunc(u, p, &w, s);
	/* A stale snapshot (exec, a reused pid) shows as a walk that fails:
	 * look again, at most every UW_REFRESH_NS, for the next samples. */
	if ((s == STEP_NORULE || s == STEP_BAD) && uw_proc_refresh(u, p, UW_REFRESH_NS))
		u->st.refresh_failed++;
truncated:
	ips[(*n)++] = UNWIND_IP_TRUNCATED;
	u->st.truncated++;
	u->st.frames += *n;
	count_time(u, uw_now_ns() - t0);
	return UNWIND_TRUNCATED;
}

void unwind_forget_pid(struct unwinder *u, uint32_t pid)
{
	struct uw_proc *p = uw_proc_lookup(u, pid);

	if (p)
		uw_proc_free(u, p);
}

int unwind_new(const struct unwind_opts *opts, struct unwinder **ret)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->budget = opts && opts->budget_bytes ? opts->budget_bytes : UW_DEFAULT_BUDGET;
	u->max_frames = opts && opts->max_frames ? opts->max_frames : UW_DEFAULT_FRAMES;
	snprintf(u->proc_dir, sizeof(u->proc_dir), "%s",
		 opts && opts->proc_dir ? opts->proc_dir : "/proc");
	u->maps_text = opts && opts->maps_text;
	elf_version(EV_CURRENT);
	*ret = u;
	return 0;
}

void unwind_set_maps_source(struct unwinder *u, unwind_maps_fn fn, void *arg)
{
	u->maps_src = fn;
	u->maps_src_arg = arg;
}

void unwind_free(struct unwinder *u)
{
	if (!u)
		return;
	for (unsigned b = 0; b < UW_PROC_BUCKETS; b++)
		while (u->procs[b])
			uw_proc_free(u, u->procs[b]);
	for (unsigned b = 0; b < UW_OBJ_BUCKETS; b++)
		while (u->objs[b]) {
			struct uw_obj *o = u->objs[b];

			u->objs[b] = o->next;
			uw_obj_free(o);
		}
	uw_obj_free(u->vdso);
	free(u->scratch.cfa.ops);
	free(u->scratch.ra.ops);
	free(u->scratch.rbp.ops);
	free(u);
}

/* Median of the log2 histogram: the bucket's upper bound, in ns. */
static uint64_t hist_median(const struct unwind_stats *st)
{
	uint64_t total = 0, acc = 0;

	for (unsigned b = 0; b < 32; b++)
		total += st->ns_hist[b];
	for (unsigned b = 0; b < 32 && total; b++) {
		acc += st->ns_hist[b];
		if (acc * 2 >= total)
			return 1ull << b;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Median and 90th percentile of the last (up to) 1024 walks, in ns. */
static void recent_percentiles(const struct unwind_stats *st, double *p50, double *p90)
{
	uint32_t v[1024];
	size_t n = st->samples < 1024 ? (size_t)st->samples : 1024;

	*p50 = *p90 = 0;
	if (!n)
		return;
	memcpy(v, st->ns_recent, n * sizeof(v[0]));
	qsort(v, n, sizeof(v[0]), cmp_u32);
	*p50 = v[n / 2];
	*p90 = v[n * 9 / 10];
}

static const char *proc_mode(const struct uw_proc *p)
{
	if (p->frames_cfi && p->frames_fp)
		return "cfi+fp";
	return p->frames_fp ? "fp" : "cfi";
}

static void status_procs(struct unwinder *u, cJSON *obj)
{
	const struct uw_proc *top[UW_STATUS_PROCS] = {0};
	cJSON *arr = cJSON_AddArrayToObject(obj, "by_process");

	if (!arr)
		return;
	/* The busiest processes: a bounded list, whatever the host runs. */
	for (unsigned b = 0; b < UW_PROC_BUCKETS; b++)
		for (const struct uw_proc *p = u->procs[b]; p; p = p->next) {
			unsigned i = UW_STATUS_PROCS;

			while (i > 0 && (!top[i - 1] || top[i - 1]->samples < p->samples))
				i--;
			if (i >= UW_STATUS_PROCS)
				continue;
			memmove(&top[i + 1], &top[i], (UW_STATUS_PROCS - 1 - i) * sizeof(top[0]));
			top[i] = p;
		}
	for (unsigned i = 0; i < UW_STATUS_PROCS && top[i]; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o)
			return;
		cJSON_AddNumberToObject(o, "pid", top[i]->pid);
		cJSON_AddStringToObject(o, "mode", proc_mode(top[i]));
		cJSON_AddNumberToObject(o, "samples", (double)top[i]->samples);
		cJSON_AddNumberToObject(o, "truncated", (double)top[i]->truncated);
		cJSON_AddNumberToObject(o, "mappings", (double)top[i]->nmaps);
		cJSON_AddItemToArray(arr, o);
	}
}

void unwind_status(struct unwinder *u, cJSON *obj, bool with_processes)
{
	const struct unwind_stats *st = &u->st;
	cJSON *t;

	cJSON_AddNumberToObject(obj, "budget_bytes", (double)u->budget);
	cJSON_AddNumberToObject(obj, "bytes", (double)u->bytes);
	cJSON_AddNumberToObject(obj, "processes", (double)u->nprocs);
	cJSON_AddNumberToObject(obj, "objects", (double)u->nobjs);
	cJSON_AddNumberToObject(obj, "samples", (double)st->samples);
	cJSON_AddNumberToObject(obj, "complete", (double)st->complete);
	cJSON_AddNumberToObject(obj, "truncated", (double)st->truncated);
	t = cJSON_AddObjectToObject(obj, "truncated_by");
	if (t) {
		cJSON_AddNumberToObject(t, "stack_copy", (double)st->trunc_copy);
		cJSON_AddNumberToObject(t, "no_rule", (double)st->trunc_norule);
		cJSON_AddNumberToObject(t, "process_gone", (double)st->trunc_nomaps);
		cJSON_AddNumberToObject(t, "depth", (double)st->trunc_depth);
		cJSON_AddNumberToObject(t, "bad_frame", (double)st->trunc_bad);
	}
	cJSON_AddNumberToObject(obj, "frames_cfi", (double)st->frames_cfi);
	cJSON_AddNumberToObject(obj, "frames_fp", (double)st->frames_fp);
	cJSON_AddNumberToObject(obj, "stack_bytes_per_sample",
				st->samples ? (double)st->bytes_copied / (double)st->samples : 0);
	cJSON_AddNumberToObject(obj, "unwind_ns_mean",
				st->samples ? (double)st->ns_total / (double)st->samples : 0);
	cJSON_AddNumberToObject(obj, "unwind_ns_median_bucket", (double)hist_median(st));
	{
		double p50, p90;

		recent_percentiles(st, &p50, &p90);
		cJSON_AddNumberToObject(obj, "unwind_ns_p50_recent", p50);
		cJSON_AddNumberToObject(obj, "unwind_ns_p90_recent", p90);
	}
	cJSON_AddNumberToObject(obj, "maps_reads", (double)st->maps_reads);
	t = cJSON_AddObjectToObject(obj, "maps_refreshes");
	if (t) {
		cJSON_AddNumberToObject(t, "unknown_address", (double)st->refresh_unknown);
		cJSON_AddNumberToObject(t, "failed_walk", (double)st->refresh_failed);
	}
	cJSON_AddStringToObject(obj, "maps_method", u->maps_text ? "text" : "procmap_query");
	cJSON_AddNumberToObject(obj, "maps_queries", (double)st->maps_queries);
	cJSON_AddNumberToObject(obj, "maps_shared", (double)st->maps_shared);
	cJSON_AddNumberToObject(obj, "objects_loaded", (double)st->objs_loaded);
	cJSON_AddNumberToObject(obj, "objects_failed", (double)st->objs_failed);
	cJSON_AddNumberToObject(obj, "objects_over_budget", (double)st->objs_over_budget);
	cJSON_AddNumberToObject(obj, "evictions",
				(double)(st->procs_evicted + st->objs_evicted + st->rule_flushes));
	if (with_processes)
		status_procs(u, obj);
}
