// SPDX-License-Identifier: MIT
/*
 * CFI rows as compact rules: what dwarf_cfi_addrframe() says about one
 * address -- how to find the canonical frame address (CFA), the return
 * address and the caller's rbp -- turned into struct uw_rule and cached per
 * object, so a walk costs a hash probe per frame once an address was seen.
 *
 * Nearly every row is "CFA = rsp or rbp + N; return address at CFA - 8;
 * rbp saved at CFA - M or unchanged" (x86-64 compilers emit little else).
 * PLT stubs and signal trampolines carry DWARF expressions; those are kept
 * as expressions and evaluated by the walker (unwind.c).
 */
#include "unwind_int.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define UW_RULES_MIN 256
#define UW_RULES_MAX 65536 /* per object; a full table is emptied, not grown */
#define UW_EXPR_MAX 32	   /* longer expressions are not followed */

/* A location from libdw's ops: see dwarf_frame_register() in libdw.h. */
static int loc_from_ops(struct uw_loc *l, const Dwarf_Op *ops, size_t nops, bool undef_mem,
			size_t *bytes)
{
	memset(l, 0, sizeof(*l));
	if (!nops) {
		l->how = undef_mem ? UW_UNDEF : UW_SAME;
		return 0;
	}
	/* offset(N): DW_OP_call_frame_cfa [DW_OP_plus_uconst N] */
	if (ops[0].atom == DW_OP_call_frame_cfa &&
	    (nops == 1 || (nops == 2 && ops[1].atom == DW_OP_plus_uconst))) {
		l->how = UW_AT_CFA;
		l->off = nops == 2 ? (int32_t)(int64_t)ops[1].number : 0;
		return 0;
	}
	if (nops > UW_EXPR_MAX) {
		l->how = UW_BAD;
		return 0;
	}
	l->ops = malloc(nops * sizeof(*ops));
	if (!l->ops)
		return -ENOMEM;
	memcpy(l->ops, ops, nops * sizeof(*ops));
	l->nops = (uint8_t)nops;
	l->how = UW_EXPR;
	if (ops[nops - 1].atom == DW_OP_stack_value) {
		l->value = 1;
		l->nops--;
	}
	*bytes += nops * sizeof(*ops);
	return 0;
}

static int cfa_from_ops(struct uw_loc *l, const Dwarf_Op *ops, size_t nops, size_t *bytes)
{
	memset(l, 0, sizeof(*l));
	if (nops == 1 && ops[0].atom == DW_OP_bregx && ops[0].number < 17) {
		l->how = UW_REG_OFF;
		l->reg = (uint8_t)ops[0].number;
		l->off = (int32_t)(int64_t)ops[0].number2;
		return 0;
	}
	if (nops == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg16) {
		l->how = UW_REG_OFF;
		l->reg = (uint8_t)(ops[0].atom - DW_OP_breg0);
		l->off = (int32_t)(int64_t)ops[0].number;
		return 0;
	}
	if (!nops) {
		l->how = UW_BAD;
		return 0;
	}
	/* An expression that computes the CFA itself (a value). */
	int r = loc_from_ops(l, ops, nops, false, bytes);
	if (!r && l->how == UW_EXPR)
		l->value = 1;
	return r;
}

/* Fill rule from one CFI; false when it has no row for pc. */
static bool rule_from_cfi(Dwarf_CFI *cfi, uint64_t pc, struct uw_rule *rule, size_t *bytes)
{
	Dwarf_Frame *fr = NULL;
	Dwarf_Op mem[3], *ops;
	Dwarf_Addr lo, hi;
	size_t nops;
	bool sig = false;

	if (!cfi || dwarf_cfi_addrframe(cfi, pc, &fr) || !fr)
		return false;
	if (dwarf_frame_info(fr, &lo, &hi, &sig) < 0)
		goto bad;
	rule->signal = sig;
	if (dwarf_frame_cfa(fr, &ops, &nops) || cfa_from_ops(&rule->cfa, ops, nops, bytes))
		goto bad;
	if (dwarf_frame_register(fr, UW_REG_RA, mem, &ops, &nops) ||
	    loc_from_ops(&rule->ra, ops, nops, ops == mem, bytes))
		goto bad;
	if (dwarf_frame_register(fr, UW_REG_RBP, mem, &ops, &nops) ||
	    loc_from_ops(&rule->rbp, ops, nops, ops == mem, bytes))
		goto bad;
	free(fr);
	return true;
bad:
	/* A row we cannot read: say "no rule" rather than guess. */
	rule->cfa.how = UW_BAD;
	free(fr);
	return true;
}

static void rule_clear(struct uw_rule *r)
{
	free(r->cfa.ops);
	free(r->ra.ops);
	free(r->rbp.ops);
	memset(r, 0, sizeof(*r));
}

void uw_rules_flush(struct unwinder *u, struct uw_obj *o)
{
	for (size_t i = 0; o->rules && i < o->nslots; i++)
		if (o->rules[i].pc)
			rule_clear(&o->rules[i]);
	free(o->rules);
	o->rules = NULL;
	o->nslots = o->nrules = 0;
	/* libdw's parsed FDEs go too: a fresh CFI handle starts empty. */
	if (o->eh) {
		dwarf_cfi_end(o->eh);
		o->eh = dwarf_getcfi_elf(o->elf);
	}
	u->bytes -= o->bytes - o->base_bytes;
	o->bytes = o->base_bytes;
	u->st.rule_flushes++;
}

static size_t slot_of(uint64_t pc, size_t nslots)
{
	return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 20) & (nslots - 1);
}

static int grow(struct unwinder *u, struct uw_obj *o)
{
	size_t n = o->nslots ? o->nslots * 2 : UW_RULES_MIN;
	struct uw_rule *nr;

	/* At the per-object cap: start this object's cache over. */
	if (n > UW_RULES_MAX) {
		uw_rules_flush(u, o);
		n = UW_RULES_MIN;
	}
	/* The budget cannot take the bigger table even after evicting
	 * others: the caller goes on uncached. */
	if (u->bytes + (n - o->nslots) * sizeof(*nr) > u->budget) {
		uw_trim(u, NULL);
		if (u->bytes + (n - o->nslots) * sizeof(*nr) > u->budget)
			return -ENOSPC;
	}
	nr = calloc(n, sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	for (size_t i = 0; i < o->nslots; i++) {
		size_t s;

		if (!o->rules[i].pc)
			continue;
		for (s = slot_of(o->rules[i].pc, n); nr[s].pc; s = (s + 1) & (n - 1))
			;
		nr[s] = o->rules[i];
	}
	free(o->rules);
	u->bytes += (n - o->nslots) * sizeof(*nr);
	o->bytes += (n - o->nslots) * sizeof(*nr);
	o->rules = nr;
	o->nslots = n;
	return 0;
}

const struct uw_rule *uw_rule_get(struct unwinder *u, struct uw_obj *o, uint64_t pc)
{
	struct uw_rule rule = {.pc = pc};
	size_t s, bytes = 0;

	if (!pc)
		return NULL;
	if (o->nslots)
		for (s = slot_of(pc, o->nslots); o->rules[s].pc; s = (s + 1) & (o->nslots - 1))
			if (o->rules[s].pc == pc)
				return &o->rules[s];
	/* .eh_frame first; .debug_frame (opened once) for what it misses. */
	rule.found = rule_from_cfi(o->eh, pc, &rule, &bytes);
	/* .debug_frame only for objects without .eh_frame: libdw reads
	 * every .debug_* section to open it, counted first. */
	if (!rule.found && !o->eh && !o->dw_tried && o->elf) {
		o->dw_tried = true;
		if (uw_obj_debug_room(u, o)) {
			o->dw = dwarf_begin_elf(o->elf, DWARF_C_READ, NULL);
			o->dbg = o->dw ? dwarf_getcfi(o->dw) : NULL;
		}
	}
	if (!rule.found && o->dbg)
		rule.found = rule_from_cfi(o->dbg, pc, &rule, &bytes);
	if ((o->nrules + 1) * 2 > o->nslots) {
		int r = grow(u, o);

		if (r == -ENOSPC) {
			/* Uncached: valid until the next call, which is all
			 * the walker needs. */
			rule_clear(&u->scratch);
			u->scratch = rule;
			return &u->scratch;
		}
		if (r < 0) {
			rule_clear(&rule);
			return NULL;
		}
	}
	for (s = slot_of(pc, o->nslots); o->rules[s].pc; s = (s + 1) & (o->nslots - 1))
		;
	o->rules[s] = rule;
	o->nrules++;
	o->bytes += bytes;
	u->bytes += bytes;
	return &o->rules[s];
}
