// SPDX-License-Identifier: MIT
/*
 * The interpretation of a frame chain, node by node: which nodes are shims,
 * where each native activation's run ends, the instruction offsets. One
 * code for both readers: the user-space walk (pyfwalk.c) hands each node it
 * reads, the daemon hands the nodes BPF read at a sample (pyf_from_nodes(),
 * the per-sample path: this file keeps it to plain arithmetic on the
 * nodes, no read of the target).
 */
#include "pyf_int.h"

#include <stdint.h>

#include "pystack_abi.h"

/* Mark the oldest frame emitted since the last boundary. */
static void end_run(struct pyf_runs *c, uint64_t marker)
{
	if (c->n > c->run_start) {
		c->out[c->n - 1].flags |= PYF_FRAME_ENTRY;
		c->out[c->n - 1].marker = marker;
	}
	c->run_start = c->n;
}

/* The instruction's byte offset in its code object; -1 before the first. */
static int32_t instr_offset(const struct pyf_layout *l, const struct pystack_node *nd,
			    uint64_t code)
{
	int64_t off;
	int32_t lasti;

	if (l->chain == PYF_CHAIN_FRAMEOBJ) {
		lasti = (int32_t)(uint32_t)nd->instr;
		if (lasti < 0)
			return -1;
		if (l->lasti_units)
			return lasti > INT32_MAX / 2 ? -1 : lasti * 2;
		return lasti;
	}
	off = (int64_t)(nd->instr - (code + l->co_code_adaptive));
	return off < 0 || off > INT32_MAX ? -1 : (int32_t)off;
}

/* Inlined into pyf_from_nodes()'s loop, the per-sample path; the walker
 * calls it through pyf_chain_add(). */
static inline __attribute__((always_inline)) int
chain_add(struct pyf_runs *c, const struct pystack_node *nd, uint64_t entry_marker)
{
	const struct pyf_layout *l = c->l;
	bool old = l->chain == PYF_CHAIN_FRAMEOBJ;
	uint64_t code = pyf_node_code(l, nd);

	if (!old && nd->owner >= 3) {
		/* not Python. 3 (3.12/3.13 CSTACK, 3.14+ INTERPRETER): the
		 * shim entry frame below each activation's run, a local of
		 * that activation; 4 and up are sentinels elsewhere (3.15's
		 * base frame lives in the thread state) and mark nothing */
		if (nd->owner == 3)
			end_run(c, nd->frame);
		return 0;
	}
	/* a frame still in its prologue is shown too, at its function's
	 * first line (pyfcode.c) */
	if (code) {
		if (c->n >= c->max)
			return PYF_TRUNCATED;
		c->out[c->n++] = (struct pyf_frame){
			.code = code,
			.frame = nd->frame,
			.instr = instr_offset(l, nd, code),
			/* 3.9/3.10: every frame is its own activation */
			.flags = old ? PYF_FRAME_ENTRY : 0,
			.ident = nd->ident,
		};
		if (old)
			c->run_start = c->n;
	}
	/* 3.11: the entry frame ends its run */
	if (nd->entry)
		end_run(c, entry_marker);
	return 0;
}

int pyf_chain_add(struct pyf_runs *c, const struct pystack_node *nd, uint64_t entry_marker)
{
	return chain_add(c, nd, entry_marker);
}

unsigned pyf_from_nodes(const struct pyf_proc *p, const struct pystack_node *nodes, unsigned n,
			struct pyf_frame *out, unsigned max)
{
	struct pyf_runs c = {.l = &p->lay, .out = out, .max = max};

	/* 3.11's entry markers (the activations' _PyCFrames) are not read by
	 * BPF: those runs pair with activations in order */
	for (unsigned i = 0; i < n; i++)
		if (chain_add(&c, &nodes[i], 0))
			break;
	return c.n;
}
